#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on Ovis2.5 / Ovis2.6 (vLLM 0.33.0
model_executor/models/ovis2_5.py::Ovis2_5, registered for ``Ovis2_5``, ``Ovis2_6ForCausalLM`` and
``Ovis2_6_MoeForCausalLM``).

    python bench/oracle/shims_ovis2_5.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: AIDC-AI/Ovis2.5-* configs have ``model_type`` "ovis2_5" (Ovis2.6: "ovis2_6", "ovis2_6_moe"),
whose config class (``Ovis2_5_Config`` with a ``Siglip2NavitConfig`` for ``vit_config``) ships as
remote code; neither vLLM 0.33.0 nor transformers 5.20 registers it and the oracle does not run
remote code.  On a GPU host the user passes ``--trust-remote-code`` and the remote class loads.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for those model types that builds what ovis2_5.py and siglip2navit.py read: ``llm_config`` as the
AutoConfig of its model_type (qwen3 / qwen3_moe, keeping its ``architectures``; vLLM's
``_CONFIG_ATTRS_MAPPING`` exposes it as ``text_config``), ``vit_config`` as a config of model_type
"siglip2_navit" holding the checkpoint's keys as attributes (the remote ``Siglip2NavitConfig``'s
defaults filled in for keys a file omits), and the top-level keys (``visual_vocab_size``,
``hidden_size``...) as attributes.  It allocates nothing; every module, parameter, buffer and KV
cache spec is built by vLLM's own code.  Second, ``Ovis2_5ProcessingInfo.__init__`` (which loads the
HF processor, i.e. tokenizer and image-processor files a config-only directory lacks, to force its
``extra_special_tokens``) is reduced to ``BaseProcessingInfo.__init__``: vLLM's ModelConfig builds that
object only to ask whether the model takes multimodal inputs.  The stand-in is recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_ovis2_5.py: model_type ovis2_5 / ovis2_6 / ovis2_6_moe registered with "
        "transformers' AutoConfig as a stand-in for the checkpoint's remote Ovis2_5_Config: llm_config as the "
        "AutoConfig of its model_type (also set as text_config), vit_config as a siglip2_navit config of the file's keys "
        "(remote Siglip2NavitConfig defaults for omitted keys), the top-level keys as attributes; "
        "Ovis2_5ProcessingInfo.__init__ reduced to BaseProcessingInfo's (no HF processor warm-up: the config-only "
        "directory has no tokenizer / image processor files); no tensor is created by the shim")

#: the remote configuration_ovis2_5.py::Siglip2NavitConfig.__init__ defaults (a copy of the hub file:
#: Theo-Yim/VLMs Ovis/ovis/model/configuration_ovis2_5.py @ 21e1154e54d164bcdd7d03fc33f8d77b4e062f36)
NAVIT_DEFAULTS = {
    "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_channels": 3, "num_patches": -1, "image_size": 512, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh",
    "layer_norm_eps": 1e-6, "attention_dropout": 0.0, "hidden_stride": 2, "window_size": 112,
    "fullatt_block_indexes": None, "temporal_patch_size": 1, "preserve_original_pe": True, "use_rope": True,
}
DROP = ("auto_map", "_attn_implementation_autoset", "_name_or_path")


def install() -> None:
    from transformers import AutoConfig, PretrainedConfig

    class Siglip2NavitConfig(PretrainedConfig):
        model_type = "siglip2_navit"

        def __init__(self, **kw):
            vals = {**NAVIT_DEFAULTS, **{k: kw.pop(k) for k in list(kw) if k in NAVIT_DEFAULTS}}
            super().__init__(**kw)
            for k, v in vals.items():
                setattr(self, k, v)

    class Ovis2_5Config(PretrainedConfig):
        model_type = "ovis2_5"
        is_composition = True

        def __init__(self, llm_config=None, vit_config=None, visual_vocab_size=65536, hidden_size=None, **kw):
            llm = {k: v for k, v in (llm_config or {}).items() if k not in DROP}
            vit = {k: v for k, v in (vit_config or {}).items() if k not in DROP + ("model_type",)}
            extra = {k: kw.pop(k) for k in list(kw) if k not in ("architectures", "torch_dtype", "dtype",
                                                                 "transformers_version", "vocab_size")}
            super().__init__(**kw)
            self.llm_config = AutoConfig.for_model(llm.pop("model_type", "qwen3"), **llm)
            self.text_config = self.llm_config  # as vLLM's _CONFIG_ATTRS_MAPPING renames it
            self.vit_config = Siglip2NavitConfig(**vit)
            self.visual_vocab_size = visual_vocab_size
            self.hidden_size = hidden_size
            for k, v in extra.items():
                setattr(self, k, v)

    for mt in ("ovis2_5", "ovis2_6", "ovis2_6_moe"):
        # __init__ spelt out: transformers 5 makes a config subclass without its own __init__ a dataclass
        cls = type(f"Ovis{mt[4:]}Config", (Ovis2_5Config,), {"model_type": mt, "__init__": Ovis2_5Config.__init__})
        AutoConfig.register(mt, cls, exist_ok=True)

    # Ovis2_5ProcessingInfo.__init__ builds the HF processor at once (tokenizer + image processor files,
    # which a config-only directory lacks) to force its extra_special_tokens; vLLM's ModelConfig creates
    # that info object only to ask whether the model takes multimodal inputs.  Keep BaseProcessingInfo's
    # __init__ alone: no processor, no tensor, no KV spec depends on it.
    from vllm.model_executor.models import ovis2_5
    from vllm.multimodal.processing import BaseProcessingInfo

    ovis2_5.Ovis2_5ProcessingInfo.__init__ = BaseProcessingInfo.__init__


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
