#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on DeepseekVLV2ForCausalLM / DeepseekOCRForCausalLM (vLLM 0.33.0
vllm/model_executor/models/deepseek_vl2.py, deepseek_ocr.py).

    python bench/oracle/shims_deepseek_vl2.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: both models' ``__init__`` look the image placeholder up in the tokenizer
(``cached_tokenizer_from_config(model_config).vocab["<image>"]``), and the oracle runs with
``skip_tokenizer_init`` on a config-only directory, so the tokenizer is ``None``; DeepSeek-VL2's
vision tower is ``timm.create_model("vit_so400m_patch14_siglip_384.webli", ...)``, and timm is not
in the oracle's venv.

What the shim does, and nothing else:

* ``cached_tokenizer_from_config`` in those two model modules returns a stand-in whose ``vocab``
  maps ``"<image>"`` to the text config's ``vocab_size - 1`` (the id only routes image
  embeddings at run time; no tensor depends on it);
* when ``ORACLE_TIMM_PATH`` names a directory, it is put first on ``sys.path`` (install timm there
  with ``pip install --no-deps --target DIR timm==1.0.31``; the fixtures were made with 1.0.31).
  vLLM's own code then builds the timm ViT (on CPU, then moved to meta, as its ``on_meta`` branch does).

Why it does not change the figures: the parameters, buffers and KV cache specs are built by the same
vLLM code; the placeholder id is stored as an int attribute only.  The stand-in is recorded in the
fixture's ``assumptions``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
import types

from _shim import load_oracle, run_oracle, timm_from_env  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_deepseek_vl2.py: cached_tokenizer_from_config in deepseek_vl2 / deepseek_ocr "
        "returns a stand-in whose vocab maps '<image>' to vocab_size - 1 (the oracle has no tokenizer; the id "
        "is an int attribute, no tensor depends on it); timm {timm} from ORACLE_TIMM_PATH builds DeepSeek-VL2's "
        "ViT through vLLM's own _init_vision_module")

_MODULES = ("vllm.model_executor.models.deepseek_vl2", "vllm.model_executor.models.deepseek_ocr")


def _image_token_id(config_path: str) -> int:
    path = os.path.join(config_path, "config.json") if os.path.isdir(config_path) else config_path
    raw = json.load(open(path))
    text = raw.get("language_config") or raw.get("text_config") or raw
    return int(text.get("vocab_size", 1)) - 1


class _Patcher(importlib.abc.MetaPathFinder):
    """After one of the two model modules is executed, replace its tokenizer lookup."""

    def __init__(self, image_id: int) -> None:
        self.image_id = image_id

    def find_spec(self, name, path, target=None):  # noqa: ANN001
        if name not in _MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        loader, image_id = spec.loader, self.image_id

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):  # noqa: ANN001
                return loader.create_module(s)

            def exec_module(self, module: types.ModuleType) -> None:
                loader.exec_module(module)
                stub = types.SimpleNamespace(vocab={"<image>": image_id})
                module.cached_tokenizer_from_config = lambda *a, **k: stub

        spec.loader = _Loader()
        return spec


def main() -> int:
    oracle_path, config_path = sys.argv[1], sys.argv[2]
    version = timm_from_env()
    oracle = load_oracle(oracle_path)
    sys.meta_path.insert(0, _Patcher(_image_token_id(config_path)))
    oracle.ASSUMPTIONS.append(NOTE.format(timm=version))
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
