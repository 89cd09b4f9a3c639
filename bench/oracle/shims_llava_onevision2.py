#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on LlavaOnevision2ForConditionalGeneration (vLLM 0.33.0
vllm/model_executor/models/llava_onevision2.py).

    python bench/oracle/shims_llava_onevision2.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: LLaVA-OneVision-2 checkpoints' config has ``model_type`` "llava_onevision2", whose config
class ships as remote code (configuration_llava_onevision2.py: ``LlavaOnevision2Config`` with an
``onevision_encoder`` ``vision_config`` and a ``text_config`` resolved through transformers'
``CONFIG_MAPPING`` by its own model_type, Qwen3 by default); vLLM 0.33.0 registers no copy of it,
transformers 5.20 does not know the type and the oracle does not run remote code.  On a GPU host
the user passes ``--trust-remote-code`` and the remote class loads.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for "llava_onevision2" that, as the remote class does, builds ``vision_config`` as a config object
holding the file's keys and ``text_config`` as the transformers config class of its model_type, and
keeps ``tie_word_embeddings`` False unless the file says otherwise (the remote class's default).
It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_llava_onevision2.py: model_type llava_onevision2 registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote configuration_llava_onevision2.py (vision_config a "
        "config object, text_config the config class of its model_type); no tensor is created by the shim")


def install() -> None:
    from transformers import CONFIG_MAPPING, AutoConfig, PretrainedConfig

    class OnevisionEncoderStandIn(PretrainedConfig):
        model_type = "onevision_encoder"

    class LlavaOnevision2Config(PretrainedConfig):
        model_type = "llava_onevision2"

        def __init__(self, vision_config=None, text_config=None, tie_word_embeddings=False, **kw):
            vc = {k: v for k, v in (vision_config or {}).items() if k != "model_type"}
            self.vision_config = OnevisionEncoderStandIn(**vc)
            tc = dict(text_config or {})
            self.text_config = CONFIG_MAPPING[tc.pop("model_type", "qwen3")](**tc)
            super().__init__(tie_word_embeddings=tie_word_embeddings, **kw)

    for name, cls in (("onevision_encoder", OnevisionEncoderStandIn), ("llava_onevision2", LlavaOnevision2Config)):
        AutoConfig.register(name, cls, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: install(), NOTE))
