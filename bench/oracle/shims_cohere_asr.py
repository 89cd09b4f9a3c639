#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on CohereAsrForConditionalGeneration (vLLM 0.33.0
model_executor/models/cohere_asr.py).

    python bench/oracle/shims_cohere_asr.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: (1) cohere_asr.py imports vllm/transformers_utils/processors/cohere_asr.py, which imports
``torchaudio.functional.melscale_fbanks``, absent from the oracle venv: the stand-in of
shims_torchaudio.py is installed (the processor's filter bank is host-side, never a model tensor).
(2) ``ConvSubsampling.__init__`` turns the mel-bin count, pushed through ``calc_length`` as a tensor
built on the default (meta) device, into the width of its ``out`` Linear with ``int(...)``: a meta
tensor has no value ("Tensor.item() cannot be called on meta tensors").  On a GPU host that tensor
has its value.

What the shim does, and nothing else: it runs ``ConvSubsampling.__init__`` under
``torch.device("cpu")`` (same arithmetic, same parameter shapes and dtype: the model dtype vLLM sets
as the default while building), then puts every parameter and buffer the module made on the meta
device with its shape and dtype unchanged, as the rest of the model is.  Every module, parameter,
buffer and KV cache spec is built by vLLM's own code.  Recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

import shims_torchaudio  # bench/oracle/shims_torchaudio.py (this script's folder)
from _shim import shim_main  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_cohere_asr.py: " + shims_torchaudio.NOTE.split(": ", 1)[1]
        + "; cohere_asr.py::ConvSubsampling.__init__ run under torch.device('cpu') (its int() of "
        "calc_length's tensor needs a value), then its parameters put on the meta device with the same "
        "shapes and dtype")


def install(oracle) -> None:
    import torch

    shims_torchaudio.install(oracle)
    from vllm.model_executor.models import cohere_asr

    original = cohere_asr.ConvSubsampling.__init__

    def init_on_cpu(self, *args, **kwargs):
        with torch.device("cpu"):
            original(self, *args, **kwargs)
        self.to("meta")

    cohere_asr.ConvSubsampling.__init__ = init_on_cpu


if __name__ == "__main__":
    sys.exit(shim_main(install, NOTE))
