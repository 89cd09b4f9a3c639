#!/usr/bin/env python
"""Run bench/oracle/dump_tensors.py (the vllm-oracle, in-process) on a remote-code checkpoint
config, with a small local stand-in for the checkpoint's own config class registered first.

The oracle never runs remote code (trust_remote_code=False), so configs whose model_type only the
checkpoint's configuration_*.py defines (``internvl_chat``, ``minicpmv``, ``phi4mm``) do not parse.
These stand-ins build the same attributes vLLM 0.33.0's model files read (the sub-configs as
config objects); nothing else changes.  The result is a side check, not a fixture: the figures
are quoted in the commits of vmemplan/models/internvl.py, minicpmv.py and phi4mm.py.

    /work/vllm/oracle-venv/bin/python bench/oracle/remote_code_standins.py STANDIN OUT.json \\
        --oracle ../shared/tools/vllm-oracle/oracle.py -- CONFIG_WITHOUT_AUTO_MAP.json --available-bytes N --tp T ...

STANDIN: internvl_chat | minicpmv | phi4mm.  Drop ``auto_map`` from the config copy first.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import runpy
import sys
from pathlib import Path

from transformers import AutoConfig, PretrainedConfig


def _after_import(module_name: str, patch) -> None:
    """Apply ``patch(module)`` right after vLLM imports ``module_name``."""

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != module_name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            orig = spec.loader.exec_module

            def exec_module(module):
                orig(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())


def internvl_chat() -> None:
    class InternVisionConfig(PretrainedConfig):
        model_type = "intern_vit_6b"

    class InternVLChatConfig(PretrainedConfig):
        model_type = "internvl_chat"
        is_composition = True

        def __init__(self, vision_config=None, llm_config=None, **kw):
            vision_config = {k: v for k, v in (vision_config or {}).items() if k != "auto_map"}
            llm_config = dict(llm_config or {})
            self.vision_config = InternVisionConfig(**vision_config)
            self.llm_config = AutoConfig.for_model(llm_config.pop("model_type", "qwen2"), **llm_config)
            self.text_config = self.llm_config
            for k in ("select_layer", "force_image_size", "downsample_ratio", "template", "dynamic_image_size",
                      "use_thumbnail", "ps_version", "min_dynamic_patch", "max_dynamic_patch"):
                if k in kw:
                    setattr(self, k, kw.pop(k))
            super().__init__(**kw)

    AutoConfig.register("internvl_chat", InternVLChatConfig, exist_ok=True)
    # the video-token lookup needs a tokenizer the oracle does not load (Qwen's has <|video_pad|>)
    _after_import("vllm.model_executor.models.internvl",
                  lambda m: setattr(m.InternVLProcessingInfo, "ctx_video_token", property(lambda self: "<|video_pad|>")))


def minicpmv() -> None:
    from transformers import Qwen2Config, SiglipVisionConfig

    class MiniCPMVConfig(Qwen2Config):  # MiniCPM-V 2.6's base; the LM fields are top-level
        model_type = "minicpmv"

        def __init__(self, vision_config=None, query_num=64, image_size=448, drop_vision_last_layer=True,
                     slice_config=None, version=None, **kw):
            vc = {k: v for k, v in (vision_config or {}).items() if k != "model_type"}
            self.vision_config = SiglipVisionConfig(**vc)
            self.query_num, self.image_size = query_num, image_size
            self.drop_vision_last_layer, self.slice_config = drop_vision_last_layer, slice_config
            if version is not None:
                self.version = version
            super().__init__(**kw)

    AutoConfig.register("minicpmv", MiniCPMVConfig, exist_ok=True)
    # the limits come from the checkpoint's remote image processor: answer them without it
    _after_import("vllm.model_executor.models.minicpmv",
                  lambda m: setattr(m.MiniCPMVProcessingInfo, "get_supported_mm_limits",
                                    lambda self: {"image": None, "video": None}))


def phi4mm() -> None:
    from transformers import Phi3Config

    class Phi4MMConfig(Phi3Config):
        model_type = "phi4mm"

        def __init__(self, embd_layer="default", img_processor=None, audio_processor=None,
                     vision_lora=None, speech_lora=None, **kw):
            self.embd_layer, self.img_processor, self.audio_processor = embd_layer, img_processor, audio_processor
            self.vision_lora, self.speech_lora = vision_lora, speech_lora
            super().__init__(**kw)

    AutoConfig.register("phi4mm", Phi4MMConfig, exist_ok=True)


def new() -> None:
    """Alibaba-NLP's ``new`` (gte-*-v1.5, GteNewModel): the remote configuration_new.py's NewConfig
    carries GteConfig's keys; vLLM's GteNewModelConfig asserts the class is named NewConfig."""
    from transformers import GteConfig

    class NewConfig(GteConfig):
        model_type = "new"

    AutoConfig.register("new", NewConfig, exist_ok=True)


STANDINS = {"internvl_chat": internvl_chat, "minicpmv": minicpmv, "phi4mm": phi4mm, "new": new}


def main() -> None:
    STANDINS[sys.argv[1]]()
    sys.argv = ["dump_tensors.py"] + sys.argv[2:]
    runpy.run_path(str(Path(__file__).with_name("dump_tensors.py")), run_name="__main__")


if __name__ == "__main__":
    main()
