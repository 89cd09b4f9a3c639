#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on OpenCUAForConditionalGeneration (vLLM 0.33.0 model_executor/models/opencua.py).

    python bench/oracle/shims_opencua.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: OpenCUA checkpoints' config has ``model_type`` "opencua", whose config class
(``configuration_opencua.py::OpenCUAConfig``) ships as remote code, loaded on a GPU host with
``--trust-remote-code``; vLLM 0.33.0 has no copy of it, transformers 5.20 does not know the type
and the oracle does not run remote code.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for "opencua" that builds what the published class builds and vLLM's opencua.py reads:
``vision_config`` as transformers' ``Qwen2_5_VLVisionConfig``, ``text_config`` as ``Qwen2Config``,
``media_placeholder_token_id`` / ``ignore_index`` as attributes.  It allocates nothing; every
module, parameter, buffer and KV cache spec is built by vLLM's own code.  The stand-in is
recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_opencua.py: model_type opencua registered with transformers' AutoConfig "
        "as a stand-in for the checkpoint's remote configuration_opencua.py::OpenCUAConfig: vision_config "
        "as Qwen2_5_VLVisionConfig, text_config as Qwen2Config, media_placeholder_token_id and ignore_index "
        "as attributes; no tensor is created by the shim")


def register_opencua_standin(_oracle: object) -> None:
    """A stand-in OpenCUAConfig (the published class's sub-configs) as AutoConfig for "opencua"."""
    from transformers import AutoConfig, PretrainedConfig, Qwen2Config
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig

    class OpenCUAConfig(PretrainedConfig):
        model_type = "opencua"
        sub_configs = {"vision_config": Qwen2_5_VLVisionConfig, "text_config": Qwen2Config}

        def __init__(self, vision_config=None, text_config=None, ignore_index=-100,
                     media_placeholder_token_id=151664, pad_token_id=0, **kw):
            self.vision_config = Qwen2_5_VLVisionConfig(**(vision_config or {})) \
                if not isinstance(vision_config, PretrainedConfig) else vision_config
            self.text_config = Qwen2Config(**(text_config or {})) \
                if not isinstance(text_config, PretrainedConfig) else text_config
            self.ignore_index = ignore_index
            self.media_placeholder_token_id = media_placeholder_token_id
            super().__init__(pad_token_id=pad_token_id, **kw)

    AutoConfig.register("opencua", OpenCUAConfig, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_opencua_standin, NOTE))
