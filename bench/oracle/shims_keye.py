#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on KeyeForConditionalGeneration / KeyeVL1_5ForConditionalGeneration
(vLLM 0.33.0 model_executor/models/keye.py, keye_vl1_5.py).

    python bench/oracle/shims_keye.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: Keye checkpoints' config has ``model_type`` "Keye", whose config class ships as remote code
(configuration_keye.py); vLLM 0.33.0 registers no copy of it, transformers 5.20 does not know the
type and the oracle does not run remote code.  On a GPU host the user passes
``--trust-remote-code`` and the remote class loads.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for "Keye" that keeps the top-level (Qwen3 text) keys as attributes, as the remote class does, and
builds ``vision_config`` as a config object (what keye.py reads: hidden_size, image_size,
patch_size, num_channels, num_attention_heads, num_hidden_layers, intermediate_size,
layer_norm_eps, hidden_act, spatial_merge_size).  It allocates nothing; every module, parameter,
buffer and KV cache spec is built by vLLM's own code.  The stand-in is recorded in the fixture's
``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_keye.py: model_type Keye registered with transformers' AutoConfig as a "
        "stand-in for the checkpoint's remote configuration_keye.py: top-level text keys as attributes, "
        "vision_config as a config object; no tensor is created by the shim")


def install() -> None:
    from transformers import AutoConfig, PretrainedConfig

    class KeyeVisionStandIn(PretrainedConfig):
        model_type = "keye_vision_standin"

    class KeyeConfig(PretrainedConfig):
        model_type = "Keye"

        def __init__(self, vision_config=None, **kw):
            vc = {k: v for k, v in (vision_config or {}).items() if k != "model_type"}
            self.vision_config = KeyeVisionStandIn(**vc)
            super().__init__(**kw)

    for name, cls in (("keye_vision_standin", KeyeVisionStandIn), ("Keye", KeyeConfig)):
        AutoConfig.register(name, cls, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: install(), NOTE))
