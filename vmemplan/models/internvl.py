"""InternVL: an InternViT vision tower and an MLP projector in front of a registered language model.

Two checkpoint formats, two vLLM 0.33.0 model files:

* ``InternVLChatModel`` (the OpenGVLab remote-code format, ``llm_config``):
  vllm/model_executor/models/internvl.py::InternVLChatModel with the tower of
  intern_vit.py::InternVisionModel (fused ``qkv``) and ``mlp1``;
* ``InternVLForConditionalGeneration`` (the transformers format, ``text_config``): the registry
  maps it to interns1.py::InternS1ForConditionalGeneration, with the tower of
  interns1_vit.py::InternS1VisionModel (separate q/k/v ``nn.Linear``) and
  ``multi_modal_projector``.

The language model is ``init_vllm_registered_model(hf_config=text_config)``: whatever architecture
the text config names (Qwen2, Qwen3, Qwen3-MoE, InternLM2, Llama, GPT-OSS...).  vmemplan plans it
with that architecture's own adapter, combined at construction with the tower below
(:func:`_with_language_model`).  The tower is built when images or video are allowed
(``_mark_tower_model(vllm_config, {"image", "video"})``).

Checked against the oracle: InternVL3-1B-hf fixtures (TP 1, 2); ``InternVLChatModel`` is remote
code, checked with ``bench/oracle/remote_code_standins.py internvl_chat`` (weights and KV pool exact).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, adapter_class, register
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _vision

__all__ = ["InternVLChat", "InternVLHF", "intern_vit_tower", "interns1_vit_tower", "internvl_projector"]

#: the architecture a text config without ``architectures`` gets, by model_type (transformers'
#: AutoModelForCausalLM mapping for the types InternVL checkpoints ship)
_LM_BY_MODEL_TYPE = {
    "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
    "internlm2": "InternLM2ForCausalLM", "llama": "LlamaForCausalLM", "gpt_oss": "GptOssForCausalLM",
    "phi3": "Phi3ForCausalLM",
}
#: text model types whose tokenizer carries the video context token (internvl.py::ctx_video_token)
_VIDEO_TEXT_TYPES = ("qwen2", "qwen3", "qwen3_moe", "gpt_oss")


def _shuffle_factor(config: Any) -> int:
    """``int(1 / downsample_ratio) ** 2``: channels the pixel shuffle folds into one token."""
    ratio = config.raw.get("downsample_ratio", 0.5)
    if not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise ModelConfigError(f"config.json: downsample_ratio must be in (0, 1], got {ratio!r}"[:120],
                               hint="InternVL checkpoints use 0.5")
    return int(1 / ratio) ** 2


def _norm(name: str, width: int, norm_type: str, count: int, prefix: str) -> WeightTensor:
    """LayerNorm holds weight and bias, RMSNorm a weight (intern_vit.py::NORM2FN)."""
    per = 1 if norm_type == "rms_norm" else 2
    return WeightTensor(f"{prefix}.{name}", "encoder", width, 1, per * count)


def _square(v: Any) -> int:
    return int(v[0]) if isinstance(v, (list, tuple)) else int(v)


def intern_vit_tower(vc: Mapping[str, Any], tp: int, layers: int, prefix: str = "vision_model",
                     dummy_heads: int = 0) -> list[WeightTensor]:
    """intern_vit.py::InternVisionModel (0.33.0), ``layers`` encoder layers.

    Embeddings: ``class_embedding`` [c], Conv2d patch embed (3 channels, bias), a position table
    of ``(image_size / patch)² + 1`` rows.  Per layer: QKVParallelLinear ``qkv`` (bias under
    ``qkv_bias``) and RowParallelLinear ``proj`` (bias), split over TP only when it divides the
    heads (else both are whole: InternParallelAttention's fallback); under ``qk_normalization``
    two RMSNorms of the full width; the MLP fc1/fc2 (bias) split over TP; two norms of
    ``norm_type``; the layer scales ``ls1``/``ls2``.  No final norm."""
    c = _need(vc, "hidden_size")
    heads = _need(vc, "num_attention_heads")
    inter = _need(vc, "intermediate_size")
    patch = _need(vc, "patch_size")
    size = _need(vc, "image_size")
    hd = c // heads
    heads += dummy_heads  # ``num_dummy_heads`` (NVLM-D: 7) widen qkv/proj/q_norm/k_norm
    attn_tp = tp if heads % tp == 0 else 1
    q = heads // attn_tp * hd
    i = _split(inter, tp, "MLP width")
    norm_type = str(vc.get("norm_type", "rms_norm"))
    n = layers

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [
        t("embeddings.class_embedding", c),
        t("embeddings.patch_embedding", c, 3 * patch * patch), t("embeddings.patch_embedding.bias", c),
        t("embeddings.position_embedding", (size // patch) ** 2 + 1, c),
    ]
    if not n:
        return out
    out.append(t("encoder.layers.attn.qkv", 3 * q, c, n))
    if bool(vc.get("qkv_bias", False)):
        out.append(t("encoder.layers.attn.qkv.bias", 3 * q, 1, n))
    if bool(vc.get("qk_normalization", False)):
        out.append(t("encoder.layers.attn.q_norm+k_norm", heads * hd, 1, 2 * n))
    out += [
        t("encoder.layers.attn.proj", c, q, n), t("encoder.layers.attn.proj.bias", c, 1, n),
        t("encoder.layers.mlp.fc1", i, c, n), t("encoder.layers.mlp.fc1.bias", i, 1, n),
        t("encoder.layers.mlp.fc2", c, i, n), t("encoder.layers.mlp.fc2.bias", c, 1, n),
        _norm("encoder.layers.norm1+norm2", c, norm_type, 2 * n, prefix),
        t("encoder.layers.ls1+ls2", c, 1, 2 * n),
    ]
    return out


def interns1_vit_tower(vc: Mapping[str, Any], tp: int, prefix: str = "vision_tower") -> list[WeightTensor]:
    """interns1_vit.py::InternS1VisionModel (0.33.0), every ``num_hidden_layers`` layer.

    Embeddings: ``cls_token`` [c], ``mask_token`` under ``use_mask_token``, a position table of
    patches + 1 under ``use_absolute_position_embeddings``, Conv2d patch projection (bias).  Per
    layer: q/k/v ``nn.Linear`` (bias under ``attention_bias``) and ``projection_layer`` (bias),
    never split; q/k RMSNorms under ``use_qk_norm``; the MLP fc1/fc2 (bias) split over TP;
    ``layernorm_before``/``layernorm_after`` of ``norm_type``; ``lambda_1``/``lambda_2``.  A final
    LayerNorm unless ``use_mean_pooling``."""
    c = _need(vc, "hidden_size")
    heads = _need(vc, "num_attention_heads")
    inter = _need(vc, "intermediate_size")
    n = _need(vc, "num_hidden_layers")
    ph, pw = (vc["patch_size"][0], vc["patch_size"][-1]) if isinstance(vc.get("patch_size"), list) \
        else (_need(vc, "patch_size"),) * 2
    ih, iw = (vc["image_size"][0], vc["image_size"][-1]) if isinstance(vc.get("image_size"), list) \
        else (_need(vc, "image_size"),) * 2
    chans = int(vc.get("num_channels", 3))
    hd = c // heads
    i = _split(inter, tp, "MLP width")
    norm_type = str(vc.get("norm_type", "layer_norm"))

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [t("embeddings.cls_token", c),
           t("embeddings.patch_embeddings.projection", c, chans * ph * pw),
           t("embeddings.patch_embeddings.projection.bias", c)]
    if bool(vc.get("use_mask_token", False)):
        out.append(t("embeddings.mask_token", c))
    if bool(vc.get("use_absolute_position_embeddings", True)):
        out.append(t("embeddings.position_embeddings", (ih // ph) * (iw // pw) + 1, c))
    out.append(t("encoder.layer.attention.q_proj+k_proj+v_proj", heads * hd, c, 3 * n))
    if bool(vc.get("attention_bias", False)):
        out.append(t("encoder.layer.attention.q_proj+k_proj+v_proj.bias", heads * hd, 1, 3 * n))
    if bool(vc.get("use_qk_norm", False)):
        out.append(t("encoder.layer.attention.q_norm+k_norm", heads * hd, 1, 2 * n))
    out += [
        t("encoder.layer.attention.projection_layer", c, heads * hd, n),
        t("encoder.layer.attention.projection_layer.bias", c, 1, n),
        t("encoder.layer.mlp.fc1", i, c, n), t("encoder.layer.mlp.fc1.bias", i, 1, n),
        t("encoder.layer.mlp.fc2", c, i, n), t("encoder.layer.mlp.fc2.bias", c, 1, n),
        _norm("encoder.layer.layernorm_before+layernorm_after", c, norm_type, 2 * n, prefix),
        t("encoder.layer.lambda_1+lambda_2", c, 1, 2 * n),
    ]
    if not bool(vc.get("use_mean_pooling", True)):
        out.append(t("layernorm", c, 1, 2))
    return out


def internvl_projector(vit_hidden: int, text_hidden: int, shuffle: int, prefix: str) -> list[WeightTensor]:
    """LayerNorm(c·r) → Linear(c·r → h) → GELU → Linear(h → h), all with bias and replicated
    (internvl.py::InternVLChatModel._init_mlp1; interns1.py::InternS1MultiModalProjector)."""
    w = vit_hidden * shuffle
    names = ("0", "1", "3") if prefix == "mlp1" else ("layer_norm", "linear_1", "linear_2")
    return [
        WeightTensor(f"{prefix}.{names[0]}", "encoder", w, 1, 2),
        WeightTensor(f"{prefix}.{names[1]}", "encoder", text_hidden, w),
        WeightTensor(f"{prefix}.{names[1]}.bias", "encoder", text_hidden, 1),
        WeightTensor(f"{prefix}.{names[2]}", "encoder", text_hidden, text_hidden),
        WeightTensor(f"{prefix}.{names[2]}.bias", "encoder", text_hidden, 1),
    ]


# --------------------------------------------------------------------------------------
# The adapters
# --------------------------------------------------------------------------------------


class _InternVLTower(VisionEncoderMixin):
    """The tower half; combined with the language model's adapter by :func:`_with_language_model`."""

    supports_encoder_tp_data = True  # declared by vLLM's model class (0.33.0)

    modalities = ("image", "video")

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        return _shuffle_factor(self.config)  # type: ignore[attr-defined]

    def tile_size(self, config: Any) -> int:
        return _square(config.raw.get("force_image_size") or _vision(config).get("image_size"))

    def tokens_per_tile(self, config: Any) -> int:
        """``(image_size / patch)² · downsample_ratio²`` (internvl.py::get_hf_processor's
        ``image_seq_length``)."""
        patch = _square(_vision(config).get("patch_size"))
        return (self.tile_size(config) // patch) ** 2 // _shuffle_factor(config)

    def max_tiles(self, config: Any) -> int:
        """Tiles of the image with most features: the largest ``i·j ≤ max_dynamic_patch`` grid
        plus the thumbnail (transformers_utils/processors/internvl.py::calculate_internvl_targets,
        get_internvl_target_ratios); one tile when ``dynamic_image_size`` is off."""
        raw = config.raw
        if not bool(raw.get("dynamic_image_size", True)):
            return 1
        blocks = int(raw.get("max_dynamic_patch", 12))
        return blocks + (1 if bool(raw.get("use_thumbnail", True)) and blocks != 1 else 0)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The largest image (:meth:`max_tiles` tiles); a video of ``max_model_len // tokens per
        frame`` one-tile frames when the text model's tokenizer has the video token
        (internvl.py::InternVLProcessingInfo.get_num_frames_with_most_features, one video)."""
        per_tile = self.tokens_per_tile(config)
        out: dict[str, int] = {}
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") > 0:
            out["image"] = self.max_tiles(config) * per_tile
        text_type = str(config.text.get("model_type", ""))
        if text_type in _VIDEO_TEXT_TYPES and mm_law.limit_for(ctx.limit_mm_per_prompt, "video") > 0:
            out["video"] = max(ctx.max_model_len // per_tile, 1) * per_tile
        return out

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc]


class _ChatTower(_InternVLTower):
    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """InternVisionModel up to ``select_layer`` and ``mlp1``; ``--mm-encoder-tp-mode data``
        keeps the tower whole (``supports_encoder_tp_data``)."""
        vc = _vision(config)
        tp = 1 if ctx.mm_encoder_tp_mode == "data" else ctx.tensor_parallel_size
        total = _need(vc, "num_hidden_layers")
        sel = int(config.raw.get("select_layer", -1))
        layers = total + sel + 1 if sel < 0 else sel + 1
        return (intern_vit_tower(vc, tp, layers)
                + internvl_projector(_need(vc, "hidden_size"), config.hidden_size, _shuffle_factor(config), "mlp1"))


class _HFTower(_InternVLTower):
    supports_encoder_tp_data = False  # vLLM serves it as interns1.py::InternS1ForConditionalGeneration

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """InternS1VisionModel (every layer) and the projector.  InternS1 does not support
        ``--mm-encoder-tp-mode data`` (vLLM falls back to ``weights``), so the MLP is always split."""
        vc = _vision(config)
        return (interns1_vit_tower(vc, ctx.tensor_parallel_size)
                + internvl_projector(_need(vc, "hidden_size"), config.hidden_size, _shuffle_factor(config),
                                     "multi_modal_projector"))


_COMBINED: dict[tuple[type, type], type] = {}


def _language_model_class(config: Any) -> type[Adapter]:
    text = config.text
    archs = [a for a in (text.get("architectures") or []) if isinstance(a, str)]
    mt = str(text.get("model_type", ""))
    if mt in _LM_BY_MODEL_TYPE:
        archs.append(_LM_BY_MODEL_TYPE[mt])
    for arch in archs:
        cls = adapter_class(arch)
        if cls is not None and not issubclass(cls, _InternVLTower):
            return cls
    raise ModelConfigError(f"{config.architecture}: no planned language model for text config {archs or mt!r}",
                           hint="the language model's architecture must be one vmemplan plans")


def _with_language_model(tower: type, config: Any) -> Adapter:
    return combined(tower, _language_model_class(config), config)


def language_model_new(tower: type) -> Any:
    """The ``__new__`` of a registered chat-format adapter: ``tower`` over the adapter of the
    config's own language model (:func:`_with_language_model`)."""

    def __new__(cls: type, config: Any) -> Adapter:
        return _with_language_model(tower, config)

    return __new__


def combined(tower: type, lm: type, config: Any) -> Adapter:
    """An adapter of ``tower`` (a vision half) over the language model's adapter class ``lm``
    (one class per pair, made once), built for ``config``."""
    key = (tower, lm)
    if key not in _COMBINED:
        _COMBINED[key] = type(f"{tower.__name__.strip('_')}[{lm.__name__}]", (tower, lm), {"family": lm.family})
    return _COMBINED[key](config)


@register
class InternVLChat(_ChatTower, Adapter):
    """``InternVLChatModel``: InternViT (intern_vit.py) + ``mlp1`` + the ``llm_config`` model."""

    architectures = ("InternVLChatModel",)

    __new__ = language_model_new(_ChatTower)


@register
class InternVLHF(_HFTower, Adapter):
    """``InternVLForConditionalGeneration`` (vLLM: interns1.py::InternS1ForConditionalGeneration):
    InternS1 ViT + ``multi_modal_projector`` + the ``text_config`` model."""

    architectures = ("InternVLForConditionalGeneration",)

    __new__ = language_model_new(_HFTower)
