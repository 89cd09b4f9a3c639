"""Gemma-3n multimodal (``Gemma3nForConditionalGeneration``): the Gemma-3n language model plus
the MobileNet-V5 vision tower (timm, through transformers' TimmWrapperModel), the Conformer
audio tower (transformers' Gemma3nAudioEncoder), their two embedders and the per-layer
embedding buffer.

Mirrors vllm/model_executor/models/gemma3n_mm.py::Gemma3nForConditionalGeneration (0.33.0):

* ``vision_tower`` = ``AutoModel.from_config(config.vision_config)``: a TimmWrapperModel around
  ``timm.create_model(vision_config.architecture)``; ``embed_vision`` a
  ``Gemma3nMultimodalEmbedder``.  Both are built under ``_mark_tower_model(..., "image")``;
* ``audio_tower`` = ``AutoModel.from_config(config.audio_config)`` (Gemma3nAudioEncoder) and
  ``embed_audio``, under ``_mark_tower_model(..., "audio")``;
* a tower whose modality has ``--limit-mm-per-prompt`` 0 is not built
  (interfaces.py::SupportsMultiModal._mark_tower_model; ``--language-model-only`` sets every
  limit to 0), nor on a pipeline stage after the first;
* the towers are plain torch modules: every tensor-parallel rank holds all of them, and
  ``--mm-encoder-tp-mode data`` changes nothing (the model does not declare
  ``supports_encoder_tp_data``, so vLLM falls back to ``weights``: vllm/config/model.py);
* the embedders use a VocabParallelEmbedding (``vocab_size`` rows, padded to 64, split by TP)
  and a RowParallelLinear ``mm hidden / tp → text hidden`` without a quantization config;
* ``per_layer_embeddings`` ``[max_num_batched_tokens, L, hidden_size_per_layer_input]`` in the
  model dtype is allocated with the language model (kept by ``--language-model-only``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.gemma3n import Gemma3n
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.windowed import _int

__all__ = ["Gemma3nMM", "gemma3n_audio_tower", "gemma3n_embedder", "mobilenetv5_tower"]

#: Gemma3nProcessingInfo.get_max_tokens_per_item (gemma3n_mm.py: TOKENS_PER_IMAGE / TOKENS_PER_AUDIO)
TOKENS_PER_IMAGE = 256
TOKENS_PER_AUDIO = 188

# --------------------------------------------------------------------------------------
# MobileNet-V5 (timm 1.0.x timm/models/mobilenetv5.py::_gen_mobilenet_v5, variant
# "mobilenetv5_300m_enc"; blocks from timm/models/_efficientnet_blocks.py)
# --------------------------------------------------------------------------------------

# One stage is a list of (block kind, repeats, fields); the fields are those of timm's block
# strings: "er" (EdgeResidual: k = kernel, e = expansion), "uir" (UniversalInvertedResidual:
# a = start depthwise kernel, k = middle depthwise kernel, 0 = none, e = expansion), "mqa"
# (MobileAttention: h heads of d, k = kv down-sampling kernel, v = kv stride), c = out channels.
_Block = tuple[str, int, Mapping[str, int]]
_MNV5_300M: tuple[list[_Block], ...] = (
    [("er", 3, {"k": 3, "e": 4, "c": 128})],
    [("uir", 1, {"a": 3, "k": 5, "e": 6, "c": 256}), ("uir", 1, {"a": 5, "k": 0, "e": 4, "c": 256}),
     ("uir", 1, {"a": 3, "k": 0, "e": 4, "c": 256}), ("uir", 1, {"a": 5, "k": 0, "e": 4, "c": 256}),
     ("uir", 1, {"a": 3, "k": 0, "e": 4, "c": 256})],
    [("uir", 1, {"a": 5, "k": 5, "e": 6, "c": 640}), ("uir", 7, {"a": 5, "k": 0, "e": 4, "c": 640}),
     ("uir", 1, {"a": 0, "k": 0, "e": 1, "c": 640}),
     ("mqa+uir", 14, {"h": 12, "d": 64, "k": 3, "v": 2, "e": 2, "c": 640})],
    [("uir", 1, {"a": 5, "k": 5, "e": 6, "c": 1280}),
     ("mqa+uir", 19, {"h": 16, "d": 96, "k": 3, "v": 1, "e": 2, "c": 1280})],
)
MOBILENETV5_ARCHS: dict[str, tuple[list[_Block], ...]] = {"mobilenetv5_300m_enc": _MNV5_300M}
_STEM = 64  # MobileNetV5Encoder stem_size
_MSFA_OUT = 2048  # MobileNetV5Encoder.num_features (fixed)
_MSFA_EXPANSION = 2


def _divisible(v: float, divisor: int = 8) -> int:
    """timm/layers/helpers.py::make_divisible (round_limit 0.9)."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _vt(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
    return WeightTensor(f"vision_tower.timm_model.{name}", "encoder", rows, cols, count)


def _uir(name: str, cin: int, cout: int, *, a: int, k: int, e: float, count: int,
         layer_scale: bool = True) -> list[WeightTensor]:
    """UniversalInvertedResidual: optional depthwise start (``a``) on the input, 1×1 expansion,
    optional depthwise middle (``k``), 1×1 projection, each with an RmsNorm2d weight, and the
    LayerScale2d ``gamma`` when the model sets ``layer_scale_init_value``."""
    mid = _divisible(cin * e)
    out: list[WeightTensor] = []
    if a:
        out += [_vt(f"{name}.dw_start.conv", cin, a * a, count), _vt(f"{name}.dw_start.bn", cin, 1, count)]
    out += [_vt(f"{name}.pw_exp.conv", mid, cin, count), _vt(f"{name}.pw_exp.bn", mid, 1, count)]
    if k:
        out += [_vt(f"{name}.dw_mid.conv", mid, k * k, count), _vt(f"{name}.dw_mid.bn", mid, 1, count)]
    out += [_vt(f"{name}.pw_proj.conv", cout, mid, count), _vt(f"{name}.pw_proj.bn", cout, 1, count)]
    if layer_scale:
        out.append(_vt(f"{name}.layer_scale.gamma", cout, 1, count))
    return out


def _mqa(name: str, c: int, *, h: int, d: int, k: int, v: int, count: int) -> list[WeightTensor]:
    """MobileAttention with a multi-query attention (one key/value head of ``d``): an RmsNorm2d,
    1×1 query ``c → h·d``, key and value ``c → d`` (each behind a depthwise ``k×k`` down-sampling
    conv and its norm when the kv stride ``v`` > 1), 1×1 output ``h·d → c``, LayerScale2d."""
    out = [_vt(f"{name}.norm", c, 1, count), _vt(f"{name}.attn.query.proj", h * d, c, count)]
    for kv in ("key", "value"):
        if v > 1:
            out += [_vt(f"{name}.attn.{kv}.down_conv", c, k * k, count), _vt(f"{name}.attn.{kv}.norm", c, 1, count)]
        out.append(_vt(f"{name}.attn.{kv}.proj", d, c, count))
    out += [_vt(f"{name}.attn.output.proj", c, h * d, count), _vt(f"{name}.layer_scale.gamma", c, 1, count)]
    return out


def mobilenetv5_tower(vc: Mapping[str, Any]) -> list[WeightTensor]:
    """The MobileNet-V5 encoder (timm MobileNetV5Encoder) of ``vision_config.architecture``:
    a biased 3×3 stride-2 stem conv ``3 → 64`` with its RmsNorm2d, the stages of
    EdgeResidual / UniversalInvertedResidual / MobileAttention blocks, and the multi-scale
    fusion adapter (a UIR ``Σ last two stages' channels → 2048`` at expansion 2, no layer
    scale, then an RmsNorm2d).  No buffers."""
    arch = str(vc.get("architecture", "mobilenetv5_300m_enc"))
    stages = MOBILENETV5_ARCHS.get(arch)
    if stages is None:
        raise ModelConfigError(f"Gemma-3n vision_config.architecture {arch!r} is not planned",
                               hint=f"vmemplan knows {', '.join(MOBILENETV5_ARCHS)}")
    if vc.get("model_args"):
        raise ModelConfigError("Gemma-3n vision_config.model_args (timm overrides) are not planned")
    chans = int(vc.get("num_channels", 3))
    out = [_vt("conv_stem.conv", _STEM, chans * 9), _vt("conv_stem.conv.bias", _STEM), _vt("conv_stem.bn", _STEM)]
    cin = _STEM
    widths: list[int] = []
    for s, stage in enumerate(stages):
        index = 0
        for kind, repeats, f in stage:
            c = f["c"]
            for _ in range(repeats):
                name = f"blocks.{s}.{index}"
                if kind == "er":
                    mid = _divisible(cin * f["e"])
                    out += [_vt(f"{name}.conv_exp", mid, cin * f["k"] ** 2), _vt(f"{name}.bn1", mid),
                            _vt(f"{name}.conv_pwl", c, mid), _vt(f"{name}.bn2", c)]
                    index += 1
                elif kind == "uir":
                    out += _uir(name, cin, c, a=f["a"], k=f["k"], e=f["e"], count=1)
                    index += 1
                else:  # an attention block then a UIR a0 k0
                    out += _mqa(name, cin, h=f["h"], d=f["d"], k=f["k"], v=f["v"], count=1)
                    out += _uir(f"blocks.{s}.{index + 1}", c, c, a=0, k=0, e=f["e"], count=1)
                    index += 2
                cin = c
        widths.append(cin)
    out += _uir("msfa.ffn", sum(widths[-2:]), _MSFA_OUT, a=0, k=0, e=_MSFA_EXPANSION, count=1, layer_scale=False)
    out.append(_vt("msfa.norm", _MSFA_OUT))
    return out


# --------------------------------------------------------------------------------------
# The Conformer audio encoder (transformers models/gemma3n/modeling_gemma3n.py::Gemma3nAudioEncoder)
# --------------------------------------------------------------------------------------


def _pairs(ac: Mapping[str, Any], key: str, default: list[list[int]]) -> list[list[int]]:
    v = ac.get(key, default)
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(p, list) and len(p) == 2 for p in v)):
        raise ModelConfigError(f"Gemma-3n audio_config.{key} must be two [h, w] pairs, got {v!r}")
    return [[int(x) for x in p] for p in v]


def gemma3n_audio_tower(ac: Mapping[str, Any]) -> list[WeightTensor]:
    """Gemma3nAudioEncoder: the sub-sampling projection (two bias-free Conv2d with a cumulative
    group-norm weight each, frequency padded by 1 on both sides, then a linear
    ``c₁·f₁ → hidden``) and ``conf_num_hidden_layers`` Conformer blocks.  Per block: two
    feed-forwards (pre/post RMSNorm, ``h → 4h → h``), the chunked attention (pre norm,
    ``per_dim_scale`` [head_dim], relative-position ``pos_proj``, q/k/v, ``post`` and its norm),
    the light conv (pre norm, ``linear_start`` ``h → 2h``, a depthwise Conv1d of
    ``conf_conv_kernel_size``, a norm, ``linear_end``) and the block norm.  Buffers per block:
    five ``gradient_clipping`` scalars and ``q_scale`` (model dtype), the fp32 ``softcap`` and
    ``inv_timescales`` [h / 2], and the bool ``local_causal_valid_mask``
    [chunk, chunk + max(0, left − 1) + right]."""
    h = _int(ac, "hidden_size", 1536)
    layers = _int(ac, "conf_num_hidden_layers", 12)
    heads = _int(ac, "conf_num_attention_heads", 8)
    hd = h // heads
    feat = _int(ac, "input_feat_size", 128)
    c0, c1 = (int(x) for x in ac.get("sscp_conv_channel_size", [128, 32]))
    kernels = _pairs(ac, "sscp_conv_kernel_size", [[3, 3], [3, 3]])
    strides = _pairs(ac, "sscp_conv_stride_size", [[2, 2], [2, 2]])
    f = feat
    for (_, kw), (_, sw) in zip(kernels, strides):
        f = (f + 2 - kw) // sw + 1
    chunk = _int(ac, "conf_attention_chunk_size", 12)
    context = chunk + max(0, _int(ac, "conf_attention_context_left", 13) - 1) + _int(ac, "conf_attention_context_right", 0)
    conv_k = _int(ac, "conf_conv_kernel_size", 5)
    n = layers

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"audio_tower.{name}", "encoder", rows, cols, count)

    return [
        t("subsample_conv_projection.conv_0.conv", c0, kernels[0][0] * kernels[0][1]),
        t("subsample_conv_projection.conv_0.norm", c0),
        t("subsample_conv_projection.conv_1.conv", c1, c0 * kernels[1][0] * kernels[1][1]),
        t("subsample_conv_projection.conv_1.norm", c1),
        t("subsample_conv_projection.input_proj_linear", h, c1 * f),
        t("conformer.ffw_layer_start+end.ffw_layer_1+ffw_layer_2", 4 * h, h, 4 * n),
        t("conformer.attention.attn.pos_proj+q_proj+k_proj+v_proj", heads * hd, h, 4 * n),
        t("conformer.attention.post+lconv1d.linear_end", h, h, 2 * n),
        t("conformer.lconv1d.linear_start", 2 * h, h, n),
        t("conformer.lconv1d.depthwise_conv1d", h, conv_k, n),
        t("conformer.attention.attn.per_dim_scale", hd, 1, n),
        # ffw pre/post ×2, attention pre/post, lconv pre/conv, block norm
        t("conformer 9 RMSNorms", h, 1, 9 * n),
        WeightTensor("audio_tower.conformer 5 gradient_clipping + q_scale", "buffer", 1, 1, 6 * n),
        WeightTensor("audio_tower.conformer.attention.attn.softcap", "buffer", 1, 1, n, dtype="float32"),
        WeightTensor("audio_tower.conformer.attention.attn.relative_position_embedding.inv_timescales", "buffer",
                     1, h // 2, n, dtype="float32"),
        WeightTensor("audio_tower.conformer.attention.attn.local_causal_valid_mask", "buffer", chunk, context, n,
                     dtype="uint8"),  # torch.bool: one byte an element
    ]


def gemma3n_embedder(prefix: str, mm_config: Mapping[str, Any], text_hidden: int, tp: int) -> list[WeightTensor]:
    """Gemma3nMultimodalEmbedder: a VocabParallelEmbedding ``vocab_size × mm hidden`` (rows
    padded to 64, split by TP), hard and soft RMSNorms, the RowParallelLinear projection
    ``mm hidden / tp → text hidden`` (no quantization config is passed) and the weightless
    post-projection RMSNorm, whose ``[text hidden]`` ones tensor still sits on the device
    (vllm/model_executor/layers/layernorm.py::RMSNorm with ``has_weight=False``)."""
    mm_h = _int(mm_config, "hidden_size")
    vocab = _int(mm_config, "vocab_size", 128)
    if mm_h % tp:
        raise ModelConfigError(f"--tensor-parallel-size {tp} does not divide {prefix}'s width {mm_h}")
    return [
        WeightTensor(f"{prefix}.embedding", "embedding", pad_vocab(vocab) // tp, mm_h),
        WeightTensor(f"{prefix}.hard_embedding_norm+soft_embedding_norm", "norm", mm_h, 1, 2),
        WeightTensor(f"{prefix}.embedding_projection", "linear", text_hidden, mm_h // tp, 1, False,
                     in_features_full=mm_h),
        WeightTensor(f"{prefix}.embedding_post_projection_norm", "norm", text_hidden, 1),
    ]


@register
class Gemma3nMM(VisionEncoderMixin, Gemma3n):
    """Gemma-3n with its towers: the language model is :class:`~vmemplan.models.gemma3n.Gemma3n`
    on ``text_config`` (vLLM builds ``Gemma3nForCausalLM`` from it), plus the image tower
    (:func:`mobilenetv5_tower`, ``embed_vision``), the audio tower
    (:func:`gemma3n_audio_tower`, ``embed_audio``) and ``per_layer_embeddings``."""

    architectures = ("Gemma3nForConditionalGeneration",)
    modalities = ("image", "audio")
    weights_read_batch_tokens = True  # per_layer_embeddings [max_num_batched_tokens, L, hpl]
    #: encoder positions per output token, for the activation estimate: 768² images reach the
    #: last stage at 24 × 24 = 2.25 positions per soft token (rounded up); audio: the
    #: Conformer runs on 4 frames per token (conf_reduction_factor)
    patches_per_token = {"image": 3, "audio": 4}  # type: ignore[assignment]

    def _on(self, ctx: GraphContext, modality: str) -> bool:
        return mm_law.limit_for(ctx.limit_mm_per_prompt, modality) > 0

    def _sub(self, key: str) -> Mapping[str, Any]:
        sub = self.config.raw.get(key)
        if not isinstance(sub, Mapping):
            raise ModelConfigError(f"Gemma3nForConditionalGeneration: config.json lacks {key}")
        return sub

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        """The last MobileNet-V5 stage (1280 wide, 2560 expanded) for the activation estimate."""
        return 1280, 2560

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        tp, h = ctx.tensor_parallel_size, config.hidden_size
        out: list[WeightTensor] = []
        if self._on(ctx, "image"):
            vc = self._sub("vision_config")
            out += mobilenetv5_tower(vc) + gemma3n_embedder("embed_vision", vc, h, tp)
        if self._on(ctx, "audio"):
            ac = self._sub("audio_config")
            out += gemma3n_audio_tower(ac) + gemma3n_embedder("embed_audio", ac, h, tp)
        return out


    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """256 per image, 188 per audio clip, fixed (Gemma3nProcessingInfo.get_max_tokens_per_item)."""
        out: dict[str, int] = {}
        if self._on(ctx, "image"):
            out["image"] = TOKENS_PER_IMAGE
        if self._on(ctx, "audio"):
            out["audio"] = TOKENS_PER_AUDIO
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        out = super().weight_tensors(ctx)
        hpl = _int(cfg.text, "hidden_size_per_layer_input", 256)
        # allocated in __init__ under _mark_language_model, so --language-model-only keeps it
        out.append(WeightTensor("per_layer_embeddings", "buffer", ctx.max_num_batched_tokens,
                                cfg.num_hidden_layers * hpl))
        if ctx.pipeline_rank == 0:  # towers live on the first stage only
            out += self.tower_tensors(cfg, ctx)
        return out

    def notes(self) -> tuple[str, ...]:
        return super().notes() + (
            "the MobileNet-V5 vision tower and the Conformer audio tower are plain torch modules: "
            "every tensor-parallel rank holds all of them (--mm-encoder-tp-mode data falls back to weights)",)
