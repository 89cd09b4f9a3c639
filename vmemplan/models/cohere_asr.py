"""Cohere ASR (``CohereAsrForConditionalGeneration``, e.g. CohereLabs/cohere-transcribe-03-2026): NeMo's
FastConformer audio encoder and a Transformer decoder that attends to the encoder's output, both
caches as Whisper's (:mod:`vmemplan.models.whisper`).

vllm/model_executor/models/cohere_asr.py (0.33.0), ``CohereAsrForConditionalGeneration.__init__``:
``model`` = CohereASRModel under ``_mark_composite_model(language_targets=CohereASRDecoder,
tower_targets={"audio": (ConformerEncoder, CohereASRProjector)})`` and ``proj_out`` a biased
ParallelLMHead(``head["num_classes"]``, ``head["hidden_size"]``), not tied.

* ``encoder`` = ConformerEncoder on the config's ``encoder`` dict, plain torch modules, whole on every
  rank (:func:`vmemplan.models.parakeet.fast_conformer`): ConvSubsampling (``dw_striding``,
  log2(``subsampling_factor``) stages of ``subsampling_conv_channels``, -1 meaning ``d_model``; its
  ``out`` Linear reads ``feat_in`` halved per stage), ``n_layers`` ConformerLayers with ``use_bias``
  (default True) on every linear and convolution, ``linear_pos`` bias-free, d_ff = ``d_model`` ·
  ``ff_expansion_factor``; ``pos_bias_u`` / ``pos_bias_v`` [heads, d_head] per layer under
  ``untie_biases``, else two persistent buffers of the encoder; RelPositionalEncoding's ``pe`` buffer
  [1, 2 · ``pos_emb_max_len`` - 1, ``d_model``] in the model dtype (``set_max_audio_length``);
  ``out_proj`` only when ``feat_out`` > 0 differs from ``d_model``;
* ``encoder_decoder_proj`` = CohereASRProjector (an nn.Linear, biased) when the encoder and decoder
  widths differ, part of the audio tower;
* ``decoder`` = CohereASRDecoder: TransformerEmbedding (an nn.Embedding of the vocabulary, whole on
  every rank; FixedPositionalEncoding's persistent ``pos_enc`` buffer [``max_sequence_length``,
  hidden] in the model dtype; a LayerNorm), ``num_layers`` CohereASRDecoderLayers (three LayerNorms,
  a biased QKV + ``out_projection`` self attention, a cross attention with ``q_proj`` and a
  ``kv_proj`` of 2 · hidden, a biased ``dense_in`` / ``dense_out`` MLP: the shapes of Whisper's
  decoder layer, :func:`vmemplan.models.whisper.whisper_decoder_layers`) and ``final_layer_norm``.

KV cache, prefix caching, TP: as Whisper (a FullAttentionSpec and a CrossAttentionSpec per layer;
CohereASRAttention asserts that TP divides the heads).  The dummy audio is one clip of
``max_audio_clip_s`` seconds (CohereASRDummyInputsBuilder), at most one per prompt
(CohereASRProcessingInfo.get_supported_mm_limits); its tokens are CohereASRProcessingInfo.
get_num_audio_tokens: the feature extractor's frame count (processors/cohere_asr.py::
FilterbankFeatures.get_seq_len) divided by ``subsampling_factor``, rounded up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.parakeet import fast_conformer
from vmemplan.models.whisper import Whisper, whisper_decoder_layers

__all__ = ["CohereAsr", "cohere_asr_clip_tokens", "conformer_encoder"]


def conformer_encoder(enc: Mapping[str, Any], prefix: str = "model.encoder") -> list[WeightTensor]:
    """ConformerEncoder's tensors for the config's ``encoder`` dict (module docstring)."""
    d, heads = int(enc["d_model"]), int(enc["n_heads"])
    ch = int(enc.get("subsampling_conv_channels", -1))
    untie = bool(enc.get("untie_biases", True))
    out = fast_conformer(
        prefix, h=d, n=int(enc["n_layers"]), heads=heads, hd=d // heads, kv=heads,
        inter=d * int(enc.get("ff_expansion_factor", 4)), ch=d if ch == -1 else ch, k2=3, stride=2,
        steps=int(math.log2(int(enc["subsampling_factor"]))), mels=int(enc["feat_in"]),
        kc=int(enc["conv_kernel_size"]), conv_bias=bool(enc.get("use_bias", True)),
        linear_bias=bool(enc.get("use_bias", True)), rel_bias_per_layer=untie)
    out.append(WeightTensor(f"{prefix}.pos_enc.pe", "buffer", 2 * int(enc["pos_emb_max_len"]) - 1, d))
    if not untie:
        out.append(WeightTensor(f"{prefix}.pos_bias_u+pos_bias_v", "buffer", heads, d // heads, 2))
    feat_out = int(enc.get("feat_out", -1))
    if 0 < feat_out != d:
        out += [WeightTensor(f"{prefix}.out_proj", "encoder", feat_out, d),
                WeightTensor(f"{prefix}.out_proj.bias", "encoder", feat_out, 1)]
    return out


def cohere_asr_clip_tokens(raw: Mapping[str, Any]) -> int:
    """Tokens of the one dummy clip: ``max_audio_clip_s`` seconds through FilterbankFeatures.
    get_seq_len (STFT frames, padded by n_fft // 2 each side unless ``exact_pad``), then
    ceil(frames / ``subsampling_factor``)."""
    pre = raw.get("preprocessor") or {}
    rate = int(pre.get("sample_rate", 16000))
    win, hop = int(float(pre.get("window_size", 0.02)) * rate), int(float(pre.get("window_stride", 0.01)) * rate)
    n_fft = int(pre.get("n_fft") or 2 ** math.ceil(math.log2(win)))
    pad = 2 * ((n_fft - hop) // 2) if pre.get("exact_pad", False) else 2 * (n_fft // 2)
    frames = (int(raw["max_audio_clip_s"] * int(raw.get("sample_rate", rate))) + pad - n_fft) // hop
    return -(-frames // int(raw["encoder"]["subsampling_factor"]))


@register
class CohereAsr(Whisper):
    """``CohereAsrForConditionalGeneration``: ConformerEncoder (+ projector) as the audio tower and
    CohereASRDecoder with Whisper's self- and cross-attention caches."""

    architectures = ("CohereAsrForConditionalGeneration",)
    supported_mm_limits = {"audio": 1}  # CohereASRProcessingInfo.get_supported_mm_limits

    def clip_tokens(self) -> int:
        return cohere_asr_clip_tokens(self.config.raw)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        enc = config.raw["encoder"]
        out = conformer_encoder(enc)
        d_enc, d_dec = int(enc["d_model"]), config.hidden_size
        if d_enc != d_dec:
            out += [WeightTensor("model.encoder_decoder_proj", "encoder", d_dec, d_enc),
                    WeightTensor("model.encoder_decoder_proj.bias", "encoder", d_dec, 1)]
        return out

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        enc = config.raw["encoder"]
        return int(enc["d_model"]), int(enc["d_model"]) * int(enc.get("ff_expansion_factor", 4))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        d, _heads, ffn = self._d()
        p = "model.decoder"
        out: list[WeightTensor] = []
        if span.first:
            out += [WeightTensor(f"{p}.embedding.token_embedding", "embedding", self.config.vocab_size, d),
                    WeightTensor(f"{p}.embedding.position_embedding.pos_enc", "buffer",
                                 int(self.config.raw["transf_decoder"]["config_dict"]["max_sequence_length"]), d),
                    WeightTensor(f"{p}.embedding.layer_norm (weight, bias)", "norm", d, 1, 2)]
            out += self.tower_tensors(self.config, ctx)
        if span.layers:
            out += whisper_decoder_layers(d, ffn, span.layers, span.tp, prefix=p)
        if span.last:
            head = int((self.config.raw.get("head") or {}).get("hidden_size", d))
            out += [WeightTensor(f"{p}.final_layer_norm (weight, bias)", "norm", d, 1, 2),
                    WeightTensor("proj_out", "lm_head", span.vocab_rows, head),
                    WeightTensor("proj_out.bias", "lm_head", span.vocab_rows, 1)]
        return out

    def notes(self) -> tuple[str, ...]:
        return ("encoder-decoder: each decoder layer caches its own tokens and the encoder's "
                f"({self.clip_tokens()} per {self.config.raw['max_audio_clip_s']} s clip, one clip per prompt)",)
