"""MoE adapters and expert placement, computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.laws.moe import eplb_state_bytes, expert_placement, local_expert_counts
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext

ROOT = Path(__file__).resolve().parents[2]


def _adapter(name: str, **over):
    cfg = json.loads((ROOT / "registry/models" / f"{name}.json").read_text())
    cfg.update(over)
    return adapter_for(ModelConfig.from_dict(cfg))


def _experts(tensors, name="mlp.experts.w13_weight"):
    return next(t for t in tensors if t.name == name)


@pytest.mark.parametrize(("name", "cls", "params"), [
    # SOURCES.md index totals (computed from the shapes)
    ("Qwen--Qwen3-30B-A3B", "Qwen3Moe", 30_532_122_624),
    ("Qwen--Qwen3-235B-A22B", "Qwen3Moe", 235_093_634_560),
    ("mistralai--Mixtral-8x7B-v0.1", "Mixtral", 46_702_792_704),
])
def test_parameter_counts(name, cls, params):
    a = _adapter(name)
    assert type(a).__name__ == cls and a.family == "moe"
    assert a.total_params() == params


def test_qwen3_30b_by_hand():
    # per layer: qkv (32 + 2·4)·128 = 5120 × 2048; o 2048 × 4096; q/k norms 2 × 128;
    # 2 layer norms 2 × 2048; router 128 × 2048; experts 128 × 3 × 768 × 2048
    per_layer = 5120 * 2048 + 2048 * 4096 + 256 + 4096 + 128 * 2048 + 128 * 3 * 768 * 2048
    total = 48 * per_layer + 2 * 151_936 * 2048 + 2048
    assert total == 30_532_122_624
    assert _adapter("Qwen--Qwen3-30B-A3B").total_params() == total


def test_phi35_moe_layernorm_biases_and_lm_head_bias():
    a = _adapter("microsoft--Phi-3.5-MoE-instruct")
    names = {t.name for t in a.weight_tensors(GraphContext())}
    assert {"lm_head.bias", "input_layernorm+post_attention_layernorm.bias", "self_attn.o_proj.bias"} <= names
    # 41.9B (SOURCES.md, card)
    assert round(a.total_params() / 1e9, 1) == 41.9


def test_glm45_air_dense_first_layer_shared_expert_fp32_router():
    a = _adapter("zai-org--GLM-4.5-Air.reserialized")
    ts = {t.name: t for t in a.weight_tensors(GraphContext())}
    # first_k_dense_replace 1: one dense MLP of 10,944; 45 MoE layers with 1 shared expert of 1,408
    assert ts["mlp.gate_up_proj"].count == 1 and ts["mlp.gate_up_proj"].rows == 2 * 10944
    assert ts["mlp.shared_expert.gate_up_proj"].count == 45 and ts["mlp.shared_expert.gate_up_proj"].rows == 2 * 1408
    assert ts["mlp.gate"].dtype == "float32" and ts["mlp.gate.e_score_correction_bias"].dtype == "float32"
    assert round(a.total_params() / 1e9) == 107  # 106B total (card)


def test_glm_mtp_only_when_speculating():
    a = _adapter("zai-org--GLM-4.5-Air.reserialized")
    plain = a.weight_tensors(GraphContext())
    spec = a.weight_tensors(GraphContext(num_speculative_tokens=1, speculative_method="mtp"))
    assert not any(t.name.startswith("mtp.") for t in plain)
    eh = next(t for t in spec if t.name == "mtp.eh_proj")
    assert (eh.rows, eh.cols) == (4096, 8192)


def test_tp_slices_every_expert_without_ep():
    # Qwen3-30B at TP 2 without EP: all 128 experts, intermediate 768 / 2 = 384
    t = _experts(_adapter("Qwen--Qwen3-30B-A3B").weight_tensors(GraphContext(tensor_parallel_size=2)))
    assert (t.rows, t.cols, t.count, t.num_allocations) == (768, 2048, 128 * 48, 48)


def test_ep_holds_whole_experts():
    t = _experts(_adapter("Qwen--Qwen3-30B-A3B").weight_tensors(
        GraphContext(tensor_parallel_size=8, enable_expert_parallel=True)))
    assert (t.rows, t.count) == (2 * 768, 16 * 48)  # 128 / 8 = 16 whole experts


def test_uneven_experts_report_the_fuller_rank():
    # 128 experts over 6 EP ranks: 128 = 6 × 21 + 2 → ranks 0, 1 hold 22, the rest 21.
    assert local_expert_counts(128, 6) == [22, 22, 21, 21, 21, 21]
    p = expert_placement(128, tensor_parallel_size=2, data_parallel_size=3, enable_expert_parallel=True)
    assert p.uneven and p.rank == 0 and p.local_experts == 22 and p.ep_size == 6
    a = _adapter("Qwen--Qwen3-30B-A3B")
    t = _experts(a.weight_tensors(GraphContext(tensor_parallel_size=2, data_parallel_size=3,
                                               enable_expert_parallel=True)))
    assert t.count == 22 * 48


def test_dp_without_ep_flattens_the_moe_tp_group():
    # FusedMoEParallelConfig.make: tp 2 × dp 2 without EP slices experts 4 ways
    p = expert_placement(128, tensor_parallel_size=2, data_parallel_size=2)
    assert p.moe_tp_size == 4 and p.ep_size == 1 and p.local_experts == 128


def test_eplb_moves_redundant_experts_out_of_weights():
    # 128 logical + 16 redundant over 8 ranks: 144 / 8 = 18 a rank, against 128 / 8 = 16
    # without redundancy, so each rank's 2 extra slots are its EPLB replicas.
    p = expert_placement(128, tensor_parallel_size=8, enable_expert_parallel=True, enable_eplb=True,
                         num_redundant_experts=16)
    assert p.per_rank_experts == (18,) * 8 and p.per_rank_redundant == (2,) * 8
    assert (p.local_logical, p.local_redundant) == (16, 2)
    # uneven: 128 + 4 over 8 = 17,17,17,17,16,16,16,16 against 16 each
    q = expert_placement(128, tensor_parallel_size=8, enable_expert_parallel=True, enable_eplb=True,
                         num_redundant_experts=4)
    assert q.per_rank_redundant == (1,) * 4 + (0,) * 4 and q.rank == 0 and q.local_experts == 17


def test_eplb_total_counts_each_byte_once():
    # Qwen3-30B, TP 8 EP, 8 redundant: 136 / 8 = 17 experts a rank, 16 of them its logical
    # share and 1 replica.  Replica bytes = 1 × 48 layers × 3 × 768 × 2048 × 2 B.
    a = _adapter("Qwen--Qwen3-30B-A3B")
    ctx = GraphContext(tensor_parallel_size=8, enable_expert_parallel=True, enable_eplb=True,
                       num_redundant_experts=8)
    per_expert = 3 * 768 * 2048 * 2
    assert _experts(a.weight_tensors(ctx)).count == 16 * 48
    assert a.eplb_bytes(ctx) == 1 * 48 * per_expert
    no_eplb = GraphContext(tensor_parallel_size=8, enable_expert_parallel=True)
    experts_bytes = sum(t.elements * 2 for t in a.weight_tensors(ctx) if t.kind == "expert")
    experts_plain = sum(t.elements * 2 for t in a.weight_tensors(no_eplb) if t.kind == "expert")
    assert experts_bytes == experts_plain  # the weights figure keeps the logical share
    # the EPLB load window: int32 [1000, 48, 136] + pass [48, 136], and one layer's staging
    # copy of the 17 local experts
    assert eplb_state_bytes(48, 136) == 4 * 48 * 136 * 1001
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    assert ts["eplb.expert_buffer.w13_weight"].count == 17
    assert ts["eplb.expert_load_window+pass"].elements * 4 == eplb_state_bytes(48, 136)


def test_eplb_flags_validated():
    with pytest.raises(UsageError):
        expert_placement(8, tensor_parallel_size=2, enable_expert_parallel=True, num_redundant_experts=2)
    with pytest.raises(UsageError):
        expert_placement(8, tensor_parallel_size=2, enable_eplb=True)


@given(e=st.integers(1, 512), ep=st.integers(1, 64), r=st.integers(0, 32))
def test_placement_conserves_experts(e, ep, r):
    p = expert_placement(e, tensor_parallel_size=ep, enable_expert_parallel=True, enable_eplb=True,
                         num_redundant_experts=r)
    assert sum(p.per_rank_experts) == e + r and sum(p.per_rank_redundant) == r
    assert max(p.per_rank_experts) - min(p.per_rank_experts) <= 1
    assert p.local_experts == max(p.per_rank_experts)


def test_pp_stage_split_qwen3_235b():
    # 94 layers over PP 4: get_pp_indices gives [23, 24, 24, 23]; stage 0 holds the
    # embedding, stage 3 the final norm and lm_head, every stage its experts and a rope cache.
    a = _adapter("Qwen--Qwen3-235B-A22B")
    counts, kinds = [], []
    for r in range(4):
        ts = a.weight_tensors(GraphContext(pipeline_parallel_size=4, pipeline_rank=r))
        counts.append(_experts(ts).num_allocations)
        kinds.append({t.kind for t in ts})
    assert counts == [23, 24, 24, 23]
    assert "embedding" in kinds[0] and "lm_head" not in kinds[0]
    assert "lm_head" in kinds[3] and "embedding" not in kinds[3]
    assert all("buffer" in k for k in kinds)


def test_moe_kv_specs_follow_attention():
    a = _adapter("Qwen--Qwen3-30B-A3B")
    specs = a.kv_cache_specs(GraphContext(tensor_parallel_size=2))
    s = specs["model.layers.0.self_attn.attn"]
    assert len(specs) == 48 and s.num_kv_heads == 2 and s.head_size == 128


def test_dcp_shards_the_full_attention_footprint():
    # DCP 2: a FullAttentionSpec holds cdiv(cdiv(L, dcp), block) pages a request.
    # L 32,768, block 16, Qwen3-30B at TP 4 (1 KV head of 128, bf16): page = 2 × 16 × 1 × 128
    # × 2 B = 8,192 B; dcp 1 → 2,048 pages = 16 MiB; dcp 2 → 1,024 pages = 8 MiB.
    from vmemplan.laws.kv_pool import PoolContext

    a = _adapter("Qwen--Qwen3-30B-A3B")
    spec = a.kv_cache_specs(GraphContext(tensor_parallel_size=4))["model.layers.0.self_attn.attn"]
    assert spec.page_size_bytes == 8192
    one = spec.max_memory_usage_bytes(PoolContext(max_model_len=32768, max_num_batched_tokens=8192))
    two = spec.max_memory_usage_bytes(PoolContext(max_model_len=32768, max_num_batched_tokens=8192,
                                                  decode_context_parallel_size=2))
    assert (one, two) == (16 << 20, 8 << 20)


def test_mixtral_tp2_weights_bytes():
    # Mixtral-8x7B at TP 2, bf16: 46,702,792,704 params; sharded parts halve, norms (2 × 4096
    # × 32 + 4096), the router (8 × 4096 × 32) and the rope cache (32,768 × 128) replicate.
    a = _adapter("mistralai--Mixtral-8x7B-v0.1")
    replicated = 2 * 4096 * 32 + 4096 + 8 * 4096 * 32
    # + each attention layer's four fp32 scales (attention.py::set_default_quant_scales): 32 × 16 B
    expected = ((46_702_792_704 - replicated) // 2 + replicated) * 2 + 32_768 * 128 * 2 + 32 * 16
    wb = weight_bytes_per_rank(a.weight_tensors(GraphContext(tensor_parallel_size=2)), model_dtype="bfloat16")
    assert wb.total_bytes == expected
