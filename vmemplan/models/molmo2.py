"""Molmo2 (``Molmo2ForConditionalGeneration``, allenai/Molmo2-4B / -8B, Molmo2-ER, MolmoAct2): a SigLIP-style
ViT cut after its deepest used layer, an attention pool and a gated projector in front of Molmo2's own
decoder.

vllm/model_executor/models/molmo2.py (0.33.0):

* ``Molmo2TextModel`` (``text_config``): a ``VocabParallelEmbedding`` of ``vocab_size +
  additional_vocab_size`` rows, per layer ``Molmo2Attention`` (QKVParallelLinear of ``head_dim``-wide heads,
  a bias when ``qkv_bias``; with ``use_qk_norm`` RMSNorms over one head for ``qk_norm_type`` "qwen3", over
  every query / KV head (replicated) for "olmo"; RowParallelLinear ``o_proj`` without a bias),
  ``LanguageModelMLP`` (merged up/gate of ``intermediate_size``, down) and two RMSNorms, the final RMSNorm;
  the embedding and the norm on every pipeline stage; get_rope's cache (a second, default one when
  ``rope_scaling_layers`` leaves a stage layer unscaled);
* ``ParallelLMHead`` of ``vocab_size`` rows, never tied;
* ``Molmo2VisionBackbone`` (``vit_config``, ``adapter_config``): ``Molmo2VisionTransformer`` keeps only
  ``max(vit_layers) + 1`` blocks (negative indices counted from ``num_hidden_layers``): a learned position
  table ``[image_num_pos, C]``, a Linear patch embedding with a bias, blocks of two LayerNorms,
  ``merged_qkv`` (QKVParallelLinear of ``num_key_value_heads``, biases), ``wo`` and ``w1`` / ``w2`` with
  biases; ``image_pooling_2d`` over the ``len(vit_layers)`` concatenated features (``q_proj``,
  ``merged_kv``, ``o_proj``, biases); ``ImageProjectorMLP`` (merged gate/up of the adapter's
  ``intermediate_size``, down to ``text_hidden_size``, no biases); all split over TP (no
  ``supports_encoder_tp_data``).

molmo2 is an mm-prefix LM (vllm/transformers_utils/model_arch_config_convertor.py ``MM_PREFIX_LM_MODELS``):
vLLM selects TRITON_ATTN for its layers; the block (16) and page are FLASH_ATTN's.

Image tokens per item: ``Molmo2ProcessingInfo.get_num_image_tokens`` at the tiling with most features
(:func:`molmo2_max_image_tokens`) with the released image processor's settings (8 crops of 378 px,
14 px patches, 4-patch overlap margins, 2×2 pooling, column tokens); video frames are not priced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.molmo import Molmo
from vmemplan.models.vision_towers import _clip_like, _need, _split, _tower_tp

__all__ = ["Molmo2", "molmo2_vision_backbone", "molmo2_max_image_tokens"]


def _section(config: Any, key: str) -> Mapping[str, Any]:
    sec = config.raw.get(key)
    if not isinstance(sec, Mapping):
        raise ModelConfigError(f"{config.architecture}: config.json lacks {key}")
    return sec


def molmo2_vision_backbone(vit: Mapping[str, Any], adapter: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Molmo2VisionBackbone on one rank (see the module)."""
    c, depth = _need(vit, "hidden_size"), _need(vit, "num_hidden_layers")
    heads, hd = _need(vit, "num_attention_heads"), _need(vit, "head_dim")
    kv = int(vit.get("num_key_value_heads", heads))
    used = [i if i >= 0 else i + depth for i in adapter.get("vit_layers", (-3, -9))]
    layers = min(depth, max(used) + 1)
    patch, size = _need(vit, "image_patch_size"), vit.get("image_default_input_size", (378, 378))
    clip = {"hidden_size": c, "num_attention_heads": heads, "intermediate_size": _need(vit, "intermediate_size"),
            "patch_size": patch, "image_size": int(size[0]), "num_channels": 3}
    qkv = (heads // tp + 2 * max(1, kv // tp)) * hd
    vit_tensors = [WeightTensor(t.name, t.kind, qkv, t.cols, t.count) if ".qkv_proj" in t.name else t
                   for t in _clip_like(clip, tp, layers, class_token=False, pre_norm=False, post_norm=False,
                                       prefix="vision_backbone.image_vit")]
    a_hidden, a_heads, a_hd = _need(adapter, "hidden_size"), _need(adapter, "num_attention_heads"), \
        _need(adapter, "head_dim")
    a_kv = int(adapter.get("num_key_value_heads", a_heads))
    pool_in, q = c * len(used), _split(a_heads, tp, "pooling heads") * a_hd
    kv_rows = 2 * _split(a_kv * a_hd, tp, "pooling KV width")
    inter = _split(_need(adapter, "intermediate_size"), tp, "projector width")

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"vision_backbone.{name}", "encoder", rows, cols)

    return vit_tensors + [
        t("image_pooling_2d.q_proj", q, pool_in), t("image_pooling_2d.q_proj.bias", q),
        t("image_pooling_2d.merged_kv", kv_rows, pool_in), t("image_pooling_2d.merged_kv.bias", kv_rows),
        t("image_pooling_2d.o_proj", a_hidden, q), t("image_pooling_2d.o_proj.bias", a_hidden),
        t("image_projector.merged_linear", 2 * inter, a_hidden),
        t("image_projector.down_proj", _need(adapter, "text_hidden_size"), inter),
    ]


def molmo2_max_image_tokens(*, max_crops: int = 8, margin: int = 4, size: int = 378, patch: int = 14,
                            pool: int = 2, col_tokens: bool = True) -> int:
    """Molmo2ProcessingInfo.get_num_image_tokens at get_image_size_with_most_features (molmo2.py, 0.33.0):
    the global view's ``2 + rows·(cols + col)`` plus the overlapping crops' ``2 + rows·(cols + col)``; the
    largest image of a tiling ``h × w`` is exactly that tiling's crop windows plus the margins."""
    def pooled(patches: int) -> int:
        return -(-patches // pool)

    crop = size // patch
    base = pooled(crop)
    extra = 2 + base * (base + int(col_tokens))
    best = 0
    for h in range(1, max_crops + 1):
        for w in range(1, max_crops // h + 1):
            rows, cols = pooled(h * (crop - 2 * margin) + 2 * margin), pooled(w * (crop - 2 * margin) + 2 * margin)
            best = max(best, extra + 2 + rows * (cols + int(col_tokens)))
    return best


@register
class Molmo2(Molmo):
    """Molmo2: Molmo's decoder layout (full-width MLP, per-head or full q/k norms, never-tied head) plus
    the truncated ViT, pool and projector."""

    architectures = ("Molmo2ForConditionalGeneration",)
    modalities = ("image", "video")

    @property
    def qk_norm(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("use_qk_norm", False))

    @property
    def qk_norm_shape(self) -> str:  # type: ignore[override]
        return "head" if self.config.text.get("qk_norm_type", "olmo") == "qwen3" else "total"

    def head_tied(self) -> bool:
        return False

    @property
    def intermediate_size(self) -> int:
        return self.config.intermediate_size

    def vocab_rows(self) -> tuple[int, int]:
        return self.config.vocab_size, int(self.config.text.get("additional_vocab_size") or 0)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        text = self.config.text
        scaled = text.get("rope_scaling_layers")
        start, end = self.layer_range(ctx)
        if text.get("rope_scaling") and isinstance(scaled, list) and any(i not in scaled for i in range(start, end)):
            # the unscaled layers' default-RoPE cache (get_rope caches one per parameter set)
            out.append(WeightTensor("rotary_emb.cos_sin_cache (default)", "buffer",
                                    self.config.max_position_embeddings, self.config.head_dim))
        return out

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return molmo2_vision_backbone(_section(config, "vit_config"), _section(config, "adapter_config"),
                                      _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vit = _section(config, "vit_config")
        return _need(vit, "hidden_size"), _need(vit, "intermediate_size")

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vit = _section(config, "vit_config")
        size = vit.get("image_default_input_size", (378, 378))
        return {"image": molmo2_max_image_tokens(size=int(size[0]), patch=_need(vit, "image_patch_size"))}

