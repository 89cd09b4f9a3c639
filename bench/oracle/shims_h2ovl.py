#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on H2OVLChatModel (vLLM 0.33.0 model_executor/models/h2ovl.py).

    python bench/oracle/shims_h2ovl.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: H2OVL checkpoints' config has ``model_type`` "h2ovl_chat", whose config class
(``configuration_h2ovl_chat.py::H2OVLChatConfig``, a subclass of InternVL's
``InternVLChatConfig``) ships as remote code; vLLM 0.33.0 no longer registers a copy of it
(earlier releases had transformers_utils/configs/h2ovl.py), transformers 5.20 does not know the
type and the oracle does not run remote code.  On a GPU host the user passes
``--trust-remote-code`` and the remote class loads.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` stand-ins
for "h2ovl_chat" and its vision sub-config type "intern_vit_6b" that build the attributes vLLM's
internvl.py / h2ovl.py read, as bench/oracle/remote_code_standins.py's ``internvl_chat`` does:
``vision_config`` as a config object, ``llm_config`` as the AutoConfig of its model_type (also
exposed as ``text_config``), and the top-level image keys (select_layer, force_image_size,
downsample_ratio, dynamic_image_size, use_thumbnail, ps_version, min/max_dynamic_patch,
use_msac, template) as attributes.  It allocates nothing; every module, parameter, buffer and
KV cache spec is built by vLLM's own code.  The stand-in is recorded in the fixture's
``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_h2ovl.py: model_type h2ovl_chat (and its vision type intern_vit_6b) "
        "registered with transformers' AutoConfig as stand-ins for the checkpoint's remote "
        "configuration_h2ovl_chat.py::H2OVLChatConfig: vision_config as a config object, llm_config "
        "as the AutoConfig of its model_type (= text_config), the top-level image keys as attributes; "
        "no tensor is created by the shim")

_IMAGE_KEYS = ("select_layer", "force_image_size", "downsample_ratio", "template", "dynamic_image_size",
               "use_thumbnail", "ps_version", "min_dynamic_patch", "max_dynamic_patch", "use_msac")


def install() -> None:
    from transformers import AutoConfig, PretrainedConfig

    class InternVisionConfig(PretrainedConfig):
        model_type = "intern_vit_6b"

    class H2OVLChatConfig(PretrainedConfig):
        model_type = "h2ovl_chat"
        is_composition = True

        def __init__(self, vision_config=None, llm_config=None, **kw):
            vision_config = {k: v for k, v in (vision_config or {}).items() if k != "auto_map"}
            llm_config = dict(llm_config or {})
            self.vision_config = InternVisionConfig(**vision_config)
            self.llm_config = AutoConfig.for_model(llm_config.pop("model_type", "qwen2"), **llm_config)
            self.text_config = self.llm_config
            for k in _IMAGE_KEYS:
                if k in kw:
                    setattr(self, k, kw.pop(k))
            super().__init__(**kw)

    AutoConfig.register("intern_vit_6b", InternVisionConfig, exist_ok=True)
    AutoConfig.register("h2ovl_chat", H2OVLChatConfig, exist_ok=True)


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
