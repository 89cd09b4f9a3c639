#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on PixtralForConditionalGeneration (vLLM 0.33.0
model_executor/models/pixtral.py), for a config written as vLLM builds it from params.json.

    python bench/oracle/shims_pixtral.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: vLLM serves PixtralForConditionalGeneration only from a Mistral-format checkpoint
(params.json + consolidated.safetensors): ``MistralConfigParser`` (vllm/transformers_utils/config.py)
hands params.json to ``adapt_config_dict`` (vllm/transformers_utils/configs/mistral.py), whose
``_remap_mistral_vision_args`` builds a plain ``PreTrainedConfig`` with ``model_type`` "pixtral",
``architectures`` [PixtralForConditionalGeneration] and two plain ``PreTrainedConfig`` children,
``text_config`` (the remapped decoder keys) and ``vision_config`` (params.json's ``vision_encoder``
as is).  The oracle reads config.json through transformers' ``AutoConfig``, where "pixtral" is
the vision-only ``PixtralVisionConfig``: the two children would stay dicts.

What the shim does, and nothing else: it registers with ``AutoConfig`` a stand-in for the model
type "pixtral" that builds what ``_remap_mistral_vision_args`` builds: ``text_config`` and
``vision_config`` as ``PreTrainedConfig.from_dict`` of their keys, the rest as attributes.  Every
module, parameter, buffer and KV cache spec is built by vLLM's own code; the shim creates no
tensor.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_pixtral.py: model_type pixtral registered with transformers' AutoConfig as "
        "the config vLLM's configs/mistral.py::_remap_mistral_vision_args builds from params.json (text_config "
        "and vision_config as PreTrainedConfig.from_dict of their keys) instead of transformers' vision-only "
        "PixtralVisionConfig; no tensor is created by the shim")


def register_pixtral_remap(_oracle: object) -> None:
    from transformers import AutoConfig, PreTrainedConfig

    class PixtralRemapConfig(PreTrainedConfig):
        model_type = "pixtral"

        def __init__(self, text_config: object = None, vision_config: object = None, **kwargs: object) -> None:
            super().__init__(**kwargs)
            self.text_config = (text_config if isinstance(text_config, PreTrainedConfig)
                                else PreTrainedConfig.from_dict(dict(text_config or {})))
            self.vision_config = (vision_config if isinstance(vision_config, PreTrainedConfig)
                                  else PreTrainedConfig.from_dict(dict(vision_config or {})))

    AutoConfig.register("pixtral", PixtralRemapConfig, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_pixtral_remap, NOTE))
