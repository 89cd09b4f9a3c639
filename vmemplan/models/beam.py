"""Beam (``BeamForCausalLM``): a sparse-MoE decoder with sliding-window RoPE layers and NoPE
full-attention layers, per-head q/k norms, a sigmoid output gate and sandwich norms.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.deepseek import moe_expert_tensors
from vmemplan.models.windowed import _int, _kv_heads, _rope_positions, _WindowedBase

__all__ = ["Beam"]


@register
class Beam(_WindowedBase):
    """vllm/models/beam/nvidia/model.py::BeamForCausalLM (0.33.0).

    Attention (``attention.py::BeamAttention``): when ``num_key_value_heads >= tp``
    (``use_merged_qkv_gate``) one MergedColumnParallel ``qkv_gate_proj`` ``[q, k, v, gate]``,
    else a QKVParallel ``qkv_proj`` plus a ColumnParallel ``output_gate_proj``; RowParallel
    ``o_proj``; ``q_norm``/``k_norm`` ``[head_dim]``; a ``gate_bias`` ``[heads / tp]``; the
    Attention's four fp32 scales.  Sliding layers (``layer_types``; BeamConfig's default: all)
    get a window of ``sliding_window`` and an fp32 rotary cache (``get_rope(dtype=float32)``);
    full layers are NoPE.  Head size ``head_dim or hidden_size // heads``.

    Per layer four RMSNorms; the MLP is a dense SwiGLU (``mlp_layer_types[i] == "dense"``) or
    ``BeamSparseMoeBlock``: an fp32 ``GateLinear`` ``[experts, h]`` with an fp32
    ``e_score_correction_bias``, and the fused routed experts.  Vocab-parallel embedding,
    final norm, untied ``lm_head`` (vLLM refuses a tied one).  With FlashInfer on 2/4/8 GPUs
    vLLM may add a ``BeamAllReduceWorkspace`` (multicast buffers), not counted here.
    """

    architectures = ("BeamForCausalLM",)
    modules_on_every_stage = False

    def _head_dim(self) -> int:
        cfg = self.config
        hd = cfg.text.get("head_dim")
        return int(hd) if isinstance(hd, int) and hd > 0 else cfg.hidden_size // cfg.num_attention_heads

    def layer_types(self) -> list[str]:
        n = self.config.num_hidden_layers
        lt = self.config.text.get("layer_types")
        return [str(x) for x in lt] if isinstance(lt, list) and len(lt) == n else ["sliding_attention"] * n

    def _dense(self, index: int) -> bool:
        kinds = self.config.text.get("mlp_layer_types")
        return isinstance(kinds, list) and index < len(kinds) and kinds[index] == "dense"

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        if self.config.text.get("tie_word_embeddings"):
            raise UsageError("vLLM's Beam requires tie_word_embeddings=False", hint="check the config")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        span = self.rank_span(ctx)
        tp, h, start, end, n = span.tp, span.hidden, span.start, span.end, span.layers
        hd = self._head_dim()
        heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads
        q_local = heads // tp * hd
        kv_local = _kv_heads(kv, tp) * hd
        # embed_tokens on the first stage, the final norm and the untied lm_head on the last
        out = self._embedding_and_head(ctx, tied=False)
        if n:
            if kv >= tp:  # use_merged_qkv_gate: q, k, v and gate split evenly by TP
                out.append(WeightTensor("self_attn.qkv_gate_proj", "linear", (2 * heads + 2 * kv) * hd // tp, h, n,
                                        True, in_features_full=h))
            else:
                out += [WeightTensor("self_attn.qkv_proj", "linear", q_local + 2 * kv_local, h, n, True,
                                     in_features_full=h),
                        WeightTensor("self_attn.output_gate_proj", "linear", q_local, h, n, True,
                                     in_features_full=h)]
            out += [
                WeightTensor("self_attn.o_proj", "linear", h, q_local, n, True, in_features_full=heads * hd),
                WeightTensor("self_attn.q_norm+k_norm", "norm", hd, 1, 2 * n),
                WeightTensor("self_attn.gate_bias", "norm", heads // tp, 1, n),
                attention_scales("self_attn.attn", n),
                WeightTensor("4 RMSNorms", "norm", h, 1, 4 * n),
            ]
            types = self.layer_types()
            if any(types[i] == "sliding_attention" for i in range(start, end)):
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                                        _rope_positions(text, cfg.rope_scaling(), cfg.max_position_embeddings), hd,
                                        dtype="float32"))
            dense = sum(1 for i in range(start, end) if self._dense(i))
            moe = n - dense
            if dense:
                inter = cfg.intermediate_size
                out += self._mlp_tensors(ctx, name="mlp", intermediate=inter, count=dense)
            if moe:
                experts = _int(text, "num_experts")
                out += [
                    WeightTensor("mlp.gate", "router", experts, h, moe, dtype="float32"),
                    WeightTensor("mlp.gate.e_score_correction_bias", "router", experts, 1, moe, dtype="float32"),
                ]
                out += moe_expert_tensors("mlp.experts", num_experts=experts, hidden=h,
                                          inter=_int(text, "moe_intermediate_size"), num_layers=moe, ctx=ctx)
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        w = cfg.text.get("sliding_window")
        window = int(w) if isinstance(w, int) and w > 0 else None
        return self._window_specs(ctx, self.layer_types(), window=window,
                                  shape=lambda i: (self._head_dim(), cfg.num_key_value_heads))

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        return (f"{types.count('sliding_attention')} sliding-window (RoPE) and {types.count('full_attention')} "
                "full-attention (NoPE) layers",)
