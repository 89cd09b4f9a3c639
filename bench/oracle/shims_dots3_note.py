#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Dots3NoteForCausalLM (dots3-note; vLLM 0.33.0
vllm/models/dots3_note/nvidia/multimodal.py).

    python bench/oracle/shims_dots3_note.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: ``Dots3NoteForCausalLM.__init__`` reads the checkpoint's ``added_tokens.json`` (through
``get_hf_file_to_dict``) for the id of ``<|imgpad|>`` and raises "NOTE tokenizer is missing the image
padding token" without it; the oracle's config registry holds ``config.json`` only.

What the shim does, and nothing else: while the model is built, ``get_hf_file_to_dict`` answers
``added_tokens.json`` with ``{"<|imgpad|>": image_token_id}`` from the config (the id only becomes
``config.image_token_index``, which no tensor shape or KV cache spec reads); every other file is vLLM's own
lookup (``load_note_config_section`` reads ``vision_config`` / ``audio_config`` from the given config.json).
Recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_dots3_note.py: get_hf_file_to_dict answers added_tokens.json (absent: the oracle "
        "holds config.json only) with {'<|imgpad|>': image_token_id from config.json}; the id feeds "
        "config.image_token_index only, no tensor or KV cache spec")


def install(oracle) -> None:
    import vllm.models.dots3_note.nvidia.multimodal as mm

    original = mm.get_hf_file_to_dict

    def get_hf_file_to_dict(name, model, revision=None):
        if name == "added_tokens.json":
            config = original("config.json", model, revision) or {}
            return {mm.IMAGE_PAD: int(config.get("image_token_id", 0))}
        return original(name, model, revision)

    mm.get_hf_file_to_dict = get_hf_file_to_dict
    oracle.ASSUMPTIONS.append(NOTE)


def main() -> int:
    return shim_main(install)


if __name__ == "__main__":
    sys.exit(main())
