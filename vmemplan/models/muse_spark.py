"""Muse Spark (``MuseSparkForConditionalGeneration``): the MuseSpark1x MoE text stack with a NaViT
vision encoder and a waveform audio AutoEncoder in front.

vllm/models/muse_spark (0.33.0; ``nvidia/`` on CUDA hosts), config class
vllm/transformers_utils/configs/muse_spark.py::MuseSparkConfig (every key required):

* common/omni.py::MuseSpark1xOmniMixin builds the text stack on ``text_config``, then
  ``_mark_tower_model(vllm_config, {"image", "video"})``: ``vision_model`` = common/vision.py::NaViT
  (:func:`navit_tower`) and ``vision_projection`` RowParallelLinear(projector_hidden_size → text
  hidden, ``input_is_parallel=False``, no bias: input columns split over TP whatever the encoder
  mode) and a weightless ``perception_emb_norm``; ``_mark_tower_model(vllm_config, "audio")``:
  ``audio_encoder`` = common/audio.py::AutoEncoder (:func:`audio_autoencoder`, whole on every rank).
  ``supports_encoder_tp_data`` is set.
* nvidia/model.py::MuseSpark1xForCausalLM (a LlamaForCausalLM: vocab-parallel ``embed_tokens`` on
  the first stage, ``norm`` and an untied ``lm_head`` on the last, a weightless
  ``tok_embeddings_norm``) with MuseSpark1xDecoderLayer (:meth:`MuseSpark.weight_tensors`):
  ``self_attn.qkv_proj`` MuseSpark1xQKVOGateParallelLinear (q, k, v and a q-sized output gate),
  ``o_proj`` RowParallel, the four fp32 attention scales, a weighted ``pre_qkv_proj_norm``,
  weightless QK / output norms, its own RotaryEmbedding on a RoPE layer (``layer_rope_theta[i]`` >
  0; fp32 cache ``[max(max_position_embeddings, max_model_len), head_dim]``, one per layer);
  ``pre_ffn_norm``, ``post_ffn_norm`` (weighted), a weightless ``post_attn_norm``, two
  MuseSpark1xNormPreservingResidualConnection channel ``gate`` vectors ``[hidden]``; the feed-forward
  is MuseSpark1xMoE on ``mlp_layer_types[i] == "sparse"`` (fp32 GateLinear ``router``, fp32
  ``expert_bias`` buffer, ReplicatedLinear ``pooler`` hidden → ``moe_hidden_size`` and
  ``unpooler`` back, ``pre_expert_norm`` / ``post_expert_norm`` on moe_hidden_size, FusedMoE experts
  on moe_hidden_size × ``moe_intermediate_size``: FusedMoEParallelConfig's split) else a LlamaMLP of
  ``intermediate_size``.  Layers of type ``sliding_attention`` take ``sliding_window``.

Tokens per item (common/processor.py::MuseSpark1xOmniProcessingInfo, PreprocessConfig defaults):
image 4,096; video ``num_frames_per_video // patch_temporal × max_num_tokens_per_frame`` (600 // 2 ×
256); audio the 1,024 fallback.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.muse_glimmer import navit_blocks
from vmemplan.models.vision_towers import _split, _tower_tp
from vmemplan.models.windowed import _int, _window, _WindowedBase, moe_shard

__all__ = ["MuseSpark", "audio_autoencoder", "navit_tower"]

#: common/vision.py::NaViT ``max_num_image_tokens`` (sizes the 2-D RoPE table)
NAVIT_MAX_IMAGE_TOKENS = 4096
#: common/processor.py::PreprocessConfig defaults: image tokens, video frames, tokens per frame; audio fallback
MAX_IMAGE_TOKENS, VIDEO_FRAMES, VIDEO_FRAME_TOKENS, AUDIO_TOKENS = 4096, 600, 256, 1024


def _sub(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    sub = raw.get(key)
    if not isinstance(sub, Mapping):
        raise ModelConfigError(f"MuseSparkForConditionalGeneration: config.json lacks {key}",
                               hint="vLLM's MuseSparkConfig requires text, vision and audio configs")
    return sub


def navit_tower(vc: Mapping[str, Any], projector_hidden: int, tp: int) -> list[WeightTensor]:
    """common/vision.py::NaViT on one rank (``tp``: 1 under data-parallel encoding or when TP does
    not divide the heads, ``is_vit_use_data_parallel``): ColumnParallel ``conv1_linear``
    (3 · patch² · patch_temporal → c, gathered), ``positional_embedding_vlm``, ``ln_pre`` / ``ln_post``,
    the blocks (attention and MLP split, :func:`navit_blocks`), the adapter ColumnParallel ``c_fc``
    (c · merge² → projector) / RowParallel ``c_proj`` (no biases), and the fp32
    ``precomputed_freqs_cis`` buffer ``[G, G, head_dim / 2, 2]``, ``G = max(isqrt(4096 · merge²) + 1,
    pos_emb_height, pos_emb_width)``."""
    c, heads, n = _int(vc, "hidden_size"), _int(vc, "num_attention_heads"), _int(vc, "num_hidden_layers")
    patch, merge = _int(vc, "patch_size"), _int(vc, "merge_size")
    ph, pw = _int(vc, "pos_emb_height"), _int(vc, "pos_emb_width")
    if heads % tp:
        tp = 1
    grid = max(math.isqrt(NAVIT_MAX_IMAGE_TOKENS * merge * merge) + 1, ph, pw)
    wide = c * merge * merge
    adapter = _split(projector_hidden, tp, "projector width")

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"vision_model.{name}", "encoder", rows, cols, count)

    return [
        t("conv1_linear", _split(c, tp, "width"), 3 * patch * patch * _int(vc, "patch_temporal")),
        t("positional_embedding_vlm", ph * pw, c), t("ln_pre+ln_post (weight, bias)", c, 1, 4),
        *navit_blocks("vision_model.encoder.layers", c, _int(vc, "intermediate_size"), n, attn_tp=tp, mlp_tp=tp),
        t("adapter.c_fc", adapter, wide), t("adapter.c_proj", projector_hidden, adapter),
        WeightTensor("vision_model.precomputed_freqs_cis", "buffer", grid * grid, (c // heads // 2) * 2,
                     dtype="float32"),
    ]


def audio_autoencoder(ac: Mapping[str, Any]) -> list[WeightTensor]:
    """common/audio.py::AutoEncoder (``disable_tp``: whole on every rank).  Stage ``s`` (input width
    ``d[s-1]``, 1 for the waveform): a Patchifier (Linear ``d[s-1] · patch[s] → d[s]`` with bias, an
    RMSNorm) and ``depths[s]`` Blocks (depthwise Conv1d ``d × 1 × kernel`` with bias, an RMSNorm,
    Linear ``d → mlp_ratio · d`` and back, biased); then an RMSNorm, ``o_proj`` Linear(d[-1] →
    out_hidden_size, biased) and the ``dual_norm`` RMSNorm."""
    widths = [1] + [int(x) for x in ac.get("hidden_sizes") or ()]
    patches = [int(x) for x in ac.get("patch_sizes") or ()]
    depths = [int(x) for x in ac.get("depths") or ()]
    kernel, ratio = _int(ac, "conv_kernel_size"), float(ac.get("mlp_ratio", 4.0))
    latent = _int(ac, "out_hidden_size")
    out: list[WeightTensor] = []
    for s, (patch, depth) in enumerate(zip(patches, depths)):
        d, hid, p = widths[s + 1], int(widths[s + 1] * ratio), f"audio_encoder.stages.{s}"
        out += [
            WeightTensor(f"{p}.0.linear", "encoder", d, widths[s] * patch),
            WeightTensor(f"{p}.0.linear.bias+norm", "encoder", d, 1, 2),
            WeightTensor(f"{p}.blocks.conv.conv", "encoder", d, kernel, depth),
            WeightTensor(f"{p}.blocks.conv.bias+norm+linear2.bias", "encoder", d, 1, 3 * depth),
            WeightTensor(f"{p}.blocks.linear1", "encoder", hid, d, depth),
            WeightTensor(f"{p}.blocks.linear1.bias", "encoder", hid, 1, depth),
            WeightTensor(f"{p}.blocks.linear2", "encoder", d, hid, depth),
        ]
    return out + [
        WeightTensor("audio_encoder.norm", "encoder", widths[-1], 1),
        WeightTensor("audio_encoder.o_proj", "encoder", latent, widths[-1]),
        WeightTensor("audio_encoder.o_proj.bias+dual_norm", "encoder", latent, 1, 2),
    ]


@register
class MuseSpark(VisionEncoderMixin, _WindowedBase):
    """``MuseSparkForConditionalGeneration``: MuseSpark1x text MoE + NaViT + audio AutoEncoder."""

    architectures = ("MuseSparkForConditionalGeneration",)
    modules_on_every_stage = False
    modalities = ("image", "video", "audio")
    supports_encoder_tp_data = True

    @property
    def family(self) -> str:  # type: ignore[override]
        return "moe"

    def layer_types(self) -> list[str]:
        return [str(x) for x in self.config.text.get("layer_types") or []]

    def _sparse(self, i: int) -> bool:
        return str((self.config.text.get("mlp_layer_types") or [])[i]) == "sparse"

    def _rope(self, i: int) -> bool:
        return float((self.config.text.get("layer_rope_theta") or [])[i]) > 0

    def _layer_tensors(self, ctx: GraphContext, n: int) -> list[WeightTensor]:
        """Attention, norms and residual gates of ``n`` decoder layers."""
        cfg, tp = self.config, ctx.tensor_parallel_size
        h, hd = cfg.hidden_size, cfg.head_dim
        q = _split(cfg.num_attention_heads, tp, "attention heads") * hd
        kv = max(1, cfg.num_key_value_heads // tp) * hd
        return [
            WeightTensor("self_attn.qkv_proj (q, k, v, output gate)", "linear", 2 * q + 2 * kv, h, n, True,
                         in_features_full=h),
            WeightTensor("self_attn.o_proj", "linear", h, q, n, True, in_features_full=cfg.num_attention_heads * hd),
            attention_scales("self_attn.attn", n),
            WeightTensor("pre_qkv_proj_norm+pre_ffn_norm+post_ffn_norm+add_attn.gate+add_ffn.gate", "norm", h, 1, 5 * n),
        ]

    def _moe_tensors(self, ctx: GraphContext, n: int) -> list[WeightTensor]:
        text, h = self.config.text, self.config.hidden_size
        experts, mh = _int(text, "num_local_experts"), _int(text, "moe_hidden_size")
        inter = _int(text, "moe_intermediate_size")
        local, i = moe_shard(ctx, experts, inter)
        return [
            WeightTensor("feed_forward.router", "router", experts, h, n, dtype="float32"),
            WeightTensor("feed_forward.expert_bias", "buffer", experts, 1, n, dtype="float32"),
            WeightTensor("feed_forward.pooler", "encoder", mh, h, n),
            WeightTensor("feed_forward.unpooler", "encoder", h, mh, n),
            WeightTensor("feed_forward.pre_expert_norm+post_expert_norm", "norm", mh, 1, 2 * n),
            WeightTensor("feed_forward.experts.w13_weight", "expert", 2 * i, mh, n * local, True,
                         in_features_full=mh, allocations=n),
            WeightTensor("feed_forward.experts.w2_weight", "expert", mh, i, n * local, True,
                         in_features_full=inter, allocations=n),
        ]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        start, end = self.layer_range(ctx)
        out = self._embedding_and_head(ctx, tied=False)
        n = end - start
        if n:
            sparse = sum(1 for i in range(start, end) if self._sparse(i))
            rope = sum(1 for i in range(start, end) if self._rope(i))
            out += self._layer_tensors(ctx, n)
            out += self._moe_tensors(ctx, sparse) if sparse else []
            out += self._mlp_tensors(ctx, name="feed_forward", intermediate=cfg.intermediate_size, count=n - sparse)
            if rope:
                rows = max(cfg.max_position_embeddings, ctx.max_model_len)
                out.append(WeightTensor("self_attn.rotary_emb.cos_sin_cache", "buffer", rows, cfg.head_dim, rope,
                                        dtype="float32"))
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(cfg, ctx)
        return out

    def tower_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """The vision side while image or video is allowed, the audio encoder while audio is."""
        raw, out = config.raw, []
        limits = ctx.limit_mm_per_prompt
        if any(mm_law.limit_for(limits, m) > 0 for m in ("image", "video")):
            proj = _int(raw, "projector_hidden_size")
            out += navit_tower(_sub(raw, "vision_config"), proj, _tower_tp(self.encoder_ctx(ctx)))
            out.append(WeightTensor("vision_projection", "encoder", config.hidden_size,
                                    _split(proj, ctx.tensor_parallel_size, "projector width")))
        if mm_law.limit_for(limits, "audio") > 0:
            out += audio_autoencoder(_sub(raw, "audio_config"))
        return out

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return self.tower_tensors(config, ctx)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _sub(config.raw, "vision_config")
        return _int(vc, "hidden_size"), _int(vc, "intermediate_size")

    @property
    def patches_per_token(self) -> int:
        return _int(_sub(self.config.raw, "vision_config"), "merge_size") ** 2

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        temporal = _int(_sub(config.raw, "vision_config"), "patch_temporal")
        table = {"image": MAX_IMAGE_TOKENS, "video": VIDEO_FRAMES // temporal * VIDEO_FRAME_TOKENS,
                 "audio": AUDIO_TOKENS}
        return {m: v for m, v in table.items() if mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0}

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        return self._window_specs(ctx, self.layer_types(), window=_window(self.config.text))
