"""gpt-oss MXFP4 experts per release and backend.

Backend (default settings, FlashInfer installed), read from each wheel:
vllm/model_executor/layers/quantization/mxfp4.py::get_mxfp4_backend (0.11.0 - 0.18.0: SM 10.x
FlashInfer; SM 9.0 Triton when ``has_triton_kernels()``, i.e. from 0.12.0 whose wheel bundles
``vllm/third_party/triton_kernels``; else Marlin) and
vllm/model_executor/layers/fused_moe/oracle/mxfp4.py::select_mxfp4_moe_backend (0.19.0+).
Padding: Mxfp4MoEMethod.create_weights / mxfp4_round_up_hidden_size_and_intermediate_size.
Triton layout after loading: _swizzle_mxfp4 with triton_kernels' HopperMXValueLayout /
HopperMXScaleLayout (num_warps 8: scale rows to 256), the unswizzled scales kept before 0.26.0.
"""

from __future__ import annotations

import pytest

from vmemplan.api import plan, resolve_request
from vmemplan.laws.quant import mxfp4_moe_backend, mxfp4_padding
from vmemplan.pipeline import graph_context


def rup(a: int, m: int) -> int:
    return -(-a // m) * m


@pytest.mark.parametrize("sm, release, backend, pads", [
    (9, (0, 10, 1), "marlin", (128, 256)),   # no triton_kernels in the 0.10/0.11 wheels (log 013: Marlin)
    (9, (0, 11, 0), "marlin", (128, 256)),
    (9, (0, 12, 0), "triton", (64, 1)),
    (9, (0, 15, 0), "triton", (64, 1)),
    (9, (0, 33, 0), "triton", (64, 1)),
    (10, (0, 15, 0), "flashinfer", (256, 256)),  # SM100_FI_MXFP4_BF16
    (10, (0, 26, 0), "flashinfer", (256, 256)),  # FLASHINFER_TRTLLM_MXFP4_BF16
    (10, (0, 27, 0), "flashinfer", (128, 256)),
    (10, (0, 33, 0), "flashinfer", (128, 256)),
    (8, (0, 33, 0), "marlin", (128, 256)),    # Triton needs capability >= 9.0
    (12, (0, 13, 0), "marlin", (128, 256)),   # log 037 (GB10): "Using Marlin backend"
    (12, (0, 33, 0), "marlin", (128, 256)),   # SM 12.x orders Marlin before Triton
])
def test_backend_and_padding(sm, release, backend, pads):
    assert mxfp4_moe_backend(sm, release) == backend
    assert mxfp4_padding(backend, release) == pads


def _experts(tp: int, version: str):
    req = resolve_request(model="openai/gpt-oss-120b", gpu="h100", tensor_parallel_size=tp, vllm_version=version)
    tensors = {t.name: t for t in req.adapter.weight_tensors(graph_context(req))}
    scheme = req.quant_scheme
    return scheme, tensors["mlp.experts.w13_weight"], tensors["mlp.experts.w2_weight"]


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("version, keeps_unswizzled", [("0.15.0", True), ("0.33.0", False)])
def test_triton_expert_bytes_on_hopper(tp, version, keeps_unswizzled):
    scheme, w13, w2 = _experts(tp, version)
    assert scheme.backend == "triton"
    E, H, inter, layers = 128, 2880, 2880, 36
    i = rup(inter // tp, 64)

    def layout(n: int, k: int) -> int:
        groups = -(-k // 32)
        value = rup(n, 16) * rup(k // 2, 32)
        # 0.26+: scale groups padded to 0 mod 4 before the swizzle (utils/mxfp4_utils.py)
        scale = rup(n, 256) * rup(groups if keeps_unswizzled else rup(groups, 4), 2)
        return value + scale + (n * groups if keeps_unswizzled else 0)

    assert scheme.tensor_bytes(w13, 2) == layers * E * layout(2 * i, H)
    assert scheme.tensor_bytes(w2, 2) == layers * E * layout(H, i)


def test_tp2_hopper_0_15_loads_about_4_percent_less_than_marlin_padding():
    # the real gpt-oss-120b run at TP 2 on Hopper (vLLM 0.15, Triton) loaded ~4 % less per rank
    # than the Marlin-padded prediction
    triton = plan("openai/gpt-oss-120b", gpu="h100", tensor_parallel_size=2, vllm_version="0.15.0")
    marlin = plan("openai/gpt-oss-120b", gpu="h100", tensor_parallel_size=2, vllm_version="0.11.0")
    ratio = triton.per_rank.weights_bytes / marlin.per_rank.weights_bytes
    assert 0.95 < ratio < 0.97
