#!/usr/bin/env python
"""Emulation shim for the vllm-oracle on MiniCPMO (vLLM 0.33.0 model_executor/models/minicpmo.py).

    python bench/oracle/shims_minicpmo.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in its
``SHIMS`` table; the arguments are the oracle's, unchanged.

Why, and what the shim does (nothing else):

1. openbmb/MiniCPM-o-2_6 configs have ``model_type`` "minicpmo", whose config class ships as remote
   code (configuration_minicpmo.py::MiniCPMOConfig, a Qwen2Config subclass); the oracle does not run
   remote code.  The shim registers with transformers' ``AutoConfig`` a stand-in for "minicpmo": a
   Qwen2Config whose ``vision_config`` is a SiglipVisionConfig and ``audio_config`` a WhisperConfig
   (as the remote class builds them), with the top-level keys minicpmv.py / minicpmo.py read
   (query_num, image_size, drop_vision_last_layer, slice_config, version, audio_pool_step,
   audio_chunk_length, ...) as attributes.
2. ``MiniCPMOProcessingInfo.get_supported_mm_limits`` asks the checkpoint's remote image processor
   for the model version; the shim answers ``{"image", "video", "audio"}`` unlimited, as vLLM does
   for version 2.6 (minicpmv.py::MiniCPMVProcessingInfo.get_supported_mm_limits + audio).
3. The resampler's ``pos_embed`` (minicpmv.py::Resampler2_5._set_2d_pos_cache) is built on the host
   (``.to("cpu")``) and cast with the module to the model dtype; on a GPU host
   ``MiniCPMVBaseModel._ensure_resampler_device`` moves it to the GPU after the weights load, which
   the construction-time oracle never runs.  The shim does that move, device only (same shape and
   dtype), right after ``init_resampler`` returns, so the figures count it as the GPU host holds it.

It allocates nothing; every module, parameter, buffer and KV cache spec is built by vLLM's own code.
Recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py (this script's folder)

NOTE = ("shim bench/oracle/shims_minicpmo.py: model_type minicpmo registered with transformers' AutoConfig as a "
        "stand-in for the checkpoint's remote MiniCPMOConfig (Qwen2Config + vision_config as SiglipVisionConfig + "
        "audio_config as WhisperConfig, the top-level keys as attributes); MiniCPMOProcessingInfo."
        "get_supported_mm_limits answered image/video/audio without the remote image processor; the resampler's "
        "host pos_embed moved to the meta device (same dtype) as _ensure_resampler_device does after loading")


def install() -> None:
    import torch
    from transformers import AutoConfig, Qwen2Config, SiglipVisionConfig, WhisperConfig

    class MiniCPMOConfig(Qwen2Config):
        model_type = "minicpmo"

        def __init__(self, vision_config=None, audio_config=None, tts_config=None, **kw):
            self.vision_config = SiglipVisionConfig(**{k: v for k, v in (vision_config or {}).items()
                                                       if k != "model_type"})
            self.audio_config = WhisperConfig(**{k: v for k, v in (audio_config or {}).items() if k != "model_type"})
            keep = ("query_num", "image_size", "drop_vision_last_layer", "batch_vision_input", "slice_config",
                    "slice_mode", "use_image_id", "vision_batch_size", "version", "audio_pool_step",
                    "audio_chunk_length", "patch_size")
            extra = {k: kw.pop(k) for k in keep if k in kw}
            super().__init__(**kw)
            for k, v in extra.items():
                setattr(self, k, v)

    AutoConfig.register("minicpmo", MiniCPMOConfig, exist_ok=True)

    import vllm.model_executor.models.minicpmo as mo
    import vllm.model_executor.models.minicpmv as mv

    mo.MiniCPMOProcessingInfo.get_supported_mm_limits = lambda self: {"image": None, "video": None, "audio": None}
    original = mv.MiniCPMV2_6.init_resampler

    def init_resampler(self, *args, **kwargs):
        resampler = original(self, *args, **kwargs)
        for owner in resampler.modules():
            for name, buf in list(owner._buffers.items()):
                if buf is not None and not buf.is_meta:
                    owner._buffers[name] = torch.empty(buf.shape, dtype=buf.dtype, device="meta")
        return resampler

    mv.MiniCPMV2_6.init_resampler = init_resampler


def main() -> int:
    return shim_main(lambda _oracle: install(), NOTE)


if __name__ == "__main__":
    sys.exit(main())
