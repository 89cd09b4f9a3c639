"""Granite Speech (``GraniteSpeechForConditionalGeneration``, e.g. ibm-granite/granite-4.0-1b-speech,
granite-speech-3.3-8b) and Granite Speech Plus (``GraniteSpeechPlusForConditionalGeneration``,
granite-speech-4.1-2b-plus): a Conformer CTC encoder and a Q-Former projector in front of the
Granite decoder of ``text_config``.

vllm/model_executor/models/granite_speech.py (0.33.0), ``GraniteSpeechForConditionalGeneration.__init__``:

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config``
  (granite.py::GraniteForCausalLM; vmemplan: dense_a_variants.py::GraniteSWA);
* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``encoder`` = ``GraniteSpeechCTCEncoder`` on ``encoder_config`` (:func:`ctc_encoder`):
    ``input_linear`` nn.Linear(input_dim → hidden_dim, biased); ``num_layers`` ×
    ``GraniteSpeechConformerBlock`` — ``ff1`` / ``ff2`` (``GraniteSpeechConformerFeedForward``:
    ``pre_norm`` LayerNorm, ``up_proj`` ColumnParallelLinear(hidden → hidden · feedforward_mult)
    and ``down_proj`` RowParallelLinear back, both biased, split over TP), ``attn``
    (``GraniteSpeechConformerAttention``: ``pre_norm``, ``to_q`` / ``to_kv`` nn.Linear without bias
    to heads · dim_head (twice for kv), ``to_out`` nn.Linear back (biased), ``rel_pos_emb``
    nn.Embedding(2 · max_pos_emb + 1, dim_head)), ``conv`` (``GraniteSpeechConformerConvModule``:
    ``norm``, ``up_conv`` Conv1d(hidden → 2 · inner, k 1, biased) with inner = hidden ·
    conv_expansion_factor, the depthwise ``depth_conv.conv`` Conv1d(inner, groups=inner,
    k conv_kernel_size, no bias), ``batch_norm`` BatchNorm1d(inner) — weight and bias, the
    running mean / variance buffers in the model dtype and an int64 ``num_batches_tracked`` —
    and ``down_conv`` Conv1d(inner → hidden, k 1, biased)) and ``post_norm``; the self-conditioning
    ``out`` ColumnParallelLinear(hidden → output_dim) and ``out_mid`` RowParallelLinear back, both
    biased; and ``attention_dists``, a plain int64 [context_size, context_size] tensor made in
    ``__init__`` under the loader's device (not a buffer, but on the GPU);
  - ``projector`` = ``GraniteSpeechEncoderProjector``: ``query`` nn.Parameter [1, window_size //
    downsample_rate, Q-Former hidden], blip2.py::Blip2QFormerModel on ``projector_config``
    (:func:`blip2_qformer`, plain nn.Linear / LayerNorm, whole on every rank) and ``linear``
    nn.Linear(Q-Former hidden → text hidden, biased).

granite_speech_plus.py::GraniteSpeechPlusForConditionalGeneration builds ``GraniteSpeechPlusCTCEncoder``,
a subclass that only changes ``forward`` (it concatenates ``cat_hidden_layers``' hidden states;
the projector's ``encoder_hidden_size`` in ``projector_config`` already says how wide): the
same tensors.

No ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``.  The dummy
audio is ``get_max_audio_len()`` = 8,000,000 samples (GraniteSpeechDummyInputsBuilder); at the
feature extractor's 16 kHz / hop 160 that is 50,001 mel frames, 25,000 encoder frames (two mel
frames each), ⌈25,000 / window_size⌉ windows of ``window_size // downsample_rate`` tokens
(the count of ``GraniteSpeechForConditionalGeneration.get_num_audio_tokens``): 5,001 tokens for
window 15, rate 5 (``GraniteSpeechProcessingInfo.get_max_audio_tokens``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _int
from vmemplan.models.base import Adapter, adapter_class, register
from vmemplan.models.internvl import combined
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower

__all__ = ["GraniteSpeech", "blip2_qformer", "ctc_encoder"]

#: GraniteSpeechProcessingInfo.get_max_audio_len: samples of the dummy audio
DUMMY_SAMPLES = 8_000_000
#: the Granite Speech feature extractor's melspec hop length (16 kHz audio)
HOP_LENGTH = 160


def _sub(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    sub = raw.get(key)
    if not isinstance(sub, Mapping):
        raise ModelConfigError(f"GraniteSpeech: config.json lacks {key}")
    return sub


def blip2_qformer(pc: Mapping[str, Any], prefix: str) -> list[WeightTensor]:
    """blip2.py::Blip2QFormerModel on ``pc`` (a Blip2QFormerConfig): ``layernorm`` and
    ``num_hidden_layers`` layers of self-attention, cross-attention on every
    ``cross_attention_frequency``-th layer (key / value read ``encoder_hidden_size``) and the query
    MLP; every linear biased, every LayerNorm with a bias; nothing split over TP."""
    q, n = _int(pc, "hidden_size", 768), _int(pc, "num_hidden_layers", 12)
    inter, kv = _int(pc, "intermediate_size", 3072), _int(pc, "encoder_hidden_size", 1408)
    cross = sum(1 for i in range(n) if i % _int(pc, "cross_attention_frequency", 2) == 0)

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [t("layernorm", q, 1, 2),
           t("encoder.layer.attention.query/key/value/output.dense", q, q, 4 * n),
           t("encoder.layer.attention.(q/k/v/output.dense).bias+output.LayerNorm", q, 1, 6 * n),
           t("encoder.layer.intermediate_query.dense", inter, q), t("encoder.layer.intermediate_query.dense.bias", inter),
           t("encoder.layer.output_query.dense", q, inter), t("encoder.layer.output_query.dense.bias+LayerNorm", q, 1, 3 * n)]
    if cross:
        out += [t("encoder.layer.crossattention.query/output.dense", q, q, 2 * cross),
                t("encoder.layer.crossattention.key/value", q, kv, 2 * cross),
                t("encoder.layer.crossattention.(q/k/v/output.dense).bias+output.LayerNorm", q, 1, 6 * cross)]
    return out


def ctc_encoder(ec: Mapping[str, Any], tp: int, prefix: str = "encoder") -> list[WeightTensor]:
    """GraniteSpeechCTCEncoder on ``ec`` (a GraniteSpeechEncoderConfig, its defaults), one rank's
    share: the feed-forward and ``out`` / ``out_mid`` linears split over ``tp``, the rest whole."""
    d, n = _int(ec, "hidden_dim", 1024), _int(ec, "num_layers", 10)
    ff = d * _int(ec, "feedforward_mult", 4)
    heads = _int(ec, "num_heads", 8)
    dim_head = _int(ec, "dim_head", d // heads)  # the config class: hidden_dim // num_heads when unset
    inner = heads * dim_head
    conv = d * _int(ec, "conv_expansion_factor", 2)
    outd, ctx_size = _int(ec, "output_dim", 42), _int(ec, "context_size", 200)
    if ff % tp or outd % tp:
        raise ModelConfigError(f"encoder_config: {ff} / {outd} features do not divide over TP {tp}",
                               hint="vLLM's Column/RowParallelLinear split the encoder's feed-forward and out")

    def t(name: str, rows: int, cols: int = 1, count: int = n, kind: str = "encoder",
          dtype: str | None = None) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", kind, rows, cols, count, dtype=dtype)  # type: ignore[arg-type]

    return [
        t("input_linear", d, _int(ec, "input_dim", 160), 1), t("input_linear.bias", d, 1, 1),
        t("attention_dists", ctx_size, ctx_size, 1, "buffer", "int64"),
        # five LayerNorms a block (ff1, attn, conv, ff2 pre-norms and post_norm), weight + bias
        t("layers.*_norm", d, 1, 10 * n),
        t("layers.ff1/ff2.up_proj", ff // tp, d, 2 * n), t("layers.ff1/ff2.up_proj.bias", ff // tp, 1, 2 * n),
        t("layers.ff1/ff2.down_proj", d, ff // tp, 2 * n), t("layers.ff1/ff2.down_proj.bias", d, 1, 2 * n),
        t("layers.attn.to_q", inner, d), t("layers.attn.to_kv", 2 * inner, d),
        t("layers.attn.to_out", d, inner), t("layers.attn.to_out.bias", d),
        t("layers.attn.rel_pos_emb", 2 * _int(ec, "max_pos_emb", 512) + 1, dim_head),
        t("layers.conv.up_conv", 2 * conv, d), t("layers.conv.up_conv.bias", 2 * conv),
        t("layers.conv.depth_conv.conv", conv, _int(ec, "conv_kernel_size", 15)),
        t("layers.conv.batch_norm.weight/bias", conv, 1, 2 * n),
        t("layers.conv.batch_norm.running_mean/var", conv, 1, 2 * n, "buffer"),
        t("layers.conv.batch_norm.num_batches_tracked", 1, 1, n, "buffer", "int64"),
        t("layers.conv.down_conv", d, conv), t("layers.conv.down_conv.bias", d),
        t("out", outd // tp, d, 1), t("out.bias", outd // tp, 1, 1),
        t("out_mid", d, outd // tp, 1), t("out_mid.bias", d, 1, 1),
    ]


class _GraniteSpeechTower(FirstStageTower, _AudioTower):
    def encoder_dims(self, config: Any) -> tuple[int, int]:
        ec = _sub(config.raw, "encoder_config")
        d = _int(ec, "hidden_dim", 1024)
        return d, d * _int(ec, "feedforward_mult", 4)

    @property
    def patches_per_token(self) -> int:
        """Encoder frames per LM token: the projector reads ``downsample_rate`` frames a query."""
        return _int(self.config.raw, "downsample_rate", 5)  # type: ignore[attr-defined]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        raw = config.raw
        pc = _sub(raw, "projector_config")
        q = _int(pc, "hidden_size", 768)
        queries = _int(raw, "window_size", 15) // _int(raw, "downsample_rate", 5)
        return ctc_encoder(_sub(raw, "encoder_config"), ctx.tensor_parallel_size) + [
            WeightTensor("projector.query", "encoder", queries, q),
            *blip2_qformer(pc, "projector.qformer"),
            WeightTensor("projector.linear", "encoder", config.hidden_size, q),
            WeightTensor("projector.linear.bias", "encoder", config.hidden_size, 1),
        ]

    def clip_tokens(self) -> int:
        """The dummy audio's tokens: mel frames → encoder frames (÷ 2) → windows × queries."""
        raw = self.config.raw  # type: ignore[attr-defined]
        window, rate = _int(raw, "window_size", 15), _int(raw, "downsample_rate", 5)
        frames = (DUMMY_SAMPLES // HOP_LENGTH + 1) // 2
        return -(-frames // window) * (window // rate)



@register
class GraniteSpeech(_GraniteSpeechTower, Adapter):
    """Granite Speech (Plus): the Conformer CTC encoder + Q-Former projector over the Granite decoder."""

    architectures = ("GraniteSpeechForConditionalGeneration", "GraniteSpeechPlusForConditionalGeneration")

    def __new__(cls, config: Any) -> Any:
        lm = adapter_class("GraniteForCausalLM")
        assert lm is not None
        return combined(_GraniteSpeechTower, lm, config)
