#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on VoxtralRealtimeGeneration (vLLM 0.33.0
model_executor/models/voxtral_realtime.py).

    python bench/oracle/shims_voxtral_realtime.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: ``VoxtralRealtimeGeneration.__init__`` reads the number of streaming delay tokens from the
checkpoint's Mistral tokenizer (``self.tokenizer.instruct.audio_encoder.audio_config.
get_num_delay_tokens()``, tekken.json's audio settings); the oracle holds config.json only and
builds with ``skip_tokenizer_init``, so vLLM's ``cached_tokenizer_from_config`` answers None.

What the shim does, and nothing else: where vLLM's voxtral.py asks for the tokenizer and gets
None, it gets a stand-in whose only answer is that delay count (6: mistral_common's
``get_num_delay_tokens`` for the published 480 ms transcription delay at 80 ms a token).  The
count is stored as an int (``n_delay_tokens``); no module, parameter, buffer or KV cache spec
depends on it, and the shim creates no tensor.  The stand-in is recorded in the fixture's
``assumptions``.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

#: mistral_common AudioConfig.get_num_delay_tokens() for transcription_delay_ms 480 (80 ms a token)
DELAY_TOKENS = 6

NOTE = ("shim bench/oracle/shims_voxtral_realtime.py: vLLM's voxtral.py tokenizer (None without tokenizer "
        "files) replaced by a stand-in answering only instruct.audio_encoder.audio_config.get_num_delay_tokens() "
        f"= {DELAY_TOKENS} (480 ms transcription delay), the int VoxtralRealtimeGeneration.__init__ stores; "
        "no tensor is created by the shim")


def install_tokenizer_standin(_oracle: object) -> None:
    """voxtral.py's ``cached_tokenizer_from_config``: the stand-in where vLLM answers None."""
    import vllm.model_executor.models.voxtral as voxtral

    audio_config = SimpleNamespace(get_num_delay_tokens=lambda *_a, **_k: DELAY_TOKENS)
    standin = SimpleNamespace(instruct=SimpleNamespace(audio_encoder=SimpleNamespace(audio_config=audio_config)))
    original = voxtral.cached_tokenizer_from_config

    def tokenizer_or_standin(model_config: object, **kwargs: object) -> object:
        found = original(model_config, **kwargs)
        return standin if found is None else found

    voxtral.cached_tokenizer_from_config = tokenizer_or_standin


if __name__ == "__main__":
    sys.exit(shim_main(install_tokenizer_standin, NOTE))
