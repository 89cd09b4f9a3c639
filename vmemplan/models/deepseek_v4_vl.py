"""DeepSeek-V4 with its vision tower (``DeepseekV4ForConditionalGeneration``,
deepseek-ai/DeepSeek-V4-Flash-Vision-Exp).

The checkpoint keeps ``architectures: ["DeepseekV4ForCausalLM"]``; vLLM 0.33.0 routes a config with
``vision_n_layers > 0`` to this class (:func:`vmemplan.model_config.deepseek_v4_vision_arch`).

vllm/models/deepseek_v4/common/vl_model.py::DeepseekV4ForConditionalGeneration.__init__ (0.33.0):

* under ``_mark_tower_model(vllm_config, {"image"})``, when ``vision_n_layers > 0`` and images are
  allowed: ``DeepseekV4ViT`` and ``DeepseekV4Aligner`` (common/vision.py), cast to the model dtype
  (``.to(dtype=model_config.dtype)``, their fp32 RMSNorm weights included), and four fp32
  ``nn.Parameter`` vectors of the text hidden size (``image_start`` / ``image_end`` /
  ``image_newline`` / ``image_pad``):

  - ViT: a ReplicatedLinear patch embed (3·patch² → ``vision_dim``, bias), ``vision_n_layers``
    blocks of [RMSNorm ×2, QKVParallelLinear ``wqkv`` (bias), RowParallelLinear ``wo`` (bias),
    MergedColumnParallelLinear ``w1`` (gate + up of ``vision_inter_dim``) and RowParallelLinear
    ``w2``, no MLP biases], a final RMSNorm; the 2-D rotary tables are host-cached, not tensors of
    the model;
  - Aligner: ColumnParallelLinear(``vision_dim × downsample²`` → hidden, bias), GELU,
    RowParallelLinear(hidden → hidden, bias);
  - the linears are split over TP unless ``is_vit_use_data_parallel(vision_n_heads)``: when the
    vision heads do not divide by TP they stay whole (the class declares no
    ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``);

* the language model ``DeepseekV4ForCausalLM`` on the same config
  (:class:`vmemplan.models.deepseek_v4.DeepseekV4`), whose MoE gates change with a vision tower
  (nvidia/model.py::DeepseekV4MoE.__init__): every MoE layer, the hash-routed ones included, holds
  the fp32 ``e_score_correction_bias`` (``topk_method`` noaux_tc) and an fp32 ``bias_vl`` of the
  routed experts.

Encoder profile: DeepseekV4VLProcessingInfo serves images only, ``vision_max_n_token +
COMPRESS_PAD_TO - 1`` tokens per image (mm_preprocess.py, COMPRESS_PAD_TO 4); the aligner folds
``downsample²`` patches into one token.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.deepseek_v4 import DeepseekV4
from vmemplan.models.deepseek_v4_vision import DeepseekV4VitDims, deepseek_v4_vit_tensors
from vmemplan.models.multimodal import VisionEncoderMixin

__all__ = ["DeepseekV4VL", "deepseek_v4_vision_tensors"]

#: mm_preprocess.py::COMPRESS_PAD_TO (0.33.0)
COMPRESS_PAD_TO = 4
#: the vision fields' defaults where vLLM's model reads them with getattr (common/vision.py and the
#: published DeepSeek-V4-Flash-Vision-Exp values)
_VISION_DEFAULTS = {"vision_dim": 1024, "vision_n_heads": 16, "vision_inter_dim": 2816, "vision_patch_size": 14,
                    "vision_downsample_ratio": 3, "vision_max_n_token": 384}


def deepseek_v4_vision_tensors(v: dict[str, int], *, layers: int, hidden: int, tp: int) -> list[WeightTensor]:
    """The ViT, the aligner (:func:`vmemplan.models.deepseek_v4_vision.deepseek_v4_vit_tensors`, the
    builder DeepSeek-V4.1 shares) and the four image vectors on one rank (``tp`` 1 when the vision
    heads do not divide by TP)."""
    dims = DeepseekV4VitDims(v["vision_dim"], layers, v["vision_n_heads"], v["vision_inter_dim"],
                             v["vision_patch_size"], v["vision_downsample_ratio"])
    return deepseek_v4_vit_tensors(dims, hidden, tp) + [
        WeightTensor("image_start+image_end+image_newline+image_pad", "encoder", hidden, 1, 4, dtype="float32")]


@register
class DeepseekV4VL(VisionEncoderMixin, DeepseekV4):
    """DeepSeek-V4-Flash-Vision-Exp: the DeepSeek-V4 decoder (vision-routed MoE gates) plus ViT + aligner."""

    architectures = ("DeepseekV4ForConditionalGeneration",)

    def _v(self) -> dict[str, int]:
        text = self.config.text
        return {k: int(d if text.get(k) is None else text[k]) for k, d in _VISION_DEFAULTS.items()}

    @property
    def patches_per_token(self) -> int:
        return self._v()["vision_downsample_ratio"] ** 2

    def tower_built(self, ctx: GraphContext) -> bool:
        return int(self.config.text.get("vision_n_layers") or 0) > 0 and super().tower_built(ctx)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        v = self._v()
        return v["vision_dim"], v["vision_inter_dim"]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": self._v()["vision_max_n_token"] + COMPRESS_PAD_TO - 1}

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        v = self._v()
        tp = ctx.tensor_parallel_size
        return deepseek_v4_vision_tensors(v, layers=int(config.text.get("vision_n_layers") or 0),
                                          hidden=config.hidden_size, tp=tp if v["vision_n_heads"] % tp == 0 else 1)

    def _vision_gates(self, tensors: list[WeightTensor]) -> list[WeightTensor]:
        """Each MoE gate's fp32 ``e_score_correction_bias`` on every layer (noaux_tc) and its ``bias_vl``."""
        out = [t for t in tensors if not t.name.startswith("ffn.gate.bias")]
        biased = self.config.text.get("topk_method") == "noaux_tc"
        for t in tensors:
            if t.name.startswith("ffn.gate") and t.kind == "router" and not t.name.startswith("ffn.gate.bias"):
                tag = t.name[len("ffn.gate"):]
                if biased:
                    out.append(WeightTensor(f"ffn.gate.bias{tag}", "router", t.rows, 1, t.count, dtype="float32"))
                out.append(WeightTensor(f"ffn.gate.bias_vl{tag}", "router", t.rows, 1, t.count, dtype="float32"))
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return self._vision_gates(super().weight_tensors(ctx)) + self.tower_tensors(self.config, ctx)
