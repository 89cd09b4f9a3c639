#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on MolmoForCausalLM (Molmo-7B-D / 7B-O / 72B; vLLM 0.33.0
model_executor/models/molmo.py).

    python bench/oracle/shims_molmo.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: Molmo checkpoints' config has ``model_type`` "molmo", whose config class
(``config_molmo.py::MolmoConfig``, ``auto_map``) ships as remote code, loaded on a GPU host with
``--trust-remote-code``; vLLM 0.33.0 has no copy of it, transformers 5.20 does not know the type and
the oracle does not run remote code.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in for
"molmo" that keeps, as the published class does, every key of the config as an attribute (vLLM's
molmo.py reads ``embedding_size``, ``qkv_bias``, ``attention_layer_norm``, ``norm_after``,
``layer_norm_type``, ``layer_norm_eps``, ``weight_tying``; the vision backbone is vLLM's own fixed
``VisionBackboneConfig``).  It allocates nothing; every module, parameter, buffer and KV cache spec is
built by vLLM's own code.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_molmo.py: model_type molmo registered with transformers' AutoConfig as a "
        "stand-in for the checkpoint's remote config_molmo.py::MolmoConfig: every config key as an attribute; "
        "no tensor is created by the shim")

#: keys PretrainedConfig itself takes (the rest become plain attributes)
_BASE_KEYS = frozenset({"architectures", "torch_dtype", "dtype", "bos_token_id", "eos_token_id", "pad_token_id",
                        "tie_word_embeddings", "return_dict", "name_or_path", "transformers_version"})


def register_molmo_standin(_oracle: object) -> None:
    """A stand-in MolmoConfig (the published class's attributes) as AutoConfig for "molmo"."""
    from transformers import AutoConfig, PretrainedConfig

    class MolmoConfig(PretrainedConfig):
        model_type = "molmo"

        def __init__(self, **kw):
            own = {k: kw.pop(k) for k in list(kw) if k not in _BASE_KEYS}
            kw.setdefault("tie_word_embeddings", False)
            super().__init__(**kw)
            for k, v in own.items():
                setattr(self, k, v)

    AutoConfig.register("molmo", MolmoConfig, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_molmo_standin, NOTE))
