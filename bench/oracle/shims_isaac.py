#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on IsaacForConditionalGeneration (vLLM 0.33.0
model_executor/models/isaac.py).

    python bench/oracle/shims_isaac.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: IsaacForConditionalGeneration.__init__ resolves its image token id by loading the tokenizer
(isaac.py::_resolve_vision_token_id encodes ``config.vision_token``); the oracle's config registry
holds config.json only, so there is no tokenizer to load.

What the shim does, and nothing else: right after the oracle's platform emulation it replaces
``isaac._resolve_vision_token_id`` by one that answers 151655 (Qwen's ``<|image_pad|>``; any id would
do: it only marks placeholder positions and sizes no tensor).  Every module, parameter, buffer and KV
cache spec is built by vLLM's own code.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_isaac.py: isaac._resolve_vision_token_id (a tokenizer lookup of "
        "config.vision_token) answers 151655 without a tokenizer; no tensor is created by the shim")


def install() -> None:
    import vllm.model_executor.models.isaac as isaac

    isaac._resolve_vision_token_id = lambda _model_config, _token: 151655


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: install(), NOTE))
