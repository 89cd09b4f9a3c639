"""Kanana-V (``KananaVForConditionalGeneration``, kakaocorp/kanana-1.5-v-3b-instruct): the Qwen2-VL
vision transformer without its patch merger, a dynamic C-Abstractor of RegNet stages, and a Llama
decoder.

vllm/model_executor/models/kanana_v.py (0.33.0), ``KananaVForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, "image")``:

  - ``vision_model`` = ``CustomQwen2VLVE``: qwen2_vl.py::Qwen2VisionTransformer on ``vision_config``
    (:func:`vmemplan.models.vision_towers.qwen2_vl_tower`: Conv3d patch embed, LayerNorm blocks with
    fc1/fc2 of ``embed_dim × mlp_ratio``, the rotary cache) whose ``merger`` is deleted after
    construction; split over TP (no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data``
    runs as ``weights``);
  - ``abstractor`` = ``DynamicCAbstractor(projector_config)``, plain torch and timm modules whole on
    every rank: ``pos_emb [1, pos_emb_size, encoder_hidden_size]`` when ``pos_emb``; with ``depth``
    > 0 two timm ``RegStage``\\ s of ``depth`` bottleneck blocks (``encoder_hidden_size → hidden_size``,
    then ``merge_size² · hidden_size → hidden_size``) around a parameter-free patch merge, and a
    ``readout`` of ``mlp_depth`` biased Linears (``hidden_size → output_hidden_size``, then
    ``output_hidden_size`` square); with ``depth`` 0 only the readout, from ``encoder_hidden_size``;

* under ``_mark_language_model``: ``init_vllm_registered_model(hf_config=config.text_config,
  architectures=["LlamaForCausalLM"])``.

A timm RegNet ``Bottleneck(in → out)`` as ``RegStage(stride=1, dilation=1, act_layer=SiLU,
norm_layer=LayerNorm2d)`` builds it (timm/models/regnet.py, bottle_ratio 1, group_size 1, se_ratio
0.25): a bias-free 1×1 conv ``[out, in]``, a depthwise 3×3 conv ``[out, 1, 3, 3]``, a bias-free 1×1
conv ``[out, out]``, each followed by a LayerNorm2d (weight + bias); a squeeze-excite of
``round(in / 4)`` channels (two biased 1×1 convs); and, when ``in != out``, a bias-free 1×1
shortcut conv with its LayerNorm2d.

Encoder profile: KananaVProcessingInfo sizes the dummy 9999 × 9999 image with Qwen2-VL's
``smart_resize`` (factor ``patch × spatial_merge_size``) between the image processor's
``min_pixels`` / ``max_pixels`` (from preprocessor_config.json, which config.json lacks: the
transformers Qwen2-VL defaults stand in), ``patches / spatial_merge_size²`` tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.multimodal import QWEN2_VL_MAX_PIXELS, QWEN2_VL_MIN_PIXELS, VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _vision, qwen2_vl_tower

__all__ = ["KananaV", "c_abstractor", "regnet_stage"]

#: KananaVDummyInputsBuilder / get_image_size_with_most_features: the dummy image's sides
DUMMY_SIDE = 9999


def _enc(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
    return WeightTensor(f"abstractor.{name}", "encoder", rows, cols, count)


def regnet_stage(prefix: str, depth: int, in_chs: int, out_chs: int) -> list[WeightTensor]:
    """A timm ``RegStage`` of ``depth`` RegNet bottlenecks (see the module docstring)."""
    out: list[WeightTensor] = []
    for b in range(depth):
        ci = in_chs if b == 0 else out_chs
        rd = int(round(ci * 0.25))
        p = f"{prefix}.b{b + 1}"
        out += [
            _enc(f"{p}.conv1.conv", out_chs, ci), _enc(f"{p}.conv2.conv", out_chs, 9), _enc(f"{p}.conv3.conv", out_chs, out_chs),
            _enc(f"{p}.conv1+conv2+conv3.bn (weight, bias)", out_chs, 1, 6),
            _enc(f"{p}.se.fc1", rd, out_chs), _enc(f"{p}.se.fc1.bias", rd),
            _enc(f"{p}.se.fc2", out_chs, rd), _enc(f"{p}.se.fc2.bias", out_chs),
        ]
        if ci != out_chs:
            out += [_enc(f"{p}.downsample.conv", out_chs, ci), _enc(f"{p}.downsample.bn (weight, bias)", out_chs, 1, 2)]
    return out


def c_abstractor(pc: Mapping[str, Any]) -> list[WeightTensor]:
    """``DynamicCAbstractor``'s tensors (whole on every rank)."""
    enc, hid = _need(pc, "encoder_hidden_size"), _need(pc, "hidden_size")
    out_w, depth = _need(pc, "output_hidden_size"), int(pc.get("depth", 2))
    mlp_depth, merge = int(pc.get("mlp_depth", 2)), int(pc.get("merge_size", 2))
    out = [_enc("pos_emb", int(pc.get("pos_emb_size", 576)), enc)] if pc.get("pos_emb", True) else []
    if depth:
        out += regnet_stage("net.0", depth, enc, hid) + regnet_stage("net.2", depth, merge * merge * hid, hid)
    first = hid if depth else enc
    out += [_enc("readout.0", out_w, first), _enc("readout.0.bias", out_w)]
    if mlp_depth > 1:
        out += [_enc("readout.linear", out_w, out_w, mlp_depth - 1), _enc("readout.linear.bias", out_w, 1, mlp_depth - 1)]
    return out


def _projector(config: Any) -> Mapping[str, Any]:
    pc = config.raw.get("projector_config")
    if not isinstance(pc, Mapping):
        raise ModelConfigError(f"{config.architecture}: config.json lacks projector_config")
    return pc


@register
class KananaV(VisionEncoderMixin, LlamaLike):
    """Kanana-V: the Llama decoder of ``text_config`` plus the merger-less Qwen2-VL tower and the
    C-Abstractor."""

    architectures = ("KananaVForConditionalGeneration",)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        merge = int(_vision(self.config).get("spatial_merge_size", 2))  # type: ignore[attr-defined]
        return merge * merge

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        c = _need(_vision(config), "embed_dim")
        return c, int(c * float(_vision(config).get("mlp_ratio", 4)))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        tp = ctx.tensor_parallel_size  # no supports_encoder_tp_data: weights mode (vllm/config/model.py)
        tower = [replace(t, name=t.name.replace("visual.", "vision_model.", 1))
                 for t in qwen2_vl_tower(_vision(config), tp) if not t.name.startswith("visual.merger.")]
        return tower + c_abstractor(_projector(config))

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        lo = vc.get("min_pixels", config.raw.get("min_pixels", QWEN2_VL_MIN_PIXELS))
        hi = vc.get("max_pixels", config.raw.get("max_pixels", QWEN2_VL_MAX_PIXELS))
        return int(lo), int(hi)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        lo, hi = self.pixel_limits(config)
        return {"image": mm_law.qwen_vl_image_tokens(
            DUMMY_SIDE, DUMMY_SIDE, patch_size=_need(vc, "patch_size"), merge_size=int(vc.get("spatial_merge_size", 2)),
            min_pixels=lo, max_pixels=hi, temporal_patch_size=int(vc.get("temporal_patch_size", 2)))}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return ("image pixel limits from transformers' Qwen2-VL image processor defaults unless the config "
                "carries min_pixels / max_pixels; a checkpoint's preprocessor_config.json may differ",)
