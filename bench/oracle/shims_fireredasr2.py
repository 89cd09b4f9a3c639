#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on FireRedASR2ForConditionalGeneration (vLLM 0.33.0
model_executor/models/fireredasr2.py, its encoder in conformer_encoder.py).

    python bench/oracle/shims_fireredasr2.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: ``conformer_encoder.py::RelPositionalEncoding.__init__`` turns ``torch.log(torch.tensor(10000.0))``
into a Python float with ``.item()`` while it fills its sinusoid table; built on the oracle's default
meta device that tensor has no value ("Tensor.item() cannot be called on meta tensors").  On a GPU
host the same code runs on the GPU and keeps the table there.

What the shim does, and nothing else: it runs ``RelPositionalEncoding.__init__`` under
``torch.device("cpu")`` (same values, same dtype: the model dtype vLLM sets as the default while
building), then puts each buffer the module registered (``pe``, [1, 2 · pe_maxlen - 1, d_model]) on
the meta device with its shape and dtype unchanged, where a GPU host holds it.  Every module,
parameter, buffer and KV cache spec is built by vLLM's own code.  Recorded in the fixture's
``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_fireredasr2.py: conformer_encoder.py::RelPositionalEncoding.__init__ run under "
        "torch.device('cpu') (its .item() of torch.log(torch.tensor(10000.0)) needs a value), then its pe buffer "
        "put on the meta device with the same shape and dtype, as a GPU host keeps it on the GPU")


def install() -> None:
    import torch
    from vllm.model_executor.models import conformer_encoder

    original = conformer_encoder.RelPositionalEncoding.__init__

    def init_on_cpu(self, *args, **kwargs):
        with torch.device("cpu"):
            original(self, *args, **kwargs)
        for name, buf in list(self._buffers.items()):
            if buf is not None and not buf.is_meta:
                self._buffers[name] = torch.empty(buf.shape, dtype=buf.dtype, device="meta")

    conformer_encoder.RelPositionalEncoding.__init__ = init_on_cpu


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: install(), NOTE))
