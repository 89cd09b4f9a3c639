"""Cosmos 3 Edge (``Cosmos3EdgeForConditionalGeneration``, nvidia/Cosmos3-Edge's reasoner): a SigLIP2
NaViT tower and an MLP projector in front of a dense decoder vLLM runs as Nemotron-H layers.

vllm/model_executor/models/cosmos3_edge.py (0.33.0), config transformers 5.20's
``Cosmos3EdgeConfig``:

* under ``_mark_tower_model(vllm_config, {"image", "video"})`` a ``Cosmos3EdgeVisionModel``:

  - ``encoder``: ``Cosmos3EdgeVisionEncoder``, lfm2_siglip2.py's ``Siglip2VisionTransformer``
    (a biased linear patch embed, ``num_patches`` learned positions, the SigLIP layers, the
    post-LayerNorm): :func:`vmemplan.models.siglip_navit.siglip2_navit_tower`;
  - ``projector``: ``Cosmos3EdgePatchMerger``: LayerNorm over the tower width (weight and bias),
    ColumnParallelLinear(``width × merge²`` → ``projector_hidden_size``, bias), GELU,
    RowParallelLinear(→ text hidden, bias), both ``disable_tp`` under ``--mm-encoder-tp-mode data``;

* the language model ``Cosmos3EdgeForCausalLM``: ``_to_nemotron_h_config`` rewrites the text config
  as a ``NemotronHConfig`` whose ``layers_block_type`` is ``["full_attention", "mlp"] × layers``
  (pattern ``*-`` repeated: twice the decoder layers, each with its ``norm``), relu² MLPs
  (up / down), and an ``mrope_interleaved`` rope; :class:`vmemplan.models.hybrid_mamba.NemotronH`
  on that pattern, its ``embed_tokens``, ``norm_f`` and an untied ``lm_head``;
* ``Cosmos3EdgeAttention`` adds a ``get_rope(head_dim, max_position_embeddings, rope_parameters)``:
  with the ``mrope_section`` an ``MRotaryEmbedding`` whose cache holds
  ``max_position_embeddings × 4`` rows of ``head_dim`` (shared by every attention layer);
* ``supports_encoder_tp_data = True``.

Encoder profile: ``Cosmos3EdgeProcessingInfo`` is Qwen3-VL's with Cosmos3EdgeImageProcessor's
pixel limits (256² .. 4096²) and no temporal patching.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid_mamba import NemotronH
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.siglip_navit import siglip2_navit_tower
from vmemplan.models.vision_towers import _need, _tower_tp, _vision, split_mlp_projector

__all__ = ["Cosmos3Edge", "cosmos3_edge_tower"]

#: MRotaryEmbedding's default ``positions_factor`` (get_rope's ``mrope_positions_factor``)
_MROPE_FACTOR = 4
#: Cosmos3EdgeConfig.projector_hidden_size's default (transformers 5.20)
_PROJECTOR_DEFAULT = 11520
#: NemotronHConfig's Mamba-2 defaults (transformers 5.20): the converted config carries them though
#: no layer is a Mamba one
_NEMOTRON_H_MAMBA_DEFAULTS = {"ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8,
                              "conv_kernel": 4, "use_conv_bias": True, "chunk_size": 128}
#: Cosmos3EdgeImageProcessor.size (shortest_edge, longest_edge), transformers 5.20
COSMOS3_EDGE_PIXELS = (256 * 256, 4096 * 4096)


def cosmos3_edge_tower(vc: Any, tp: int, text_hidden: int, projector_hidden: int) -> list[WeightTensor]:
    """The SigLIP2 NaViT encoder plus the LayerNorm → Linear → GELU → Linear projector."""
    c = _need(vc, "hidden_size")
    m = c * int(vc.get("spatial_merge_size", 2)) ** 2
    return siglip2_navit_tower(vc, tp, prefix="visual.encoder") + [
        WeightTensor("visual.projector.norm", "encoder", c, 1, 2),
        *split_mlp_projector("visual.projector", ("linear_fc1", "linear_fc2"), m, projector_hidden, text_hidden, tp),
    ]


@register
class Cosmos3Edge(_QwenVLBase, NemotronH):
    """Cosmos 3 Edge: attention / relu²-MLP Nemotron-H layers with an M-RoPE cache, plus the SigLIP2 tower."""

    architectures = ("Cosmos3EdgeForConditionalGeneration",)

    def __init__(self, config: Any) -> None:
        """The text config as ``_to_nemotron_h_config`` hands it to Nemotron-H: one attention and
        one MLP layer per decoder layer (``hybrid_override_pattern`` ``*-`` repeated)."""
        n = config.num_hidden_layers
        text = {**_NEMOTRON_H_MAMBA_DEFAULTS, **config.text, "hybrid_override_pattern": "*-" * n,
                "num_hidden_layers": 2 * n}
        super().__init__(dataclasses.replace(config, text=text, num_hidden_layers=2 * n))

    def pixel_limits(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        lo, hi = COSMOS3_EDGE_PIXELS
        return int(vc.get("min_pixels", config.raw.get("min_pixels", lo))), \
            int(vc.get("max_pixels", config.raw.get("max_pixels", hi)))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        proj = int(config.raw.get("projector_hidden_size") or _PROJECTOR_DEFAULT)
        return cosmos3_edge_tower(_vision(config), _tower_tp(ctx), config.hidden_size, proj)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        start, end = self.layer_range(ctx)
        if "*" in self.pattern()[start:end]:
            out.append(WeightTensor("mixer.rotary_emb.cos_sin_cache", "buffer",
                                    self.config.max_position_embeddings * _MROPE_FACTOR, self.attention_head_size))
        return out + self.tower_tensors(self.config, ctx)
