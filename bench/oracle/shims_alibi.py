#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on ALiBi models whose attention turns its slopes into a list:
BloomForCausalLM (vLLM 0.33.0 model_executor/models/bloom.py) and Step1ForCausalLM (step1.py).

    python bench/oracle/shims_alibi.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: ``bloom.py::BloomAttention.__init__`` computes the ALiBi slopes with
``bloom.py::_get_alibi_slopes`` (``torch.tensor``/``torch.arange``/``torch.pow`` without a
device, so on the oracle's default meta device) and then turns this rank's slice into a Python
list with ``.tolist()``, which a meta tensor cannot do ("Cannot copy out of meta tensor");
``step1.py::StepAttention.__init__`` does the same with ``step1.py::_get_step_alibi_slopes``.

What the shim does, and nothing else: it wraps those two functions so that their body runs under
``torch.device("cpu")``; the returned tensor is a CPU tensor whose values are the ones vLLM
computes, ``.tolist()`` works, and the list goes to ``Attention(alibi_slopes=...)`` as on a GPU
host.  The CPU tensor itself is a temporary of ``__init__`` (only the list is kept), so it adds
nothing to the figures.  What the model does keep, the attention implementation's fp32
``alibi_slopes`` tensor (``torch.tensor(alibi_slopes, dtype=torch.float32)`` in the backend's
``__init__``, e.g. ``v1/attention/backends/flash_attn.py::FlashAttentionImpl``), is still built by
vLLM on the default (meta) device and counted as on a GPU host.  The wrap is recorded in the
fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_alibi.py: vllm/model_executor/models/bloom.py::_get_alibi_slopes "
        "and step1.py::_get_step_alibi_slopes run under torch.device('cpu') so that "
        "BloomAttention's / StepAttention's .tolist() of the ALiBi slopes "
        "works (a meta tensor has no values); same values, and the CPU tensor is a temporary; "
        "the backend's fp32 alibi_slopes tensor is still built by vLLM on the model's device")


def _on_cpu(original):
    import torch

    def slopes_on_cpu(total_num_heads: int) -> torch.Tensor:
        with torch.device("cpu"):
            return original(total_num_heads)

    return slopes_on_cpu


def install(oracle) -> None:
    from vllm.model_executor.models import bloom, step1

    bloom._get_alibi_slopes = _on_cpu(bloom._get_alibi_slopes)
    step1._get_step_alibi_slopes = _on_cpu(step1._get_step_alibi_slopes)
    oracle.ASSUMPTIONS.append(NOTE)


def main() -> int:
    return shim_main(install)


if __name__ == "__main__":
    sys.exit(main())
