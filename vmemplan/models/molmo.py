"""Molmo (``MolmoForCausalLM``, allenai/Molmo-7B-D-0924, -7B-O, -72B): a CLIP ViT-L/14-336 backbone,
an attention pool over 2×2 patches and a gated projector in front of Molmo's own decoder.

vllm/model_executor/models/molmo.py (0.33.0):

* ``MolmoModel``: a ``VocabParallelEmbedding`` of ``(embedding_size or vocab_size) + 128`` rows
  (``ADDITIONAL_VOCAB_SIZE``), per layer ``MolmoAttention`` (QKVParallelLinear with a bias when
  ``qkv_bias``, RowParallelLinear ``o_proj`` without one, head_dim = hidden / heads; with
  ``attention_layer_norm`` an RMSNorm ``q_norm`` of the hidden size and ``k_norm`` of every KV head,
  replicated), ``LanguageModelMLP`` (merged gate/up of ``intermediate_size / 2`` each, down) and two
  RMSNorms (``norm_after`` moves them, the shapes stay), the final RMSNorm; the rotary cache from get_rope;
* ``ParallelLMHead`` of ``embedding_size or vocab_size`` rows (the extra 128 ids are input-only), tied
  when ``weight_tying``;
* ``MolmoVisionBackbone`` (vLLM's fixed ``VisionBackboneConfig``, not read from config.json: 1024 wide,
  16 heads, 23 layers, MLP 4096, patch 14, 336 px, 577 positions): ``VisionTransformer`` as CLIP's
  (class embedding, position table, bias-free patch Linear, pre-LayerNorm, blocks with biased
  wq/wk/wv/wo, w1/w2 and two LayerNorms; :func:`vmemplan.models.vision_towers._clip_like` without the
  position_ids buffer), ``image_pooling_2d`` (wq/wk/wv of the two concatenated ViT layers ``[1024, 2048]``
  column-parallel, wo row-parallel, biases), ``ImageProjectorMLP`` (merged gate/up ``[I, 1024]``, down
  ``[H, I/2]``, no biases) and ``pad_embed [2, 2048]``; all linears split over TP (no
  ``supports_encoder_tp_data``).

Image tokens per item: ``MolmoProcessingInfo`` over the checkpoint's image processor (max_crops 12,
overlap margins 4/4, 336 px crops of 14 px patches, 12 × 12 tokens for the global view): the tiling
with most features (:func:`molmo_max_image_tokens`).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.moe_blocks import gated_mlp_tensors
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _clip_like, _split, _tower_tp

__all__ = ["Molmo", "molmo_vision_backbone", "molmo_max_image_tokens"]

ADDITIONAL_VOCAB_SIZE = 128
#: vLLM's VisionBackboneConfig defaults (molmo.py): the backbone ignores config.json
VIT = {"hidden_size": 1024, "num_attention_heads": 16, "intermediate_size": 4096, "patch_size": 14,
       "image_size": 336, "num_channels": 3}
VIT_LAYERS, VIT_FEATURE_LAYERS, POOLING = 23, 2, 2


def molmo_vision_backbone(hidden: int, intermediate: int, tp: int) -> list[WeightTensor]:
    """MolmoVisionBackbone on one rank: the CLIP-shaped ViT, the 2×2 attention pool, the gated
    projector (``intermediate / 2`` wide, into the decoder's ``hidden``) and ``pad_embed``."""
    c = VIT["hidden_size"]
    feats = c * VIT_FEATURE_LAYERS
    q = _split(c, tp, "width")
    half = intermediate // 2

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"vision_backbone.{name}", "encoder", rows, cols)

    vit = [x for x in _clip_like(VIT, tp, VIT_LAYERS, class_token=True, pre_norm=True, post_norm=False,
                                 prefix="vision_backbone.image_vit") if x.kind != "buffer"]
    return vit + [
        WeightTensor("vision_backbone.image_pooling_2d.wq+wk+wv", "encoder", q, feats, 3),
        WeightTensor("vision_backbone.image_pooling_2d.wq+wk+wv.bias", "encoder", q, 1, 3),
        t("image_pooling_2d.wo", c, q), t("image_pooling_2d.wo.bias", c),
        t("image_projector.merged_linear", 2 * _split(half, tp, "projector width"), c),
        t("image_projector.down_proj", hidden, half // tp),
        t("pad_embed", 2, feats),
    ]


def _tiling(height: int, width: int, window: int, max_crops: int) -> tuple[int, int]:
    """(rows, cols) of crops select_tiling picks (molmo.py): the smallest upscale that covers the
    image, else the largest downscale."""
    tilings = sorted(((i, j) for i in range(1, max_crops + 1) for j in range(1, max_crops + 1)
                      if i * j <= max_crops), key=lambda x: x[0] * x[1])
    scales = [min(i * window / height, j * window / width) for i, j in tilings]
    if all(s < 1 for s in scales):
        return tilings[max(range(len(scales)), key=lambda k: scales[k])]
    return tilings[min(range(len(scales)), key=lambda k: 10e9 if scales[k] < 1 else scales[k])]


def _num_patches(tiles: int, crop: int, margin: int) -> int:
    """get_num_patches (molmo.py) with equal margins: pooled rows of ``tiles`` overlapping crops."""
    def low(x: int) -> int:
        return x // POOLING * POOLING

    if tiles == 1:
        return low(crop + POOLING - 1)
    window = crop - 2 * margin
    return 2 * low(window + margin + POOLING - 1) + (tiles - 2) * low(window + POOLING - 1)


def molmo_max_image_tokens(*, max_crops: int = 12, margin: int = 4, base: int = 336, patch: int = 14,
                           global_tokens: int = 12) -> int:
    """MolmoProcessingInfo.get_num_image_tokens at get_image_size_with_most_features (molmo.py,
    0.33.0): ``2 + (w + 1)·h`` global-view tokens plus ``2 + ((cols + 1) / 2 + 1)·((rows + 1) / 2)``."""
    crop = base // patch
    window = (crop - 2 * margin) * patch
    best = 0
    for i in range(1, max_crops + 1):
        for j in range(1, max_crops // i + 1):
            rows, cols = _tiling(base * i - 2 * margin * patch, base * j - 2 * margin * patch, window, max_crops)
            nrows, ncols = _num_patches(rows, crop, margin), _num_patches(cols, crop, margin)
            joint = 2 + ((ncols + 1) // POOLING + 1) * ((nrows + 1) // POOLING)
            best = max(best, 2 + (global_tokens + 1) * global_tokens + joint)
    return best


@register
class Molmo(VisionEncoderMixin, LlamaLike):
    """Molmo: its decoder (a Llama graph with a half-width gated MLP and a 128-row longer embedding)
    plus the CLIP backbone, pool and projector."""

    architectures = ("MolmoForCausalLM",)
    qk_norm_shape = "total"
    patches_per_token = POOLING * POOLING

    @property
    def qk_norm(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("attention_layer_norm", False))

    def head_tied(self) -> bool:
        return bool(self.config.text.get("weight_tying", False))

    @property
    def intermediate_size(self) -> int:
        return self.config.intermediate_size // 2

    def vocab_rows(self) -> tuple[int, int]:
        """(LM head rows, extra input-only embedding rows) before padding."""
        return int(self.config.text.get("embedding_size") or self.config.vocab_size), ADDITIONAL_VOCAB_SIZE

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """LlamaLike's tensors with the MLP at :attr:`intermediate_size`, the embedding longer by the extra
        ids and the LM head at the vocabulary (:meth:`vocab_rows`); the text model builds the embedding,
        final norm and head on every stage."""
        cfg, span = self.config, self.rank_span(ctx)
        vocab, extra = self.vocab_rows()
        drop = {"mlp.gate_up_proj", "mlp.down_proj", "model.embed_tokens", "lm_head", "model.norm"}
        out = [t for t in super().weight_tensors(ctx) if t.name not in drop]
        out += gated_mlp_tensors("mlp", self.intermediate_size, span.hidden, span.layers, span.tp)
        out += [WeightTensor("model.embed_tokens", "embedding", pad_vocab(vocab + extra) // span.tp,
                             span.hidden)] + self._norm("model.norm", span.hidden)
        if not self.head_tied():
            out.append(WeightTensor("lm_head", "lm_head", pad_vocab(vocab) // span.tp, span.hidden))
        return out + self.tower_tensors(cfg, ctx)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return molmo_vision_backbone(config.hidden_size, config.intermediate_size, _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return VIT["hidden_size"], VIT["intermediate_size"]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": molmo_max_image_tokens()}
