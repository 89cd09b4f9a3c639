"""MOSS-Audio (``MossAudioModel``): vLLM's own convolution-stem audio encoder, a gated-MLP adapter and
DeepStack mergers in front of a Qwen3 decoder on ``language_config``.

vllm/model_executor/models/moss_audio.py (0.33.0), ``MossAudioModel.__init__`` (config:
``MossAudioConfig`` of the same file; ``audio_config`` read through ``MossAudioEncoderConfig``):

* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``audio_encoder`` = ``MossAudioEncoder``: three nn.Conv2d(k 3×3, stride 2, biased: 1 → c,
    c → c, c → c) with c = ``downsample_hidden_size``; ``stem_proj`` ReplicatedLinear(c ·
    ⌈num_mel_bins / 8⌉ → d_model, biased); ``embed_positions`` (SinusoidsPositionEmbedding) keeps
    only its float32 ``inv_timescales`` buffer of d_model / 2; ``encoder_layers`` ×
    ``MossAudioEncoderLayer``: ``q_proj`` / ``k_proj`` / ``v_proj`` ColumnParallelLinear(d → d; k
    without bias), ``out_proj`` RowParallelLinear (biased), ``fc1`` ColumnParallelLinear /
    ``fc2`` RowParallelLinear (biased), two nn.LayerNorm, split over TP (TP must divide the encoder
    heads); ``layer_norm``; ``out_proj`` ReplicatedLinear(d_model → output_dim, no bias) only when
    the two differ;
  - ``audio_adapter`` = ``GatedMLP``: ``gate_up_proj`` MergedColumnParallelLinear(output_dim →
    2 × ``adapter_hidden_size``) and ``down_proj`` RowParallelLinear(adapter_hidden → text hidden),
    no biases (TP must divide ``adapter_hidden_size``);
  - ``deepstack_audio_merger_list``: k more GatedMLPs of that shape, k =
    len(``deepstack_encoder_layer_indexes``), capped by ``deepstack_num_inject_layers`` when set;

* under ``_mark_language_model``: ``MossQwen3ForCausalLM`` (Qwen3ForCausalLM's tensors: embedding,
  layers, norm and an untied ``lm_head`` unless ``language_config.tie_word_embeddings``) on
  ``language_config``.

No ``supports_encoder_tp_data``; audio is unlimited per prompt.  One item is at most 30 s
(``DEFAULT_MAX_AUDIO_SECONDS``): 3,000 mel frames at hop 160, three stride-2 convolutions →
375 tokens (MossAudioProcessingInfo.get_mm_max_tokens_per_item), one encoder position each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _dims, _int, audio_config
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import WHISPER_MEL_FRAMES, _AudioTower

__all__ = ["MossAudio", "moss_audio_encoder"]


def _conv_out(length: int, convs: int = 3) -> int:
    for _ in range(convs):
        length = (length - 1) // 2 + 1
    return length


def moss_audio_encoder(ac: Mapping[str, Any], tp: int, prefix: str = "audio_encoder") -> list[WeightTensor]:
    """moss_audio.py::MossAudioEncoder's tensors on one rank (see the module docstring)."""
    d, n, heads, ffn, mels, _positions = _dims(ac)
    if heads % tp:
        raise ModelConfigError(f"audio_config: {heads} encoder heads do not divide over TP {tp}",
                               hint="MossAudioModel requires TP to divide encoder_attention_heads")
    c, od = _int(ac, "downsample_hidden_size", 480), _int(ac, "output_dim", 1280)

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [
        t("conv1", c, 9, 1), t("conv2+conv3", c, c * 9, 2), t("conv1+conv2+conv3.bias", c, 1, 3),
        t("stem_proj", d, c * ((mels + 7) // 8), 1), t("stem_proj.bias", d, 1, 1),
        WeightTensor(f"{prefix}.embed_positions.inv_timescales", "buffer", d // 2, 1, dtype="float32"),
        t("layers.self_attn.q_proj+k_proj+v_proj", d // tp, d, 3 * n),
        t("layers.self_attn.q_proj+v_proj.bias", d // tp, 1, 2 * n),
        t("layers.self_attn.out_proj", d, d // tp), t("layers.self_attn.out_proj.bias", d),
        t("layers.fc1", ffn // tp, d), t("layers.fc1.bias", ffn // tp),
        t("layers.fc2", d, ffn // tp), t("layers.fc2.bias", d),
        t("layers.self_attn_layer_norm+final_layer_norm", d, 1, 4 * n),  # weight + bias each
        t("layer_norm", d, 1, 2),
    ]
    return out + ([t("out_proj", od, d, 1)] if od != d else [])


def _gated_mlps(name: str, od: int, hidden: int, text_hidden: int, tp: int, count: int) -> list[WeightTensor]:
    if hidden % tp:
        raise ModelConfigError(f"adapter_hidden_size {hidden} does not divide over TP {tp}",
                               hint="MossAudioModel requires TP to divide adapter_hidden_size")
    return [WeightTensor(f"{name}.gate_up_proj", "encoder", 2 * hidden // tp, od, count),
            WeightTensor(f"{name}.down_proj", "encoder", text_hidden, hidden // tp, count)]


@register
class MossAudio(FirstStageTower, _AudioTower, Qwen3):
    """MOSS-Audio: Qwen3 on ``language_config`` + the MOSS-Audio encoder, adapter and DeepStack mergers."""

    architectures = ("MossAudioModel",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        tp, raw = ctx.tensor_parallel_size, config.raw
        od, hidden = _int(ac, "output_dim", 1280), _int(raw, "adapter_hidden_size", 8192)
        taps = ac.get("deepstack_encoder_layer_indexes", [8, 16, 24])
        k = len(taps or [])
        if raw.get("deepstack_num_inject_layers") is not None:
            k = min(k, _int(raw, "deepstack_num_inject_layers", k))
        out = moss_audio_encoder(ac, tp) + _gated_mlps("audio_adapter", od, hidden, config.hidden_size, tp, 1)
        return out + (_gated_mlps("deepstack_audio_merger_list", od, hidden, config.hidden_size, tp, k) if k else [])

    def clip_tokens(self) -> int:
        """30 s: 3,000 mel frames through three stride-2 convolutions (375)."""
        return _conv_out(WHISPER_MEL_FRAMES)

