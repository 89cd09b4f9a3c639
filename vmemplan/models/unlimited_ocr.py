"""Unlimited-OCR (``UnlimitedOCRForCausalLM``, baidu/Unlimited-OCR): DeepSeek-OCR's model with its
decoder's attention windowed over the generated tokens (R-SWA) and up to 32 image tiles.

vllm/model_executor/models/unlimited_ocr.py (0.33.0): ``UnlimitedOCRForCausalLM`` is
deepseek_ocr.py::DeepseekOCRForCausalLM unchanged (the deepencoder — SAM ViT-B + CLIP-L — the
linear projector, ``image_newline`` / ``view_seperator`` and the DeepSeek-V2 MoE decoder with
multi-head attention when the qk head dims are 0): :class:`vmemplan.models.deepseek_vl2.DeepseekOCR`'s
tensors and KV cache.

* vllm/model_executor/models/config.py::UnlimitedOCRForCausalLMConfig sets the text config's
  architecture to DeepseekV2ForCausalLM, ``rswa_window`` (default 128) on it, the attention backend
  (FLASH_ATTN with FA4 where FA4 is available, else TRITON_ATTN; both keep a 16-token block for this
  head size) and turns prefix caching off.
* Each decoder layer's KV spec is kv_cache_interface.py::RSWASpec, a FullAttentionSpec subclass
  whose page and per-request bytes are FullAttentionSpec's (the whole ``max_model_len``): the pool,
  tokens and concurrency are a full-attention cache's.  Only the scheduler's RSWAManager frees the
  blocks between the prompt and the last ``rswa_window`` generated tokens while a request runs.
* Tokens per image (UnlimitedOCRProcessingInfo.get_num_image_tokens): DeepSeek-OCR's count with up to
  ``_UNLIMITED_OCR_MAX_CROPS`` = 32 tiles of 640²; the largest dummy is 640 × 20480 (1 × 32 tiles):
  16 × 17 + 320 × 11 + 1 = 3,793 tokens.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext
from vmemplan.models.base import register
from vmemplan.models.deepseek_vl2 import OCR_TILE, DeepseekOCR, deepseek_ocr_image_tokens

__all__ = ["UnlimitedOCR"]

#: unlimited_ocr.py::_UNLIMITED_OCR_MAX_CROPS
MAX_CROPS = 32


@register
class UnlimitedOCR(DeepseekOCR):
    """Unlimited-OCR: DeepSeek-OCR's tensors and a full-size R-SWA KV cache (module docstring)."""

    architectures = ("UnlimitedOCRForCausalLM",)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The 640 × 20480 dummy (get_image_size_with_most_features): 32 tiles in one column."""
        return {"image": deepseek_ocr_image_tokens(OCR_TILE, OCR_TILE * MAX_CROPS, max_crops=MAX_CROPS)}

    def prefix_caching_supported(self) -> bool:
        """UnlimitedOCRForCausalLMConfig.verify_and_update_config turns prefix caching off."""
        return False

    def notes(self) -> tuple[str, ...]:
        window = int(self.config.raw.get("rswa_window", 128))
        return (*super().notes(), f"R-SWA (window {window}): vLLM sizes the KV pool as full attention, turns "
                "prefix caching off and frees the blocks between the prompt and the last window generated "
                "tokens while a request runs")
