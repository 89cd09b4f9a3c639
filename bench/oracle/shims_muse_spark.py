#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on MuseSparkForConditionalGeneration (vLLM 0.33.0
vllm/models/muse_spark, the ``nvidia`` text stack).

    python bench/oracle/shims_muse_spark.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: MuseSpark1xAttention.__init__ asks nvidia/ops/cute_dsl/qk_norm.py::supports_qk_norm whether
its fused CuTeDSL QK-norm serves the head size; that check builds a launch config from the
cutlass dtype's bit width (``COPY_BITS // dtype.width``).  The oracle stands inert stubs in for
the absent cutlass DSL, whose dtypes carry no width, so the check raises a TypeError on a CPU host.

What the shim does, and nothing else: right after the oracle's platform emulation it gives
qk_norm's ``_TORCH_TO_CUTLASS_DTYPE`` table stand-ins that carry the real bit widths (16 for
float16 / bfloat16, 32 for float32), so supports_qk_norm computes its own answer as on a host with
the DSL.  The answer only picks the fused kernel over the unfused path of a weightless norm: no
tensor depends on it.  Every module, parameter, buffer and KV cache spec is built by vLLM's own
code.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_muse_spark.py: muse_spark qk_norm._TORCH_TO_CUTLASS_DTYPE holds "
        "stand-ins carrying the cutlass dtypes' bit widths (16, 16, 32) so supports_qk_norm computes "
        "its answer without the cutlass DSL; no tensor is created by the shim")


def install() -> None:
    from types import SimpleNamespace

    import torch
    import vllm.models.muse_spark.nvidia.ops.cute_dsl.qk_norm as qk_norm

    qk_norm._TORCH_TO_CUTLASS_DTYPE = {torch.float16: SimpleNamespace(width=16),
                                       torch.bfloat16: SimpleNamespace(width=16),
                                       torch.float32: SimpleNamespace(width=32)}


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: install(), NOTE))
