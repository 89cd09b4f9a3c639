"""Aria (``AriaForConditionalGeneration``, rhymes-ai/Aria): an Idefics3-shaped vision transformer
without its post-LayerNorm, a learned-query cross-attention projector, and a Llama decoder whose
every MLP is a mixture of experts with shared experts.

vllm/model_executor/models/aria.py (0.33.0), ``AriaForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, "image")``:

  - ``vision_tower`` = ``AriaVisionTransformer``: idefics2_vision_model.py::Idefics2VisionTransformer
    (Conv2d patch embed with bias, ``(image_size / patch)²`` learned positions, every layer of
    [LayerNorm ×2, QKVParallelLinear and out_proj with bias, fc1/fc2 with bias]) whose
    ``post_layernorm`` is replaced by ``nn.Identity`` after construction: no tensor; split over TP
    (no ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``);
  - ``multi_modal_projector`` = ``AriaProjector``: a bare ``query`` parameter
    ``[max(projector_patch_to_query_dict), vision hidden]``; transformers'
    ``AriaCrossAttention`` (plain torch modules, whole on every rank: bias-free q/k/v Linear(c, c),
    ``nn.MultiheadAttention(c)`` with its packed in-projection ``[3c, c]`` + bias and out_proj with
    bias, ``linear`` Linear(c, c) with bias, LayerNorms ``layer_norm`` and ``layer_norm_kv``); a
    LayerNorm(c); ``feed_forward`` = ``AriaProjectorMLP``: ColumnParallelLinear(c → text hidden)
    and RowParallelLinear(text hidden → text hidden), no biases;

* under ``_mark_language_model``: ``AriaTextModel`` (llama.py::LlamaModel with
  ``AriaTextDecoderLayer``: Llama attention, then ``AriaTextMoELayer`` — a bare
  ``router_weight [moe_num_experts, hidden]`` at the model dtype, ``shared_experts`` a LlamaMLP of
  ``intermediate_size × moe_num_shared_experts`` split over TP, and the fused routed experts of
  ``intermediate_size`` each, ``moe_topk`` per token) and an untied ParallelLMHead.

Encoder profile: every image becomes ``max(projector_patch_to_query_dict.values())`` tokens
(``AriaProcessingInfo.get_num_image_tokens``), from the ``(image_size / patch)²`` patches of the
largest crop.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _vision, siglip_tower

__all__ = ["Aria", "aria_projector", "idefics2_tower"]


def idefics2_tower(vc: Any, tp: int, prefix: str, *, post_norm: bool) -> list[WeightTensor]:
    """idefics2_vision_model.py::Idefics2VisionTransformer (every layer) under ``prefix``, with or
    without its post-LayerNorm (the SigLIP shape, :func:`siglip_tower`)."""
    return [WeightTensor(t.name.replace("vision_tower.vision_model", prefix, 1), t.kind, t.rows, t.cols, t.count)
            for t in siglip_tower({"num_channels": 3, **vc}, tp, post_norm=post_norm)]


def _query_counts(raw: Any) -> dict[int, int]:
    table = raw.get("projector_patch_to_query_dict") or {1225: 128, 4900: 256}  # AriaConfig's default
    return {int(k): int(v) for k, v in table.items()}


def aria_projector(raw: Any, vc: Any, text_hidden: int, tp: int) -> list[WeightTensor]:
    """``AriaProjector``'s tensors on one rank (see the module docstring)."""
    c = _need(vc, "hidden_size")
    queries = max(_query_counts(raw).values())

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"multi_modal_projector.{name}", "encoder", rows, cols, count)

    return [
        t("query", queries, c),
        t("cross_attn.q_proj+k_proj+v_proj", c, c, 3),
        t("cross_attn.multihead_attn.in_proj_weight", 3 * c, c), t("cross_attn.multihead_attn.in_proj_bias", 3 * c),
        t("cross_attn.multihead_attn.out_proj", c, c), t("cross_attn.multihead_attn.out_proj.bias", c),
        t("cross_attn.linear", c, c), t("cross_attn.linear.bias", c),
        t("cross_attn.layer_norm+layer_norm_kv (weight, bias)", c, 1, 4),
        t("layer_norm (weight, bias)", c, 1, 2),
        t("feed_forward.linear_in", text_hidden // tp, c),
        t("feed_forward.linear_out", text_hidden, text_hidden // tp),
    ]


@register
class Aria(VisionEncoderMixin, MoEDecoder):
    """Aria: the MoE Llama of ``text_config`` plus the Idefics2-shaped tower and the query projector."""

    architectures = ("AriaForConditionalGeneration",)

    def num_experts(self) -> int:
        return _int(self.config.text, "moe_num_experts", default=8)

    def top_k(self) -> int:
        return _int(self.config.text, "moe_topk", default=2)

    def expert_intermediate(self) -> int:
        return self.config.intermediate_size

    def shared_intermediate(self) -> int:
        return self.config.intermediate_size * _int(self.config.text, "moe_num_shared_experts", default=2)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        """Tower patches per image token: the largest crop's patches over its query count."""
        patches, queries = max(_query_counts(self.config.raw).items(), key=lambda kv: kv[1])
        return max(1, -(-patches // queries))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        tp = ctx.tensor_parallel_size  # no supports_encoder_tp_data: weights mode (vllm/config/model.py)
        return (idefics2_tower(vc, tp, "vision_tower", post_norm=False)
                + aria_projector(config.raw, vc, config.hidden_size, tp))

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": max(_query_counts(config.raw).values())}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
