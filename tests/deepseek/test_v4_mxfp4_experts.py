"""DeepSeek-V4 / V4.1 routed experts load as MXFP4 (expert_dtype "fp4", the default).

vllm/models/deepseek_v41/quant_config.py::DeepseekV4FP8Config.get_quant_method (0.33.0) sends the
routed experts of an fp8 checkpoint whose ``expert_dtype`` is "fp4" (read from the top-level
config, default "fp4") to Mxfp4MoEMethod: two e2m1 values a byte plus one e8m0 scale a 32-value
block, with the intermediate size per partition padded to 128 and the hidden size to 256
(fused_moe/oracle/mxfp4.py::mxfp4_round_up_hidden_size_and_intermediate_size).  Pricing them as
block fp8 made the weights 73-82 % too large against vLLM 0.33.0's own loader on the meta device
(oracle fixtures: per-rank parameter bytes 20,644,900,892 / 156,006,389,980 / 109,447,720,100).
The figures compared below are the fixtures' whole weights (parameters, the fp32 cos/sin
buffers and the top-k index buffer: 21,198,549,020 / 156,560,038,108 / 109,749,709,988), which
vmemplan now counts too (models/deepseek_v4_buffers.py).
"""

from __future__ import annotations

import pytest

from vmemplan.api import plan, resolve_request
from vmemplan.pipeline import graph_context


def rup(a: int, m: int) -> int:
    return -(-a // m) * m


@pytest.mark.parametrize("model, tp, oracle_weight_bytes", [
    ("deepseek-ai/DeepSeek-V4-Flash", 8, 21_198_549_020),
    ("deepseek-ai/DeepSeek-V4-Flash", 1, 156_560_038_108),
    ("deepseek-ai/DeepSeek-V4-Pro", 8, 109_749_709_988),
])
def test_v4_weights_match_vllm_within_one_percent(model, tp, oracle_weight_bytes):
    p = plan(model, gpu="h200", tensor_parallel_size=tp, max_model_len=32768, kv_cache_dtype="fp8")
    assert abs(p.per_rank.weights_bytes / oracle_weight_bytes - 1) < 0.01


def test_expert_bytes_from_the_mxfp4_layout():
    req = resolve_request(model="deepseek-ai/DeepSeek-V4.1-Flash", gpu="h200", tensor_parallel_size=8,
                          kv_cache_dtype="fp8")
    text = req.config.text
    E, H, inter, layers = text["n_routed_experts"], text["hidden_size"], text["moe_intermediate_size"], 40
    i_pad, h_pad = rup(inter // 8, 128), rup(H, 256)
    assert (inter // 8, i_pad) == (288, 384)  # the padding matters at TP 8
    experts = {t.name: t for t in req.adapter.weight_tensors(graph_context(req)) if t.kind == "expert"}
    got = sum(t.rows * t.cols * t.count for t in experts.values())  # uint8 elements = bytes
    want = layers * E * (2 * i_pad * (h_pad // 2 + h_pad // 32) + h_pad * (i_pad // 2 + i_pad // 32))
    assert got == want
