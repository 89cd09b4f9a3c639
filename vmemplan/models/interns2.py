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
* ``InternS2MobiusForConditionalGeneration``:
  vllm/model_executor/models/interns2_mobius.py (0.33.0) keeps Qwen3.5-MoE's hybrid layers
  (QwenGatedDeltaNetAttention / Qwen3NextAttention, Qwen3_5RMSNorm, optional ``layer_scale``) and
  the Qwen3-VL tower without deepstack, but moves the routed experts out of the layers:
  InternS2MobiusModel builds ``num_blocks`` MoE banks (``meta_mlp``, InternS2MobiusMetaMoeBlock:
  a GateLinear router and the fused experts) shared by every layer (layer i uses bank
  ``i % num_blocks``), on every pipeline stage; each layer keeps only its shared expert and
  ``shared_expert_gate`` (InternS2MobiusSharedExpertBlock).  No MODELS_CONFIG_MAP hook either.
  Its decoder layer builds Qwen3NextAttention without Qwen3.5's ``mrope_positions_factor``
  (qwen3_5.py passes qwen3_vl.py::mrope_positions_factor, 1 without video pruning), so get_rope's
  default factor 4 applies: the shared M-RoPE cache has ``4 x max_position_embeddings`` rows.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import state_dtypes
from vmemplan.models.mixer_blocks import fused_expert_tensors
from vmemplan.models.qwen3_5_vl import Qwen3_5_VL
from vmemplan.models.vision_towers import _uses_mrope

__all__ = ["InternS2Preview", "InternS2Mobius"]


@register
class InternS2Preview(Qwen3_5_VL):
    """Intern-S2-Preview: Qwen3.5-MoE's hybrid decoder plus the Qwen3-VL tower, unchanged."""

    architectures = ("InternS2PreviewForConditionalGeneration",)

    def state_dtype_pair(self, ctx: GraphContext) -> tuple[str, str]:
        """The flags alone (no MODELS_CONFIG_MAP hook reads ``mamba_ssm_dtype`` for this name)."""
        return state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)


@register
class InternS2Mobius(InternS2Preview):
    """Intern-S2-Mobius: Intern-S2-Preview's layers with the routed experts in ``num_blocks`` shared banks."""

    architectures = ("InternS2MobiusForConditionalGeneration",)

    #: rows of the M-RoPE cache per position (get_rope's default; see the module docstring)
    mobius_mrope_positions_factor = 4

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if not _uses_mrope(self.config):
            return out
        f = self.mobius_mrope_positions_factor
        return [WeightTensor(t.name, t.kind, t.rows * f, t.cols, t.count, t.quantizable, t.dtype)
                if t.name == "rotary_emb.cos_sin_cache" else t for t in out]

    def sparse_moe_tensors(self, ctx: GraphContext, count: int) -> list[WeightTensor]:
        """Per layer: the shared expert and its gate; once: ``num_blocks`` routers and expert banks."""
        banks = int(self._get("num_blocks"))
        e, inter, h = self._get("num_experts"), self._get("moe_intermediate_size"), self.config.hidden_size
        per_layer = [t for t in super().sparse_moe_tensors(ctx, count)
                     if t.name not in ("mlp.gate",) and not t.name.startswith("mlp.experts")]
        shared_banks = [WeightTensor("meta_mlp.gate", "router", e, h, banks),
                        *fused_expert_tensors("meta_mlp.experts", num_experts=e, inter=inter, hidden=h,
                                              count=banks, ctx=ctx)]
        return per_layer + shared_banks
