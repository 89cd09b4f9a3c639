"""The DeepSeek-V4 vision tower (``DeepseekV4ViT`` + ``DeepseekV4Aligner``) and DeepSeek-V4.1's use of it.

vllm/models/deepseek_v4/common/vision.py (0.33.0) holds the tower both DeepSeek-V4 vision classes
build; :func:`deepseek_v4_vit_tensors` is its shape list, shared by every adapter that builds it:

* ``DeepseekV4PatchEmbed``: a ReplicatedLinear ``3 × patch² -> width`` with bias;
* ``vision_n_layers`` ``DeepseekV4VisionBlock``: two ``DeepseekV4RMSNorm`` (fp32 at construction,
  cast to the model dtype with the tower), ``DeepseekV4VisionAttention`` (QKVParallelLinear over
  ``vision_n_heads`` heads of ``width / heads`` with bias, RowParallelLinear ``wo`` with bias) and
  ``DeepseekV4VisionMLP`` (MergedColumnParallelLinear ``w1`` to ``2 × inter``, RowParallelLinear
  ``w2``, no biases); a final RMSNorm;
* ``DeepseekV4Aligner``: ColumnParallelLinear ``w1`` ``width × r² -> hidden`` and
  RowParallelLinear ``w2`` ``hidden -> hidden``, both with bias (``r`` = ``vision_downsample_ratio``);
* every linear unquantized (``quant_config=None``); sharded over TP unless
  ``is_vit_use_data_parallel(vision_n_heads)``: ``--mm-encoder-tp-mode data`` or heads TP does not
  divide (vllm/model_executor/models/vision.py), when each rank keeps them whole.

DeepSeek-V4.1 (``DeepseekV41ForCausalLM``, vllm/models/deepseek_v41/nvidia/vl_model.py) builds
``vision`` and ``aligner`` and three fp32 ``image_start`` / ``image_end`` / ``image_newline``
vectors ``[hidden]`` inside ``_mark_tower_model(vllm_config, {"image"})``; with the image limit 0
(``--limit-mm-per-prompt`` / ``--language-model-only``) the two modules are skipped, the bare
parameters stay (interfaces.py::SupportsMultiModal._mark_tower_model).  The tower's dimensions come
from ``vision_config`` as DeepseekV41Config flattens them (transformers_utils/configs/
deepseek_v41.py: ``hidden_size`` 1024, ``num_attention_heads`` 16, ``intermediate_size`` 2816,
``patch_size`` 14, ``downsample_ratio`` 3, ``max_image_tokens`` 1024 by default).  The encoder
profile: ``max_image_tokens`` tokens an image (mm_preprocess.py::DeepseekV4VLProcessingInfo.
get_mm_max_tokens_per_item), ``r²`` patches a token, ``supports_encoder_tp_data``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.multimodal import VisionEncoderMixin

__all__ = ["DeepseekV4VitDims", "DeepseekV41Vision", "deepseek_v4_vit_tensors", "v41_vit_dims"]


class DeepseekV4VitDims(NamedTuple):
    """The config fields ``DeepseekV4ViT`` / ``DeepseekV4Aligner`` read (``vision_*`` attributes)."""

    width: int
    layers: int
    heads: int
    inter: int
    patch: int
    downsample: int


def v41_vit_dims(config: Any) -> DeepseekV4VitDims | None:
    """DeepSeek-V4.1's tower dimensions from ``vision_config`` with DeepseekV41Config's defaults;
    None without vision layers."""
    vc = config.raw.get("vision_config")
    if not isinstance(vc, Mapping) or int(vc.get("num_hidden_layers") or 0) <= 0:
        return None
    return DeepseekV4VitDims(int(vc.get("hidden_size") or 1024), int(vc["num_hidden_layers"]),
                             int(vc.get("num_attention_heads") or 16), int(vc.get("intermediate_size") or 2816),
                             int(vc.get("patch_size") or 14), int(vc.get("downsample_ratio") or 3))


def tower_tp(d: DeepseekV4VitDims, ctx: GraphContext) -> int:
    """The TP the tower's linears are split over: 1 under ``is_vit_use_data_parallel``."""
    tp = ctx.tensor_parallel_size
    return 1 if ctx.mm_encoder_tp_mode == "data" or d.heads % tp else tp


def deepseek_v4_vit_tensors(d: DeepseekV4VitDims, hidden: int, tp: int) -> list[WeightTensor]:
    """``vision`` (DeepseekV4ViT) and ``aligner`` (DeepseekV4Aligner) on one rank, at the model dtype."""
    w, n, i = d.width, d.layers, d.inter

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(name, "encoder", rows, cols, count)

    m = w * d.downsample * d.downsample
    return [
        t("vision.patch_embed.proj", w, 3 * d.patch * d.patch), t("vision.patch_embed.proj.bias", w),
        t("vision.blocks.norm1+norm2", w, 1, 2 * n),
        t("vision.blocks.attn.wqkv", 3 * w // tp, w, n), t("vision.blocks.attn.wqkv.bias", 3 * w // tp, 1, n),
        t("vision.blocks.attn.wo", w, w // tp, n), t("vision.blocks.attn.wo.bias", w, 1, n),
        t("vision.blocks.mlp.w1", 2 * i // tp, w, n), t("vision.blocks.mlp.w2", w, i // tp, n),
        t("vision.norm", w),
        t("aligner.w1", hidden // tp, m), t("aligner.w1.bias", hidden // tp),
        t("aligner.w2", hidden, hidden // tp), t("aligner.w2.bias", hidden),
    ]


class DeepseekV41Vision(VisionEncoderMixin):
    """DeepSeek-V4.1's vision tower in front of its text model (see the module docstring)."""

    modalities = ("image",)
    supports_encoder_tp_data = True  # DeepseekV41ForCausalLM.supports_encoder_tp_data
    bare_tower_parameters = ("image_start+image_end+image_newline",)

    def tower_built(self, ctx: GraphContext) -> bool:
        return v41_vit_dims(self.config) is not None and super().tower_built(ctx)  # type: ignore[attr-defined]

    def tower_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return super().tower_tensors(config, ctx) if v41_vit_dims(config) is not None else []

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        d = v41_vit_dims(config)
        if d is None:
            return []
        h = config.hidden_size
        return deepseek_v4_vit_tensors(d, h, tower_tp(d, ctx)) + [
            WeightTensor("image_start+image_end+image_newline", "encoder", h, 1, 3, dtype="float32")]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        return {"image": int(config.raw["vision_config"].get("max_image_tokens") or 1024)}

    @property
    def patches_per_token(self) -> int:
        d = v41_vit_dims(self.config)  # type: ignore[attr-defined]
        return d.downsample ** 2 if d is not None else 1

    def multimodal_profile(self, ctx: GraphContext, *, hidden_buffers: float = 3.0,
                           intermediate_buffers: float = 3.0) -> Any:
        if v41_vit_dims(self.config) is None:  # type: ignore[attr-defined]
            return None
        return super().multimodal_profile(ctx, hidden_buffers=hidden_buffers,
                                          intermediate_buffers=intermediate_buffers)
