"""Nemotron Parse (``NemotronParseForConditionalGeneration``, nvidia/NVIDIA-Nemotron-Parse-v1.x): a RADIO
vision encoder with a convolutional neck, and an mBART decoder without positions that attends to
the image through cross attention, cached as Whisper's (:mod:`vmemplan.models.whisper`).

vllm/model_executor/models/nemotron_parse.py (0.33.0), ``NemotronParseForConditionalGeneration.
__init__``: ``encoder`` = RadioWithNeck under ``_mark_tower_model(vllm_config, "image")``,
``decoder`` = MBartDecoderNoPos under ``_mark_language_model``, ``lm_head`` a ParallelLMHead of the
decoder vocabulary, tied to ``decoder.embed_tokens`` when the top level or the decoder config sets
``tie_word_embeddings``.

* RadioWithNeck: ``model_encoder`` = vLLM's RadioModel on RadioConfig(``args.model``,
  ``image_size``, ``**args``) (:func:`vmemplan.models.radio.radio_tower`; its ``patch_size`` is the
  one in ``args``, default 16), then the neck: ``conv1`` Conv1d(``spatial`` -> ``neck``, k 1, biased),
  ``layer_norm1``, ``conv2`` Conv2d(``neck`` -> ``neck``, kernel (1, 4), bias-free), ``layer_norm2``,
  ``sum_proj`` ColumnParallelLinear(``summary`` -> ``neck``, biased, split over TP), ``layer_norm3``
  (:func:`radio_neck`; here ``spatial`` 1280, ``neck`` 1024 and ``summary`` 3840 are literals);
* MBartDecoderNoPos: ``embed_tokens`` a VocabParallelEmbedding (BartScaledWordEmbedding), no position
  table, ``decoder_layers`` MBartDecoderLayers, ``layernorm_embedding`` and ``layer_norm``; a layer is
  Whisper's decoder layer (WhisperAttention + WhisperCrossAttention, biased ``fc1`` / ``fc2``, three
  LayerNorms) with the MLP ``encoder_ffn_dim`` wide (BartDecoderLayer reads that key).

Parse 3.5 (``RadioMBartPrefixForCausalLM``, vllm/model_executor/models/nemotron_parse3_5.py) is the
same tower and decoder made a causal visual-prefix LM (the image tokens enter the decoder's own
sequence; ``causal_vision_prefix``, no cross attention): RadioWithNeck's neck is ``decoder.d_model``
wide on ``vision_spatial_dim`` (1280) / ``vision_summary_dim`` (3840) inputs; an MBartDecoderLayer
is a biased QKVParallelLinear (``self_attention_kv_heads`` KV heads, default all) + ``out_proj``,
biased ``fc1`` / ``fc2`` of ``decoder_ffn_dim``, two LayerNorms (:func:`mbart_prefix_layers`);
one FullAttentionSpec per layer, prefix caching and chunked prefill as any decoder-only model;
the same one-image limit and token count.

KV cache, prefix caching, TP of NemotronParseForConditionalGeneration: as Whisper (a FullAttentionSpec and a CrossAttentionSpec per layer;
WhisperAttention asserts that TP divides the heads).  Encoder profile: one image a prompt
(NemotronParseProcessingInfo.get_supported_mm_limits) at ``image_size``, of
``(H / patch) · (W / patch / 4) + 1`` tokens (get_num_image_tokens); no ``supports_encoder_tp_data``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import _layers
from vmemplan.models.base import Adapter, register
from vmemplan.models.dense_blocks import kv_spec_fields
from vmemplan.models.radio import VIT_TIMM_DIM_BY_NAME, radio_tower
from vmemplan.models.whisper import Whisper, whisper_decoder_layers

__all__ = ["NemotronParse", "RadioMBartPrefix", "mbart_nopos_ends", "mbart_prefix_layers",
           "nemotron_parse_image_tokens", "radio_neck", "radio_with_neck"]


def radio_neck(spatial: int, neck: int, summary: int, tp: int, prefix: str = "encoder") -> list[WeightTensor]:
    """RadioWithNeck's neck (module docstring)."""

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [t("conv1", neck, spatial), t("conv1.bias", neck), t("conv2", neck, neck * 4),
            t("sum_proj", neck // tp, summary), t("sum_proj.bias", neck // tp),
            t("layer_norm1+2+3 (weight, bias)", neck, 1, 6)]


def radio_with_neck(raw: Mapping[str, Any], tp: int, *, spatial: int, neck: int, summary: int,
                    prefix: str = "encoder") -> list[WeightTensor]:
    """RadioWithNeck: the RADIO ViT on the encoder's ``args`` + :func:`radio_neck`."""
    args = dict((raw.get("encoder") or {}).get("args") or {})
    view = {"args": args, "patch_size": args.get("patch_size", 16),
            "video_temporal_patch_size": args.get("video_temporal_patch_size", 1),
            "separate_video_embedder": args.get("separate_video_embedder", True)}
    return radio_tower(view, tp, prefix=f"{prefix}.model_encoder") + radio_neck(spatial, neck, summary, tp, prefix)


def nemotron_parse_image_tokens(raw: Mapping[str, Any]) -> int:
    """get_num_image_tokens: (H / patch) · (W / patch / 4) + 1 at the config's ``image_size``."""
    h, w = (int(x) for x in raw.get("image_size") or (2048, 1648))
    patch = int((raw.get("encoder") or {}).get("patch_size", 16))
    return (h // patch) * ((w // patch) // 4) + 1


def mbart_nopos_ends(adapter: Any, span: Any, d: int) -> tuple[list[WeightTensor], list[WeightTensor]]:
    """MBartDecoderNoPos's ends for a rank: (first stage: ``embed_tokens`` + ``layernorm_embedding``;
    last stage: ``layer_norm`` + the ParallelLMHead unless tied), as ``span`` holds them."""
    first = [WeightTensor("decoder.embed_tokens", "embedding", span.vocab_rows, d),
             WeightTensor("decoder.layernorm_embedding (weight, bias)", "norm", d, 1, 2)] if span.first else []
    last: list[WeightTensor] = []
    if span.last:
        last.append(WeightTensor("decoder.layer_norm (weight, bias)", "norm", d, 1, 2))
        if not adapter.config.tie_word_embeddings or not span.first:
            last.append(WeightTensor("lm_head", "lm_head", span.vocab_rows, d))
    return first, last


@register
class NemotronParse(Whisper):
    """``NemotronParseForConditionalGeneration``: RadioWithNeck (image tower) + MBartDecoderNoPos with
    self- and cross-attention caches."""

    architectures = ("NemotronParseForConditionalGeneration",)
    modalities = ("image",)
    supported_mm_limits = {"image": 1}  # NemotronParseProcessingInfo.get_supported_mm_limits

    def clip_tokens(self) -> int:
        return nemotron_parse_image_tokens(self.config.raw)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": self.clip_tokens()}

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return radio_with_neck(config.raw, ctx.tensor_parallel_size, spatial=1280, neck=1024, summary=3840)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        args = (config.raw.get("encoder") or {}).get("args") or {}
        c, _layers, _heads, inter = VIT_TIMM_DIM_BY_NAME.get(args.get("model"), (1280, 32, 16, 5120))
        return c, inter

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        d, _heads, ffn = self._d()
        first, last = mbart_nopos_ends(self, span, d)
        out = first + (self.tower_tensors(self.config, ctx) if span.first else [])
        if span.layers:
            out += whisper_decoder_layers(d, ffn, span.layers, span.tp, prefix="decoder")
        return out + last

    def notes(self) -> tuple[str, ...]:
        return ("encoder-decoder: each decoder layer caches its own tokens and the image's "
                f"({self.clip_tokens()} per page image, one image per prompt)",)


def mbart_prefix_layers(d: int, heads: int, kv: int, ffn: int, n: int, tp: int,
                        prefix: str = "decoder") -> list[WeightTensor]:
    """Parse 3.5's ``n`` MBartDecoderLayers split over ``tp``: Whisper's encoder-layer shapes
    (audio_towers.py::_layers) with the fused QKV sized for ``kv`` KV heads (replicated when TP
    exceeds them, as QKVParallelLinear does), and the attention scales."""
    hd = d // heads
    rows = heads * hd // tp + 2 * max(1, kv // tp) * hd
    out = [t for t in _layers(prefix, d, ffn, n, tp, qkv_fused=True) if ".qkv_proj" not in t.name]
    return out + [WeightTensor(f"{prefix}.layers.self_attn.qkv_proj", "encoder", rows, d, n),
                  WeightTensor(f"{prefix}.layers.self_attn.qkv_proj.bias", "encoder", rows, 1, n),
                  attention_scales(f"{prefix}.layers.self_attn.attn", n)]


@register
class RadioMBartPrefix(NemotronParse):
    """``RadioMBartPrefixForCausalLM`` (Parse 3.5): RadioWithNeck + a causal MBartDecoderNoPos over
    the image prefix, self attention only."""

    architectures = ("RadioMBartPrefixForCausalLM",)

    def validate_parallel(self, ctx: GraphContext) -> None:
        Adapter.validate_parallel(self, ctx)  # QKVParallelLinear: heads and KV heads against TP

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        raw = config.raw
        return radio_with_neck(raw, ctx.tensor_parallel_size, spatial=int(raw.get("vision_spatial_dim", 1280)),
                               neck=config.hidden_size, summary=int(raw.get("vision_summary_dim", 3840)))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        cfg = self.config
        first, last = mbart_nopos_ends(self, span, cfg.hidden_size)
        out = first + (self.tower_tensors(cfg, ctx) if span.first else [])
        if span.layers:
            out += mbart_prefix_layers(cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads,
                                       cfg.intermediate_size, span.layers, span.tp)
        return out + last

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        common = kv_spec_fields(ctx, num_kv_heads=max(1, cfg.num_key_value_heads // ctx.tensor_parallel_size),
                                head_size=cfg.hidden_size // cfg.num_attention_heads)
        start, end = self.layer_range(ctx)
        return {f"decoder.layers.{i}.self_attn.attn": FullAttentionSpec(**common) for i in range(start, end)}

    def prefix_caching_supported(self) -> bool:
        return True  # decoder-only

    def chunked_prefill_supported(self) -> bool:
        return True

    def notes(self) -> tuple[str, ...]:
        return (f"causal visual prefix: the page image's {self.clip_tokens()} tokens open the decoder's own "
                "sequence (one image per prompt)",)
