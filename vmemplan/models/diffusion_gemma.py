"""DiffusionGemma (``DiffusionGemmaForBlockDiffusion``, e.g. google/diffusiongemma-26B-A4B-it): one
Gemma-4 backbone run as a causal encoder (writes the KV cache) and as a bidirectional denoiser over
a canvas (reads it), a self-conditioning MLP, and the Gemma-4 vision tower.

vllm/model_executor/models/diffusion_gemma.py::DiffusionGemmaForConditionalGeneration.__init__
(0.33.0):

* it sets ``text_config.attention_k_eq_v = True`` whatever the config says: global layers take
  ``num_global_key_value_heads`` (:meth:`DiffusionGemma.k_eq_v`);
* with a ``vision_config``, under ``_mark_tower_model(vllm_config, {"image", "video"})``: the
  Gemma-4 vision tower and ``embed_vision`` (gemma4.py::gemma4_vision_tensors; no audio tower);
* ``model`` = gemma4.py::Gemma4Model on the text config and ``lm_head`` a ParallelLMHead tied to
  the embedding when ``tie_word_embeddings`` (gemma4.py::Gemma4, the text model);
* ``self_conditioning`` = DiffusionGemmaSelfConditioning: ``pre_norm`` RMSNorm(hidden), a
  weightless ``post_norm`` (its ``torch.ones(hidden)`` a plain device tensor) and plain nn.Linear
  ``gate_proj`` / ``up_proj`` (hidden → ``self_conditioning_size``, default the text
  ``intermediate_size``) and ``down_proj``, no biases: whole on every rank.

vllm/model_executor/models/config.py::DiffusionGemmaModelForBlockDiffusionConfig.
verify_and_update_config then lowers ``max_num_seqs`` to 8 when it is at least
SchedulerConfig.DEFAULT_MAX_NUM_SEQS (128): the engine default always is (:meth:`adjust_max_num_seqs`).
The KV cache is the Gemma-4 text model's (one spec per attention layer).
"""

from __future__ import annotations

from collections.abc import Mapping

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.gemma4 import Gemma4, gemma4_vision_tensors
from vmemplan.models.gemma4_audio import _cfg_int

__all__ = ["DiffusionGemma", "self_conditioning_tensors"]

#: vllm/config/scheduler.py::SchedulerConfig.DEFAULT_MAX_NUM_SEQS and the value DiffusionGemma's
#: config hook puts in its place
DEFAULT_MAX_NUM_SEQS, DIFFUSION_MAX_NUM_SEQS = 128, 8


def self_conditioning_tensors(raw: Mapping[str, object], hidden: int, intermediate: int) -> list[WeightTensor]:
    """DiffusionGemmaSelfConditioning (see the module docstring)."""
    sc = _cfg_int(raw, "self_conditioning_size", 0) or intermediate
    return [
        WeightTensor("self_conditioning.pre_norm", "norm", hidden, 1),
        WeightTensor("self_conditioning.post_norm.weight(ones, not a parameter)", "buffer", hidden, 1),
        WeightTensor("self_conditioning.gate_proj+up_proj", "encoder", sc, hidden, 2),
        WeightTensor("self_conditioning.down_proj", "encoder", hidden, sc),
    ]


@register
class DiffusionGemma(Gemma4):
    """``DiffusionGemmaForBlockDiffusion``: Gemma-4 text (k = v on global layers) + self-conditioning
    + the Gemma-4 vision tower."""

    architectures = ("DiffusionGemmaForBlockDiffusion",)

    def k_eq_v(self) -> bool:
        return True

    def adjust_max_num_seqs(self, max_num_seqs: int) -> int:
        return DIFFUSION_MAX_NUM_SEQS if max_num_seqs >= DEFAULT_MAX_NUM_SEQS else max_num_seqs

    def multimodal_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        out = self_conditioning_tensors(cfg.raw, cfg.hidden_size, cfg.intermediate_size)
        if ctx.pipeline_rank == 0:
            out += gemma4_vision_tensors(cfg.raw, cfg.hidden_size, ctx)
        return out

    def notes(self) -> tuple[str, ...]:
        return (*super().notes(), "block diffusion: max_num_seqs defaults to 8 (DiffusionGemma's config hook); "
                f"canvas of {_cfg_int(self.config.raw, 'canvas_length', 256)} tokens")
