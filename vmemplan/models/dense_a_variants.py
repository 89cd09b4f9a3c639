"""Dense Llama-shaped decoders whose differences are more than switches.

Each class is a :class:`~vmemplan.models.dense.LlamaLike` with what its vLLM 0.33.0 model file
adds on top of Llama's graph:

* ``Glm4ForCausalLM`` (vllm/model_executor/models/glm4.py): four RMSNorms per layer
  (input, post_self_attn, post_attention, post_mlp), qkv bias from ``attention_bias``, no
  o_proj or MLP bias, and a rotary fraction that defaults to 0.5 when the config names none
  (Glm4Attention.__init__ ``rope_parameters.setdefault("partial_rotary_factor", 0.5)``).
* ``ApertusForCausalLM`` (apertus.py): a plain up_proj/down_proj MLP, per-head q/k RMSNorms,
  and per layer the xIELU activation's two parameters and two buffers, 0-d or ``[1]`` tensors
  always in bfloat16 (vllm/model_executor/layers/activation.py::XIELU.__init__).
* ``GraniteForCausalLM`` and ``GraniteSWAForCausalLM``, one class in vLLM
  (granite.py::GraniteForCausalLM with granite_layer_attn_params): Llama's graph (the
  embedding/attention/residual/logits multipliers scale activations only), plus, from the
  config, a window on the ``sliding_attention`` layers of ``layer_types``, per-layer RoPE bases
  (``layer_rope_theta``, 0 = no rotary embedding), and a per-head ``sinks`` parameter
  ``[num_heads // tp]`` when ``attention_sinks`` says so, by default whenever the config has
  ``layer_types``.  get_rope caches one module per distinct argument set, so the model holds
  one cos/sin cache per distinct non-zero base.
* ``MiniCPMForCausalLM`` (minicpm.py): Llama without biases and ``head_dim = hidden //
  heads``; with ``num_experts`` > 0 the MLP is MiniCPMMoE, every expert sharded over all TP
  ranks: ``ws`` [E, 2·I/tp, H], ``w2s`` [E, H, I/tp] and a replicated GateLinear router [E, H].
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.dense_blocks import rope_cache_per_base

__all__ = ["Apertus", "Glm4", "GraniteSWA", "MiniCPM"]


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@register
class Glm4(LlamaLike):
    """GLM-4-0414 (vllm/model_executor/models/glm4.py::Glm4ForCausalLM, 0.33.0)."""

    architectures = ("Glm4ForCausalLM",)
    norms_per_layer = 4
    attn_o_bias = False
    mlp_has_bias = False  # Glm4MLP is LlamaMLP built without its bias argument
    default_rotary_fraction = 0.5

    def _has_rotary_fraction(self) -> bool:
        text = self.config.text
        if any(_num(text.get(k)) for k in ("partial_rotary_factor", "rotary_pct", "rotary_emb_fraction")):
            return True
        rs = self.config.rope_scaling() or {}
        return _num(rs.get("partial_rotary_factor"))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if self._has_rotary_fraction():
            return out
        fixed = []
        for t in out:
            if t.name == "rotary_emb.cos_sin_cache":
                t = WeightTensor(t.name, t.kind, t.rows, int(self.config.head_dim * self.default_rotary_fraction),
                                 t.count, t.quantizable, t.dtype)
            fixed.append(t)
        return fixed


@register
class Apertus(LlamaLike):
    """Apertus (vllm/model_executor/models/apertus.py::ApertusForCausalLM, 0.33.0)."""

    architectures = ("ApertusForCausalLM",)
    mlp_kind = "plain"
    qk_norm = True

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        start, end = self.layer_range(ctx)
        if end > start:
            # XIELU: alpha_p [1], alpha_n [1] (parameters), beta [], eps [] (buffers), bfloat16
            out.append(WeightTensor("mlp.act_fn.alpha_p/alpha_n/beta/eps", "buffer", 1, 1, 4 * (end - start),
                                    dtype="bfloat16"))
        return out


@register
class GraniteSWA(LlamaLike):
    """Granite, with sliding-window layers, sinks and per-layer RoPE bases where the config has
    them (vllm/model_executor/models/granite.py::GraniteForCausalLM, which registry.py maps
    both architectures to, 0.33.0).  A layer without its own window takes the model-level one
    as any Attention layer does (LlamaLike.sliding_window_for_layer)."""

    architectures = ("GraniteForCausalLM", "GraniteSWAForCausalLM")

    def _layer_types(self) -> list[str] | None:
        types = self.config.text.get("layer_types")
        return [str(t) for t in types] if isinstance(types, list) and types else None

    def has_sinks(self) -> bool:
        """granite_layer_attn_params: ``attention_sinks``, else whether ``layer_types`` is set."""
        text = self.config.text
        if text.get("attention_sinks") is not None:
            return bool(text["attention_sinks"])
        return self._layer_types() is not None

    def layer_rope_theta(self, index: int) -> float:
        text = self.config.text
        per_layer = text.get("layer_rope_theta")
        if isinstance(per_layer, list) and index < len(per_layer) and _num(per_layer[index]):
            return float(per_layer[index])
        rs = self.config.rope_scaling() or {}
        theta = rs.get("rope_theta", text.get("rope_theta", 10000.0))
        return float(theta) if _num(theta) else 10000.0

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        start, end = self.layer_range(ctx)
        n = end - start
        out = rope_cache_per_base(super().weight_tensors(ctx), (self.layer_rope_theta(i) for i in range(start, end)))
        if n and self.has_sinks():
            out.append(WeightTensor("self_attn.sinks", "norm",
                                    self.config.num_attention_heads // ctx.tensor_parallel_size, 1, n))
        return out


@register
class MiniCPM(LlamaLike):
    """MiniCPM 1/2/4 (vllm/model_executor/models/minicpm.py::MiniCPMForCausalLM, 0.33.0)."""

    architectures = ("MiniCPMForCausalLM",)
    attn_qkv_bias = False
    attn_o_bias = False
    mlp_has_bias = False

    def num_experts(self) -> int:
        e = self.config.text.get("num_experts") or 0
        return int(e) if isinstance(e, int) and not isinstance(e, bool) else 0

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        experts = self.num_experts()
        start, end = self.layer_range(ctx)
        n = end - start
        if not experts or not n:
            return out
        cfg = self.config
        h, tp = cfg.hidden_size, ctx.tensor_parallel_size
        inter = cfg.intermediate_size // tp
        out = [t for t in out if t.name not in ("mlp.gate_up_proj", "mlp.down_proj")]
        out += [
            WeightTensor("mlp.gate", "linear", experts, h, n),
            WeightTensor("mlp.ws", "linear", 2 * inter, h, experts * n, allocations=n,
                         in_features_full=h, out_features_full=2 * cfg.intermediate_size),
            WeightTensor("mlp.w2s", "linear", h, inter, experts * n, allocations=n,
                         in_features_full=cfg.intermediate_size, out_features_full=h),
        ]
        return out
