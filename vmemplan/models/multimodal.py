"""Vision-language models: a text decoder with a vision encoder in front.

Covers Qwen2.5-VL (and Qwen2-VL), Qwen3-VL, Mistral-3 / Pixtral-HF, Llava (CLIP or SigLIP tower) and
Llama-3.2-Vision (Mllama: cross-attention layers).  The language model is the matching text
adapter; the vision tower's tensors come from :class:`VisionEncoderMixin`, which other
adapters (Gemma-3/4) can reuse through ``vision_weight_tensors(config, ctx)`` and
``mm_profile(config, ctx)``.

Rules mirrored from vLLM 0.33.0 (vllm/model_executor/models/qwen2_5_vl.py, qwen3_vl.py,
pixtral.py, mistral3.py, clip.py, llava.py, siglip.py; Mllama from 0.6.6 / 0.10.1.1 mllama.py,
since 0.33.0 no longer ships it):

* the tower is built only when some modality it serves has a ``--limit-mm-per-prompt`` above 0
  (vllm/model_executor/models/interfaces.py::SupportsMultiModal._mark_tower_model; 0.11.0
  Qwen3-VL sets ``self.visual = None`` the same way);
* ``--mm-encoder-tp-mode weights`` (default) shards the tower's linears over TP like the
  decoder; ``data`` keeps full weights on every rank (``disable_tp``) and splits the images;
* vision towers are kept at the model dtype: checkpoint quantization configs list them as
  ignored, so they are marked not quantizable here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import CrossAttentionSpec, FullAttentionSpec
from vmemplan.core.units import dtype_bytes
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import LlamaLike, Qwen2, Qwen3, pad_vocab
from vmemplan.models.dense_blocks import kv_spec_fields, llama_layer_tensors
from vmemplan.models.vision_towers import (
    _need,
    _tower_tp,
    _uses_mrope,
    _vision,
    clip_tower,
    mllama_tower,
    mrope_cache_positions,
    pixtral_native_adapter,
    pixtral_rotary_buffers,
    pixtral_tower,
    qwen2_5_vl_tower,
    qwen2_vl_tower,
    qwen3_vl_tower,
    siglip_tower,
)

__all__ = [
    "VisionEncoderMixin",
    "FirstStageTower",
    "Qwen2_5_VL",
    "Qwen3_VL",
    "Mistral3",
    "Pixtral",
    "Llava",
    "Mllama",
    "qwen2_5_vl_tower",
    "qwen3_vl_tower",
    "pixtral_tower",
    "clip_tower",
    "siglip_tower",
    "mllama_tower",
    "mrope_cache_positions",
]

# transformers Qwen2VLImageProcessor defaults (size shortest_edge / longest_edge), used when the
# config carries no processor limits (config.json does not; preprocessor_config.json does).
QWEN2_VL_MIN_PIXELS = 56 * 56
QWEN2_VL_MAX_PIXELS = 28 * 28 * 1280
# transformers Qwen2VLImageProcessor is also the image processor of Qwen3-VL; its own
# preprocessor_config.json ships size {shortest_edge 65536, longest_edge 16777216}
# (transformers/models/qwen3_vl/processing_qwen3_vl.py uses Qwen2VLImageProcessorFast).


# The mixin
# --------------------------------------------------------------------------------------


class VisionEncoderMixin:
    """What a vision-language adapter adds to its text adapter.

    Subclasses set ``modalities`` and implement ``vision_weight_tensors(config, ctx)``,
    ``max_tokens_per_item(config, ctx)`` and ``encoder_dims(config)``; the mixin decides whether
    the tower is built, prices the profile (:meth:`mm_profile`) and exposes it to the planner
    through the ``multimodal_profile`` hook.
    """

    modalities: tuple[str, ...] = ("image",)
    #: the model's own per-prompt caps (its processing info's ``get_supported_mm_limits``) where it
    #: states a number; a modality not named here is uncapped (None)
    supported_mm_limits: Mapping[str, int] = {}
    reads_max_model_len = True  # the encoder budget reads the context length
    #: vLLM's ``SupportsMultiModal.supports_encoder_tp_data`` (interfaces.py, False unless a model
    #: declares it): without it ``--mm-encoder-tp-mode data`` becomes ``weights``
    #: (vllm/config/model.py, 0.33.0), for the tower's weights and the encoder profile alike
    supports_encoder_tp_data: bool = False
    #: the config key of a square pixel-shuffle / downsample factor ``f`` (tower patches merged
    #: ``f × f`` into one token); None: no such factor, ``patches_per_token`` as set
    shuffle_key: str | None = None
    shuffle_default: int = 2

    def shuffle(self) -> int:
        return int(self.config.raw.get(self.shuffle_key, self.shuffle_default))  # type: ignore[attr-defined]

    @property
    def patches_per_token(self) -> int:
        """Encoder input positions per output token (``f²`` for a shuffle factor, else 1)."""
        return self.shuffle() ** 2 if self.shuffle_key else 1

    # -- to override -------------------------------------------------------------------
    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:  # pragma: no cover
        raise NotImplementedError

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:  # pragma: no cover
        raise NotImplementedError

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        """(hidden, intermediate) of the vision tower, for the activation estimate."""
        vc = _vision(config)
        return _need(vc, "hidden_size", "embed_dim"), _need(vc, "intermediate_size")

    def encoder_output_width(self, config: Any) -> int:
        """Width of one encoder output token held in the encoder cache (the LM hidden size)."""
        return config.hidden_size

    # -- provided ------------------------------------------------------------------------
    def tower_built(self, ctx: GraphContext) -> bool:
        """False when every modality the tower serves is limited to 0 per prompt
        (interfaces.py::SupportsMultiModal._mark_tower_model, 0.33.0)."""
        return any(mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0 for m in self.modalities)

    def encoder_ctx(self, ctx: GraphContext) -> GraphContext:
        """``ctx`` with the encoder TP mode vLLM runs (:attr:`supports_encoder_tp_data`)."""
        if ctx.mm_encoder_tp_mode == "data" and not self.supports_encoder_tp_data:
            return replace(ctx, mm_encoder_tp_mode="weights")
        return ctx

    #: tensors of ``vision_weight_tensors`` that are bare ``nn.Parameter``s assigned inside
    #: ``_mark_tower_model``: its ``no_init_weights`` stands in only for child modules, so they are
    #: allocated even when every modality is limited to 0 (interfaces.py, 0.33.0)
    bare_tower_parameters: tuple[str, ...] = ()

    def tower_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        if self.tower_built(ctx):
            return self.vision_weight_tensors(config, self.encoder_ctx(ctx))
        if not self.bare_tower_parameters:
            return []
        return [t for t in self.vision_weight_tensors(config, self.encoder_ctx(ctx))
                if t.name in self.bare_tower_parameters]

    def mm_profile(self, config: Any, ctx: GraphContext, *, hidden_buffers: float = 3.0,
                   intermediate_buffers: float = 3.0) -> mm_law.MmProfile:
        """The encoder budget and the profile-time bytes for this deployment (see
        :func:`vmemplan.laws.multimodal.mm_profile`)."""
        ctx = self.encoder_ctx(ctx)
        hidden, inter = self.encoder_dims(config)
        tokens = self.max_tokens_per_item(config, ctx) if self.tower_built(ctx) else {}
        limits = mm_law.allowed_limits(ctx.limit_mm_per_prompt,
                                       {m: self.supported_mm_limits.get(m) for m in {*self.modalities, *tokens}})
        return mm_law.mm_profile(
            tokens, limits, max_num_batched_tokens=ctx.max_num_batched_tokens,
            max_model_len=ctx.max_model_len, max_num_seqs=ctx.max_num_seqs,
            patches_per_token=self.patches_per_token, encoder_hidden_size=hidden,
            encoder_intermediate_size=inter, output_width=self.encoder_output_width(config),
            hidden_buffers=hidden_buffers, intermediate_buffers=intermediate_buffers,
            dtype_bytes=dtype_bytes(ctx.model_dtype), tensor_parallel_size=ctx.tensor_parallel_size,
            data_parallel_encoder=ctx.mm_encoder_tp_mode == "data", skip_mm_profiling=ctx.skip_mm_profiling,
            enable_chunked_prefill=self.chunked_prefill_supported(),  # type: ignore[attr-defined]
        )

    def multimodal_profile(self, ctx: GraphContext, *, hidden_buffers: float = 3.0,
                           intermediate_buffers: float = 3.0) -> mm_law.MmProfile | None:
        """Planner hook (see base.Adapter.multimodal_profile)."""
        return self.mm_profile(self.config, ctx, hidden_buffers=hidden_buffers,  # type: ignore[attr-defined]
                               intermediate_buffers=intermediate_buffers)



class FirstStageTower:
    """``weight_tensors`` = the language model's plus, on the first pipeline stage, the tower's
    (:meth:`VisionEncoderMixin.tower_tensors`): vLLM builds a model's encoder towers where it
    embeds the inputs (``get_pp_group().is_first_rank``).  List it first in the bases, before the
    tower mixin and the text adapter whose ``weight_tensors`` it extends."""

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out: list[WeightTensor] = super().weight_tensors(ctx)  # type: ignore[misc]
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(self.config, ctx)  # type: ignore[attr-defined]
        return out

# --------------------------------------------------------------------------------------
# Qwen-VL
# --------------------------------------------------------------------------------------


class _QwenVLBase(VisionEncoderMixin):
    modalities = ("image", "video")
    supports_encoder_tp_data = True  # qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py (and their subclasses), glm4_1v.py
    #: rows of the M-RoPE cache per position: get_rope's default 4 (Qwen2-VL / Qwen2.5-VL);
    #: Qwen3-VL's decoder layers pass 1 from vLLM 0.32.0 unless video pruning is on
    #: (vllm/model_executor/models/qwen3_vl.py::mrope_positions_factor, added in 0.32.0; 0.31 has 4)
    mrope_positions_factor = 4
    mrope_factor_one_from: tuple[int, ...] | None = None  # the release from which the factor is 1

    def mrope_factor(self, ctx: GraphContext | None) -> int:
        since = self.mrope_factor_one_from
        if since is not None and (ctx is None or ctx.at_least(*since)):
            return 1
        return self.mrope_positions_factor

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        """(min_pixels, max_pixels): from the config when it carries them (``min_pixels`` /
        ``max_pixels`` at the top level or in vision_config, as a preprocessor_config.json
        would), else transformers' Qwen2VLImageProcessor defaults (56², 28²·1280)."""
        vc = _vision(config)
        lo = vc.get("min_pixels", config.raw.get("min_pixels", QWEN2_VL_MIN_PIXELS))
        hi = vc.get("max_pixels", config.raw.get("max_pixels", QWEN2_VL_MAX_PIXELS))
        return int(lo), int(hi)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        merge = int(_vision(self.config).get("spatial_merge_size", 2))  # type: ignore[attr-defined]
        return merge * merge

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Largest image and video, as Qwen2VLProcessingInfo.get_mm_max_tokens_per_item
        (0.33.0) computes them with ``seq_len = max_model_len`` and one video."""
        vc = _vision(config)
        patch = _need(vc, "patch_size", "spatial_patch_size")
        merge = int(vc.get("spatial_merge_size", 2))
        tpatch = int(vc.get("temporal_patch_size", 2))
        lo, hi = self.pixel_limits(config)
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            out["image"] = mm_law.qwen_vl_max_image_tokens(patch_size=patch, merge_size=merge, min_pixels=lo,
                                                           max_pixels=hi, temporal_patch_size=tpatch)
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            out["video"] = mm_law.qwen_vl_max_video_tokens(seq_len=ctx.max_model_len, max_videos=1,
                                                           patch_size=patch, merge_size=merge,
                                                           temporal_patch_size=tpatch, min_pixels=lo,
                                                           max_pixels=hi)
        return out

    def _with_mrope(self, tensors: list[WeightTensor], ctx: GraphContext | None = None) -> list[WeightTensor]:
        cfg = self.config  # type: ignore[attr-defined]
        if not _uses_mrope(cfg):
            return tensors
        positions, dim = mrope_cache_positions(cfg, self.mrope_factor(ctx))
        return [WeightTensor(t.name, t.kind, positions, dim) if t.name == "rotary_emb.cos_sin_cache" else t
                for t in tensors]

    def notes(self) -> tuple[str, ...]:
        lo, hi = self.pixel_limits(self.config)  # type: ignore[attr-defined]
        src = "config" if ("max_pixels" in self.config.raw or "max_pixels" in _vision(self.config)) \
            else "transformers Qwen2VLImageProcessor defaults"  # type: ignore[attr-defined]
        return (f"image pixel limits {lo}..{hi} ({src}); a checkpoint's preprocessor_config.json "
                "may allow larger images (more tokens per item, a larger encoder budget)",)


@register
class Qwen2_5_VL(_QwenVLBase, Qwen2):
    """Qwen2-VL / Qwen2.5-VL: the Qwen2 decoder with M-RoPE plus the window-attention ViT."""

    architectures = ("Qwen2_5_VLForConditionalGeneration", "Qwen2VLForConditionalGeneration")

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        if config.architecture == "Qwen2VLForConditionalGeneration":
            return qwen2_vl_tower(_vision(config), _tower_tp(ctx))
        return qwen2_5_vl_tower(_vision(config), _tower_tp(ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        if config.architecture == "Qwen2VLForConditionalGeneration":  # embed_dim, embed_dim × mlp_ratio
            c = _need(vc, "embed_dim")
            return c, int(c * float(vc.get("mlp_ratio", 4)))
        return super().encoder_dims(config)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return self._with_mrope(super().weight_tensors(ctx)) + self.tower_tensors(self.config, ctx)


class _Qwen3VLTower(_QwenVLBase):
    """The Qwen3-VL vision transformer in front of a decoder (Qwen3-VL, Qwen3-VL-MoE, Qwen3.5):
    the encoder output held per token is ``out_hidden × (1 + deepstack levels)`` wide."""

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return qwen3_vl_tower(_vision(config), _tower_tp(ctx))

    def encoder_output_width(self, config: Any) -> int:
        vc = _vision(config)
        return _need(vc, "out_hidden_size") * (1 + len(vc.get("deepstack_visual_indexes") or []))


class _Qwen3VLDeepstack(_Qwen3VLTower):
    """Qwen3-VL's language-model side (dense or MoE text): interleaved M-RoPE whose cache has one
    row per position from 0.32.0 (qwen3_vl.py::mrope_positions_factor: 1 without video pruning)
    and the deepstack input-embedding buffers (:func:`deepstack_buffers`)."""

    mrope_factor_one_from = (0, 32)
    weights_read_batch_tokens = True  # the deepstack input-embedding buffers (deepstack_buffers)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return (self._with_mrope(super().weight_tensors(ctx), ctx)  # type: ignore[misc]
                + self.tower_tensors(self.config, ctx) + deepstack_buffers(self, ctx))  # type: ignore[attr-defined]


@register
class Qwen3_VL(_Qwen3VLDeepstack, Qwen3):
    """Qwen3-VL (dense text): the Qwen3 decoder with interleaved M-RoPE plus the deepstack ViT."""

    architectures = ("Qwen3VLForConditionalGeneration", "Qwen3VLForEmbedding")


def deepstack_buffers(adapter: Any, ctx: GraphContext) -> list[WeightTensor]:
    """Qwen3-VL's deepstack input embeddings: one zeroed ``[max_num_batched_tokens, text hidden]``
    tensor (model dtype, on the GPU) per deepstack level, allocated with the model
    (vllm/model_executor/models/qwen3_vl.py::Qwen3VLForConditionalGeneration.__init__, 0.33.0)."""
    levels = len(_vision(adapter.config).get("deepstack_visual_indexes") or [])
    if not levels or not adapter.tower_built(ctx):
        return []
    return [WeightTensor("deepstack_input_embeds", "buffer", ctx.max_num_batched_tokens,
                         adapter.config.hidden_size, levels)]


# --------------------------------------------------------------------------------------
# Mistral-3 / Pixtral, Llava
# --------------------------------------------------------------------------------------


def _feature_layers(raw: Mapping[str, Any], total: int) -> int:
    """Layers of the tower that run: ``vision_feature_layer`` as vLLM indexes it
    (utils.py::get_layer_index: negative counts from the end, inclusive); for a list, the
    deepest of them (llava.py::_get_num_hidden_layers, 0.33.0)."""
    fl = raw.get("vision_feature_layer", -1)
    picks = [fl] if isinstance(fl, int) else [i for i in fl if isinstance(i, int)] if isinstance(fl, list) else []
    return max((total + i + 1 if i < 0 else i) for i in (picks or [-1]))


@register
class Mistral3(VisionEncoderMixin, LlamaLike):
    """Mistral-3 (Mistral-Small-3.1, Ministral-3) and Pixtral-HF: a Mistral decoder plus the
    Pixtral encoder and the patch-merging projector (mistral3.py, 0.33.0)."""

    architectures = ("Mistral3ForConditionalGeneration",)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        m = int(self.config.raw.get("spatial_merge_size", 1))
        return m * m

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        tp = _tower_tp(ctx)
        layers = _feature_layers(config.raw, _need(vc, "num_hidden_layers"))
        out = pixtral_tower(vc, tp, layers)
        c = _need(vc, "hidden_size")
        h = config.hidden_size
        merge = int(config.raw.get("spatial_merge_size", 1))
        bias = bool(config.raw.get("multimodal_projector_bias", True))
        out += [WeightTensor("multi_modal_projector.norm", "encoder", c, 1)]
        if merge > 1:
            out.append(WeightTensor("multi_modal_projector.patch_merger.merging_layer", "encoder", c, c * merge * merge))
        out += [
            WeightTensor("multi_modal_projector.linear_1", "encoder", h // ctx.tensor_parallel_size, c),
            WeightTensor("multi_modal_projector.linear_2", "encoder", h, h // ctx.tensor_parallel_size),
        ]
        if bias:
            out += [WeightTensor("multi_modal_projector.linear_1.bias", "encoder", h // ctx.tensor_parallel_size, 1),
                    WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1)]
        return out + pixtral_rotary_buffers(vc)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = _vision(config)
        size = _need(vc, "image_size")
        return {"image": mm_law.pixtral_image_tokens(size, size, image_size=size, patch_size=_need(vc, "patch_size"),
                                                     spatial_merge_size=int(config.raw.get("spatial_merge_size", 1)))}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)


@register
class Pixtral(Mistral3):
    """vLLM's own Pixtral, served from a Mistral-format checkpoint (pixtral.py::
    PixtralForConditionalGeneration, 0.33.0; the config is what configs/mistral.py::
    _remap_mistral_vision_args builds from params.json: ``vision_config`` holds the
    ``vision_encoder`` keys, merge and projector switches included).  Every tower layer is built
    (no ``vision_feature_layer``), split over TP (no ``supports_encoder_tp_data``); the projector is
    :func:`pixtral_native_adapter`.  An image is ``max_image_size`` square at most (the Mistral
    tokenizer's ``mm_config``, params.json's ``max_image_size``, else ``image_size``)."""

    architectures = ("PixtralForConditionalGeneration",)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        vc = _vision(self.config)
        return int(vc.get("spatial_merge_size", 1)) ** 2 if vc.get("mm_projector_id") == "patch_merge" else 1

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        return pixtral_tower(vc, _tower_tp(ctx)) + pixtral_native_adapter(vc, config.hidden_size)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = _vision(config)
        size = int(vc.get("max_image_size") or _need(vc, "image_size"))
        return {"image": mm_law.pixtral_image_tokens(size, size, image_size=size, patch_size=_need(vc, "patch_size"),
                                                     spatial_merge_size=int(vc.get("spatial_merge_size", 1)))}


@register
class Llava(VisionEncoderMixin, LlamaLike):
    """Llava-1.5 style: a decoder plus a CLIP or SigLIP tower up to ``vision_feature_layer`` and a
    two-layer projector (llava.py, 0.33.0).

    * The decoder is ``init_vllm_registered_model(hf_config=text_config)``: the text config's own
      architecture, so the adapter is combined with that architecture's adapter (a Qwen2 text
      config brings its q/k/v biases: LLaVA-Interleave).
    * The tower is ``init_vision_tower_for_llava(..., require_post_norm=False)``: no post-LayerNorm
      on the CLIP or SigLIP path even when every layer runs (clip.py::CLIPVisionTransformer,
      siglip.py::SiglipVisionTransformer build it only when ``require_post_norm`` is true), no SigLIP
      head (SiglipVisionModel ``use_head=False``), and SigLIP's int64 ``position_ids`` buffer
      (siglip.py::SiglipVisionEmbeddings, ``persistent=False``: ``arange(num_patches)``,
      [1, num_patches]); CLIP's is in :func:`clip_tower`.
    * ``LlavaForConditionalGeneration`` does not declare ``supports_encoder_tp_data``, so vLLM
      turns ``--mm-encoder-tp-mode data`` into ``weights`` (vllm/config/model.py::ModelConfig.__post_init__):
      the tower stays split over TP.
    """

    architectures = ("LlavaForConditionalGeneration",)

    def __new__(cls, config: Any) -> Any:
        lm = _llava_language_model(config)
        if lm is None or issubclass(cls, lm):
            return super().__new__(cls)
        key = (cls, lm)
        if key not in _LLAVA_COMBINED:
            _LLAVA_COMBINED[key] = type(f"{cls.__name__}[{lm.__name__}]", (cls, lm), {"family": lm.family})
        return _LLAVA_COMBINED[key](config)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        tp = ctx.tensor_parallel_size  # no supports_encoder_tp_data: weights mode (config/model.py)
        layers = _feature_layers(config.raw, _need(vc, "num_hidden_layers"))
        if str(vc.get("model_type", "clip_vision_model")).startswith("siglip"):
            grid = _need(vc, "image_size") // _need(vc, "patch_size")
            out = siglip_tower(vc, tp, layers, post_norm=False) + [WeightTensor(
                "vision_tower.vision_model.embeddings.position_ids", "buffer", 1, grid * grid, dtype="int64")]
        else:
            out = [t for t in clip_tower(vc, tp, layers) if not t.name.endswith("post_layernorm")]
        c = _need(vc, "hidden_size")
        h = config.hidden_size
        out += [WeightTensor("multi_modal_projector.linear_1", "encoder", h // tp, c),
                WeightTensor("multi_modal_projector.linear_2", "encoder", h, h // tp)]
        if bool(config.raw.get("multimodal_projector_bias", True)):
            out += [WeightTensor("multi_modal_projector.linear_1.bias", "encoder", h // tp, 1),
                    WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1)]
        return out


    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The tower's tokens (CLIP: patches + the class token, clip.py::CLIPEncoderInfo; SigLIP:
        patches, siglip.py::SiglipEncoderInfo) selected by ``vision_feature_select_strategy``:
        ``default`` drops one, ``full`` keeps all, ``class`` keeps one
        (llava.py::LlavaProcessingInfo.get_num_image_tokens, vision.py::get_num_selected_vision_tokens, 0.33.0)."""
        vc = _vision(config)
        n = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2
        if not str(vc.get("model_type", "clip_vision_model")).startswith("siglip"):
            n += 1
        strategy = config.raw.get("vision_feature_select_strategy", "default")
        return {"image": 1 if strategy == "class" else n if strategy == "full" else n - 1}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)


#: (Llava class, text adapter) -> the combined class (Llava.__new__)
_LLAVA_COMBINED: dict[tuple[type, type], type] = {}
#: text model types of LLaVA checkpoints whose text config may omit ``architectures``
_LLAVA_LM_BY_MODEL_TYPE = {"qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM", "llama": "LlamaForCausalLM"}


def _llava_language_model(config: Any) -> type | None:
    """The adapter of the text config's architecture (llava.py: ``init_vllm_registered_model``
    with ``hf_config=config.text_config``; a text config without ``architectures`` is read by its
    ``model_type``); ``None`` when it is no LlamaLike decoder vmemplan plans (then LlamaLike)."""
    from vmemplan.models.base import adapter_class

    text = config.text
    archs = [a for a in (text.get("architectures") or []) if isinstance(a, str)]
    mt = _LLAVA_LM_BY_MODEL_TYPE.get(str(text.get("model_type", "")))
    for arch in archs + ([mt] if mt else []):
        cls = adapter_class(arch)
        if cls is not None and issubclass(cls, LlamaLike) and not issubclass(cls, VisionEncoderMixin):
            return cls
    return None


# --------------------------------------------------------------------------------------
# Llama-3.2-Vision (Mllama)
# --------------------------------------------------------------------------------------


@register
class Mllama(VisionEncoderMixin, LlamaLike):
    """Llama-3.2-Vision: a Llama decoder whose ``cross_attention_layers`` attend to the image
    encoder's output instead of the text (mllama.py, vLLM 0.6.6–0.10.1.1; removed from later
    releases, so 0.33.0 refuses this architecture).

    Cross-attention layers: fused qkv from the hidden state, o_proj, per-head q/k RMSNorm, two
    RMSNorms, the gated MLP and two scalar tanh gates; their KV cache holds encoder tokens
    (:class:`CrossAttentionSpec`).  The embedding has 8 extra rows for the image tokens.
    """

    architectures = ("MllamaForConditionalGeneration",)

    def cross_layers(self) -> set[int]:
        layers = self.config.text.get("cross_attention_layers") or []
        return {int(i) for i in layers}

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return mllama_tower(_vision(config), _tower_tp(ctx), config.hidden_size)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """``max_num_tiles × ((image_size / patch)² + 1)`` (mllama.py::get_max_mllama_image_tokens)."""
        vc = _vision(config)
        per_tile = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2 + 1
        return {"image": _need(vc, "max_num_tiles") * per_tile}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        cross = sum(1 for i in range(span.start, span.end) if i in self.cross_layers())
        out: list[WeightTensor] = []
        if span.first:  # 8 extra rows for the image tokens
            out.append(WeightTensor("model.embed_tokens", "embedding", pad_vocab(cfg.vocab_size + 8) // tp, h))
        if n:
            out += llama_layer_tensors(cfg, tp=tp, kv_rows=self.kv_heads_per_rank(tp) * cfg.head_dim, count=n,
                                       attn_prefix="")
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            if cross:
                out += [WeightTensor("cross_attn.q_norm+k_norm", "norm", cfg.head_dim, 1, 2 * cross),
                        WeightTensor("cross_attn_attn_gate+cross_attn_mlp_gate", "norm", 1, 1, 2 * cross)]
            positions, rotary_dim = _rope(cfg)
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, rotary_dim))
        if span.last:
            out += [WeightTensor("model.norm", "norm", h, 1), WeightTensor("lm_head", "lm_head", span.vocab_rows, h)]
        return out + self.tower_tensors(cfg, ctx)

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Self-attention layers: FullAttentionSpec; cross-attention layers: CrossAttentionSpec
        (cached encoder tokens, ``cdiv(max_num_encoder_input_tokens, block)`` pages)."""

        common = kv_spec_fields(ctx, num_kv_heads=self.kv_heads_per_rank(ctx.tensor_parallel_size),
                                head_size=self.config.head_dim)
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            if i in self.cross_layers():
                specs[f"language_model.model.layers.{i}.cross_attn.attn"] = CrossAttentionSpec(**common)
            else:
                specs[f"language_model.model.layers.{i}.self_attn.attn"] = FullAttentionSpec(**common)
        return specs

    def prefix_caching_supported(self) -> bool:
        return False  # encoder-decoder (vllm/config/model.py::is_prefix_caching_supported)

    def notes(self) -> tuple[str, ...]:
        return ("MllamaForConditionalGeneration was removed from vLLM after 0.10.x; figures follow "
                "the 0.6.6–0.10.1.1 model file",)


def _rope(cfg: Any) -> tuple[int, int]:
    return rope_cache_positions(cfg)


