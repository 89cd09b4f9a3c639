"""MiDashengLM (``MiDashengLMModel``, e.g. mispeech/midashenglm-7b): the Dasheng audio transformer
and a frame-subsampling projector in front of a Qwen2 decoder.

vllm/model_executor/models/midashenglm.py (0.33.0), ``MiDashengLMModel.__init__``, on vLLM's own
vllm/transformers_utils/configs/midashenglm.py::MiDashengLMConfig (``audio_encoder_config`` a
DashengConfig, ``text_config`` a Qwen2.5-Omni text config):

* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``audio_encoder`` = ``DashengAudioTransformer``: ``front_end`` (``DashengFrontend``) buffers
    ``spectrogram_window`` (torch.hann_window(win_length)) and ``melscale_fbanks``
    [n_fft // 2 + 1, n_mels], both in the default (model) dtype; ``init_bn``
    nn.BatchNorm2d(n_mels): weight, bias, running_mean / running_var and an int64
    ``num_batches_tracked``; ``patch_embed.proj`` Conv2dLayer(input_channels → embed_dim,
    kernel patch_size, stride patch_stride, biased); ``time_pos_embed`` / ``freq_pos_embed``
    parameters [embed_dim × grid] (grid = (n_mels, target_length) // patch_stride); ``depth`` ×
    ``DashengBlock``: ``norm1`` / ``norm2`` nn.LayerNorm, ``attn.qkv`` QKVParallelLinear (bias
    when ``qkv_bias``), ``attn.proj`` RowParallelLinear (biased), ``mlp.fc1``
    ColumnParallelLinear / ``mlp.fc2`` RowParallelLinear (biased; width embed_dim ·
    mlp_ratio), ``ls1`` / ``ls2`` LayerScale gammas when ``init_values``; ``norm`` nn.LayerNorm;
  - ``audio_projector`` = ``AudioProjectorSubsample``: ``net.0`` ColumnParallelLinear(embed_dim ·
    subsample_factor → text hidden) and ``net.2`` RowParallelLinear(text hidden → text hidden),
    biased;

* under ``_mark_language_model``: ``decoder`` = ``init_vllm_registered_model`` on ``text_config``
  with ``architectures=["Qwen2ForCausalLM"]``.

No ``supports_encoder_tp_data``.  The dummy audio is ``get_max_audio_len()`` = 160,000 samples
(10 s at 16 kHz): ``calculate_mel_frames_dasheng`` gives (1 + 160000 / hop) // 4 //
subsample_factor = 50 tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower

__all__ = ["MiDashengLM", "dasheng_encoder"]

#: MiDashengLMProcessingInfo.get_max_audio_len (samples)
MAX_AUDIO_SAMPLES = 160000


def _pair(v: Any) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, (list, tuple)) else (int(v), int(v))


def _encoder_config(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    ec = raw.get("audio_encoder_config", {})
    if not isinstance(ec, Mapping):
        raise ModelConfigError("MiDashengLMModel: audio_encoder_config must be an object")
    return ec


def dasheng_encoder(ec: Mapping[str, Any], tp: int, prefix: str = "audio_encoder") -> list[WeightTensor]:
    """midashenglm.py::DashengAudioTransformer on one rank (DashengConfig defaults where omitted)."""
    e, n, mels = int(ec.get("embed_dim", 768)), int(ec.get("depth", 12)), int(ec.get("n_mels", 64))
    hidden = int(e * float(ec.get("mlp_ratio", 4.0)))
    (p0, p1), (s0, s1) = _pair(ec.get("patch_size", 16)), _pair(ec.get("patch_stride", 16))
    chans = int(ec.get("input_channels", 1))
    grid_f, grid_t = mels // s0, int(ec.get("target_length", 1012)) // s1

    def t(name: str, rows: int, cols: int = 1, count: int = n, kind: str = "encoder") -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", kind, rows, cols, count)  # type: ignore[arg-type]

    out = [
        t("front_end.spectrogram_window", int(ec.get("win_length", 512)), 1, 1, "buffer"),
        t("front_end.melscale_fbanks", int(ec.get("n_fft", 512)) // 2 + 1, mels, 1, "buffer"),
        t("init_bn.weight+bias", mels, 1, 2), t("init_bn.running_mean+running_var", mels, 1, 2, "buffer"),
        WeightTensor(f"{prefix}.init_bn.num_batches_tracked", "buffer", 1, 1, dtype="int64"),
        t("patch_embed.proj", e, chans * p0 * p1, 1), t("patch_embed.proj.bias", e, 1, 1),
        t("time_pos_embed", e, grid_t, 1), t("freq_pos_embed", e, grid_f, 1),
        t("blocks.norm1+norm2", e, 1, 4 * n),  # weight + bias each
        t("blocks.attn.qkv", 3 * e // tp, e), t("blocks.attn.proj", e, e // tp), t("blocks.attn.proj.bias", e),
        t("blocks.mlp.fc1", hidden // tp, e), t("blocks.mlp.fc1.bias", hidden // tp),
        t("blocks.mlp.fc2", e, hidden // tp), t("blocks.mlp.fc2.bias", e),
        t("norm", e, 1, 2),
    ]
    if ec.get("qkv_bias", True):
        out.append(t("blocks.attn.qkv.bias", 3 * e // tp))
    if ec.get("init_values"):
        out.append(t("blocks.ls1+ls2.gamma", e, 1, 2 * n))
    return out


@register
class MiDashengLM(FirstStageTower, _AudioTower, Qwen2):
    """MiDashengLM: Qwen2 on ``text_config`` + the Dasheng encoder and its subsampling projector."""

    architectures = ("MiDashengLMModel",)

    @property
    def patches_per_token(self) -> int:
        return int(self.config.raw.get("subsample_factor", 5))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        ec = _encoder_config(config.raw)
        e = int(ec.get("embed_dim", 768))
        return e, int(e * float(ec.get("mlp_ratio", 4.0)))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ec = _encoder_config(config.raw)
        tp, h = ctx.tensor_parallel_size, config.hidden_size
        k = int(config.raw.get("subsample_factor", 5))
        return dasheng_encoder(ec, tp) + [
            WeightTensor("audio_projector.net.0", "encoder", h // tp, int(ec.get("embed_dim", 768)) * k),
            WeightTensor("audio_projector.net.0.bias", "encoder", h // tp, 1),
            WeightTensor("audio_projector.net.2", "encoder", h, h // tp),
            WeightTensor("audio_projector.net.2.bias", "encoder", h, 1),
        ]

    def clip_tokens(self) -> int:
        """midashenglm.py::calculate_mel_frames_dasheng on the 10 s dummy clip (50 tokens)."""
        ec = _encoder_config(self.config.raw)
        frames = int(1 + MAX_AUDIO_SAMPLES / int(ec.get("hop_length", 160)))
        return max(1, frames // 4 // int(self.config.raw.get("subsample_factor", 5)))

