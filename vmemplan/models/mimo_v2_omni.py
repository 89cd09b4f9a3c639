"""MiMo-V2 Omni (``MiMoV2OmniForCausalLM``, the MiMo-V2.5 checkpoints served with that architecture): MiMo's
window-attention ViT and its audio encoder in front of the MiMo-V2-Flash decoder.

vllm/model_executor/models/mimo_v2_omni.py (0.33.0), ``MiMoV2OmniForCausalLM.__init__``:

* under ``_mark_tower_model(vllm_config, {"image", "video"})``: ``visual`` = ``MiMoVisionTransformer`` on
  ``vision_config`` (vllm/transformers_utils/configs/mimo_v2_omni.py::Mimo_VLVisionConfig, whose defaults
  apply), built without quantization:

  - ``patch_embed.proj``: Qwen2.5-VL's Conv3d (``in_channels·temporal_patch·patch²`` → hidden, no bias);
  - ``depth`` × ``MiMoVisionBlock``: RMSNorms ``norm1`` / ``norm2``; ``MiMoVisionAttention``: ``qkv``
    QKVParallelLinear (``num_heads`` query heads of ``qk_channels``, ``num_key_value_heads`` K heads of
    ``qk_channels`` and V heads of ``kv_channels``, biased), ``proj`` RowParallelLinear(num_heads·kv_channels
    → hidden, biased), and ``sinks [num_heads]`` (whole, not split) on the blocks outside
    ``fullatt_block_indexes`` when ``use_sink``; ``mlp`` the Qwen2.5-VL gated MLP (merged gate/up and down,
    biased);
  - ``merger``: RMSNorm ``ln_q [hidden]``, ``mlp.0`` ColumnParallelLinear(hidden·merge² → same, no bias),
    ``mlp.2`` RowParallelLinear(→ ``out_hidden_size``, no bias);
  - ``rotary_pos_emb``: get_rope(head_size qk_channels, 8192 positions, partial_rotary_factor 0.5), an
    ``[8192, qk_channels / 2]`` cache;

  the linears are split over TP (the model does not declare ``supports_encoder_tp_data``; TP must divide
  both head counts, ``dist_utils.divide``);
* with an ``audio_config``, under ``_mark_tower_model(vllm_config, "audio")``: ``audio_encoder`` =
  mimo_audio.py::MimoAudioEncoder (``MimoAudioEncoderConfig`` defaults), never split over TP
  (:func:`mimo_audio_encoder`);
* under ``_mark_language_model``: ``language_model`` = mimo_v2.py::MiMoV2FlashForCausalLM on the same config
  (:class:`vmemplan.models.mimo_v2.MiMoV2`).

Both towers are built on every pipeline stage.  ``MimoAudioEncoder`` also loads an audio tokenizer
(``MiMoAudioTokenizer``) from ``<model>/audio_tokenizer`` when that folder exists; its size is in that
folder's own config, not in config.json, and it is not planned here (the oracle, reading a bare config.json,
has no such folder either).

Encoder budget (MiMoV2OmniProcessingInfo.get_mm_max_tokens_per_item): image and video only (the dummy
inputs carry no audio); the processor's pixel limits are ``processor_config.image_min_pixels`` /
``image_max_pixels`` or 4 / 4096 units of (patch · merge)² (MiMoOmniProcessor.from_hf_config).  Video is
priced with the Qwen2-VL law (MiMo's frame resampling at ``tokens_per_second`` is not modelled).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.mimo_v2 import MiMoV2
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _split, _tower_tp, _vision

__all__ = ["MiMoV2Omni", "mimo_vision_transformer", "mimo_audio_encoder"]

#: Mimo_VLVisionConfig defaults (vllm/transformers_utils/configs/mimo_v2_omni.py, 0.33.0)
VISION_DEFAULTS: dict[str, Any] = {
    "depth": 28, "hidden_size": 1280, "intermediate_size": 4608, "num_heads": 32, "in_channels": 3,
    "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 2048,
    "kv_channels": 64, "qk_channels": 64, "num_key_value_heads": 8, "fullatt_block_indexes": [7, 15, 23, 31],
}
#: MimoAudioEncoderConfig defaults (vllm/model_executor/models/mimo_audio.py, 0.33.0)
AUDIO_DEFAULTS: dict[str, Any] = {
    "speech_vocab_size": "1025-1025-129-129-129-129-129-129", "group_size": 4, "audio_channels": 8,
    "input_local_layers": 6, "input_local_dim": 1024, "input_local_attn_heads": 64,
    "input_local_intermediate_size": 4096, "out_hidden_size": 4096, "partial_rotary_factor": 0.334,
    "projection_layers": 1, "add_post_norm": False,
}
#: transformers' Qwen2Config default vocabulary: the embedding table of the audio encoder's Qwen2Model
QWEN2_DEFAULT_VOCAB = 151936
#: MiMoVisionTransformer's rotary cache length
VISION_ROPE_POSITIONS = 8192


def _get(cfg: Mapping[str, Any], defaults: Mapping[str, Any], key: str) -> Any:
    value = cfg.get(key)
    return defaults[key] if value is None else value


def mimo_vision_transformer(vc: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """MiMoVisionTransformer on one rank (see the module docstring)."""
    def g(key: str) -> Any:
        return _get(vc, VISION_DEFAULTS, key)

    c, depth, inter, heads, kv = g("hidden_size"), g("depth"), g("intermediate_size"), g("num_heads"), \
        g("num_key_value_heads")
    qk, vd, merge = g("qk_channels"), g("kv_channels"), g("spatial_merge_size")
    h, k = _split(heads, tp, "attention heads"), _split(kv, tp, "KV heads")
    i = _split(inter, tp, "MLP width")
    m = c * merge * merge
    qkv = h * qk + k * (qk + vd)
    sinks = depth - len([b for b in g("fullatt_block_indexes") if 0 <= b < depth]) if vc.get("use_sink") else 0

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"visual.{name}", "encoder", rows, cols, count)

    out = [
        t("patch_embed.proj", c, g("in_channels") * g("temporal_patch_size") * g("patch_size") ** 2),
        t("blocks.norm1+norm2", c, 1, 2 * depth),
        t("blocks.attn.qkv", qkv, c, depth), t("blocks.attn.qkv.bias", qkv, 1, depth),
        t("blocks.attn.proj", c, h * vd, depth), t("blocks.attn.proj.bias", c, 1, depth),
        t("blocks.mlp.gate_up_proj", 2 * i, c, depth), t("blocks.mlp.gate_up_proj.bias", 2 * i, 1, depth),
        t("blocks.mlp.down_proj", c, i, depth), t("blocks.mlp.down_proj.bias", c, 1, depth),
        t("merger.ln_q", c), t("merger.mlp.0", _split(m, tp, "merger width"), m),
        t("merger.mlp.2", g("out_hidden_size"), m // tp),
        WeightTensor("visual.rotary_pos_emb.cos_sin_cache", "buffer", VISION_ROPE_POSITIONS, qk // 2),
    ]
    return out + ([t("blocks.attn.sinks", heads, 1, sinks)] if sinks else [])


def _vocab_sizes(value: Any, channels: int) -> list[int]:
    """MimoAudioEncoder._parse_maybe_list: ``"a-b-..."`` per channel, else one size for every channel."""
    if isinstance(value, str) and "-" in value:
        return [int(s) for s in value.split("-")]
    return [int(value)] * channels


def mimo_audio_encoder(ac: Mapping[str, Any]) -> list[WeightTensor]:
    """mimo_audio.py::MimoAudioEncoder (whole on every rank): transformers' ``Qwen2Model`` as the input-local
    transformer (its unused ``embed_tokens`` of Qwen2Config's default 151,936 rows included; biased q/k/v,
    o_proj, gated MLP, two RMSNorms a layer, the final norm only with ``add_post_norm``, fp32 ``inv_freq`` and
    ``original_inv_freq`` buffers of ``⌈int(head_dim · partial_rotary_factor) / 2⌉``), one speech embedding
    per audio channel, and the projection (one Linear, or two around a 4× wider GELU layer)."""
    def g(key: str) -> Any:
        return _get(ac, AUDIO_DEFAULTS, key)

    d, n, heads, inter = g("input_local_dim"), g("input_local_layers"), g("input_local_attn_heads"), \
        g("input_local_intermediate_size")
    hd = d // heads
    freqs = -(-int(hd * float(g("partial_rotary_factor"))) // 2)
    group, out_width = d * g("group_size"), g("out_hidden_size")

    def t(name: str, rows: int, cols: int = 1, count: int = 1, dtype: str | None = None) -> WeightTensor:
        return WeightTensor(f"audio_encoder.{name}", "encoder", rows, cols, count, dtype=dtype)

    out = [
        t("input_local_transformer.embed_tokens", QWEN2_DEFAULT_VOCAB, d),
        t("input_local_transformer.layers.q_proj+k_proj+v_proj", heads * hd, d, 3 * n),
        t("input_local_transformer.layers.q_proj+k_proj+v_proj.bias", heads * hd, 1, 3 * n),
        t("input_local_transformer.layers.o_proj", d, heads * hd, n),
        t("input_local_transformer.layers.gate_proj+up_proj", inter, d, 2 * n),
        t("input_local_transformer.layers.down_proj", d, inter, n),
        t("input_local_transformer.layers.input_layernorm+post_attention_layernorm", d, 1, 2 * n),
        WeightTensor("audio_encoder.input_local_transformer.rotary_emb.inv_freq+original_inv_freq", "buffer",
                     freqs, 1, 2, dtype="float32"),
        t("speech_embeddings", sum(_vocab_sizes(g("speech_vocab_size"), g("audio_channels"))), d),
    ]
    if g("add_post_norm"):
        out.append(t("input_local_transformer.norm", d))
    layers = g("projection_layers")
    if layers == 1:
        return out + [t("projection", out_width, group)]
    if layers == 2:
        return out + [t("projection.mlp.0", 4 * group, group), t("projection.mlp.2", out_width, 4 * group)]
    raise ModelConfigError(f"audio_config.projection_layers is {layers}",
                           hint="MimoAudioEncoder accepts 1 or 2 projection layers")


@register
class MiMoV2Omni(_QwenVLBase, MiMoV2):
    """MiMo-V2-Flash + MiMo's ViT (images, video) + MiMo's audio encoder."""

    architectures = ("MiMoV2OmniForCausalLM",)
    modalities = ("image", "video", "audio")  # type: ignore[assignment]
    supports_encoder_tp_data = False  # MiMoV2OmniForCausalLM does not declare it

    def _on(self, ctx: GraphContext, *modalities: str) -> bool:
        return any(mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0 for m in modalities)

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        """MiMoOmniProcessor.from_hf_config: ``processor_config`` image limits, else 4 and 4096 units."""
        vc = _vision(config)
        unit = (_get(vc, VISION_DEFAULTS, "patch_size") * _get(vc, VISION_DEFAULTS, "spatial_merge_size")) ** 2
        pc = config.raw.get("processor_config") if isinstance(config.raw.get("processor_config"), Mapping) else {}
        return int(pc.get("image_min_pixels") or 4 * unit), int(pc.get("image_max_pixels") or 4096 * unit)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        return _get(vc, VISION_DEFAULTS, "hidden_size"), _get(vc, VISION_DEFAULTS, "intermediate_size")

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        out: list[WeightTensor] = []
        if self._on(ctx, "image", "video"):
            out += mimo_vision_transformer(_vision(config), _tower_tp(ctx))
        ac = config.raw.get("audio_config")
        if isinstance(ac, Mapping) and self._on(ctx, "audio"):
            out += mimo_audio_encoder(ac)
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return MiMoV2.notes(self) + _QwenVLBase.notes(self) + (
            "the audio tokenizer MimoAudioEncoder loads from <model>/audio_tokenizer is not planned",)
