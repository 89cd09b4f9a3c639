"""Whisper (``WhisperForConditionalGeneration``, e.g. openai/whisper-large-v3): an audio encoder and
a text decoder whose layers attend to their own tokens and, through cross attention, to the
encoder's output, both cached.

vllm/model_executor/models/whisper.py (0.33.0), ``WhisperForConditionalGeneration.__init__``:
``model`` = WhisperModel under ``_mark_composite_model(language_targets=WhisperDecoder,
tower_targets={"audio": WhisperEncoder})`` and ``proj_out`` a ParallelLMHead tied to the decoder's
``embed_tokens`` (one tensor).

* ``encoder`` = WhisperEncoder (whisper_encoder.py::whisper_encoder: convolutions, the
  ``max_source_positions`` table, ``encoder_layers`` layers split over TP, the final norm): a
  tower, built while ``audio`` is allowed per prompt and on the first pipeline stage;
* ``decoder`` = WhisperDecoder: ``embed_tokens`` nn.Embedding(vocab_size, d_model) and
  ``embed_positions`` (WhisperPositionalEmbedding, an nn.Embedding of ``max_target_positions``),
  both whole on every rank, ``decoder_layers`` × WhisperDecoderLayer and ``layer_norm``;
  a layer is ``self_attn`` (WhisperAttention: QKVParallelLinear + RowParallelLinear ``out_proj``,
  biased, an Attention of type DECODER), ``encoder_attn`` (WhisperCrossAttention:
  ColumnParallelLinear ``q_proj``, MergedColumnParallelLinear ``kv_proj`` (d → 2d), RowParallelLinear
  ``out_proj``, all biased, a CrossAttention), WhisperMLP ``fc1`` / ``fc2`` (biased) and three
  nn.LayerNorms.  Both attentions register the four fp32 scales.  WhisperAttention asserts that TP
  divides the heads.

KV cache: per decoder layer a FullAttentionSpec (self) and a CrossAttentionSpec (the encoder's
tokens, ``cdiv(max_num_encoder_input_tokens, block)`` pages; vllm/config/scheduler.py sets
``max_num_encoder_input_tokens = max_num_batched_tokens``): two KV cache groups.  vLLM treats the
model as encoder-decoder: no prefix caching (vllm/config/model.py::is_prefix_caching_supported).
The dummy audio is one item of ``max_source_positions`` tokens (WhisperProcessingInfo.
get_num_audio_tokens), at most one per prompt: get_supported_mm_limits caps ``--limit-mm-per-prompt``
(the encoder budget reads min(user limit, 1), vllm/multimodal/processing/context.py::
BaseProcessingInfo.allowed_mm_limits), and vLLM turns chunked prefill off for an encoder-decoder
model (vllm/config/model.py::is_chunked_prefill_supported), which bounds the profiled requests by
``max_num_batched_tokens`` // tokens per clip.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import CrossAttentionSpec, FullAttentionSpec
from vmemplan.models.audio_towers import _dims, _layers
from vmemplan.models.base import Adapter, register
from vmemplan.models.dense_blocks import kv_spec_fields
from vmemplan.models.qwen_audio import _AudioTower
from vmemplan.models.whisper_encoder import whisper_encoder

__all__ = ["Whisper", "whisper_decoder_layers"]


def whisper_decoder_layers(d: int, ffn: int, n: int, tp: int, prefix: str = "model.decoder") -> list[WeightTensor]:
    """``n`` WhisperDecoderLayers split over ``tp``: the encoder layer's self attention, MLP and
    two norms (audio_towers.py::_layers) plus the cross attention and its norm."""

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.layers.encoder_attn.{name}", "encoder", rows, cols, n)

    return _layers(prefix, d, ffn, n, tp, qkv_fused=True) + [
        t("q_proj", d // tp, d), t("q_proj.bias", d // tp), t("kv_proj", 2 * d // tp, d), t("kv_proj.bias", 2 * d // tp),
        t("out_proj", d, d // tp), t("out_proj.bias", d),
        WeightTensor(f"{prefix}.layers.encoder_attn_layer_norm (weight, bias)", "encoder", d, 1, 2 * n),
        attention_scales(f"{prefix}.layers.self_attn.attn+encoder_attn.attn", 2 * n),
    ]


@register
class Whisper(_AudioTower, Adapter):
    """``WhisperForConditionalGeneration``: WhisperEncoder (audio tower) + WhisperDecoder with
    self- and cross-attention caches."""

    architectures = ("WhisperForConditionalGeneration",)
    supported_mm_limits = {"audio": 1}  # WhisperProcessingInfo.get_supported_mm_limits

    def _d(self) -> tuple[int, int, int]:
        """(d_model, decoder heads, decoder FFN width)."""
        cfg = self.config
        return cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size

    def validate_parallel(self, ctx: GraphContext) -> None:
        heads = self.config.num_attention_heads
        if heads % ctx.tensor_parallel_size:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} does not divide the "
                             f"{heads} decoder attention heads", hint="WhisperAttention asserts that TP divides them")

    def clip_tokens(self) -> int:
        return _dims(self.config.raw)[5]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return whisper_encoder(config.raw, ctx.tensor_parallel_size, prefix="model.encoder")

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        d, _n, _h, ffn, _m, _p = _dims(config.raw)
        return d, ffn

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        d, _heads, ffn = self._d()
        out: list[WeightTensor] = []
        if span.first:  # the tied proj_out shares embed_tokens (WhisperDecoder builds both ends anyway)
            out += [WeightTensor("model.decoder.embed_tokens (tied proj_out)", "embedding", self.config.vocab_size, d),
                    WeightTensor("model.decoder.embed_positions", "embedding", self.config.max_position_embeddings, d)]
            out += self.tower_tensors(self.config, ctx)
        if span.layers:
            out += whisper_decoder_layers(d, ffn, span.layers, span.tp)
        if span.last:
            out.append(WeightTensor("model.decoder.layer_norm (weight, bias)", "norm", d, 1, 2))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        d, heads, _ffn = self._d()
        common = kv_spec_fields(ctx, num_kv_heads=max(1, heads // ctx.tensor_parallel_size), head_size=d // heads)
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            specs[f"model.decoder.layers.{i}.self_attn.attn"] = FullAttentionSpec(**common)
            specs[f"model.decoder.layers.{i}.encoder_attn.attn"] = CrossAttentionSpec(**common)
        return specs

    def prefix_caching_supported(self) -> bool:
        return False  # encoder-decoder (vllm/config/model.py::is_prefix_caching_supported)

    def chunked_prefill_supported(self) -> bool:
        return False  # encoder-decoder (vllm/config/model.py::is_chunked_prefill_supported)

    def notes(self) -> tuple[str, ...]:
        return ("encoder-decoder: each decoder layer caches its own tokens and the encoder's "
                f"({self.clip_tokens()} per 30 s clip, one clip per prompt)",)
