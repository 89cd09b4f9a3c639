"""DomynEdge (``DomynEdgeForCausalLM``): RoPE and NoPE layers with their own head sizes and
windows, sandwich norms, and an fp32 rotary cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.sliding import cache_config_sliding_window
from vmemplan.models.windowed import _attention_spec, _int, _kv_heads, _WindowedBase

__all__ = ["DomynEdge", "domyn_layers"]


def domyn_layers(text: Mapping[str, Any]) -> list[tuple[str, int, int | None]]:
    """Per layer ``(position type, head size, vLLM window)``.

    Head size: ``per_layer_config[i].head_dim`` (what vllm/model_executor/models/domyn_edge.py
    reads: transformers' heterogeneous ``per_layer_config`` maps a layer index to its overrides,
    the layers it leaves out take ``head_dim``), else ``head_sizes[i]``, else ``head_dim``.  Position: ``position_layers[i]``
    ("rope" / "nope", default "rope").  Window: ``window_sizes[i][0] + 1`` when positive (the
    HF window ``(w, 0)`` attends to ``w + 1`` keys), else None."""
    n = _int(text, "num_hidden_layers")
    per = text.get("per_layer_config")
    sizes = text.get("head_sizes")
    pos = text.get("position_layers")
    wins = text.get("window_sizes")
    default_hd = text.get("head_dim")
    out = []
    for i in range(n):
        hd: Any = None
        if isinstance(per, Mapping):
            # transformers' heterogeneous per_layer_config: overrides of the layers that differ
            # (integrations/heterogeneity/configuration_utils.py); the others take head_dim
            over = per.get(str(i), per.get(i))  # type: ignore[call-overload]
            hd = over.get("head_dim") if isinstance(over, Mapping) else None
            if hd is None:
                hd = default_hd
        elif isinstance(per, list) and i < len(per) and isinstance(per[i], Mapping):
            hd = per[i].get("head_dim")
        if hd is None and isinstance(sizes, list) and i < len(sizes):
            hd = sizes[i]
        if hd is None:
            hd = default_hd
        if isinstance(hd, bool) or not isinstance(hd, int) or hd <= 0:
            raise UsageError(f"config.json gives no head size for layer {i}",
                             hint="DomynEdge needs per_layer_config[i].head_dim (or head_sizes)")
        p = str(pos[i]) if isinstance(pos, list) and i < len(pos) else "rope"
        w = None
        if isinstance(wins, list) and i < len(wins):
            entry = wins[i]
            first = entry[0] if isinstance(entry, (list, tuple)) and entry else entry
            if isinstance(first, int) and not isinstance(first, bool) and first > 0:
                w = first + 1
        out.append((p, hd, w))
    return out


@register
class DomynEdge(_WindowedBase):
    """DomynEdge (vllm/model_executor/models/domyn_edge.py, 0.33.0).

    ``DomynEdgeModel`` is a ``Qwen2Model``: the embedding on the first stage (and a tied last
    one), the final norm on the last.  Per layer ``DomynEdgeAttention`` with its own head
    size: ``qkv_proj`` (no bias), ``o_proj``, ``q_norm`` without a weight
    (``has_weight=False``: its ``ones(head_dim)`` is a plain device tensor), ``k_norm [head_dim]``; ``Qwen2MLP`` (gated SiLU) as
    ``feedforward``; four RMSNorms (pre/post attention, pre/post feedforward).  RoPE layers
    share one ``get_rope(head_dim, max_position_embeddings, dtype=torch.float)`` cache in
    fp32; NoPE layers have none.  Window layers ``SlidingWindowSpec(w + 1)``, others full
    attention, each with its layer's head size.  The LM head is the embedding when tied.
    """

    architectures = ("DomynEdgeForCausalLM",)
    modules_on_every_stage = False
    reads_max_model_len = False

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        h = cfg.hidden_size
        start, end = self.layer_range(ctx)
        layers = domyn_layers(text)[start:end]
        out = self._embedding_and_head(ctx, tied=bool(text.get("tie_word_embeddings", True)))
        for hd in sorted({hd for _, hd, _ in layers}):
            n = sum(1 for _, d, _ in layers if d == hd)
            out += self._attn_tensors(ctx, name=f"attention[hd={hd}]", num_heads=cfg.num_attention_heads,
                                      num_kv_heads=cfg.num_key_value_heads, head_dim=hd, count=n)
            out.append(WeightTensor(f"attention[hd={hd}].k_norm", "norm", hd, 1, n))
            # RMSNorm(has_weight=False) still holds ``torch.ones(head_dim)`` in the model dtype, a
            # plain tensor on the device (vllm/model_executor/layers/layernorm.py::RMSNorm)
            out.append(WeightTensor(f"attention[hd={hd}].q_norm.weight(ones, not a parameter)", "norm", hd, 1, n))
        n = len(layers)
        out += self._mlp_tensors(ctx, name="feedforward", intermediate=cfg.intermediate_size, count=n)
        if n:
            out += [
                WeightTensor("pre/post_attention_norm+pre/post_feedforward_norm", "norm", h, 1, 4 * n),
                attention_scales("attention.attn", n),
            ]
        rope_dims = sorted({hd for p, hd, _ in layers if p == "rope"})
        rope = text.get("rope_parameters")
        partial = rope.get("partial_rotary_factor", 1.0) if isinstance(rope, Mapping) else 1.0
        positions = _int(text, "max_position_embeddings", 4096 * 32)
        for hd in rope_dims:
            out.append(WeightTensor(f"rotary_emb[hd={hd}].cos_sin_cache", "buffer", positions,
                                    int(hd * partial), dtype="float32"))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        model_window = cache_config_sliding_window(cfg.text, cfg.num_hidden_layers)
        start, end = self.layer_range(ctx)
        layers = domyn_layers(cfg.text)
        return {f"model.layers.{i}.attention.attn": _attention_spec(
                    ctx, num_kv_heads=heads, head_size=layers[i][1],
                    window=layers[i][2] if layers[i][2] is not None else model_window)
                for i in range(start, end)}

    def notes(self) -> tuple[str, ...]:
        layers = domyn_layers(self.config.text)
        w = [x for _, _, x in layers if x is not None]
        sizes = sorted({hd for _, hd, _ in layers})
        note = f"per-layer head sizes {sizes}"
        if w:
            note += f"; {len(w)} of {len(layers)} layers use a {w[0]}-token sliding window"
        return (note,)
