"""DeepSeek-V4.1-Flash with its DSpark drafter, through the CLI (seed 002's figures).

Derivations (vLLM 0.33.0; H200 = SM90, --kv-cache-dtype fp8 -> fp8_ds_mla 584-byte records in
pages aligned to 576 bytes: vllm/models/deepseek_v41/attention.py::_resolve_dsv4_kv_cache_dtype):

* pool block: the compressed caches and indexer K caches of the kv sources 2, 8, 14 (ratio 2)
  and 20 (ratio 1), vllm/v1/kv_cache_interface.py::MLAAttentionSpec.page_size_bytes:
  3 x (round_up(32 x 584, 576) + round_up(32 x 132, 576)) + round_up(64 x 584, 576)
  + round_up(64 x 132, 576) = 116,928;
* window rings: one per layer, backbone 40 + DSpark's num_nextn_predict_layers 3 = 43
  (vllm/models/deepseek_v41/nvidia/dspark.py::DSparkDeepseekV4Model.__init__ builds
  DeepseekV4DecoderLayer ``layers.{40 + i}``), a 32-token page of round_up(32 x 584, 576)
  = 19,008 bytes; 116,928 // 19,008 = 6 rings share a block -> cdiv(43, 6) = 8 groups
  (vllm/v1/core/kv_cache_utils.py grouping);
* steady decode (SlidingWindowMLASpec): cdiv(window - 1 + 1 + K, 32) + 1 pages a ring group,
  plus one compressor-ring block: 8 x 6 + 1 = 49 blocks;
* admission (SlidingWindowSpec.max_admission_blocks_per_request with two batches in flight):
  cdiv(min(127 + 2 x 8,192, L), 32) + 1 = 517 pages a ring group;
* growing bytes a token: 3 x (584 / 2 + 132 / 2) + 584 + 132 = 1,790.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from vmemplan.api import plan, resolve_request
from vmemplan.cli import app
from vmemplan.core.errors import UsageError
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.pipeline import graph_context

MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def rup(a: int, m: int) -> int:
    return cdiv(a, m) * m


BLOCK = 3 * (rup(32 * 584, 576) + rup(32 * 132, 576)) + rup(64 * 584, 576) + rup(64 * 132, 576)
RING_PAGE = rup(32 * 584, 576)
RINGS = 40 + 3
RINGS_PER_BLOCK = BLOCK // RING_PAGE
RING_GROUPS = cdiv(RINGS, RINGS_PER_BLOCK)


def _cli(k: int) -> dict:
    result = CliRunner().invoke(app, [
        "size", MODEL, "--gpu", "h200", "-tp", "8", "--kv-cache-dtype", "fp8",
        "--speculative-config", json.dumps({"method": "dspark", "num_speculative_tokens": k}), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("k", [5, 3])
def test_seed_002_dspark_figures_from_the_cli(k):
    d = _cli(k)
    kv = d["kv_cache"]
    assert BLOCK == 116_928 and kv["page_size_bytes"] == BLOCK
    rings = [g for g in kv["groups"] if g["kind"] == "sliding_window_mla"]
    assert (RINGS_PER_BLOCK, RING_GROUPS) == (6, 8)
    assert len(rings) == RING_GROUPS and sum(g["layers"] for g in rings) == RINGS
    assert max(g["layers"] for g in rings) == RINGS_PER_BLOCK
    steady_pages = cdiv(128 - 1 + 1 + k, 32) + 1
    steady_blocks = RING_GROUPS * steady_pages + 1
    assert steady_blocks == 49
    assert kv["sequence_fixed_bytes"] == steady_blocks * BLOCK == 5_729_472  # 5.73 MB
    admission_pages = cdiv(min(127 + 2 * d["engine"]["max_num_batched_tokens"], d["engine"]["max_model_len"]), 32) + 1
    assert admission_pages == 517
    assert all(g["blocks_per_request"] == admission_pages for g in rings)
    assert kv["sequence_admission_bytes"] == (RING_GROUPS * admission_pages + 1) * BLOCK == 483_731_136
    growing = 3 * (584 // 2 + 132 // 2) + 584 + 132
    assert growing == 1_790
    assert f"{growing:,} bytes a token" in kv["no_bytes_per_token_reason"]


def _tensors(spec):
    req = resolve_request(model=MODEL, gpu="h200", tensor_parallel_size=8, kv_cache_dtype="fp8",
                          speculative_config=spec)
    return req, req.adapter.weight_tensors(graph_context(req))


def test_drafter_weights_from_the_dspark_fields():
    req, base = _tensors(None)
    _, draft = _tensors({"method": "dspark", "num_speculative_tokens": 5})
    text = req.config.text
    h, vocab, rank = req.config.hidden_size, req.config.vocab_size, text["dspark_markov_rank"]
    heads = {t.name: t for t in draft if t.name.startswith("dspark.")}
    # DSparkDeepseekV4Model.__init__: main_proj hidden x len(target layers) -> hidden
    assert (heads["dspark.main_proj"].rows, heads["dspark.main_proj"].cols) == (h, h * len(text["dspark_target_layer_ids"]))
    # DSparkMarkovHead: nn.Embedding(vocab, rank) and ParallelLMHead(vocab padded to 64, rank, disable_tp)
    assert (heads["dspark.markov_head.markov_w1"].rows, heads["dspark.markov_head.markov_w1"].cols) == (vocab, rank)
    assert heads["dspark.markov_head.markov_w2"].rows == math.ceil(vocab / 64) * 64
    # DSparkConfidenceHead: ReplicatedLinear(hidden + rank -> 1), float32
    assert heads["dspark.confidence_head.proj"].cols == h + rank
    # the draft layers' MoE routes over dspark_n_routed_experts (DeepseekV4MoE.__init__)
    gates = {t.name: t for t in draft if t.name.startswith("ffn.gate[") and not t.name.startswith("ffn.gate.bias")}
    assert {(t.rows, t.count) for t in gates.values()} == {(text["n_routed_experts"], 40),
                                                           (text["dspark_n_routed_experts"], 3)}
    # no embedding or LM head of its own (aliased to the target's)
    assert sum(t.kind in ("embedding", "lm_head") and not t.name.startswith("dspark.") for t in draft) == \
        sum(t.kind in ("embedding", "lm_head") for t in base)
    # the CLI's weights grow by exactly the drafter's tensors
    p0 = plan(MODEL, gpu="h200", tensor_parallel_size=8, kv_cache_dtype="fp8")
    p5 = plan(MODEL, gpu="h200", tensor_parallel_size=8, kv_cache_dtype="fp8",
              speculative_config={"method": "dspark", "num_speculative_tokens": 5})
    priced = weight_bytes_per_rank(draft, model_dtype=req.dtype, scheme=req.quant_scheme, allocator_rounding=True)
    assert p5.per_rank.weights_bytes == priced.total_bytes > p0.per_rank.weights_bytes


def test_dspark_elsewhere_is_refused_not_guessed():
    with pytest.raises(UsageError, match="dspark"):
        plan("meta-llama/Llama-3.1-8B", gpu="h100",
             speculative_config={"method": "dspark", "num_speculative_tokens": 5})
