"""BAGEL (``BagelForConditionalGeneration``, ByteDance-Seed/BAGEL-7B-MoT): the understanding path of
BAGEL as vLLM serves it — a SigLIP tower and an MLP connector in front of a Qwen2 decoder.

vllm/model_executor/models/bagel.py (0.33.0), ``BagelForConditionalGeneration.__init__`` on
vLLM's own ``BagelConfig`` (vllm/transformers_utils/configs/bagel.py: ``llm_config`` a Qwen2Config,
``vit_config`` a SiglipVisionConfig):

* under ``_mark_language_model``: ``init_vllm_registered_model(hf_config=config.llm_config,
  architectures=["Qwen2ForCausalLM"])`` (the MoT generation experts are not built);
* when ``visual_und`` (default true), under ``_mark_tower_model(vllm_config, "image")``:

  - ``vit_model`` = siglip.py::SiglipVisionModel on ``vit_config`` whose ``num_hidden_layers`` is
    forced from 27 to 26 (the checkpoint's layers), so every remaining layer runs and the
    post-LayerNorm is built; no attention-pool head; SigLIP's int64 ``position_ids`` buffer
    ``[1, (image_size / patch)²]`` (:func:`vmemplan.models.vision_towers.siglip_tower`); split over
    TP (no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``);
  - ``connector`` = ``BagelVisionMLP``: ColumnParallelLinear(vision hidden → text hidden) and
    RowParallelLinear(text hidden → text hidden), both biased;
  - ``vit_pos_embed``: a fp32 2-D sin-cos table ``[vit_max_num_patch_per_side², text hidden]`` made
    with ``torch.from_numpy``: a host tensor, not on the GPU (the model moves the position ids to
    its device on every call), so not counted.

``bagel`` is one of vLLM's mm-prefix LMs (transformers_utils/model_arch_config_convertor.py: image
tokens attend bidirectionally), so FLASH_ATTN is refused for its layers
(v1/attention/backends/fa_utils.py) and a host without FlashInfer runs TRITON_ATTN: the same
16-token block and page of a plain bf16 cache.

Encoder profile: every image is ``vit_max_num_patch_per_side²`` tokens
(``BagelProcessingInfo.get_mm_max_tokens_per_item``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, siglip_tower, split_mlp_projector

__all__ = ["Bagel", "bagel_tower"]

#: BagelConfig.vit_max_num_patch_per_side's default
MAX_PATCHES_PER_SIDE = 70


def _vit(config: Any) -> Mapping[str, Any]:
    vc = config.raw.get("vit_config")
    if not isinstance(vc, Mapping):
        raise ModelConfigError(f"{config.architecture}: config.json lacks vit_config")
    return vc


def bagel_tower(vc: Mapping[str, Any], tp: int, text_hidden: int) -> list[WeightTensor]:
    """``vit_model`` (27 layers read as 26) and ``connector`` on one rank (see the module docstring)."""
    layers = _need(vc, "num_hidden_layers")
    layers = 26 if layers == 27 else layers
    vc = {"num_channels": 3, **vc, "num_hidden_layers": layers}
    grid = _need(vc, "image_size") // _need(vc, "patch_size")
    c = _need(vc, "hidden_size")
    tower = [replace(t, name=t.name.replace("vision_tower.", "vit_model.", 1)) for t in siglip_tower(vc, tp)]
    return tower + [
        WeightTensor("vit_model.vision_model.embeddings.position_ids", "buffer", 1, grid * grid, dtype="int64"),
        *split_mlp_projector("connector", ("fc1", "fc2"), c, text_hidden, text_hidden, tp),
    ]


@register
class Bagel(VisionEncoderMixin, Qwen2):
    """BAGEL: the Qwen2 decoder of ``llm_config`` plus the SigLIP tower and the connector."""

    architectures = ("BagelForConditionalGeneration",)

    def _understands(self) -> bool:
        return bool(self.config.raw.get("visual_und", True))  # type: ignore[attr-defined]

    def tower_built(self, ctx: GraphContext) -> bool:
        return self._understands() and super().tower_built(ctx)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vit(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return bagel_tower(_vit(config), ctx.tensor_parallel_size, config.hidden_size)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        side = int(config.raw.get("vit_max_num_patch_per_side", MAX_PATCHES_PER_SIDE))
        return {"image": side * side}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
