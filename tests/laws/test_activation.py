"""Tests for vmemplan.laws.activation: worked examples by hand and monotonic properties."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.laws.activation import (
    ActivationConstants,
    MoeShape,
    activation_peak_bytes,
    moe_forward_bytes,
    moe_shape_from_config,
)

GIB = 1 << 30

# The 0.33.0-era constants as the registry states them (triton sampler, 3 fp32 copies).
C033 = ActivationConstants(
    era="test-0.33",
    vllm_version="0.33.0",
    dense_hidden_buffers=3,
    dense_intermediate_buffers=3,
    moe_workspace_layout="modular",
    moe_chunk_tokens=0,
    floor_bytes=70 * (1 << 20),
    sampler_path="triton",
    sampler_fp32_copies=3,
)
# The 0.11-era native torch-sort sampler (9 fp32 copies).
C011 = replace(C033, **{"era": "test-0.11", "sampler_path": "native_sort", "sampler_fp32_copies": 9})

LLAMA8B = dict(
    family="dense", hidden_size=4096, num_attention_heads=32, head_dim=128,
    intermediate_size=14336, vocab_size=128256, dtype_bytes=2,
)


def test_llama31_8b_h100_mnbt8192_seqs256():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=8192, max_num_seqs=256, constants=C033
    )
    # forward = 8192 tokens x 2 B x (3 x 4096 + 3 x 14336) = 8192 x 2 x 55296 = 905,969,664 B (0.84375 GiB)
    assert est.forward_bytes == 905_969_664
    # sampler = 256 rows x 128256 vocab x (2 + 3 x 4) B = 32,833,536 x 14 = 459,669,504
    #         + held hidden states 8192 x 4096 x 2 = 67,108,864          -> 526,778,368
    assert est.sampler_bytes == 526_778_368
    # peak = max(forward, sampler) = forward
    assert est.peak_bytes == 905_969_664


def test_llama31_8b_a100_mnbt2048_native_sampler_dominates():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=2048, max_num_seqs=256, constants=C011
    )
    # forward = 2048 x 2 x 55296 = 226,492,416
    assert est.forward_bytes == 226_492_416
    # sampler = 32,833,536 x (2 + 36) = 1,247,674,368 + 2048 x 4096 x 2 = 16,777,216 -> 1,264,451,584
    assert est.sampler_bytes == 1_264_451_584
    assert est.peak_bytes == 1_264_451_584  # = 1.178 GiB; corpus 040 (0.11.0, A100 40GB) leaves 1.398 - 0.25 = 1.148 GiB


def test_tp2_splits_only_the_intermediate_buffers():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=2, max_num_batched_tokens=8192, max_num_seqs=1, constants=C033
    )
    # 8192 x 2 x (3 x 4096 + 3 x 14336 / 2) = 8192 x 2 x (12288 + 21504) = 553,648,128
    assert est.forward_bytes == 553_648_128


def test_floor_applies_to_tiny_budgets():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=16, max_num_seqs=1, constants=C033
    )
    # 16 x 2 x 55296 = 1,769,472 < 70 MiB floor = 73,400,320
    assert est.forward_bytes == 73_400_320


# Qwen3-30B-A3B: hidden 2048, 128 experts of intermediate 768, top-8, no shared experts.
QWEN3_30B = MoeShape(hidden_size=2048, num_experts=128, top_k=8, expert_intermediate=768)


def test_moe_modular_unchunked_by_hand():
    """0.28+ (modular kernel, no chunking), T = 8192:
    workspace13 = 8192*8*max(768, 2048) = 134,217,728 el (holds the 8192*2048 output too);
    workspace2  = 8192*8*max(1536, 2048) = 134,217,728 el  -> 536,870,912 B at 2 B;
    router logits 8192*128*2 = 2,097,152 B; top-k weights/ids/indices 8192*8*12 = 786,432 B;
    3 hidden rows 8192*3*2048*2 = 100,663,296 B.  Total 640,417,792 B."""
    est = activation_peak_bytes(
        family="moe", hidden_size=2048, num_attention_heads=32, head_dim=128, intermediate_size=768,
        vocab_size=151936, tensor_parallel_size=1, max_num_batched_tokens=8192, max_num_seqs=1,
        dtype_bytes=2, constants=C033, moe=QWEN3_30B,
    )
    assert est.forward_bytes == 640_417_792
    assert est.peak_bytes == 640_417_792  # one sampler row is far smaller


def test_moe_fused_experts_impl_by_hand():
    """0.10-0.16 (fused_experts_impl, in place): cache13 8192*8*max(1536, 2048) + cache2 8192*8*768
    = 184,549,376 el = 369,098,752 B; + router 2,097,152 + top-k 786,432 + hidden 100,663,296."""
    c = replace(C033, **{"moe_workspace_layout": "fused_experts_impl", "moe_chunk_tokens": 16384})
    fwd, _ = moe_forward_bytes(QWEN3_30B, tokens=8192, dtype_bytes=2, constants=c)
    assert fwd == 369_098_752 + 2_097_152 + 786_432 + 100_663_296


def test_moe_modular_chunked_keeps_output_apart():
    """T = 32768 over 16384-token chunks: workspace13 16384*8*2048 plus the separate 32768*2048 output,
    workspace2 16384*8*2048 -> 603,979,776 el = 1,207,959,552 B; router 8,388,608; top-k 3,145,728;
    hidden 402,653,184.  Total 1,622,147,072 B."""
    c = replace(C033, **{"moe_chunk_tokens": 16384})
    fwd, _ = moe_forward_bytes(QWEN3_30B, tokens=32768, dtype_bytes=2, constants=c)
    assert fwd == 1_622_147_072


def test_moe_adjacent_layouts_within_2x():
    """The two workspace layouts never differ by 2x for the same model and tokens."""
    impl = replace(C033, **{"moe_workspace_layout": "fused_experts_impl", "moe_chunk_tokens": 16384})
    for shape in (QWEN3_30B, MoeShape(hidden_size=2880, num_experts=32, top_k=4, expert_intermediate=2880),
                  MoeShape(hidden_size=4096, num_experts=8, top_k=2, expert_intermediate=14336 // 2)):
        for t in (256, 2048, 8192, 16384):
            a, _ = moe_forward_bytes(shape, tokens=t, dtype_bytes=2, constants=impl)
            b, _ = moe_forward_bytes(shape, tokens=t, dtype_bytes=2, constants=C033)
            assert 0.5 < a / b < 2


def test_moe_shape_from_config_reads_shared_and_tp():
    cfg = {"n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
           "n_shared_experts": 1, "intermediate_size": 18432}
    s = moe_shape_from_config(cfg, moe_tp_size=8, hidden_size=7168, dense_layers=True)
    assert (s.num_experts, s.top_k, s.expert_intermediate, s.shared_intermediate, s.dense_intermediate) == (
        256, 8, 256, 256, 2304)
    assert moe_shape_from_config({"intermediate_size": 1}, moe_tp_size=1, hidden_size=8) is None


def test_extra_model_buffers_add_to_forward():
    est = activation_peak_bytes(
        **LLAMA8B, tensor_parallel_size=1, max_num_batched_tokens=8192, max_num_seqs=256, constants=C033,
        extra_model_buffers_bytes=GIB,
    )
    assert est.peak_bytes == 905_969_664 + GIB
    assert est.extra_model_bytes == GIB


_dims = dict(
    hidden=st.integers(256, 16384), inter=st.integers(256, 65536), vocab=st.integers(1000, 300000),
)


@settings(max_examples=60, deadline=None)
@given(h=_dims["hidden"], i=_dims["inter"], v=_dims["vocab"], t=st.integers(1, 65536),
       dt=st.integers(1, 65536), seqs=st.integers(1, 2048), tp=st.sampled_from([1, 2, 4, 8]))
def test_more_tokens_never_lowers_forward(h, i, v, t, dt, seqs, tp):
    kw = dict(family="dense", hidden_size=h, num_attention_heads=32, head_dim=128, intermediate_size=i,
              vocab_size=v, tensor_parallel_size=tp, max_num_seqs=seqs, dtype_bytes=2, constants=C033)
    a = activation_peak_bytes(**kw, max_num_batched_tokens=t)
    b = activation_peak_bytes(**kw, max_num_batched_tokens=t + dt)
    assert b.forward_bytes >= a.forward_bytes
    assert b.peak_bytes >= a.peak_bytes


@settings(max_examples=60, deadline=None)
@given(h=_dims["hidden"], i=_dims["inter"], t=st.integers(1, 65536),
       tps=st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=2, max_size=2, unique=True),
       fam=st.sampled_from(["dense", "moe"]))
def test_more_tp_never_raises_forward(h, i, t, tps, fam):
    lo, hi = sorted(tps)
    kw = dict(family=fam, hidden_size=h, num_attention_heads=32, head_dim=128, intermediate_size=i,
              vocab_size=32000, max_num_batched_tokens=t, max_num_seqs=1, dtype_bytes=2, constants=C033)
    assert (activation_peak_bytes(**kw, tensor_parallel_size=hi).forward_bytes
            <= activation_peak_bytes(**kw, tensor_parallel_size=lo).forward_bytes)


@settings(max_examples=60, deadline=None)
@given(v=_dims["vocab"], t=st.integers(1, 65536), s=st.integers(1, 4096), ds=st.integers(0, 4096),
       c=st.sampled_from([C011, C033]))
def test_more_seqs_never_lowers_sampler(v, t, s, ds, c):
    kw = dict(**{**LLAMA8B, "vocab_size": v}, tensor_parallel_size=1, max_num_batched_tokens=t, constants=c)
    assert (activation_peak_bytes(**kw, max_num_seqs=s + ds).sampler_bytes
            >= activation_peak_bytes(**kw, max_num_seqs=s).sampler_bytes)
