#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on NemotronH_Nano_VL_V2 (vLLM 0.33.0
model_executor/models/nano_nemotron_vl.py::NemotronH_Nano_VL_V2, also registered for the
NemotronH_*Omni_Reasoning_V3 architectures).

    python bench/oracle/shims_nano_nemotron_vl.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: the checkpoints' config class (``NemotronH_Nano_VL_V2_Config`` in their configuration.py,
with a remote RADIO config for ``vision_config``) is remote code that neither vLLM 0.33.0 nor
transformers 5.20 registers, and the oracle does not run remote code; and the model's
``__init__`` tokenizes ``<img>``, ``</img>`` and ``<image>`` (``cached_tokenizer_from_config``),
while the oracle has no tokenizer (config.json only).

What the shim does, and nothing else:

* registers with transformers' ``AutoConfig`` a stand-in for the config's model_type that builds
  what nano_nemotron_vl.py reads: ``vision_config`` as a plain config object carrying the JSON's
  keys (``args``, ``preferred_resolution``, ``patch_size``, video keys), ``llm_config`` as the
  AutoConfig of its model_type (nemotron_h; also exposed as ``text_config``), ``sound_config``
  as a plain config object when present, and the top-level keys as attributes;
* ``cached_tokenizer_from_config`` in nano_nemotron_vl returns a stand-in whose ``encode``
  answers ``[0]`` (the ids are stored as int lists only; no tensor depends on them).

It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own
code (RadioModel through ``get_vit_model_from_radio_config``).  The stand-ins are recorded in the
fixture's ``assumptions``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_nano_nemotron_vl.py: the checkpoint's remote NemotronH_Nano_VL_V2_Config "
        "stood in by a config registered with transformers' AutoConfig (vision_config / sound_config as plain "
        "config objects with the JSON's keys, llm_config as the AutoConfig of its model_type = text_config, the "
        "top-level keys as attributes); cached_tokenizer_from_config in nano_nemotron_vl returns a stand-in whose "
        "encode answers [0] (int ids only); no tensor is created by the shim")

_MODULE = "vllm.model_executor.models.nano_nemotron_vl"
_TYPES = ("NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3",
          "NemotronH_Super_Omni_Reasoning_V3")


_BASE_KEYS = ("architectures", "torch_dtype", "dtype", "transformers_version", "vocab_size")


def _patch(module: types.ModuleType) -> None:
    stub = types.SimpleNamespace(encode=lambda *a, **k: [0])
    module.cached_tokenizer_from_config = lambda *a, **k: stub


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # noqa: ANN001
        if name != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        orig = spec.loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            orig(module)
            _patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _config_class(model_type: str) -> type:
    from transformers import AutoConfig, PretrainedConfig

    def plain(d):  # noqa: ANN001, ANN202
        if d is None or isinstance(d, PretrainedConfig):
            return d
        d = {k: v for k, v in d.items() if k not in ("auto_map", "model_type")}
        return PretrainedConfig(**d)

    class NanoNemotronVLConfig(PretrainedConfig):
        is_composition = True

        def __init__(self, vision_config=None, llm_config=None, sound_config=None, **kw):  # noqa: ANN001
            llm = {k: v for k, v in (llm_config or {}).items() if k != "auto_map"}
            self.vision_config = plain(vision_config or {})
            self.sound_config = plain(sound_config)
            self.llm_config = AutoConfig.for_model(llm.pop("model_type", "nemotron_h"), **llm)
            self.text_config = self.llm_config
            base = {k: kw[k] for k in _BASE_KEYS if k in kw}
            super().__init__(**base)
            for k in set(kw) - set(base):
                setattr(self, k, kw[k])  # the top-level keys nano_nemotron_vl.py reads, as attributes

    NanoNemotronVLConfig.model_type = model_type
    return NanoNemotronVLConfig


def install() -> None:
    from transformers import AutoConfig

    for t in _TYPES:
        AutoConfig.register(t, _config_class(t), exist_ok=True)
    if _MODULE in sys.modules:
        _patch(sys.modules[_MODULE])
    else:
        sys.meta_path.insert(0, _Finder())


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
