"""MuseGlimmer (``MuseGlimmerForCausalLM``; ``MuseGlimmerForConditionalGeneration``, the name the
multimodal checkpoints carry, maps to the same vLLM class): a Gemma-2 derivative with a per-head
sigmoid output gate, weightless QK norms, sandwich norms, RoPE window layers and NoPE full ones,
and, when the config has a ``vision_config``, a NaViT-style vision encoder with an adapter.

vllm/model_executor/models/muse_glimmer.py (0.33.0), ``MuseGlimmerForCausalLM.__init__``: the
tower is built when the HF config has a ``vision_config`` attribute (``_muse_glimmer_has_vision``:
transformers' ``MuseGlimmerConfig``, model_type ``muse_glimmer``, always has one, filled with
``MuseGlimmerVisionConfig`` defaults when config.json omits it; a text config has none), under
``_mark_tower_model(vllm_config, {"image", "video"})``:

* ``vision_encoder`` = MuseGlimmerVisionEncoder: ``conv1_linear`` nn.Linear(patch_temporal · 3 ·
  patch² → c, no bias), ``positional_embedding_vlm`` nn.Parameter(pos_emb_height · pos_emb_width ×
  c), ``ln_pre`` / ``ln_post`` nn.LayerNorm, and ``num_hidden_layers`` × MuseGlimmerVisionBlock:
  ``ln_1`` / ``ln_2`` nn.LayerNorm, ``attn`` = MuseGlimmerVisionAttention (QKVParallelLinear and
  RowParallelLinear ``o_proj``, both biased, split over TP unless ``is_vit_use_data_parallel``:
  ``--mm-encoder-tp-mode data`` or heads that TP does not divide) and ``mlp`` =
  MuseGlimmerVisionMLP (``c_fc`` / ``c_proj`` plain nn.Linear with biases: whole on every rank);
  the 2-D rotary table is computed per call (no buffer);
* ``vision_adapter`` = MuseGlimmerVisionAdapter: ``c_fc`` nn.Linear(out_hidden_size →
  projector_hidden_size), ``c_proj`` nn.Linear(projector_hidden_size → projector_hidden_size), no
  biases; ``vision_projection`` nn.Linear(projector_hidden_size → text hidden, no bias); the
  weightless ``perception_emb_norm``.

The class does not declare ``supports_encoder_tp_data`` (``data`` runs as ``weights``).  Tokens per
item (MuseGlimmerProcessingInfo.get_mm_max_tokens_per_item): an image is the image processor's
``max_image_tokens`` (transformers MuseGlimmerImageProcessor: 4096); a video is
``min(max(1, seq_len // videos // max_video_frame_tokens), num_frames // temporal_patch_size)``
frame groups of ``max_video_frame_tokens`` (MuseGlimmerVideoProcessor: 144, 96 frames, 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _split, _tower_tp
from vmemplan.models.windowed import _rope_positions, _window, _WindowedBase

__all__ = ["MuseGlimmer", "muse_glimmer_vision_tower", "navit_blocks"]

#: transformers MuseGlimmerVisionConfig / MuseGlimmerConfig defaults (5.20.2), for keys config.json omits
VISION_DEFAULTS = {"patch_size": 14, "pos_emb_height": 32, "pos_emb_width": 32, "num_attention_heads": 16,
                   "num_hidden_layers": 50, "hidden_size": 1536, "intermediate_size": 8960, "patch_temporal": 2,
                   "merge_size": 2}
OUT_HIDDEN_SIZE, PROJECTOR_HIDDEN_SIZE = 6144, 4096
#: transformers MuseGlimmerImageProcessor.max_image_tokens; MuseGlimmerVideoProcessor's
#: max_video_frame_tokens, num_frames and temporal_patch_size (5.20.2)
MAX_IMAGE_TOKENS, MAX_VIDEO_FRAME_TOKENS, VIDEO_FRAMES, VIDEO_TEMPORAL_PATCH = 4096, 144, 96, 2


def _vget(vc: Mapping[str, Any], key: str) -> int:
    v = vc.get(key)
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else VISION_DEFAULTS[key]


def navit_blocks(prefix: str, c: int, ffn: int, n: int, *, attn_tp: int, mlp_tp: int) -> list[WeightTensor]:
    """``n`` pre-norm ViT blocks of the Muse towers: two nn.LayerNorms (weight, bias), a biased
    QKVParallelLinear / RowParallelLinear attention split ``attn_tp`` ways and a biased ``c_fc`` /
    ``c_proj`` GELU MLP split ``mlp_tp`` ways (1: plain nn.Linear)."""
    qkv, i = 3 * _split(c, attn_tp, "width"), _split(ffn, mlp_tp, "MLP width")

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, n)

    return [
        WeightTensor(f"{prefix}.ln_1+ln_2 (weight, bias)", "encoder", c, 1, 4 * n),
        t("attn.qkv_proj", qkv, c), t("attn.qkv_proj.bias", qkv), t("attn.o_proj", c, c // attn_tp), t("attn.o_proj.bias", c),
        t("mlp.c_fc", i, c), t("mlp.c_fc.bias", i), t("mlp.c_proj", c, i), t("mlp.c_proj.bias", c),
    ]


def muse_glimmer_vision_tower(raw: Mapping[str, Any], text_hidden: int, tp: int) -> list[WeightTensor]:
    """The vision encoder, adapter and projection one rank holds (see the module docstring);
    ``tp`` is the attention's split (1 under data-parallel encoding)."""
    vc = raw.get("vision_config") or {}
    c, n, heads = _vget(vc, "hidden_size"), _vget(vc, "num_hidden_layers"), _vget(vc, "num_attention_heads")
    ffn, patch = _vget(vc, "intermediate_size"), _vget(vc, "patch_size")
    if heads % tp:  # is_vit_use_data_parallel: heads TP does not divide run the tower whole
        tp = 1
    out_hidden = int(raw.get("out_hidden_size", OUT_HIDDEN_SIZE))
    proj = int(raw.get("projector_hidden_size", PROJECTOR_HIDDEN_SIZE))

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(name, "encoder", rows, cols, count)

    return [
        t("vision_encoder.conv1_linear", c, _vget(vc, "patch_temporal") * 3 * patch * patch),
        t("vision_encoder.positional_embedding_vlm", _vget(vc, "pos_emb_height") * _vget(vc, "pos_emb_width"), c),
        t("vision_encoder.ln_pre+ln_post (weight, bias)", c, 1, 4),
        *navit_blocks("vision_encoder.transformer", c, ffn, n, attn_tp=tp, mlp_tp=1),
        t("vision_adapter.c_fc", proj, out_hidden), t("vision_adapter.c_proj", proj, proj),
        t("vision_projection", text_hidden, proj),
    ]


@register
class MuseGlimmer(VisionEncoderMixin, _WindowedBase):
    """vllm/model_executor/models/muse_glimmer.py::MuseGlimmerForCausalLM (0.33.0), text part.

    Per layer (``MuseGlimmerDecoderLayer``): QKVParallel ``qkv_proj``, RowParallel ``o_proj``,
    a ColumnParallel ``output_gate_proj`` ``h → heads · head_dim``, weightless QK norms (no
    tensor), the Attention's four fp32 scales, a SiLU-gated MLP and four MuseGlimmerRMSNorms
    ``[h]``.  A layer uses RoPE when ``layer_rope_theta[i]`` is non-zero (one shared
    ``get_rope`` cache ``[max_position_embeddings, head_dim]``) and a ``sliding_window``
    window when ``layer_types[i]`` is ``sliding_attention``.  Model: vocab-parallel
    embedding with a weightless ``embed_norm``, final norm, an untied ``lm_head``.  The vision
    tower (:func:`muse_glimmer_vision_tower`) on the first pipeline stage when the config has one.
    """

    architectures = ("MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration")
    modules_on_every_stage = False
    modalities = ("image", "video")

    def has_vision(self) -> bool:
        raw = self.config.raw
        return isinstance(raw.get("vision_config"), Mapping) or raw.get("model_type") == "muse_glimmer"

    def tower_built(self, ctx: GraphContext) -> bool:
        return self.has_vision() and super().tower_built(ctx)

    @property
    def patches_per_token(self) -> int:
        return _vget(self.config.raw.get("vision_config") or {}, "merge_size") ** 2

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return muse_glimmer_vision_tower(config.raw, config.hidden_size, _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = config.raw.get("vision_config") or {}
        return _vget(vc, "hidden_size"), _vget(vc, "intermediate_size")

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            out["image"] = MAX_IMAGE_TOKENS
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            groups = max(1, ctx.max_model_len // MAX_VIDEO_FRAME_TOKENS)
            out["video"] = min(groups, VIDEO_FRAMES // VIDEO_TEMPORAL_PATCH) * MAX_VIDEO_FRAME_TOKENS
        return out

    def layer_types(self) -> list[str]:
        n = self.config.num_hidden_layers
        lt = self.config.text.get("layer_types")
        return [str(x) for x in lt] if isinstance(lt, list) and len(lt) >= n else ["full_attention"] * n

    def _uses_rope(self, index: int) -> bool:
        thetas = self.config.text.get("layer_rope_theta")
        if isinstance(thetas, list) and index < len(thetas):
            return bool(thetas[index])
        return True

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        h, n = span.hidden, span.layers
        # embed_tokens on the first stage, the final norm and the untied lm_head on the last
        out = self._embedding_and_head(ctx, tied=False)
        out += self._attn_tensors(ctx, name="self_attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n)
        out += self._mlp_tensors(ctx, name="mlp", intermediate=cfg.intermediate_size, count=n)
        if n:
            q_local = cfg.num_attention_heads // span.tp * cfg.head_dim
            out += [
                WeightTensor("self_attn.output_gate_proj", "linear", q_local, h, n, True, in_features_full=h),
                attention_scales("self_attn.attn", n),
                WeightTensor("4 MuseGlimmerRMSNorms", "norm", h, 1, 4 * n),
            ]
            if any(self._uses_rope(i) for i in range(span.start, span.end)):
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                                        _rope_positions(cfg.text, cfg.rope_scaling(), cfg.max_position_embeddings),
                                        cfg.head_dim))
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(cfg, ctx)
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        return self._window_specs(ctx, self.layer_types(), window=_window(self.config.text))

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        out = [f"{types.count('sliding_attention')} sliding-window (RoPE) and "
               f"{types.count('full_attention')} full-attention layers"]
        if self.has_vision():
            out.append(f"vision tower: {MAX_IMAGE_TOKENS} tokens per image, {MAX_VIDEO_FRAME_TOKENS} per video "
                       "frame group (transformers MuseGlimmer processor defaults; a checkpoint's processor "
                       "config may set others)")
        return tuple(out)
