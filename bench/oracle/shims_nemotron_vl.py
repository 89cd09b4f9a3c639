#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on LlamaNemotronVLModel (vLLM 0.33.0
model_executor/models/nemotron_vl.py::LlamaNemotronVLForEmbedding).

    python bench/oracle/shims_nemotron_vl.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: nvidia/llama-nemotron-embed-vl-* configs have ``model_type`` "llama_nemotron_vl", whose config
class (``LlamaNemotronVLConfig``, with ``LlamaBidirectionalConfig`` for its ``llm_config``) ships as
remote code; neither vLLM 0.33.0 nor transformers 5.20 registers it and the oracle does not run
remote code.  On a GPU host the user passes ``--trust-remote-code`` and the remote class loads.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for "llama_nemotron_vl" that builds what nemotron_vl.py and vLLM's
model_executor/models/config.py::LlamaNemotronVLConfig read: ``vision_config`` as a
SiglipVisionConfig, ``llm_config`` as the AutoConfig of its model_type (llama, keeping its
``architectures`` and ``pooling``; also exposed as ``text_config``), and the top-level keys
(select_layer, force_image_size, downsample_ratio, pooling, tiling keys, img_context_token_id) as
attributes.  It allocates nothing; every module, parameter, buffer and KV cache spec is built by
vLLM's own code.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_nemotron_vl.py: model_type llama_nemotron_vl registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote LlamaNemotronVLConfig: vision_config as a "
        "SiglipVisionConfig, llm_config as the AutoConfig of its model_type (= text_config), the top-level keys "
        "as attributes; no tensor is created by the shim")


def install() -> None:
    from transformers import AutoConfig, PretrainedConfig, SiglipVisionConfig

    class LlamaNemotronVLConfig(PretrainedConfig):
        model_type = "llama_nemotron_vl"
        is_composition = True

        def __init__(self, vision_config=None, llm_config=None, **kw):
            vision_config = {k: v for k, v in (vision_config or {}).items() if k not in ("auto_map", "model_type")}
            llm_config = {k: v for k, v in (llm_config or {}).items() if k != "auto_map"}
            self.vision_config = SiglipVisionConfig(**vision_config)
            self.llm_config = AutoConfig.for_model(llm_config.pop("model_type", "llama"), **llm_config)
            self.text_config = self.llm_config
            extra = {k: kw.pop(k) for k in list(kw) if k not in ("architectures", "torch_dtype", "dtype",
                                                                 "transformers_version", "vocab_size")}
            super().__init__(**kw)
            for k, v in extra.items():
                setattr(self, k, v)

    AutoConfig.register("llama_nemotron_vl", LlamaNemotronVLConfig, exist_ok=True)


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
