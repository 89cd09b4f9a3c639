"""Granite 4 Vision (``Granite4VisionForConditionalGeneration``): a SigLIP tower, Window-Q-Former
projectors feeding deepstack levels, and the Granite decoder.

Mirrors vllm/model_executor/models/granite4_vision.py (0.33.0):

* the tower is ``SiglipVisionModel(require_post_norm=False)`` with every layer (deepstack reads
  all hidden states; no ``init_vision_tower_for_llava`` truncation), no head, and its int64
  ``position_ids`` buffer (siglip.py::SiglipVisionEmbeddings);
* ``image_newline``: an ``nn.Parameter`` of the text hidden size;
* one ``WindowQFormerDownsampler`` per ``deepstack_layer_map`` entry plus four spatial ones, each
  a one-layer ``Blip2QFormerModel`` (blip2.py, 0.33.0: hidden = vision hidden, intermediate 3072,
  self- and cross-attention q/k/v/dense ``nn.Linear`` with bias and a LayerNorm each, the query
  MLP ``intermediate_query``/``output_query`` with its LayerNorm, a final LayerNorm), a LayerNorm,
  the ``query`` (``q²`` rows) and ``image_positions`` (``w²`` rows) parameters for
  ``downsample_rate = "q/w"``, and ``out_linear`` (vision -> text hidden, bias); all replicated;
* the tower modules are built for images only (``_mark_tower_model(vllm_config, "image")``);
* ``_ds_buffers``: one ``torch.zeros(max_num_batched_tokens, text hidden)`` per deepstack level
  (deepstack entries + spatial target layers), made in ``__init__`` under the loader's device
  and dtype context, whatever the modality limits;
* the language model is ``Granite4VisionLLMForCausalLM`` — granite.py::GraniteForCausalLM on the
  text config (vmemplan: the Granite adapter, dense_a_variants.py::GraniteSWA).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, adapter_class, register
from vmemplan.models.llava_next import anyres_image_tokens
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _vision, siglip_tower

__all__ = ["Granite4Vision", "window_qformer_tensors"]

QFORMER_INTERMEDIATE = 3072  # granite4_vision.py::WindowQFormerDownsampler's Blip2QFormerConfig


def _rate(config: Any) -> tuple[int, int]:
    q, w = str(config.raw.get("downsample_rate") or "1/1").split("/")
    return int(q), int(w)


def window_qformer_tensors(c: int, text_hidden: int, query_side: int, window_side: int,
                           count: int) -> list[WeightTensor]:
    """``count`` WindowQFormerDownsampler modules (``c`` the vision hidden size), replicated."""
    i, n = QFORMER_INTERMEDIATE, count

    def t(name: str, rows: int, cols: int = 1, k: int = 1) -> WeightTensor:
        return WeightTensor(f"projectors.{name}", "encoder", rows, cols, k * n)

    return [
        t("qformer.layernorm", c, 1, 2),
        # attention and crossattention: query/key/value/output.dense with biases, output.LayerNorm
        t("qformer.encoder.layer.0.(cross)attention.query/key/value/dense", c, c, 8),
        t("qformer.encoder.layer.0.(cross)attention.query/key/value/dense.bias", c, 1, 8),
        t("qformer.encoder.layer.0.(cross)attention.output.LayerNorm", c, 1, 4),
        t("qformer.encoder.layer.0.intermediate_query.dense", i, c), t("qformer.encoder.layer.0.intermediate_query.dense.bias", i),
        t("qformer.encoder.layer.0.output_query.dense", c, i), t("qformer.encoder.layer.0.output_query.dense.bias", c),
        t("qformer.encoder.layer.0.output_query.LayerNorm", c, 1, 2),
        t("norm", c, 1, 2),
        t("query", query_side * query_side, c),
        t("image_positions", window_side * window_side, c),
        t("out_linear", text_hidden, c), t("out_linear.bias", text_hidden),
    ]


class _GraniteVisionTower(VisionEncoderMixin):
    modalities = ("image",)
    weights_read_batch_tokens = True  # the deepstack buffers (max_num_batched_tokens rows)

    def ds_levels(self, config: Any) -> int:
        return len(config.raw.get("deepstack_layer_map") or []) + len(
            config.raw.get("spatial_target_layers") or [12, 15, 18, 21])

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        c, h = _need(vc, "hidden_size"), config.hidden_size
        grid = _need(vc, "image_size") // _need(vc, "patch_size")
        q, w = _rate(config)
        projectors = len(config.raw.get("deepstack_layer_map") or []) + 4  # + the four spatial offsets
        # no supports_encoder_tp_data: --mm-encoder-tp-mode data falls back to weights (config/model.py)
        return (siglip_tower(vc, ctx.tensor_parallel_size, post_norm=False)
                + [WeightTensor("vision_tower.vision_model.embeddings.position_ids", "buffer", 1, grid * grid,
                                dtype="int64"),
                   WeightTensor("image_newline", "encoder", h, 1)]
                + window_qformer_tensors(c, h, q, w, projectors))

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Granite4VisionProcessingInfo.get_num_image_tokens: LLaVA-NeXT's any-resolution count on
        the patch grid scaled by ``downsample_rate``, for the largest pinpoint."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        tile = _need(vc, "image_size")
        grid = int(tile // _need(vc, "patch_size") * Fraction(str(config.raw.get("downsample_rate") or "1")))
        pins = [(int(a), int(b)) for a, b in (config.raw.get("image_grid_pinpoints") or [[tile, tile]])]
        return {"image": max(anyres_image_tokens(a, b, pinpoints=pins, tile=tile, grid=grid, base=grid * grid)
                             for a, b in pins)}

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size * (1 + self.ds_levels(config))


    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config  # type: ignore[attr-defined]
        ds = [WeightTensor("_ds_buffers", "buffer", ctx.max_num_batched_tokens, cfg.hidden_size,
                           self.ds_levels(cfg))]
        return super().weight_tensors(ctx) + self.tower_tensors(cfg, ctx) + ds  # type: ignore[misc]


_COMBINED: dict[type, type] = {}


@register
class Granite4Vision(_GraniteVisionTower, Adapter):
    """``Granite4VisionForConditionalGeneration`` (granite4_vision.py, 0.33.0)."""

    architectures = ("Granite4VisionForConditionalGeneration",)

    def __new__(cls, config: Any) -> Any:
        lm = adapter_class("GraniteForCausalLM")
        assert lm is not None
        if lm not in _COMBINED:
            _COMBINED[lm] = type(f"Granite4Vision[{lm.__name__}]", (_GraniteVisionTower, lm), {"family": lm.family})
        return _COMBINED[lm](config)
