"""Qwen3-Omni's thinker (``Qwen3OmniMoeForConditionalGeneration``, e.g. Qwen/Qwen3-Omni-30B-A3B-Instruct).

vLLM 0.33.0 maps the architecture to
vllm/model_executor/models/qwen3_omni_moe_thinker.py::Qwen3OmniMoeThinkerForConditionalGeneration and
builds the thinker only, on ``hf_config.thinker_config`` (the ``talker.`` / ``code2wav.`` weights map to
None); vmemplan reads the thinker's keys through model_config's flattening of ``thinker_config``:

* ``audio_tower`` = Qwen3OmniMoeAudioEncoder under ``_mark_tower_model(..., "audio")``, the encoder
  vmemplan already plans for Qwen3-ASR (:func:`vmemplan.models.audio_towers.qwen3_omni_audio_encoder`:
  layers split over TP when TP divides the encoder heads, ``disable_tp`` otherwise);
* ``visual`` = Qwen3Omni_VisionTransformer under ``{"image", "video"}``: the Qwen3-VL tower's shapes
  (:func:`vmemplan.models.vision_towers.qwen3_vl_tower`) with a ``pos_embed`` nn.Embedding of
  ``(image_size / patch_size)²`` rows, ``merger`` / ``merger_list`` (ln_q, mlp.0 ColumnParallel,
  mlp.2 RowParallel, as Qwen3_VisionPatchMerger) and the vision rotary cache (get_rope, 8192 positions,
  ``partial_rotary_factor`` 0.5); its linears are always split over TP: the thinker does not declare
  ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` runs as ``weights``;
* ``deepstack_input_embeds``: one zeroed ``[max_num_batched_tokens, text hidden]`` tensor per
  ``deepstack_visual_indexes`` entry, allocated only when ``visual`` is built (``use_deepstack``);
* ``language_model`` = Qwen3MoeLLMForCausalLM on ``text_config`` (Qwen3MoeModel: Qwen3-MoE layers,
  ParallelLMHead) whose M-RoPE cache keeps get_rope's default 4 rows per position (Qwen3MoeModel is
  built without Qwen3-VL's ``mrope_positions_factor`` 1);
* encoder budget (Qwen3OmniMoeThinkerProcessingInfo.get_mm_max_tokens_per_item): Qwen2.5-VL's image /
  video figures and Qwen2-Audio's 750 tokens per 30 s clip (qwen2_audio.py's output-length law).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import audio_config, qwen3_omni_audio_encoder, whisper_output_tokens
from vmemplan.models.base import register
from vmemplan.models.moe import Qwen3Moe
from vmemplan.models.multimodal import _Qwen3VLTower
from vmemplan.models.qwen_audio import WHISPER_MEL_FRAMES
from vmemplan.models.vision_towers import _need, _tower_tp, _vision, qwen3_vl_tower

__all__ = ["Qwen3OmniMoeThinker"]


@register
class Qwen3OmniMoeThinker(_Qwen3VLTower, Qwen3Moe):
    """Qwen3-MoE (M-RoPE) + the Qwen3-Omni audio encoder + the Qwen3-Omni deepstack ViT."""

    architectures = ("Qwen3OmniMoeForConditionalGeneration",)
    modalities = ("audio", "image", "video")  # type: ignore[assignment]
    supports_encoder_tp_data = False  # the thinker does not declare it
    weights_read_batch_tokens = True  # the deepstack input-embedding buffers

    def _on(self, ctx: GraphContext, *modalities: str) -> bool:
        return any(mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0 for m in modalities)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        out: list[WeightTensor] = []
        if self._on(ctx, "audio"):
            out += qwen3_omni_audio_encoder(audio_config(config.raw, config.architecture), ctx.tensor_parallel_size)
        if self._on(ctx, "image", "video"):
            vc = dict(_vision(config))
            vc["num_position_embeddings"] = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2
            out += qwen3_vl_tower(vc, _tower_tp(ctx))
        return out

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        out = super().max_tokens_per_item(config, ctx)
        if self._on(ctx, "audio"):
            out["audio"] = whisper_output_tokens(WHISPER_MEL_FRAMES)
        return out

    def _deepstack(self, ctx: GraphContext) -> list[WeightTensor]:
        levels = len(_vision(self.config).get("deepstack_visual_indexes") or [])
        if not levels or not self._on(ctx, "image", "video"):
            return []
        return [WeightTensor("deepstack_input_embeds", "buffer", ctx.max_num_batched_tokens,
                             self.config.hidden_size, levels)]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = self._with_mrope(super().weight_tensors(ctx), ctx)
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(self.config, ctx) + self._deepstack(ctx)
        return out
