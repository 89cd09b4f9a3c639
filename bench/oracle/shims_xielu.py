#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on models whose MLP uses the xIELU activation:
ApertusForCausalLM (vLLM 0.33.0 vllm/model_executor/models/apertus.py::ApertusMLP).

    python bench/oracle/shims_xielu.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: vllm/model_executor/layers/activation.py::XIELU.__init__ builds its two parameters
(``alpha_p``, ``alpha_n``, shape [1]) and two buffers (``beta``, ``eps``, 0-d), all bfloat16,
with ``torch.tensor`` and no device, so on the oracle's default (meta) device, and then reads
``beta`` and ``eps`` back as Python floats (``self.beta.detach().cpu().float().item()``), which a
meta tensor cannot do ("Cannot copy out of meta tensor; no data!").

What the shim does, and nothing else: it wraps ``XIELU.__init__`` so that vLLM's own body runs
under ``torch.device("cpu")`` (the ``.item()`` calls then read the values vLLM computes), and
right after it moves the module's parameters and buffers to the device that was the default
when the constructor was called (``nn.Module.to``: same shapes, dtypes and Parameter/buffer
roles).  The four tensors therefore end up where vLLM puts them on a GPU host (the model's
device) and are counted in the weights as there (8 bytes a layer); the CPU copies are
temporaries.  The wrap is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_xielu.py: vllm/model_executor/layers/activation.py::XIELU.__init__ "
        "runs under torch.device('cpu') so that its .item() reads of beta/eps work (a meta tensor "
        "has no values), then its alpha_p/alpha_n parameters and beta/eps buffers are moved to the "
        "device that was the default at construction (the model's, as on a GPU host); same shapes "
        "and dtypes (bfloat16)")


def install(oracle) -> None:
    import torch
    from vllm.model_executor.layers import activation

    original = activation.XIELU.__init__

    def init_on_cpu(self, *args, **kwargs):
        target = torch.get_default_device()
        with torch.device("cpu"):
            original(self, *args, **kwargs)
        self.to(target)

    activation.XIELU.__init__ = init_on_cpu
    oracle.ASSUMPTIONS.append(NOTE)


def main() -> int:
    return shim_main(install)


if __name__ == "__main__":
    sys.exit(main())
