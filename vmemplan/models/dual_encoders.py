"""CLIP and SigLIP dual encoders served as embedding models (``CLIPModel``, ``SiglipModel``; vLLM
--runner pooling): a text transformer and a vision transformer side by side.

Mirrors vllm/model_executor/models/clip.py::CLIPEmbeddingModel and
siglip.py::SiglipEmbeddingModel (0.33.0).  One rank holds:

* the text transformer: ``token_embedding`` and ``position_embedding``, both VocabParallelEmbedding
  (rows padded to 64 and split; ``max_position_embeddings`` rows for the positions); per layer
  ``qkv_proj`` (QKVParallelLinear, bias), ``out_proj`` (RowParallelLinear, bias), ``fc1`` / ``fc2``
  (biased), two LayerNorms; ``final_layer_norm``; the attention's four fp32 scales.
  - CLIP: each text layer's attention is a decoder ``Attention`` (clip.py passes
    ``attn_cls=Attention``), so the text model owns a full-attention KV cache
    (heads/TP x head_dim per token and layer) and the context is ``max_position_embeddings`` (77);
    ``text_projection`` (nn.Linear h -> projection_dim, no bias, replicated).
  - SigLIP: ``EncoderOnlyAttention`` (no KV cache), a ``position_ids`` buffer
    (arange(max_position_embeddings), int64), and ``head`` (nn.Linear h -> projection_size, bias).
* the vision transformer, sharded over TP unless ``--mm-encoder-tp-mode data``:
  - CLIP: the CLIP tower (class token, pre- and post-LayerNorm, all layers) and
    ``visual_projection`` (nn.Linear, no bias);
  - SigLIP: the SigLIP tower (biased patch embed, post-LayerNorm, all layers), its int64
    ``position_ids`` buffer of (image/patch)^2 rows, and, unless ``vision_use_head`` is false, the
    attention-pooling head: ``probe`` [h], a torch ``nn.MultiheadAttention`` (in_proj [3h, h] + bias,
    out_proj [h, h] + bias, replicated), ``layernorm``, and a SiglipMLP (fc1/fc2 sharded, biased).

An image prompt yields one embedding token (the default pooling, LAST for CLIP and CLS for
SigLIP, selects the ``class`` feature: ``get_num_selected_vision_tokens``), computed over the
tower's (image/patch)^2 (+1 class) positions.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec
from vmemplan.models.base import Adapter, pad_vocab, register
from vmemplan.models.dense_blocks import kv_spec_fields
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _tower_tp, _vision, clip_tower, siglip_tower

__all__ = ["CLIPEmbedding", "SiglipEmbedding"]


class _DualEncoder(VisionEncoderMixin, Adapter):
    default_runner = "pooling"
    #: whether the vision positions include a class token
    class_token: bool = True

    def _text(self) -> dict[str, Any]:
        return dict(self.config.text)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        vc = _vision(self.config)
        return (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2 + (1 if self.class_token else 0)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        return {"image": 1}

    def derived_max_model_len(self) -> int:
        return int(self.config.max_position_embeddings)

    def prefix_caching_supported(self) -> bool:
        return False

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        _split(self.config.num_attention_heads, tp, "text attention heads")
        if ctx.pipeline_parallel_size != 1:
            raise UsageError(f"{self.config.architecture} does not support pipeline parallelism in vLLM",
                             hint="use --pipeline-parallel-size 1")

    def _text_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        tp = ctx.tensor_parallel_size
        h, n, inter = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size
        return [
            WeightTensor("text_model.embeddings.token_embedding", "embedding", pad_vocab(cfg.vocab_size) // tp, h),
            WeightTensor("text_model.embeddings.position_embedding", "embedding",
                         pad_vocab(int(cfg.max_position_embeddings)) // tp, h),
            WeightTensor("text_model.encoder.layers.self_attn.qkv_proj", "linear", 3 * h // tp, h, n, True,
                         in_features_full=h),
            WeightTensor("text_model.encoder.layers.self_attn.qkv_proj.bias", "bias", 3 * h // tp, 1, n),
            WeightTensor("text_model.encoder.layers.self_attn.out_proj", "linear", h, h // tp, n, True,
                         in_features_full=h),
            WeightTensor("text_model.encoder.layers.self_attn.out_proj.bias", "bias", h, 1, n),
            WeightTensor("text_model.encoder.layers.mlp.fc1", "linear", inter // tp, h, n, True, in_features_full=h),
            WeightTensor("text_model.encoder.layers.mlp.fc1.bias", "bias", inter // tp, 1, n),
            WeightTensor("text_model.encoder.layers.mlp.fc2", "linear", h, inter // tp, n, True,
                         in_features_full=inter),
            WeightTensor("text_model.encoder.layers.mlp.fc2.bias", "bias", h, 1, n),
            WeightTensor("text_model.layer_norm1+layer_norm2+final_layer_norm", "norm", h, 1, 4 * n + 2),
            attention_scales("text_model.encoder.layers.self_attn.attn", n),
        ]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return self._text_tensors(ctx) + self.tower_tensors(self.config, ctx)


@register
class CLIPEmbedding(_DualEncoder):
    """``CLIPModel`` -> clip.py::CLIPEmbeddingModel (0.33.0)."""

    architectures = ("CLIPModel",)
    reads_max_model_len = False

    def _projection_dim(self) -> int:
        raw = self.config.raw
        return int(raw.get("projection_dim") or self._text().get("projection_dim") or 512)

    def _text_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super()._text_tensors(ctx) + [
            WeightTensor("text_projection", "linear", self._projection_dim(), self.config.hidden_size)]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        return clip_tower(vc, _tower_tp(ctx)) + [
            WeightTensor("visual_projection", "encoder", self._projection_dim(), _need(vc, "hidden_size"))]

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """clip.py::CLIPTextTransformer builds its encoder with ``attn_cls=Attention``: a decoder
        attention whose get_kv_cache_spec is a FullAttentionSpec (heads/TP, head_dim)."""
        cfg = self.config
        spec = FullAttentionSpec(**kv_spec_fields(ctx, num_kv_heads=cfg.num_attention_heads // ctx.tensor_parallel_size,
                                                  head_size=cfg.hidden_size // cfg.num_attention_heads))
        return {f"text_model.encoder.layers.{i}.self_attn.attn": spec for i in range(cfg.num_hidden_layers)}

    def notes(self) -> tuple[str, ...]:
        return ("CLIP dual encoder (vLLM --runner pooling): the text layers are decoder Attention layers with a "
                "full-attention KV cache of max_position_embeddings tokens; the vision tower has none",)


@register
class SiglipEmbedding(_DualEncoder):
    """``SiglipModel`` -> siglip.py::SiglipEmbeddingModel (0.33.0)."""

    architectures = ("SiglipModel",)
    reads_max_model_len = False
    class_token = False

    def _text_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        h = self.config.hidden_size
        proj = int(self._text().get("projection_size") or h)
        return super()._text_tensors(ctx) + [
            WeightTensor("text_model.embeddings.position_ids", "buffer", 1, int(self.config.max_position_embeddings),
                         dtype="int64"),
            WeightTensor("text_model.head", "linear", proj, h),
            WeightTensor("text_model.head.bias", "bias", proj, 1),
        ]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        tp = _tower_tp(ctx)
        c, inter = _need(vc, "hidden_size"), _need(vc, "intermediate_size")
        positions = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2
        out = siglip_tower(vc, tp) + [
            WeightTensor("vision_model.embeddings.position_ids", "buffer", 1, positions, dtype="int64")]
        if vc.get("vision_use_head", True) is not False:
            i = _split(inter, tp, "MLP width")
            out += [
                WeightTensor("vision_model.head.probe+layernorm", "encoder", c, 1, 3),
                WeightTensor("vision_model.head.attention.in_proj", "encoder", 3 * c, c),
                WeightTensor("vision_model.head.attention.in_proj_bias", "encoder", 3 * c, 1),
                WeightTensor("vision_model.head.attention.out_proj", "encoder", c, c),
                WeightTensor("vision_model.head.attention.out_proj.bias", "encoder", c, 1),
                WeightTensor("vision_model.head.mlp.fc1", "encoder", i, c),
                WeightTensor("vision_model.head.mlp.fc1.bias", "encoder", i, 1),
                WeightTensor("vision_model.head.mlp.fc2", "encoder", c, i),
                WeightTensor("vision_model.head.mlp.fc2.bias", "encoder", c, 1),
            ]
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        return {}  # EncoderOnlyAttention (text) and MMEncoderAttention (vision): no KV cache

    def notes(self) -> tuple[str, ...]:
        return ("SigLIP dual encoder (vLLM --runner pooling): bidirectional EncoderOnlyAttention text layers, "
                "no KV cache; vLLM allocates only the null block",)
