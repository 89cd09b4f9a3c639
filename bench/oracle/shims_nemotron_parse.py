#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on NemotronParseForConditionalGeneration (vLLM 0.33.0
model_executor/models/nemotron_parse.py).

    python bench/oracle/shims_nemotron_parse.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: Nemotron Parse checkpoints' config has ``model_type`` "nemotron_parse", whose config class
(the checkpoint's remote ``NemotronParseConfig``, which also fetches the remote C-RADIO config for
its ``encoder``) is loaded on a GPU host with ``--trust-remote-code``; vLLM 0.33.0 has no copy of
it, transformers 5.20 does not know the type and the oracle does not run remote code.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` a stand-in
for "nemotron_parse" that builds what the published class builds and vLLM's nemotron_parse.py
reads: ``decoder`` as the published NemotronParseTextConfig (its defaults, e.g. ``encoder_ffn_dim``
4096, ``hidden_size`` = ``d_model``, ``num_attention_heads`` = ``encoder_attention_heads``, and
``max_sequence_length`` copied from the top level), ``encoder`` as a config holding the
checkpoint's encoder keys (``patch_size``, ``args`` for vLLM's RadioConfig), ``image_size``,
``vocab_size``, ``is_encoder_decoder``, ``max_sequence_length``.  It allocates nothing; every
module, parameter, buffer and KV cache spec is built by vLLM's own code.  The stand-in is recorded
in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_nemotron_parse.py: model_type nemotron_parse registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote NemotronParseConfig: decoder as the published "
        "NemotronParseTextConfig (its defaults), encoder as a config holding the checkpoint's encoder keys "
        "(patch_size, args); no tensor is created by the shim")

_TEXT_DEFAULTS = {
    "vocab_size": 250027, "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
    "encoder_attention_heads": 16, "decoder_attention_heads": 16, "decoder_ffn_dim": 4096,
    "encoder_ffn_dim": 4096, "activation_function": "gelu", "scale_embedding": False, "max_sequence_length": 9000,
}


def register_standin(_oracle: object) -> None:
    from transformers import AutoConfig, PretrainedConfig

    class NemotronParseTextConfig(PretrainedConfig):
        model_type = "nemotron_parse_text"

        def __init__(self, **kw):
            own = {k: kw.pop(k, v) for k, v in _TEXT_DEFAULTS.items()}
            super().__init__(**kw)
            for k, v in own.items():
                setattr(self, k, v)
            self.hidden_size = self.d_model
            self.num_attention_heads = self.encoder_attention_heads

    class NemotronParseEncoderConfig(PretrainedConfig):
        model_type = "nemotron_parse_encoder"

        def __init__(self, patch_size=16, max_resolution=2048, args=None, **kw):
            super().__init__(**kw)
            self.patch_size, self.max_resolution, self.args = patch_size, max_resolution, dict(args or {})

    class NemotronParseConfig(PretrainedConfig):
        model_type = "nemotron_parse"

        def __init__(self, encoder=None, decoder=None, image_size=None, is_encoder_decoder=True,
                     max_sequence_length=9000, **kw):
            super().__init__(**kw)
            self.encoder = encoder if isinstance(encoder, PretrainedConfig) else NemotronParseEncoderConfig(**(encoder or {}))
            if not isinstance(decoder, PretrainedConfig):
                decoder = NemotronParseTextConfig(**{**(decoder or {}), "max_sequence_length": max_sequence_length})
            self.decoder = decoder
            self.image_size = image_size or [2048, 1648]
            self.vocab_size = self.decoder.vocab_size
            self.is_encoder_decoder = is_encoder_decoder
            self.max_sequence_length = max_sequence_length

    AutoConfig.register("nemotron_parse", NemotronParseConfig, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_standin, NOTE))
