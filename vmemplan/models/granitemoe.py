"""Granite MoE with a shared MLP, and its sliding-window variant.

``GraniteMoeSharedForCausalLM`` and ``GraniteMoeSWAForCausalLM`` both map to
vllm/model_executor/models/granitemoeshared.py::GraniteMoeSharedForCausalLM (0.33.0):

* attention as granitemoe.py::GraniteMoeAttention builds it: fused ``qkv_proj`` and ``o_proj``
  without biases, ``head_dim = hidden_size // num_attention_heads`` (a config ``head_dim`` is not
  read), and, per layer, the window / RoPE base / sink that granite.py::granite_layer_attn_params
  resolves: a ``sliding_attention`` entry of ``layer_types`` gets ``sliding_window``,
  ``layer_rope_theta[i]`` overrides the RoPE base (0 = no rotary embedding on that layer), and
  a per-head ``sinks`` parameter ``[num_heads // tp]`` exists when ``attention_sinks`` says so,
  by default whenever the config has ``layer_types``;
* the routed experts of granitemoe.py::GraniteMoeMoE (``num_local_experts`` of
  ``intermediate_size``, a GateLinear router), as Mixtral;
* ``shared_mlp`` (GraniteMoeSharedMLP): ``input_linear`` [2·S, H] (MergedColumnParallelLinear)
  and ``output_linear`` [H, S] (RowParallelLinear), with ``S = shared_intermediate_size``,
  absent when it is 0.

get_rope caches one rotary module per distinct set of arguments, so the model holds one
cos/sin cache per distinct non-zero RoPE base.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.moe import Mixtral, _int

__all__ = ["GraniteMoeShared"]


@register
class GraniteMoeShared(Mixtral):
    """GraniteMoeShared / GraniteMoeSWA (vllm/model_executor/models/granitemoeshared.py)."""

    architectures = ("GraniteMoeSharedForCausalLM", "GraniteMoeSWAForCausalLM")

    def _layer_types(self) -> list[str] | None:
        types = self.config.text.get("layer_types")
        return [str(t) for t in types] if isinstance(types, list) and types else None

    def _has_sinks(self) -> bool:
        """granite.py::granite_layer_attn_params: ``attention_sinks``, else whether the config
        has ``layer_types``."""
        text = self.config.text
        if "attention_sinks" in text and text["attention_sinks"] is not None:
            return bool(text["attention_sinks"])
        return self._layer_types() is not None

    def _layer_rope_theta(self, index: int) -> float:
        text = self.config.text
        per_layer = text.get("layer_rope_theta")
        if isinstance(per_layer, list) and index < len(per_layer) and isinstance(per_layer[index], (int, float)):
            return float(per_layer[index])
        rs = self.config.rope_scaling() or {}
        theta = rs.get("rope_theta", text.get("rope_theta", 10000.0))
        return float(theta) if isinstance(theta, (int, float)) else 10000.0

    def sliding_window_for_layer(self, index: int) -> int | None:
        types = self._layer_types()
        if types is None:
            return None  # granite_layer_attn_params: no layer_types, no window
        if index < len(types) and types[index] == "sliding_attention":
            w = self.config.text.get("sliding_window")
            return int(w) if isinstance(w, int) and not isinstance(w, bool) and w > 0 else None
        return None

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        cfg = self.config
        h = cfg.hidden_size
        tp = ctx.tensor_parallel_size
        start, end = self.layer_range(ctx)
        n = end - start
        # one rotary cache per distinct non-zero RoPE base among this stage's layers
        rope = [t for t in out if t.name == "rotary_emb.cos_sin_cache"]
        out = [t for t in out if t.name != "rotary_emb.cos_sin_cache"]
        if rope and n:
            bases = {self._layer_rope_theta(i) for i in range(start, end)} - {0.0}
            if bases:
                r = rope[0]
                out.append(WeightTensor(r.name, r.kind, r.rows, r.cols, len(bases), r.quantizable, r.dtype))
        s = _int(cfg.text, "shared_intermediate_size")
        if n and s:
            out += [
                WeightTensor("shared_mlp.input_linear", "linear", 2 * s // tp, h, n, True,
                             in_features_full=h, out_features_full=2 * s),
                WeightTensor("shared_mlp.output_linear", "linear", h, s // tp, n, True,
                             in_features_full=s, out_features_full=h),
            ]
        if n and self._has_sinks():
            out.append(WeightTensor("self_attn.sinks", "norm", cfg.num_attention_heads // tp, 1, n))
        return out
