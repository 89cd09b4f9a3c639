"""Llama-4 with its vision tower (``Llama4ForConditionalGeneration``: Llama-4 Scout / Maverick).

vllm/model_executor/models/mllama4.py (0.33.0): ``Llama4ForConditionalGeneration`` builds, under
``_mark_tower_model(vllm_config, "image")`` and with no quantization (``quant_config=None``):

* ``vision_model`` = Llama4VisionModel: ``patch_embedding.linear`` (Llama4UnfoldConvolution, a
  ColumnParallelLinear channels·patch² -> hidden, no bias), ``class_embedding`` (hidden),
  ``positional_embedding_vlm`` ((image/patch)² + 1 rows), ``layernorm_pre`` / ``layernorm_post``
  (LayerNorm with bias), ``num_hidden_layers`` Llama4VisionEncoderLayers (LayerNorm ×2 with bias,
  QKVParallelLinear / RowParallelLinear with bias, Llama4VisionMLP fc1 / fc2 with bias) and the
  ``vision_adapter`` (Llama4VisionPixelShuffleMLP: fc1 intermediate -> projector_input_dim and fc2
  -> projector_output_dim, bias = ``multi_modal_projector_bias``); every layer's rotary_emb is one
  shared get_rope instance (``rope_type`` mllama4, complex64 ``cos_sin_cache`` of
  (image/patch)² + 1 rows × ``rotary_dim`` = head_dim / 2 entries: llama4_vision_rope.py);
  all of it is split over TP unless ``--mm-encoder-tp-mode data`` (``supports_encoder_tp_data``:
  ``is_vit_use_data_parallel`` replicates it, ``disable_tp``);
* ``multi_modal_projector.linear_1``: ColumnParallelLinear vision_output_dim -> text hidden, no
  bias, split over TP in both modes (it has no ``disable_tp``);

then the language model from ``text_config`` as Llama4ForCausalLM (:class:`vmemplan.models.llama4.Llama4`).
An image costs at most (max_patches tiles + the global tile) × the patches of a chunk after the
pixel shuffle (Mllama4ProcessingInfo.get_patch_per_chunk; transformers' Llama4ImageProcessor
``max_patches`` default 16).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.llama4 import Llama4
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _vision

__all__ = ["Llama4MM", "llama4_vision_tower"]

#: transformers models/llama4/image_processing_llama4_fast.py: Llama4ImageProcessorFast.max_patches
LLAMA4_MAX_PATCHES = 16


def _tp_linear(name: str, out: int, inp: int, tp: int, *, bias: bool, column: bool) -> list[WeightTensor]:
    """A Column- (``column``) or RowParallelLinear [out, in] on one of ``tp`` ranks, with its bias
    (a column bias is split, a row bias whole)."""
    rows, cols = (_split(out, tp, name), inp) if column else (out, _split(inp, tp, name))
    tensors = [WeightTensor(name, "encoder", rows, cols)]
    if bias:
        tensors.append(WeightTensor(name + ".bias", "encoder", rows if column else out, 1))
    return tensors


def llama4_vision_tower(vc: Any, tp: int) -> list[WeightTensor]:
    """Llama4VisionModel on one rank of ``tp`` (1 in data mode)."""
    c, inter = _need(vc, "hidden_size"), _need(vc, "intermediate_size")
    heads, layers = _need(vc, "num_attention_heads"), _need(vc, "num_hidden_layers")
    patch, size = _need(vc, "patch_size"), _need(vc, "image_size")
    chans = int(vc.get("num_channels") or 3)
    _split(heads, tp, "vision attention heads")
    positions = (size // patch) ** 2 + 1
    rotary = (c // heads) // 2  # complex entries a row: rotary_dim = head_dim × partial_rotary_factor 0.5
    adapter_bias = bool(vc.get("multi_modal_projector_bias", False))
    layer = [*_tp_linear("self_attn.qkv_proj", 3 * c, c, tp, bias=True, column=True),
             *_tp_linear("self_attn.o_proj", c, c, tp, bias=True, column=False),
             *_tp_linear("mlp.fc1", inter, c, tp, bias=True, column=True),
             *_tp_linear("mlp.fc2", c, inter, tp, bias=True, column=False),
             WeightTensor("input_layernorm+post_attention_layernorm (weight, bias)", "encoder", c, 1, 4)]
    out = [WeightTensor(f"vision_model.model.layers.{t.name}", t.kind, t.rows, t.cols, t.count * layers)
           for t in layer]
    return out + [
        *_tp_linear("vision_model.patch_embedding.linear", c, chans * patch * patch, tp, bias=False, column=True),
        WeightTensor("vision_model.class_embedding", "encoder", c, 1),
        WeightTensor("vision_model.positional_embedding_vlm", "encoder", positions, c),
        WeightTensor("vision_model.layernorm_pre+post (weight, bias)", "encoder", c, 1, 4),
        *_tp_linear("vision_model.vision_adapter.mlp.fc1", _need(vc, "projector_input_dim"), inter, tp,
                    bias=adapter_bias, column=True),
        *_tp_linear("vision_model.vision_adapter.mlp.fc2", _need(vc, "projector_output_dim"),
                    _need(vc, "projector_input_dim"), tp, bias=adapter_bias, column=False),
        # complex64 = two fp32 per entry
        WeightTensor("vision_model.rotary_emb.cos_sin_cache (complex64)", "buffer", positions, 2 * rotary,
                     dtype="float32"),
    ]


@register
class Llama4MM(VisionEncoderMixin, Llama4):
    """Llama4VisionModel + ``multi_modal_projector.linear_1`` over the Llama-4 decoder."""

    architectures = ("Llama4ForConditionalGeneration",)
    modalities = ("image",)
    supports_encoder_tp_data = True  # mllama4.py::Llama4ForConditionalGeneration

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc, tp = _vision(config), ctx.tensor_parallel_size
        tower_tp = 1 if ctx.mm_encoder_tp_mode == "data" else tp
        return llama4_vision_tower(vc, tower_tp) + _tp_linear(
            "multi_modal_projector.linear_1", config.hidden_size, _need(vc, "vision_output_dim"), tp,
            bias=False, column=True)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        shuffle = float(vc.get("pixel_shuffle_ratio") or 0.5)
        per_chunk = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2 // int(round(1 / shuffle ** 2))
        return {"image": (LLAMA4_MAX_PATCHES + 1) * per_chunk}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
