"""Mixture-of-experts decoders with Llama-shaped attention.

Covers Mixtral, Qwen2-MoE, Qwen3-MoE, Phi-3.5-MoE, GLM-4.5/4.6/4.7 (Glm4Moe) and MiniMax-M2.
Each mirrors its vLLM 0.33.0 model file (vllm/model_executor/models/mixtral.py, qwen2_moe.py,
qwen3_moe.py, phimoe.py, glm4_moe.py, minimax_m2.py):

* attention as the dense family builds it (fused ``qkv_proj``, ``o_proj``, per-model biases and
  q/k norms), split over tensor parallelism;
* a router (``GateLinear``/``ReplicatedLinear``) replicated on every rank, never quantized
  by the checkpoints vLLM serves (they list it as not converted);
* the routed experts as one fused tensor pair per layer, ``w13_weight [E_local, 2·I, H]`` and
  ``w2_weight [E_local, H, I]`` (vllm/model_executor/layers/fused_moe/layer.py), laid out over
  ranks by :func:`vmemplan.laws.moe.expert_placement` — whole experts with expert
  parallelism, every expert sliced ``tp × dp × pcp`` ways without it;
* shared experts as an ordinary tensor-parallel MLP, with Qwen's sigmoid gate replicated;
* dense MLP layers where the config says (``mlp_only_layers``, ``decoder_sparse_step``,
  ``first_k_dense_replace``);
* multi-token-prediction layers (GLM) only while speculating with them.
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.units import dtype_bytes
from vmemplan.laws.moe import ExpertPlacement, eplb_state_bytes, expert_placement
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike, pad_vocab
from vmemplan.models.moe_blocks import gated_mlp_biases, gated_mlp_tensors, router_tensors

__all__ = ["MoEDecoder", "Mixtral", "Qwen2Moe", "Qwen3Moe", "PhiMoE", "Glm4Moe", "MiniMaxM2"]

#: the GraphContext fields :func:`vmemplan.laws.moe.expert_placement` takes, by the same names
_PLACEMENT_FIELDS = ("tensor_parallel_size", "data_parallel_size", "prefill_context_parallel_size",
                     "enable_expert_parallel", "enable_eplb", "num_redundant_experts")
_DENSE_MLP = ("mlp.gate_up_proj", "mlp.down_proj", "mlp.gate_up_proj.bias", "mlp.down_proj.bias")


def _int(text: Any, *keys: str, default: int = 0) -> int:
    """The first key holding a finite, non-negative whole number; ``default`` otherwise."""
    for k in keys:
        v = text.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if math.isfinite(v) and v == int(v) and 0 <= v < 1 << 40:
            return int(v)
    return default


class MoEDecoder(LlamaLike):
    """Shared machinery; subclasses say how their config names the MoE facts."""

    architectures = ()
    family = "moe"
    #: dtype of the router weight when it is not the model dtype (GLM/MiniMax: fp32)
    router_dtype: str | None = None
    #: an fp32 ``e_score_correction_bias [E]`` beside the router
    router_correction_bias = False
    #: Qwen's ``shared_expert_gate [1, H]`` (replicated)
    shared_expert_gate = False
    #: biases on the dense layers' MLP when :meth:`mlp_bias` (ERNIE-4.5, EXAONE-MoE, Bailing)
    dense_mlp_biases = False

    # -- config facts ---------------------------------------------------------------
    def num_experts(self) -> int:
        return _int(self.config.text, "num_experts", "num_local_experts", "n_routed_experts")

    def top_k(self) -> int:
        return _int(self.config.text, "num_experts_per_tok", "num_experts_per_token", "top_k", default=1)

    def expert_intermediate(self) -> int:
        return _int(self.config.text, "moe_intermediate_size", default=self.config.intermediate_size)

    def dense_intermediate(self) -> int:
        return self.config.intermediate_size

    def shared_intermediate(self) -> int:
        return 0

    def is_moe_layer(self, index: int) -> bool:
        return True

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    @property
    def intermediate_size(self) -> int:  # the activation model's per-token width
        return self.expert_intermediate() * max(1, self.top_k()) + self.shared_intermediate()

    def placement(self, ctx: GraphContext) -> ExpertPlacement:
        """The experts' layout under ``ctx``'s parallelism (its fields of the same names)."""
        return expert_placement(self.num_experts(), **{k: getattr(ctx, k) for k in _PLACEMENT_FIELDS})

    def moe_layers_on_stage(self, ctx: GraphContext) -> int:
        start, end = self.layer_range(ctx)
        return sum(1 for i in range(start, end) if self.is_moe_layer(i))

    # -- tensors --------------------------------------------------------------------
    def _expert_tensors(self, p: ExpertPlacement, experts: int, layers: int, prefix: str,
                        kind: str = "expert", inter_full: int | None = None) -> list[WeightTensor]:
        """The fused expert pair for ``experts`` experts in each of ``layers`` layers, each expert
        ``inter_full`` wide (default: :meth:`expert_intermediate`)."""
        if experts <= 0 or layers <= 0:
            return []
        h = self.config.hidden_size
        inter_full = self.expert_intermediate() if inter_full is None else inter_full
        inter = inter_full // p.moe_tp_size
        return [
            WeightTensor(f"{prefix}.w13_weight", kind, 2 * inter, h, experts * layers, True,  # type: ignore[arg-type]
                         in_features_full=h, allocations=layers, out_features_full=2 * inter_full),
            WeightTensor(f"{prefix}.w2_weight", kind, h, inter, experts * layers, True,  # type: ignore[arg-type]
                         in_features_full=inter_full, allocations=layers, out_features_full=h),
        ]

    def moe_block_tensors(self, ctx: GraphContext, m: int) -> list[WeightTensor]:
        """Router, routed experts (the logical share of the reported rank), shared experts."""
        if m == 0:
            return []
        cfg = self.config
        h = cfg.hidden_size
        tp = ctx.tensor_parallel_size
        e = self.num_experts()
        p = self.placement(ctx)
        bias = "mlp.gate.e_score_correction_bias" if self.router_correction_bias else None
        out = router_tensors("mlp.gate", e, h, m, dtype=self.router_dtype, bias=bias)
        out += self._expert_tensors(p, p.local_logical, m, "mlp.experts")
        s = self.shared_intermediate()
        if s:
            out += gated_mlp_tensors("mlp.shared_expert", s, h, m, tp)
            if self.shared_expert_gate:
                out.append(WeightTensor("mlp.shared_expert_gate", "router", 1, h, m, False))
        if ctx.enable_eplb:
            # EPLB's load statistics and its staging copy of one layer's local experts
            # (vllm/distributed/eplb/eplb_state.py::EplbState.add_model).
            out.append(WeightTensor("eplb.expert_load_window+pass", "buffer",
                                    eplb_state_bytes(m, p.global_experts) // 4, 1, dtype="int32"))
            out += self._expert_tensors(p, p.local_experts, 1, "eplb.expert_buffer", kind="buffer")
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = [t for t in super().weight_tensors(ctx) if t.name not in _DENSE_MLP]
        span = self.rank_span(ctx)
        m = self.moe_layers_on_stage(ctx)
        dense, di = span.layers - m, self.dense_intermediate()
        out += gated_mlp_tensors("mlp", di, span.hidden, dense, span.tp)
        if self.dense_mlp_biases and self.mlp_bias():
            out += gated_mlp_biases("mlp", di, span.hidden, dense, span.tp)
        out += self.moe_block_tensors(ctx, m)
        out += self.mtp_tensors(ctx)
        return out

    def mtp_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return []

    def eplb_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """The redundant experts on the reported rank: counted here, not in the weights."""
        p = self.placement(ctx)
        return self._expert_tensors(p, p.local_redundant, self.moe_layers_on_stage(ctx), "mlp.experts.redundant")

    def eplb_bytes(self, ctx: GraphContext) -> int:
        """Redundant experts at the model dtype (the planner prices ``eplb_tensors`` with the
        checkpoint's scheme instead when one applies)."""
        width = dtype_bytes(ctx.model_dtype)
        return sum(t.elements * width for t in self.eplb_tensors(ctx))

    def total_params(self) -> int:
        ctx = GraphContext(model_dtype=self.config.torch_dtype)
        return sum(t.elements for t in self.weight_tensors(ctx) if t.kind != "buffer")


@register
class Mixtral(MoEDecoder):
    """Mixtral: every layer sparse, ``num_local_experts`` experts of ``intermediate_size``,
    no biases (vllm/model_executor/models/mixtral.py)."""

    architectures = ("MixtralForCausalLM",)

    def expert_intermediate(self) -> int:
        return self.config.intermediate_size


@register
class Qwen2Moe(MoEDecoder):
    """Qwen2-MoE: q/k/v biases, a shared expert with a sigmoid gate, sparse layers every
    ``decoder_sparse_step`` except ``mlp_only_layers`` (vllm/model_executor/models/qwen2_moe.py)."""

    architectures = ("Qwen2MoeForCausalLM",)
    qkv_bias_default = True
    attn_o_bias = False
    shared_expert_gate = True

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "shared_expert_intermediate_size")

    def is_moe_layer(self, index: int) -> bool:
        text = self.config.text
        only = text.get("mlp_only_layers")
        only = only if isinstance(only, list) else []
        step = _int(text, "decoder_sparse_step", default=1) or 1
        return index not in only and self.num_experts() > 0 and (index + 1) % step == 0


@register
class Qwen3Moe(Qwen2Moe):
    """Qwen3-MoE: Qwen3 attention (q/k RMSNorm, no biases unless ``attention_bias``), no
    shared expert in the released checkpoints (vllm/model_executor/models/qwen3_moe.py)."""

    architectures = ("Qwen3MoeForCausalLM",)
    qkv_bias_default = False
    qk_norm = True


@register
class PhiMoE(MoEDecoder):
    """Phi-3.5-MoE: LayerNorm with biases, biases on qkv and o, an LM head with a bias,
    16 experts of ``intermediate_size`` (vllm/model_executor/models/phimoe.py)."""

    architectures = ("PhiMoEForCausalLM", "PhimoeForCausalLM")
    attn_qkv_bias = attn_o_bias = True

    def expert_intermediate(self) -> int:
        return self.config.intermediate_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        extra: list[WeightTensor] = []

        for t in out:
            if t.kind == "norm":  # nn.LayerNorm: a bias beside every weight
                extra.append(WeightTensor(t.name + ".bias", "bias", t.rows, t.cols, t.count))
            if t.kind == "lm_head":
                extra.append(WeightTensor("lm_head.bias", "bias",
                                          pad_vocab(self.config.vocab_size) // ctx.tensor_parallel_size, 1))
        return out + extra


@register
class Glm4Moe(MoEDecoder):
    """GLM-4.5/4.6/4.7 MoE: ``first_k_dense_replace`` dense layers, ``n_shared_experts`` shared
    experts of ``moe_intermediate_size`` each, an fp32 router with an fp32 correction bias,
    optional q/k norms, and ``num_nextn_predict_layers`` MTP layers loaded only when they
    drive speculation (vllm/model_executor/models/glm4_moe.py, glm4_moe_mtp.py)."""

    architectures = ("Glm4MoeForCausalLM",)
    router_dtype = "float32"
    router_correction_bias = True
    attn_o_bias = False

    def qkv_bias(self) -> bool:
        return bool(self.config.text.get("attention_bias", False))

    @property
    def qk_norm(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("use_qk_norm", False))

    def shared_intermediate(self) -> int:
        n = _int(self.config.text, "n_shared_experts")
        return n * self.expert_intermediate()

    def is_moe_layer(self, index: int) -> bool:
        return index >= _int(self.config.text, "first_k_dense_replace")

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        if ctx.num_speculative_tokens <= 0 or (ctx.speculative_method or "").lower() not in ("mtp", "glm4_moe_mtp"):
            return 0
        return _int(self.config.text, "num_nextn_predict_layers")

    def mtp_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """One decoder layer (attention + MoE block) per MTP layer, plus its ``eh_proj``
        ``[H, 2H]`` and three norms; it shares the target's embedding and LM head.  Held by
        the last pipeline stage (vllm/model_executor/models/glm4_moe_mtp.py)."""
        n = self.num_mtp_layers(ctx)
        if not n or ctx.pipeline_rank != ctx.pipeline_parallel_size - 1:
            return []
        cfg = self.config
        h = cfg.hidden_size
        tp = ctx.tensor_parallel_size
        hd = cfg.head_dim
        q_rows = cfg.num_attention_heads // tp * hd
        kv_rows = self.kv_heads_per_rank(tp) * hd
        out = [
            WeightTensor("mtp.eh_proj", "linear", h, 2 * h, n, False),
            WeightTensor("mtp.enorm+hnorm+shared_head.norm+layernorms", "norm", h, 1, 5 * n),
            WeightTensor("mtp.self_attn.qkv_proj", "linear", q_rows + 2 * kv_rows, h, n, True, in_features_full=h),
            WeightTensor("mtp.self_attn.o_proj", "linear", h, q_rows, n, True,
                         in_features_full=cfg.num_attention_heads * hd),
        ]
        if self.qkv_bias():
            out.append(WeightTensor("mtp.self_attn.qkv_proj.bias", "bias", q_rows + 2 * kv_rows, 1, n))
        out += self.moe_block_tensors(ctx, n)
        return out


@register
class MiniMaxM2(MoEDecoder):
    """MiniMax-M2: 256 experts of ``intermediate_size``, an fp32 router with an fp32
    correction bias, q/k RMSNorms over all heads sharded with tensor parallelism (k_norm over
    at most the KV-head count), partial rotary (vllm/model_executor/models/minimax_m2.py)."""

    architectures = ("MiniMaxM2ForCausalLM",)
    router_dtype = "float32"
    router_correction_bias = True

    def expert_intermediate(self) -> int:
        return self.config.intermediate_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        cfg = self.config
        start, end = self.layer_range(ctx)
        n = end - start
        tp = ctx.tensor_parallel_size
        rotary = cfg.text.get("rotary_dim")
        if isinstance(rotary, int) and rotary > 0:
            # the config states the rotary width directly (64 of 128)
            out = [WeightTensor(t.name, t.kind, t.rows, rotary, t.count, t.quantizable, t.dtype)
                   if t.name == "rotary_emb.cos_sin_cache" else t for t in out]
        if n and cfg.text.get("use_qk_norm", True):
            kv = cfg.num_key_value_heads
            out += [
                WeightTensor("self_attn.q_norm", "norm", cfg.num_attention_heads * cfg.head_dim // tp, 1, n),
                WeightTensor("self_attn.k_norm", "norm", kv * cfg.head_dim // min(tp, kv), 1, n),
            ]
        return out
