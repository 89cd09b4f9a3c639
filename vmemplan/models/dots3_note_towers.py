"""The two encoders of dots3-note (``Dots3NoteForCausalLM``) as shape lists: ``DotsMoEVitModel`` and
``Dots3NoteAudioModel`` (vLLM 0.33.0, vllm/models/dots3_note/nvidia/vision.py, vision_attention.py,
audio.py, audio_encoder.py).

Both are plain ``nn.Linear`` / ``nn.Conv2d`` modules, whole on every rank (no tensor parallelism),
cast to the model dtype by ``Dots3NoteForCausalLM.__init__`` (``.to(dtype=model_config.dtype)``,
buffers included).

**Vision** (``DotsMoEVitConfig`` keys and defaults): ``DotsPatchEmbed`` (Conv2d ``channels ->
embed_dim``, kernel = stride = ``patch_size``, with bias; RMSNorm), ``num_hidden_layers`` blocks of
two RMSNorms, attention (``qkv`` ``embed_dim -> 3 embed_dim`` and ``proj``, biases under ``use_bias``,
per-head ``q_norm`` / ``k_norm`` under ``use_qk_norm``) and an FFN: a SwiGLU (``fc1`` / ``fc3``
``embed_dim -> intermediate_size``, ``fc2`` back) where ``pyramid_num_routed[i]`` is -1, else a MoE of
that many experts (MoESwiGLUFFNFP8 with ``enable_fp8_moe``, the default): ``gate_weight [E, embed_dim]``,
a ``router_bias [E]`` buffer, and after loading (process_weights_after_loading) the experts replaced by
fused e4m3 ``_fused_w13_fp8 [E, 2 × pad128(moe_intermediate_size), embed_dim]`` and ``_fused_w2_fp8
[E, embed_dim, pad128(moe_intermediate_size)]`` with fp32 128×128 block scales
(``_per_block_cast_to_fp8_padded``); ``post_trunk_norm`` under ``post_norm``; the adapter
(``patch_merger``: LayerNorm ``ln_q`` over ``adapter_in_dim`` with bias and Linear ``m -> m``, ``m ->
adapter_out_dim`` with biases, ``m = adapter_in_dim × adapter_merge_size²``; ``pixel_shuffle_mlp``:
LayerNorm over ``m`` and Linear ``m -> out``, ``out -> out``); the rotary table
``VisionRotaryEmbedding(head_dim / 2, cache_seq_len=100000)``: ``freqs_cache [100000, head_dim / 4]``
and ``inv_freq [head_dim / 4]``.

**Audio** (``Dots3NoteAudioConfig`` with its ``whisper_config``): the conv2d stem (three 3×3 Conv2d with
bias, ``1 -> downsample_hidden_size -> ... ``) and ``conv_out`` (``downsample_hidden_size ×
num_mel_bins / 8 -> d_model``, no bias), ``encoder_layers`` layers of [``k_proj`` (no bias),
``q_proj`` / ``v_proj`` / ``out_proj`` with bias, two RMSNorms (weight only under ``use_rms_norm``),
``fc1`` ``d_model -> 2 × encoder_ffn_dim`` for swiglu (else ``encoder_ffn_dim``) and ``fc2`` back, with
biases], a final norm, the rotary ``inv_freq`` (``partial_rotary_factor × head_dim / 2``), and
``AudioAdapter`` (LayerNorm ``whisper_adapter_in_dim`` and Linear ``in -> out``, ``out -> out`` with
biases).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import WeightTensor

__all__ = ["dots_moe_vit_tensors", "dots3_note_audio_tensors"]

VISION_ROPE_CACHE = 100000  # vision.py: VisionRotaryEmbedding(..., cache_seq_len=100000)
FP8_BLOCK = 128  # _per_block_cast_to_fp8_padded's block


def _pad(n: int, m: int = FP8_BLOCK) -> int:
    return -(-n // m) * m


def _t(name: str, rows: int, cols: int = 1, count: int = 1, dtype: str | None = None,
       kind: str = "encoder") -> WeightTensor:
    return WeightTensor(name, kind, rows, cols, count, dtype=dtype)  # type: ignore[arg-type]


def _moe_blocks(vc: Mapping[str, Any], e: int) -> list[WeightTensor]:
    """The MoE FFNs of the pyramid blocks, as loaded (one entry per expert count)."""
    mi = int(vc.get("moe_intermediate_size", 2112))
    fp8 = bool(vc.get("enable_fp8_moe", True))
    counts: dict[int, int] = {}
    for k in vc.get("pyramid_num_routed") or ():
        if int(k) > 0:
            counts[int(k)] = counts.get(int(k), 0) + 1
    out: list[WeightTensor] = []
    for k, n in sorted(counts.items()):
        out += [_t(f"visual.blocks.mlp.gate_weight[{k}]", k, e, n),
                _t(f"visual.blocks.mlp.router_bias[{k}]", k, 1, n, kind="buffer")]
        if fp8:
            w13, w2k = 2 * _pad(mi), _pad(mi)
            out += [_t(f"visual.blocks.mlp._fused_w13_fp8[{k}]", k * w13, e, n, "float8_e4m3fn", "buffer"),
                    _t(f"visual.blocks.mlp._fused_w2_fp8[{k}]", k * e, w2k, n, "float8_e4m3fn", "buffer"),
                    _t(f"visual.blocks.mlp._fused_w13_scale[{k}]", k * (w13 // FP8_BLOCK), _pad(e) // FP8_BLOCK, n,
                       "float32", "buffer"),
                    _t(f"visual.blocks.mlp._fused_w2_scale[{k}]", k * (_pad(e) // FP8_BLOCK), w2k // FP8_BLOCK, n,
                       "float32", "buffer")]
        else:  # MoESwiGLUFFN keeps its DotsSwiGLUFFN experts (biases not modelled)
            out += [_t(f"visual.blocks.mlp.experts.fc1+fc3[{k}]", k * mi, e, 2 * n),
                    _t(f"visual.blocks.mlp.experts.fc2[{k}]", k * e, mi, n)]
    return out


def dots_moe_vit_tensors(vc: Mapping[str, Any]) -> list[WeightTensor]:
    """``visual`` (DotsMoEVitModel) as a rank holds it after loading (see the module docstring)."""
    e = int(vc.get("embed_dim", 1536))
    layers = int(vc.get("num_hidden_layers", 42))
    heads = int(vc.get("num_attention_heads", 24))
    inter = int(vc.get("intermediate_size", 4224))
    patch, chans = int(vc.get("patch_size", 14)), int(vc.get("num_channels", 3))
    bias = bool(vc.get("use_bias", False))
    pyramid = [int(k) for k in vc.get("pyramid_num_routed") or ()]
    dense = layers - sum(1 for k in pyramid[:layers] if k > 0)
    hd = e // heads
    out = [_t("visual.patch_embed.proj", e, chans * int(vc.get("temporal_patch_size", 1)) * patch * patch),
           _t("visual.patch_embed.proj.bias+norm", e, 1, 2),
           _t("visual.blocks.norm_1+norm_2", e, 1, 2 * layers),
           _t("visual.blocks.attn.qkv", 3 * e, e, layers), _t("visual.blocks.attn.proj", e, e, layers),
           _t("visual.blocks.mlp.fc1+fc3", inter, e, 2 * dense), _t("visual.blocks.mlp.fc2", e, inter, dense)]
    if bias:
        out += [_t("visual.blocks.attn.qkv.bias+proj.bias", 4 * e, 1, layers),
                _t("visual.blocks.mlp.fc1+fc3+fc2.bias", 2 * inter + e, 1, dense)]
    if vc.get("use_qk_norm", True):
        out.append(_t("visual.blocks.attn.q_norm+k_norm", hd, 1, 2 * layers))
    out += _moe_blocks(vc, e)
    if vc.get("post_norm", True):
        out.append(_t("visual.post_trunk_norm", e))
    a_in, a_out = int(vc.get("adapter_in_dim", 1536)), int(vc.get("adapter_out_dim", 2048))
    m = a_in * int(vc.get("adapter_merge_size", 2)) ** 2
    if vc.get("adapter_type", "pixel_shuffle_mlp") == "patch_merger":
        out += [_t("visual.adapter.ln_q (weight, bias)", a_in, 1, 2),
                _t("visual.adapter.mlp.0", m, m), _t("visual.adapter.mlp.0.bias", m),
                _t("visual.adapter.mlp.2", a_out, m), _t("visual.adapter.mlp.2.bias", a_out)]
    else:
        out += [_t("visual.adapter.proj.0 (weight, bias)", m, 1, 2),
                _t("visual.adapter.proj.1", a_out, m), _t("visual.adapter.proj.3", a_out, a_out),
                _t("visual.adapter.proj.1+3.bias", a_out, 1, 2)]
    quarter = hd // 4
    out += [_t("visual.rotary_pos_emb.freqs_cache", VISION_ROPE_CACHE, quarter, kind="buffer"),
            _t("visual.rotary_pos_emb.inv_freq", quarter, kind="buffer")]
    return out


def dots3_note_audio_tensors(ac: Mapping[str, Any]) -> list[WeightTensor]:
    """``audio_tower`` (Dots3NoteAudioModel) on a rank (see the module docstring)."""
    wc = ac.get("whisper_config") or {}
    d = int(wc.get("d_model", 1280))
    heads = int(wc.get("encoder_attention_heads", 20))
    ffn = int(wc.get("encoder_ffn_dim", 5120))
    layers = int(wc.get("encoder_layers", 32))
    mels = int(wc.get("num_mel_bins", 128))
    gated = str(wc.get("activation_function", "gelu")) == "swiglu"
    dhs = int(ac.get("downsample_hidden_size", 480))
    norms = 1 if ac.get("use_rms_norm", True) else 2
    p = "audio_tower.dots_encoder.speech_encoder"
    out = [_t(f"{p}.conv2d1", dhs, 9), _t(f"{p}.conv2d2+conv2d3", dhs, dhs * 9, 2), _t(f"{p}.conv2d*.bias", dhs, 1, 3),
           _t(f"{p}.conv_out", d, dhs * (mels // 8)),
           _t(f"{p}.layers.self_attn.q_proj+k_proj+v_proj+out_proj", d, d, 4 * layers),
           _t(f"{p}.layers.self_attn.q_proj+v_proj+out_proj.bias", d, 1, 3 * layers),
           _t(f"{p}.layers.self_attn_layer_norm+final_layer_norm", d, norms, 2 * layers),
           _t(f"{p}.layers.fc1", (2 if gated else 1) * ffn, d, layers),
           _t(f"{p}.layers.fc1.bias", (2 if gated else 1) * ffn, 1, layers),
           _t(f"{p}.layers.fc2", d, ffn, layers), _t(f"{p}.layers.fc2.bias", d, 1, layers),
           _t(f"{p}.layer_norm", d, norms)]
    if ac.get("use_rope", True):
        rope = ac.get("rope_parameters") or {}
        rot = int(d // heads * float(rope.get("partial_rotary_factor", 0.5)))
        out.append(_t(f"{p}.rotary_embedding.inv_freq", rot // 2, kind="buffer"))
    a_in = int(ac.get("whisper_adapter_in_dim", ac.get("adapter_in_dim", 1280)))
    a_out = int(ac.get("whisper_adapter_out_dim", ac.get("adapter_out_dim", 2048)))
    out += [_t("audio_tower.audio_adapter.proj.0 (weight, bias)", a_in, 1, 2),
            _t("audio_tower.audio_adapter.proj.1", a_out, a_in), _t("audio_tower.audio_adapter.proj.3", a_out, a_out),
            _t("audio_tower.audio_adapter.proj.1+3.bias", a_out, 1, 2)]
    return out
