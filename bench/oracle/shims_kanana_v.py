#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on KananaVForConditionalGeneration (vLLM 0.33.0
vllm/model_executor/models/kanana_v.py).

    python bench/oracle/shims_kanana_v.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

Why: Kanana-V checkpoints' config has ``model_type`` "kanana-1.5-v", whose config class ships as
remote code (configuration_kanana: ``KananaVConfig`` with ``vision_config`` /
``projector_config`` / ``text_config`` sub-configs); vLLM 0.33.0 registers no copy of it,
transformers 5.20 does not know the type and the oracle does not run remote code.  On a GPU host
the user passes ``--trust-remote-code`` and the remote class loads.  And kanana_v.py imports timm
(``LayerNorm2d``, ``RegStage``, ``resample_abs_pos_embed`` for the C-Abstractor), which is not in
the oracle's venv.

What the shim does, and nothing else:

* registers with transformers' ``AutoConfig`` a stand-in for "kanana-1.5-v" that, as the remote
  ``KananaVConfig`` does, builds ``vision_config`` and ``projector_config`` as config objects holding
  the file's keys, and ``text_config`` as a ``LlamaConfig`` (the remote ``KananaLanguageConfig`` is a
  LlamaConfig subclass with nothing added);
* when ``ORACLE_TIMM_PATH`` names a directory, puts it first on ``sys.path`` (install timm there
  with ``pip install --no-deps --target DIR timm==1.0.31``; the fixtures were made with 1.0.31) and
  records the timm version in the fixture's ``assumptions``.

It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's,
transformers' and timm's own code.
"""

from __future__ import annotations

import sys

from _shim import shim_main, timm_from_env  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_kanana_v.py: model_type kanana-1.5-v registered with transformers' AutoConfig "
        "as a stand-in for the checkpoint's remote configuration (vision_config and projector_config as config "
        "objects, text_config a LlamaConfig); timm {timm} from ORACLE_TIMM_PATH builds the C-Abstractor's RegNet "
        "stages (vLLM's own kanana_v.py); no tensor is created by the shim")


def install() -> None:
    from transformers import AutoConfig, LlamaConfig, PretrainedConfig

    class KananaVVisionStandIn(PretrainedConfig):
        model_type = "kanana-1.5-v-visual-encoder"

    class KananaVProjectorStandIn(PretrainedConfig):
        model_type = "kanana-1.5-v-visual_projector"

    class KananaVConfig(PretrainedConfig):
        model_type = "kanana-1.5-v"

        def __init__(self, vision_config=None, projector_config=None, text_config=None, **kw):
            def plain(d):
                return {k: v for k, v in (d or {}).items() if k != "model_type"}

            self.vision_config = KananaVVisionStandIn(**plain(vision_config))
            self.projector_config = KananaVProjectorStandIn(**plain(projector_config))
            self.text_config = LlamaConfig(**plain(text_config))
            super().__init__(**kw)

    for name, cls in (("kanana-1.5-v-visual-encoder", KananaVVisionStandIn),
                      ("kanana-1.5-v-visual_projector", KananaVProjectorStandIn),
                      ("kanana-1.5-v", KananaVConfig)):
        AutoConfig.register(name, cls, exist_ok=True)


if __name__ == "__main__":
    sys.exit(shim_main(lambda _oracle: install(), NOTE.format(timm=timm_from_env())))
