"""MiniCPM-V (``MiniCPMV``): a SigLIP/Idefics2 vision tower and a perceiver resampler in front of
the language model the checkpoint's ``version`` selects.

vllm/model_executor/models/minicpmv.py (0.33.0): ``MiniCPMV.__new__`` dispatches on
``config.version`` (absent: 2.5, or 2.0 for the 2304-wide / 64-query checkpoint):

============  ======================  ===================================================
version       language model (llm.)   resampler
============  ======================  ===================================================
2.5           LlamaForCausalLM        Resampler2_5
2.6           Qwen2ForCausalLM        Resampler2_5
4.0           LlamaForCausalLM        Resampler2_5
4.5           Qwen3ForCausalLM        Resampler4_5 (adds a temporal position table)
============  ======================  ===================================================

The config is flat: the language model's fields sit at the top level (the checkpoint's
MiniCPMVConfig subclasses the text model's config).  2.0 (MiniCPMForCausalLM with a timm
tower) is not planned.  The tower (``vpm``) and the resampler are built when images or
video are allowed (``_mark_tower_model(vllm_config, {"image", "video"})``).

Remote code: checked with ``bench/oracle/remote_code_standins.py minicpmv``; the KV pool is exact and
the weights differ by the resampler's ``pos_embed`` alone (built on the host, moved to the GPU after
loading, which the construction-time oracle does not see).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, adapter_class, register
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _vision, siglip_tower

__all__ = ["MiniCPMV", "minicpmv_resampler", "minicpmv_version"]

_LM_BY_VERSION = {(2, 5): "LlamaForCausalLM", (2, 6): "Qwen2ForCausalLM", (4, 0): "LlamaForCausalLM",
                  (4, 5): "Qwen3ForCausalLM"}
#: Resampler2_5's 2-D sin-cos table (``max_size``) and Resampler4_5's temporal table rows
_POS_GRID = (70, 70)
_TEMPORAL_ROWS = 36000


def minicpmv_version(raw: Any) -> tuple[int, ...]:
    """minicpmv.py::get_version_by_config (0.33.0)."""
    v = raw.get("version")
    if v is None:
        return (2, 0) if raw.get("hidden_size") == 2304 and raw.get("query_num") == 64 else (2, 5)
    return tuple(int(x) for x in str(v).split("."))


def minicpmv_resampler(embed: int, kv_dim: int, queries: int, version: tuple[int, ...]) -> list[WeightTensor]:
    """resampler.py::BaseResampler + minicpmv.py::Resampler2_5 / Resampler4_5 (0.33.0), replicated:
    ``query`` [Q, e]; ``kv_proj`` [e, kv] (no bias) when the tower width differs; an
    ``nn.MultiheadAttention(e)`` (in_proj [3e, e] + bias, out_proj [e, e] + bias); LayerNorms
    ``ln_q``/``ln_kv``/``ln_post``; ``proj`` [e, e].  Buffers: the 2-D sin-cos table
    ``pos_embed`` [70, 70, e] (and for 4.5 ``temporal_pos_embed`` [36000, e]), built on the host
    in fp32, cast to the model dtype with the module (``resampler.to(dtype)``) and moved to the
    GPU after loading (``_ensure_resampler_device``)."""
    e = embed

    def t(name: str, rows: int, cols: int = 1, count: int = 1, kind: str = "encoder") -> WeightTensor:
        return WeightTensor(f"resampler.{name}", kind, rows, cols, count)

    out = [t("query", queries, e)]
    if kv_dim != e:
        out.append(t("kv_proj", e, kv_dim))
    out += [
        t("attn.in_proj_weight", 3 * e, e), t("attn.in_proj_bias", 3 * e),
        t("attn.out_proj", e, e), t("attn.out_proj.bias", e),
        t("ln_q+ln_kv+ln_post", e, 1, 6),
        t("proj", e, e),
        t("pos_embed", _POS_GRID[0] * _POS_GRID[1], e, kind="buffer"),
    ]
    if version >= (4, 5):
        out.append(t("temporal_pos_embed", _TEMPORAL_ROWS, e, kind="buffer"))
    return out


class _MiniCPMVTower(VisionEncoderMixin):
    modalities = ("image", "video")
    supports_encoder_tp_data = True  # declared by vLLM's model class (minicpmv.py, 0.33.0)

    def version(self) -> tuple[int, ...]:
        return minicpmv_version(self.config.raw)  # type: ignore[attr-defined]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """``vpm`` = idefics2_vision_model.py::Idefics2VisionTransformer (the SigLIP shape: conv
        patch embed with bias, ``(image_size / patch)²`` positions, biased qkv/out/fc1/fc2, two
        LayerNorms a layer, post-LayerNorm), its last layer dropped under
        ``drop_vision_last_layer``; split over TP unless ``--mm-encoder-tp-mode data``
        (``supports_encoder_tp_data``).  Then the resampler."""
        vc = _vision(config)
        tp = 1 if ctx.mm_encoder_tp_mode == "data" else ctx.tensor_parallel_size
        layers = _need(vc, "num_hidden_layers") - (1 if bool(config.raw.get("drop_vision_last_layer", True)) else 0)
        tower = siglip_tower({"num_channels": 3, **vc}, tp, layers, post_norm=True)
        tower = [WeightTensor(t.name.replace("vision_tower.vision_model.", "vpm."), t.kind, t.rows, t.cols, t.count)
                 for t in tower]
        queries = int(config.raw.get("query_num", 64))
        return tower + minicpmv_resampler(config.hidden_size, _need(vc, "hidden_size"), queries, self.version())

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The largest image: ``image_size × (image_size · max_slice_num)`` sliced into a 1 × 9
        grid plus the source image, ``query_num`` tokens each
        (MiniCPMVProcessingInfo.get_image_size_with_most_features / get_num_image_tokens,
        ``max_slice_num`` 9 unless the config sets it).  Video is not priced here."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        slices = int(config.raw.get("max_slice_num", 9))
        return {"image": (slices + 1) * int(config.raw.get("query_num", 64))}

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc]

    def notes(self) -> tuple[str, ...]:
        return super().notes() + ("MiniCPM-V's resampler pos_embed table (70 × 70 × hidden, model dtype; and for 4.5 "  # type: ignore[misc]
                                  "the 36,000-row temporal table) is built on the host and moved to the GPU after "
                                  "loading: counted in the weights",)


_COMBINED: dict[type, type] = {}


@register
class MiniCPMV(_MiniCPMVTower, Adapter):
    """``MiniCPMV``: the version's language model (prefix ``llm``) + ``vpm`` + ``resampler``."""

    architectures = ("MiniCPMV",)

    def __new__(cls, config: Any) -> Any:
        version = minicpmv_version(config.raw)
        arch = _LM_BY_VERSION.get(version[:2])
        lm = adapter_class(arch) if arch else None
        if lm is None:
            raise ModelConfigError(f"MiniCPMV version {'.'.join(map(str, version))} is not planned",
                                   hint="vmemplan plans MiniCPM-V 2.5, 2.6, 4.0 and 4.5 (vLLM 0.33.0 minicpmv.py)")
        if lm not in _COMBINED:
            _COMBINED[lm] = type(f"MiniCPMV[{lm.__name__}]", (_MiniCPMVTower, lm), {"family": lm.family})
        return _COMBINED[lm](config)
