"""Intern-S2 (internlm): Qwen3.5-MoE vision-language models.

* ``InternS2PreviewForConditionalGeneration``:
  vllm/model_executor/models/interns2_preview.py::InternS2PreviewForConditionalGeneration (0.33.0) is
  Qwen3_5MoeForConditionalGeneration with a weights mapper that drops the time-series encoder
  (``model.time_series.*``): the tensors of :class:`vmemplan.models.qwen3_5_vl.Qwen3_5_VL`.
  One difference in the cache: vLLM's per-architecture config hook that makes the recurrent
  state follow the config's ``mamba_ssm_dtype``
  (vllm/model_executor/models/config.py::Qwen3_5ForConditionalGenerationConfig) is registered in
  ``MODELS_CONFIG_MAP`` for the Qwen3.5 names only, so for Intern-S2 ``--mamba-ssm-cache-dtype
  auto`` keeps the model dtype (a Qwen3.5-35B-A3B-shaped config: 1,097,728 B of GDN state per layer
  at TP 1 in bf16, 576-token blocks, where the float32 state of Qwen3.5 needs 1088).
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.models.base import register
from vmemplan.models.hybrid import state_dtypes
from vmemplan.models.qwen3_5_vl import Qwen3_5_VL

__all__ = ["InternS2Preview"]


@register
class InternS2Preview(Qwen3_5_VL):
    """Intern-S2-Preview: Qwen3.5-MoE's hybrid decoder plus the Qwen3-VL tower, unchanged."""

    architectures = ("InternS2PreviewForConditionalGeneration",)

    def state_dtype_pair(self, ctx: GraphContext) -> tuple[str, str]:
        """The flags alone (no MODELS_CONFIG_MAP hook reads ``mamba_ssm_dtype`` for this name)."""
        return state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
