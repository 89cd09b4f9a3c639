#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on MossAudioModel (vLLM 0.33.0 model_executor/models/moss_audio.py).

    python bench/oracle/shims_moss_audio.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: MOSS-Audio checkpoints' config has ``model_type`` "moss_audio", whose config class ships with
the checkpoint as remote code; vLLM 0.33.0 does not put "moss_audio" in its config registry,
transformers 5.20 does not know the type, and the oracle does not run remote code.  vLLM's own
``moss_audio.py::MossAudioConfig`` is not a loadable stand-in (transformers' ``from_dict`` cannot
log it: its ``audio_config`` is a dataclass), and vLLM does not need it to be: ``MossAudioModel.
__init__`` and ``MossAudioProcessingInfo.get_hf_config`` convert whatever config they get into it from
its ``audio_config``, ``language_config``, ``adapter_hidden_size``, ``ignore_index`` and
``deepstack_num_inject_layers``.

What the shim does, and nothing else: it registers with transformers' ``AutoConfig`` for
"moss_audio" a stand-in for the remote class that holds exactly those attributes (``audio_config``
as the config.json dict, ``language_config`` as a Qwen3Config, which ``get_text_config`` returns, as
vLLM's MossAudioConfig does).  vLLM then builds its own MossAudioConfig from it.  It allocates
nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.  Recorded in
the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_moss_audio.py: model_type moss_audio registered with transformers' AutoConfig as a "
        "stand-in for the checkpoint's remote config class (audio_config as the config.json dict, language_config "
        "as a Qwen3Config returned by get_text_config, adapter_hidden_size, ignore_index, "
        "deepstack_num_inject_layers), which MossAudioModel converts into vLLM's own moss_audio.py::MossAudioConfig; "
        "no tensor is created by the shim")


def register_moss_audio_standin(_oracle: object) -> None:
    from transformers import AutoConfig, PretrainedConfig, Qwen3Config

    class MossAudioRemoteConfig(PretrainedConfig):
        model_type = "moss_audio"

        def __init__(self, audio_config=None, language_config=None, adapter_hidden_size=8192, ignore_index=-100,
                     deepstack_num_inject_layers=None, **kwargs):
            self.audio_config = dict(audio_config or {})
            self.language_config = (language_config if isinstance(language_config, Qwen3Config)
                                    else Qwen3Config(**(language_config or {})))
            self.adapter_hidden_size = adapter_hidden_size
            self.ignore_index = ignore_index
            self.deepstack_num_inject_layers = deepstack_num_inject_layers
            super().__init__(**kwargs)

        def get_text_config(self, decoder: bool = False, encoder: bool = False) -> Qwen3Config:
            return self.language_config

    AutoConfig.register("moss_audio", MossAudioRemoteConfig, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(register_moss_audio_standin, NOTE))
