#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Ernie4_5_VLMoeForConditionalGeneration (ERNIE-4.5-VL; vLLM 0.33.0
model_executor/models/ernie45_vl.py, ernie45_vl_moe.py).

    python bench/oracle/shims_ernie45_vl.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: the ``-PT`` checkpoints' config has ``model_type`` "ernie4_5_moe_vl", whose config class
(``configuration_ernie_45t_vl.py::Ernie4_5_VLMoEConfig``, ``auto_map``) ships as remote code, loaded on
a GPU host with ``--trust-remote-code``; vLLM 0.33.0 has no copy of it, transformers 5.20 does not know
the type (its own ``ernie4_5_vl_moe`` is the ``-HF`` layout, with text_config / vision_config, that
vLLM's class does not read) and the oracle does not run remote code.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in for
"ernie4_5_moe_vl" that keeps what the published class keeps and vLLM reads: every top-level key as an
attribute (the MoE lists ``moe_num_experts`` / ``moe_intermediate_size`` / ``moe_layer_start_index`` /
``moe_layer_end_index`` as lists, ``pixel_hidden_size``, ``spatial_conv_size``, ``im_patch_id``, ...) and
``vision_config`` as a config object (the published ``DFNRopeVisionTransformerConfig``: depth, embed_dim,
hidden_size, mlp_ratio, num_heads, in_channels, patch_size, spatial_merge_size).  It allocates nothing;
every module, parameter, buffer and KV cache spec is built by vLLM's own code.  The stand-in is recorded
in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_ernie45_vl.py: model_type ernie4_5_moe_vl registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote configuration_ernie_45t_vl.py::Ernie4_5_VLMoEConfig: "
        "top-level keys as attributes (MoE lists kept as lists), vision_config as a config object "
        "(DFNRopeVisionTransformerConfig's keys); no tensor is created by the shim")


def register_ernie45_vl_standin(_oracle: object) -> None:
    """Stand-ins for Ernie4_5_VLMoEConfig and its DFNRope vision sub-config, as AutoConfig for the type."""
    from transformers import AutoConfig, PretrainedConfig

    class DFNRopeVisionTransformerConfig(PretrainedConfig):
        model_type = "DFNRope_vision_transformer"

        def __init__(self, depth=32, embed_dim=1280, hidden_size=3584, hidden_act="quick_gelu", mlp_ratio=4,
                     num_heads=16, in_channels=3, patch_size=14, spatial_merge_size=2, **kw):
            self.depth, self.embed_dim, self.hidden_size, self.hidden_act = depth, embed_dim, hidden_size, hidden_act
            self.mlp_ratio, self.num_heads, self.in_channels = mlp_ratio, num_heads, in_channels
            self.patch_size, self.spatial_merge_size = patch_size, spatial_merge_size
            super().__init__(**kw)

    class Ernie4_5_VLMoEConfig(PretrainedConfig):
        model_type = "ernie4_5_moe_vl"
        sub_configs = {"vision_config": DFNRopeVisionTransformerConfig}

        def __init__(self, vision_config=None, **kw):
            self.vision_config = vision_config if isinstance(vision_config, PretrainedConfig) \
                else DFNRopeVisionTransformerConfig(**(vision_config or {}))
            tie = kw.pop("tie_word_embeddings", True)
            own = {k: kw.pop(k) for k in list(kw) if k not in _BASE_KEYS}
            super().__init__(tie_word_embeddings=tie, **kw)
            for k, v in own.items():
                setattr(self, k, v)

    AutoConfig.register("ernie4_5_moe_vl", Ernie4_5_VLMoEConfig, exist_ok=True)


#: keys PretrainedConfig itself takes (the rest become plain attributes)
_BASE_KEYS = frozenset({"architectures", "torch_dtype", "dtype", "bos_token_id", "eos_token_id", "pad_token_id",
                        "return_dict", "output_hidden_states", "name_or_path", "transformers_version"})


if __name__ == "__main__":
    sys.exit(shim_main(register_ernie45_vl_standin, NOTE))
