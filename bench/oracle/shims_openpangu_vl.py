#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on OpenPanguVLForConditionalGeneration (vLLM 0.33.0
model_executor/models/openpangu_vl.py).

    python bench/oracle/shims_openpangu_vl.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: openPangu-VL checkpoints ship their configuration and processor as remote code
(``model_type`` "openpangu_vl", ``auto_map``); vLLM 0.33.0 registers no copy of either,
transformers 5.20 does not know the type, and the oracle runs no remote code and has only
``config.json`` (no preprocessor_config.json, no processor class).  On a GPU host the user passes
``--trust-remote-code`` and the remote classes load.  Two things stop the model here:

* the config: transformers cannot parse model_type "openpangu_vl";
* ``OpenPanguVLForConditionalGeneration._parse_preprocess_params`` (called from ``__init__``)
  builds the multimodal processor and reads five scalars off its ``image_processor``
  (``do_rescale``, ``rescale_factor``, ``do_normalize``, ``image_mean``, ``image_std``) for the
  on-device normalisation; ``OpenPanguVLProcessingInfo.get_hf_processor`` asks for the remote
  processor.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for "openpangu_vl" that keeps the top-level (PanguEmbedded text) keys as attributes, as the
remote class does, and builds ``vision_config`` as a config object (what openpangu_vl.py reads:
hidden_size, num_heads, depth, intermediate_size, hidden_act, patch_size, temporal_patch_size,
in_channels, spatial_merge_size, window_size, fullatt_block_indexes, out_hidden_size,
mm_unit_vision_select_layer, rms_norm_eps); and for this model type only, ``MULTIMODAL_REGISTRY.create_processor`` (which would need the
remote processor and a tokenizer the oracle does not load) answers with an object whose
``info.get_hf_processor().image_processor`` is transformers' ``Qwen2VLImageProcessor`` with its class
defaults (only the five scalars above are read, and they set no tensor).  It allocates nothing; every module, parameter, buffer and KV cache spec is
built by vLLM's own code.  Both stand-ins are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys
import types

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_openpangu_vl.py: model_type openpangu_vl registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote configuration (top-level text keys as "
        "attributes, vision_config as a config object); MULTIMODAL_REGISTRY.create_processor, for this "
        "model type, answers with transformers' Qwen2VLImageProcessor defaults as image_processor (the model reads "
        "five normalisation scalars off it); no tensor is created by the shim")


def install(_oracle: object) -> None:
    from transformers import AutoConfig, PretrainedConfig
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    class OpenPanguVLVisionStandIn(PretrainedConfig):
        model_type = "openpangu_vl_vision_standin"

    class OpenPanguVLConfig(PretrainedConfig):
        model_type = "openpangu_vl"

        def __init__(self, vision_config=None, **kw):
            vc = {k: v for k, v in (vision_config or {}).items() if k != "model_type"}
            self.vision_config = OpenPanguVLVisionStandIn(**vc)
            super().__init__(**kw)

    for name, cls in (("openpangu_vl_vision_standin", OpenPanguVLVisionStandIn), ("openpangu_vl", OpenPanguVLConfig)):
        AutoConfig.register(name, cls, exist_ok=True)

    from vllm.multimodal import MULTIMODAL_REGISTRY

    original = MULTIMODAL_REGISTRY.create_processor

    def create_processor(model_config, *, tokenizer=None):
        if getattr(model_config.hf_config, "model_type", None) != "openpangu_vl":
            return original(model_config, tokenizer=tokenizer)
        # what _parse_preprocess_params reads: .info.get_hf_processor().image_processor
        hf_processor = types.SimpleNamespace(image_processor=Qwen2VLImageProcessor())
        return types.SimpleNamespace(info=types.SimpleNamespace(get_hf_processor=lambda **_: hf_processor))

    MULTIMODAL_REGISTRY.create_processor = create_processor


if __name__ == "__main__":
    sys.exit(shim_main(install, NOTE))
