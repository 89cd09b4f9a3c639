"""Isaac (``IsaacForConditionalGeneration``, PerceptronAI/Isaac-0.1): a pixel-shuffle Siglip2 NaViT
tower and a two-layer MLP in front of a Qwen3 decoder with M-RoPE.

vllm/model_executor/models/isaac.py::IsaacForConditionalGeneration (0.33.0, config class
vllm/transformers_utils/configs/isaac.py::IsaacConfig) builds

* under ``_mark_language_model``: ``init_vllm_registered_model(architectures=["Qwen3ForCausalLM"])``
  (dense.py::Qwen3) after writing ``mrope_section = [head_dim/4, head_dim/8, head_dim/8]`` into the
  rope parameters, whatever the config says: the rotary cache is always M-RoPE's
  ``max_position × 4`` rows;
* under ``_mark_tower_model(vllm_config, "image")``: ``vision_embedding`` = IsaacVisionEmbedding:
  ``transformer`` = the module's Siglip2VisionTransformer (siglip_navit.py::siglip2_navit_tower:
  ReplicatedLinear patch embed with bias, ``num_patches`` positions, every layer with
  siglip.py::SiglipMLP, post-LayerNorm), ``linear_fc1`` ColumnParallelLinear(c·s² → 4·c·s²) and
  ``linear_fc2`` RowParallelLinear(4·c·s² → text hidden), no biases (s: the vision config's
  ``pixel_shuffle_scale_factor``).  ``supports_encoder_tp_data`` is set: under
  ``--mm-encoder-tp-mode data`` the tower's attention and MLP linears are whole (``disable_tp``),
  while the two projector linears, which do not pass ``disable_tp``, stay split over TP.

Tokens per image (IsaacProcessingInfo.get_mm_max_tokens_per_item): ``vision_max_num_patches //
pixel_shuffle_scale²`` (IsaacConfig defaults 256 and 1).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.siglip_navit import NaViTTowerMixin, siglip2_navit_tower
from vmemplan.models.vision_towers import _need, _tower_tp, _vision, mrope_cache_positions

__all__ = ["Isaac"]


@register
class Isaac(NaViTTowerMixin, Qwen3):
    """``IsaacForConditionalGeneration``: Siglip2 + ``linear_fc1``/``linear_fc2`` + Qwen3 (M-RoPE)."""

    architectures = ("IsaacForConditionalGeneration",)
    modalities = ("image",)
    supports_encoder_tp_data = True

    def shuffle(self) -> int:
        return int(_vision(self.config).get("pixel_shuffle_scale_factor", self.config.raw.get("pixel_shuffle_scale", 1)))

    @property
    def patches_per_token(self) -> int:
        return self.shuffle() ** 2

    def with_mrope(self, tensors: list[WeightTensor]) -> list[WeightTensor]:
        positions, dim = mrope_cache_positions(self.config, 4)  # the section is forced (see the module)
        return [WeightTensor(t.name, t.kind, positions, dim) if t.name == "rotary_emb.cos_sin_cache" else t
                for t in tensors]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        tp = ctx.tensor_parallel_size
        wide = _need(vc, "hidden_size") * self.shuffle() ** 2
        tower = siglip2_navit_tower(vc, _tower_tp(ctx), prefix="vision_embedding.transformer")
        return tower + [WeightTensor("vision_embedding.linear_fc1", "encoder", 4 * wide // tp, wide),
                        WeightTensor("vision_embedding.linear_fc2", "encoder", config.hidden_size, 4 * wide // tp)]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        scale = int(config.raw.get("pixel_shuffle_scale", 1))
        return {"image": int(config.raw.get("vision_max_num_patches", 256)) // (scale * scale)}
