"""Flint (``FlintForCausalLM``): a Qwen3-MoE-shaped decoder with a shared expert, sliding and
full attention layers, a learned fp32 sink logit per head and an fp32 rotary table.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.moe import Qwen2Moe

__all__ = ["Flint"]


@register
class Flint(Qwen2Moe):
    """vllm/models/flint/model.py::FlintForCausalLM (0.33.0), with vLLM's stock layers (the
    Flint kernels of ``_flint_kernels`` serve only a single SM100 GPU).

    ``FlintAttention``: QKVParallel ``qkv_proj`` (bias from ``attention_bias``), RowParallel
    ``o_proj`` without bias, per-head ``q_norm``/``k_norm [head_dim]``, a ``softmax_offset``
    sink ``[heads/tp]`` in fp32 (``make_attention_sink(num_heads, torch.float32)``, handed to
    ``Attention`` as ``sinks``), and the window ``sliding_window`` on the layers ``layer_types``
    calls ``sliding_attention`` (FlintConfig drops it when ``use_sliding_window`` is false).
    Layers in ``no_rope_layer_indices`` build no rotary embedding; the others share one
    ``get_rope(..., dtype=torch.float32)`` table ``[max_position_embeddings, head_dim]`` in
    fp32.  ``FlintSparseMoeBlock``: a ``GateLinear`` router ``[num_experts, hidden]``, a
    ``FlintMLP`` ``shared_expert`` (``shared_expert_intermediate_size``, no gate) and
    ``FusedMoE`` experts; ``mlp_only_layers`` get a dense ``FlintMLP`` (``intermediate_size``).
    Untied ``ParallelLMHead`` (FlintConfig defaults ``tie_word_embeddings`` false).
    """

    architectures = ("FlintForCausalLM",)
    qkv_bias_default = False
    qk_norm = True
    shared_expert_gate = False

    def qkv_bias(self) -> bool:
        return bool(self.config.text.get("attention_bias", False))

    def is_moe_layer(self, index: int) -> bool:
        only = self.config.text.get("mlp_only_layers")
        return index not in (only if isinstance(only, list) else []) and self.num_experts() > 0

    def sliding_window_for_layer(self, index: int) -> int | None:
        text = self.config.text
        if text.get("use_sliding_window", True) is False:
            return None
        types = text.get("layer_types")
        window = text.get("sliding_window", 513)
        if isinstance(types, list) and index < len(types) and types[index] == "sliding_attention":
            return window if isinstance(window, int) and window > 0 else None
        return None

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = []
        start, end = self.layer_range(ctx)
        for t in super().weight_tensors(ctx):
            if t.name == "rotary_emb.cos_sin_cache":
                no_rope = self.config.text.get("no_rope_layer_indices") or []
                if any(i not in no_rope for i in range(start, end)):  # fp32 table, shared by every rope layer
                    out.append(WeightTensor(t.name, "buffer", t.rows, t.cols, dtype="float32"))
                continue
            out.append(t)
        if end > start:
            heads = self.config.num_attention_heads // ctx.tensor_parallel_size
            out.append(WeightTensor("self_attn.softmax_offset", "norm", heads, 1, end - start, dtype="float32"))
        return out
