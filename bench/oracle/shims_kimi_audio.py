#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on MoonshotKimiaForCausalLM (vLLM 0.33.0
model_executor/models/kimi_audio.py::KimiAudioForConditionalGeneration).

    python bench/oracle/shims_kimi_audio.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: a Kimi-Audio checkpoint's ``config.json`` has ``model_type`` "moonshot_kimia", whose config
class (``configuration_moonshot_kimia.py``, a Qwen2Config subclass with the ``kimia_*`` keys)
ships as remote code; vLLM 0.33.0 has no copy of it, transformers 5.20 does not know the type and
the oracle does not run remote code.  And ``KimiAudioWhisperEncoder.__init__`` reads the
checkpoint's ``whisper-large-v3/config.json`` (``WhisperConfig.from_pretrained(model, subfolder=
"whisper-large-v3")``), a second file of the checkpoint folder that the oracle, given one
config.json, does not have.

What the shim does, and nothing else:

* it registers with transformers' ``AutoConfig`` a stand-in for "moonshot_kimia": Qwen2Config
  with ``model_type`` moonshot_kimia, every other key (the ``kimia_*`` ones) kept as an attribute
  as the published class keeps them;
* next to the oracle's copy of config.json it writes ``whisper-large-v3/config.json``: the
  encoder keys of openai/whisper-large-v3's published config (d_model 1280, 32 encoder layers,
  20 heads, FFN 5120, 128 mel bins, 1,500 source positions; its decoder keys too, which the
  encoder does not read).

It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own
code.  Both stand-ins are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import json
import os
import sys
from types import ModuleType

from _shim import after_emulation_setup, load_oracle, run_oracle  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_kimi_audio.py: model_type moonshot_kimia registered with transformers' "
        "AutoConfig as a stand-in for the checkpoint's remote configuration_moonshot_kimia.py (a Qwen2Config "
        "keeping the kimia_* keys as attributes); the checkpoint's whisper-large-v3/config.json (read by "
        "KimiAudioWhisperEncoder) written next to the config as openai/whisper-large-v3's published shape "
        "(d_model 1280, 32 encoder layers, 20 heads, FFN 5120, 128 mel bins, 1500 positions); no tensor is "
        "created by the shim")

#: openai/whisper-large-v3's config.json, its size keys (the encoder's are the ones vLLM reads)
WHISPER_LARGE_V3 = {
    "architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper",
    "d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20, "encoder_ffn_dim": 5120,
    "decoder_layers": 32, "decoder_attention_heads": 20, "decoder_ffn_dim": 5120,
    "num_mel_bins": 128, "max_source_positions": 1500, "max_target_positions": 448,
    "vocab_size": 51866, "activation_function": "gelu", "scale_embedding": False,
    "torch_dtype": "float16",
}


def register_kimia_standin() -> None:
    """A stand-in for the remote moonshot_kimia config class: Qwen2Config under that type."""
    from transformers import AutoConfig, Qwen2Config

    class MoonshotKimiaConfig(Qwen2Config):
        model_type = "moonshot_kimia"

    AutoConfig.register("moonshot_kimia", MoonshotKimiaConfig, exist_ok=True)


def with_whisper_subfolder(oracle: ModuleType) -> None:
    """After the oracle materialises the model folder, add the whisper-large-v3 sub-config."""
    original = oracle.materialize_model_dir

    def materialize(path: str) -> str:
        d = original(path)
        sub = os.path.join(d, "whisper-large-v3")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "config.json"), "w") as f:
            json.dump(WHISPER_LARGE_V3, f)
        return d

    oracle.materialize_model_dir = materialize


def main() -> int:
    oracle_path = sys.argv[1]
    oracle = load_oracle(oracle_path)
    with_whisper_subfolder(oracle)
    after_emulation_setup(oracle, register_kimia_standin)
    oracle.ASSUMPTIONS.append(NOTE)
    return run_oracle(oracle, oracle_path)


if __name__ == "__main__":
    sys.exit(main())
