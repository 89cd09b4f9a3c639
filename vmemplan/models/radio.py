"""The RADIO vision tower (NVIDIA's C-RADIO / RADIO v2.5 ViT) as vLLM 0.33.0 builds it.

vllm/model_executor/models/radio.py::RadioModel, configured by
vllm/transformers_utils/configs/radio.py::RadioConfig (the ViT width, depth, heads and MLP width come
from ``VIT_TIMM_DIM_BY_NAME[model_name]``; the checkpoint's ``vision_config.args`` are passed on as
keyword arguments, so they may override ``qkv_bias`` / ``norm_type`` / ...):

* ``model.patch_generator`` (ViTPatchGenerator): ``embedder`` = ViTPatchLinear, a bias-free
  ``nn.Linear(3·patch², c)``; ``video_embedder`` = ViTPatchLinear over ``3·T·patch²`` inputs when
  ``video_temporal_patch_size`` T > 1 (``separate_video_embedder``); ``pos_embed`` [1, rows·cols, c]
  over the CPE grid of ``round(cpe_max_size / patch)·patch`` pixels; ``cls_token.token``
  [num_cls + registers, c] (ClsToken: one CLS per distinct teacher name under
  ``cls_token_per_teacher``, registers ``register_multiple - num_cls % register_multiple``);
  ``patch_normalizer`` is an Identity;
* ``model.encoder`` = RadioVisionEncoder, InternVisionEncoder's layers (intern_vit.py: fused
  QKVParallelLinear ``qkv``, RowParallelLinear ``proj``, Column/RowParallel MLP, two norms,
  ``ls1``/``ls2``), every ``num_hidden_layers`` layer, no final norm;
* ``summary_idxs``: an int64 buffer of the teachers with ``use_summary`` (default True).

The tower's linears are sharded over TP like InternViT's (built without a quant config).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import WeightTensor
from vmemplan.models.internvl import intern_vit_tower

__all__ = ["VIT_TIMM_DIM_BY_NAME", "radio_dims", "radio_tower"]

#: vllm/transformers_utils/configs/radio.py::VIT_TIMM_DIM_BY_NAME (0.33.0): hidden, layers, heads, MLP
VIT_TIMM_DIM_BY_NAME: dict[str, tuple[int, int, int, int]] = {
    "vit_small_patch16_224": (384, 12, 6, 1536),
    "vit_base_patch16_224": (768, 12, 12, 3072),
    "vit_large_patch16_224": (1024, 24, 16, 4096),
    "vit_huge_patch16_224": (1280, 32, 16, 5120),
    "vit_so400m_patch16_224": (1152, 27, 16, 4304),
}


def radio_dims(vision_config: Mapping[str, Any]) -> dict[str, Any]:
    """The RadioConfig attributes the tower reads, from a checkpoint's RADIO ``vision_config``
    (``args.model`` names the ViT; ``patch_size`` and the video keys sit at the top level, as
    nano_nemotron_vl.py::get_vit_model_from_radio_config reads them)."""
    args = vision_config.get("args") or {}
    name = args.get("model")
    if name not in VIT_TIMM_DIM_BY_NAME:
        raise ModelConfigError(f"vision_config.args.model {name!r} is not a RADIO ViT vLLM 0.33.0 knows",
                               hint="one of " + ", ".join(VIT_TIMM_DIM_BY_NAME))
    c, layers, heads, inter = VIT_TIMM_DIM_BY_NAME[name]
    out: dict[str, Any] = {
        "qkv_bias": True, "qk_normalization": False, "norm_type": "layer_norm", "cpe_max_size": 2048,
        "register_multiple": None, "teachers": [], "cls_token_per_teacher": False,
    }
    out.update(args)
    out.update(hidden_size=c, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=inter,
               patch_size=int(vision_config.get("patch_size", 16)), image_size=224,
               video_temporal_patch_size=int(vision_config.get("video_temporal_patch_size", 1)),
               separate_video_embedder=bool(vision_config.get("separate_video_embedder", True)))
    return out


def _cls_rows(d: Mapping[str, Any]) -> int:
    teachers = d.get("teachers") or []
    n = len({t.get("name") for t in teachers}) if d.get("cls_token_per_teacher") else 1
    multiple = d.get("register_multiple")
    return n + (int(multiple) - n % int(multiple) if multiple else 0)


def radio_tower(vision_config: Mapping[str, Any], tp: int, prefix: str = "vision_model") -> list[WeightTensor]:
    """Every tensor of RadioModel (all in the tower's dtype but ``summary_idxs``)."""
    d = radio_dims(vision_config)
    c, patch = d["hidden_size"], d["patch_size"]
    grid = -(-int(round(d["cpe_max_size"] / patch) * patch) // patch)

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.model.patch_generator.{name}", "encoder", rows, cols)

    out = [t("embedder", c, 3 * patch * patch), t("pos_embed", grid * grid, c), t("cls_token.token", _cls_rows(d), c)]
    temporal = d["video_temporal_patch_size"]
    if temporal > 1:
        if not d["separate_video_embedder"]:
            raise ModelConfigError("RADIO video_temporal_patch_size > 1 needs separate_video_embedder",
                                   hint="vLLM 0.33.0 raises NotImplementedError otherwise")
        out.append(t("video_embedder", c, 3 * temporal * patch * patch))
    vit = dict(d, image_size=patch)  # the InternViT embeddings below are dropped: RADIO has its own
    out += [w for w in intern_vit_tower(vit, tp, d["num_hidden_layers"], prefix=f"{prefix}.model")
            if ".embeddings." not in w.name]
    summary = sum(1 for x in d.get("teachers") or [] if x.get("use_summary", True))
    if summary:
        out.append(WeightTensor(f"{prefix}.summary_idxs", "buffer", summary, 1, dtype="int64"))
    return out
