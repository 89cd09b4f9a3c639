#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Molmo2ForConditionalGeneration (Molmo2, Molmo2-ER; vLLM 0.33.0
model_executor/models/molmo2.py).

    python bench/oracle/shims_molmo2.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: Molmo2 checkpoints' config has ``model_type`` "molmo2", whose config class
(``configuration_molmo2.py::Molmo2Config`` with ``text_config`` / ``vit_config`` / ``adapter_config``
sub-configs, ``auto_map``) ships as remote code, loaded on a GPU host with ``--trust-remote-code``;
vLLM 0.33.0 has no copy of it (molmo2.py reads the sub-configs by attribute into its own
TextConfig / VitConfig / AdapterConfig dataclasses), transformers 5.20 does not know the type and the
oracle does not run remote code.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in for
"molmo2" whose three sub-configs are config objects carrying their keys as attributes (``text_config``
also the ``rope_theta`` vLLM turns into ``rope_parameters``), and the top-level token ids as attributes.
It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  The
stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_molmo2.py: model_type molmo2 registered with transformers' AutoConfig as a "
        "stand-in for the checkpoint's remote configuration_molmo2.py::Molmo2Config: text_config / vit_config / "
        "adapter_config as config objects with their keys as attributes, top-level keys as attributes; no tensor "
        "is created by the shim")

#: keys PretrainedConfig itself takes (the rest become plain attributes)
_BASE_KEYS = frozenset({"architectures", "torch_dtype", "dtype", "bos_token_id", "eos_token_id", "pad_token_id",
                        "tie_word_embeddings", "return_dict", "name_or_path", "transformers_version", "rope_theta",
                        "rope_scaling", "max_position_embeddings"})


def register_molmo2_standin(_oracle: object) -> None:
    """Stand-ins for Molmo2Config and its three sub-configs, as AutoConfig for "molmo2"."""
    from transformers import AutoConfig, PretrainedConfig

    def keeping(model_type: str) -> type:
        class Sub(PretrainedConfig):
            def __init__(self, **kw):
                own = {k: kw.pop(k) for k in list(kw) if k not in _BASE_KEYS}
                super().__init__(**kw)
                for k, v in own.items():
                    setattr(self, k, v)

        Sub.model_type = model_type
        return Sub

    text_cls, vit_cls, adapter_cls = keeping("molmo2_text"), keeping("molmo2_vit"), keeping("molmo2_adapter")

    class Molmo2Config(PretrainedConfig):
        model_type = "molmo2"
        sub_configs = {"text_config": text_cls, "vit_config": vit_cls, "adapter_config": adapter_cls}

        def __init__(self, text_config=None, vit_config=None, adapter_config=None, **kw):
            for name, value in (("text_config", text_config), ("vit_config", vit_config),
                                ("adapter_config", adapter_config)):
                cls = self.sub_configs[name]
                setattr(self, name, value if isinstance(value, PretrainedConfig) else cls(**(value or {})))
            own = {k: kw.pop(k) for k in list(kw) if k not in _BASE_KEYS}
            kw.setdefault("tie_word_embeddings", False)
            super().__init__(**kw)
            for k, v in own.items():
                setattr(self, k, v)

    AutoConfig.register("molmo2", Molmo2Config, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_molmo2_standin, NOTE))
