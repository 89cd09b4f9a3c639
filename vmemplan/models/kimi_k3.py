"""Kimi-K3 (``KimiK3ForConditionalGeneration``): Kimi-K2.5's MoonViT3d encoder in its K3 form
(``KimiK3VisionConfig``: RMSNorm, no biases, a separate ``qkv_hidden_size``, the ``patchmergerv2``
projector) in front of the Kimi-Linear language model of :mod:`vmemplan.models.hybrid_kimi`.

vllm/models/kimi_k3/nvidia/model.py::KimiK3ForConditionalGeneration.__init__ (0.33.0) builds, inside
``_mark_tower_model(vllm_config, "image")`` (dropped when images are limited to 0 per prompt):

* ``vision_tower`` = vllm/model_executor/models/kimi_k25_vit.py::MoonViT3dPretrainedModel over the
  vision config's aliases (``vt_hidden_size`` → hidden_size, ``vt_num_hidden_layers``,
  ``vt_num_attention_heads``, ``vt_intermediate_size``; transformers_utils/configs/kimi_k3.py):
  ``patch_embed.proj`` Conv2d ``[c, 3·p·p]`` (bias only with ``patch_embed_proj_bias``), the
  ``pos_emb.weight [h, w, c]`` table and its ``time_weight [T, 1, c]`` sin-cos buffer; per block
  ``norm0``/``norm1`` (``norm_type``: RMSNorm weight, or LayerNorm weight + bias), ``wqkv``
  QKVParallelLinear(c, qkv / heads, heads) → ``[3·qkv/tp, c]`` and ``wo`` ``[c, qkv/tp]`` (biases with
  ``attn_bias``), ``mlp.fc0 [mlp/tp, c]`` / ``mlp.fc1 [c, mlp/tp]`` (biases with ``linear_bias``);
  ``final_layernorm``.  TP-split unless ``--mm-encoder-tp-mode data`` or TP does not divide the
  heads (vision.py::is_vit_use_data_parallel(num_heads)).
* ``mm_projector`` = KimiK25MultiModalProjector: for ``patchmergerv2`` replicated ``linear_1 [4c, 4c]``
  and ``linear_2 [text hidden, 4c]`` without bias and an RMSNorm(text hidden) ``post_norm``; for
  ``patchmerger`` Kimi-K2.5's LayerNorm + biased pair.

The language model is ``init_vllm_registered_model(..., architectures=["KimiLinearForCausalLM"])``
over ``text_config`` (vllm/models/kimi_k3/nvidia/model.py::KimiLinearForCausalLM), planned by
:class:`vmemplan.models.hybrid_kimi.KimiLinear` for the features that adapter covers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.hybrid_kimi import KimiLinear
from vmemplan.models.kimi_k25 import dummy_image_tokens
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _split, _vision

__all__ = ["KimiK3", "kimi_k3_tower", "kimi_k3_vision"]

#: Kimi-K3 text features KimiLinear does not model (vllm/models/kimi_k3/nvidia/model.py, 0.33.0):
#: attention residual projections (KimiDecoderLayer), the latent MoE's routed_expert_down/up_proj
#: (KimiMoE) and the MLA output gate (nvidia/mla.py)
_UNMODELLED_TEXT = ("attn_res_block_size", "routed_expert_hidden_size", "mla_use_output_gate")

#: vllm/transformers_utils/configs/kimi_k3.py::KimiK3VisionConfig defaults (0.33.0)
_VISION_DEFAULTS: dict[str, Any] = {
    "patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64, "init_pos_emb_time": 4,
    "vt_num_attention_heads": 12, "vt_num_hidden_layers": 27, "vt_hidden_size": 1024, "vt_intermediate_size": 4096,
    "merge_kernel_size": [2, 2], "mm_projector_type": "patchmergerv2", "qkv_hidden_size": 1536,
    "norm_type": "rmsnorm", "attn_bias": False, "patch_embed_proj_bias": False, "linear_bias": False,
}


def kimi_k3_vision(vc: Mapping[str, Any]) -> dict[str, Any]:
    """The vision config as KimiK3VisionConfig reads it (the ``vt_*`` names, else the defaults)."""
    return {k: vc.get(k, d) for k, d in _VISION_DEFAULTS.items()}


def kimi_k3_tower(vc: Mapping[str, Any], tp: int, text_hidden: int) -> list[WeightTensor]:
    """MoonViT3dPretrainedModel + KimiK25MultiModalProjector for a K3 vision config, per rank."""
    c, layers = int(vc["vt_hidden_size"]), int(vc["vt_num_hidden_layers"])
    heads, inter, patch = int(vc["vt_num_attention_heads"]), int(vc["vt_intermediate_size"]), int(vc["patch_size"])
    qkv = int(vc["qkv_hidden_size"] or c)
    kh, kw = (int(x) for x in vc["merge_kernel_size"])
    _split(heads, tp, "attention heads")
    q, i = qkv // tp, _split(inter, tp, "MLP width")
    norm_rows = 1 if vc["norm_type"] == "rmsnorm" else 2  # RMSNorm: weight; LayerNorm: weight + bias
    m = c * kh * kw

    def t(name: str, rows: int, cols: int = 1, count: int = 1, kind: str = "encoder") -> WeightTensor:
        return WeightTensor(f"vision_tower.{name}", kind, rows, cols, count)

    def p(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"mm_projector.{name}", "encoder", rows, cols)

    out = [t("patch_embed.proj", c, 3 * patch * patch)]
    if vc["patch_embed_proj_bias"]:
        out.append(t("patch_embed.proj.bias", c))
    out += [
        t("patch_embed.pos_emb.weight", int(vc["init_pos_emb_height"]) * int(vc["init_pos_emb_width"]), c),
        t("patch_embed.pos_emb.time_weight", int(vc["init_pos_emb_time"]), c, kind="buffer"),
        t("encoder.blocks.norm0+norm1", c, 1, 2 * norm_rows * layers),
        t("encoder.blocks.wqkv", 3 * q, c, layers), t("encoder.blocks.wo", c, q, layers),
        t("encoder.blocks.mlp.fc0", i, c, layers), t("encoder.blocks.mlp.fc1", c, i, layers),
        t("encoder.final_layernorm", c, 1, norm_rows),
    ]
    if vc["attn_bias"]:
        out += [t("encoder.blocks.wqkv.bias", 3 * q, 1, layers), t("encoder.blocks.wo.bias", c, 1, layers)]
    if vc["linear_bias"]:
        out += [t("encoder.blocks.mlp.fc0.bias", i, 1, layers), t("encoder.blocks.mlp.fc1.bias", c, 1, layers)]
    if vc["mm_projector_type"] == "patchmergerv2":
        out += [p("linear_1", m, m), p("linear_2", text_hidden, m), p("post_norm", text_hidden)]
    else:
        out += [p("pre_norm", c, 2), p("linear_1", m, m), p("linear_1.bias", m),
                p("linear_2", text_hidden, m), p("linear_2.bias", text_hidden)]
    return out


@register
class KimiK3(VisionEncoderMixin, KimiLinear):
    """Kimi-K3: the Kimi-Linear decoder plus the K3 MoonViT3d tower and projector."""

    supports_encoder_tp_data = True  # declared by vLLM's model class (0.33.0)

    architectures = ("KimiK3ForConditionalGeneration",)
    modalities = ("image",)  # _mark_tower_model(vllm_config, "image")
    attention_layer_name = "language_model.model.layers.{i}.self_attn.mla_attn"

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = kimi_k3_vision(_vision(config))
        heads = int(vc["vt_num_attention_heads"])
        tp = 1 if ctx.mm_encoder_tp_mode == "data" or heads % ctx.tensor_parallel_size else ctx.tensor_parallel_size
        return kimi_k3_tower(vc, tp, config.hidden_size)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = kimi_k3_vision(_vision(config))
        return int(vc["vt_hidden_size"]), int(vc["vt_intermediate_size"])

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """An estimate, as for Kimi-K2.5 (:class:`vmemplan.models.kimi_k25.KimiK25`): a 3000 x 3000 image
        counted as Kimi-VL counts it (``in_token_limit`` 4096 unless the config names it)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": dummy_image_tokens(config, kimi_k3_vision(_vision(config)))}

    def check_text_features(self) -> None:
        """Refuse a text config using a K3 feature KimiLinear does not model (rather than under-count)."""
        used = [k for k in _UNMODELLED_TEXT if self.config.text.get(k)]
        if used:
            raise ModelConfigError(f"Kimi-K3 text features {', '.join(used)} are not modelled yet",
                                   hint="vmemplan plans Kimi-K3's vision tower over the Kimi-Linear feature set")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        self.check_text_features()
        return KimiLinear.weight_tensors(self, ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return super().notes() + ("image tokens per item estimated from a 3000 x 3000 image with "  # type: ignore[misc]
                                  "in_token_limit 4096 (the checkpoint's image processor decides the real count)",)
