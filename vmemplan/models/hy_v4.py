"""HY V4 (``HYV4ForCausalLM``): sparse MLA with a lightning indexer on the ``full`` indexer layers
(``shared`` layers reuse the previous one's top-k), an optional output gate, learnable sink and
iHC hyper-connections, a dense first layer and sigmoid-routed MoE with shared experts.
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.deepseek import DeepseekV32
from vmemplan.models.moe_blocks import router_tensors, stage_embedding, stage_head

__all__ = ["HYV4"]

#: vllm/models/hy_v4/nvidia/attention.py::_SPARSE_LAYER_TYPES (0.33.0)
_SPARSE_LAYER_TYPES = ("sparse_attention", "sparse", "indexed_attention")


@register
class HYV4(DeepseekV32):
    """vllm/models/hy_v4/nvidia/model.py::HYV4ForCausalLM (0.33.0).

    Attention (``attention.py::HYV4MLAAttention``) is DeepSeek's MLA: ``fused_qkv_a_proj``
    (replicated, ``q_lora_rank + kv_lora_rank + qk_rope_head_dim`` rows), ``q_a_layernorm``,
    ColumnParallel ``q_b_proj`` and ``kv_b_proj``, RowParallel ``o_proj``.  A layer is sparse
    when ``layer_types[i]`` is one of the sparse types and the config has ``index_topk``; a
    sparse layer builds an ``Indexer`` (replicated ``wq_b``, unquantized ``wk_weights_proj``,
    fp32 LayerNorm ``k_norm``, a 132-byte K cache) unless ``compute_skip_topk_layers`` marks it
    shared (``indexer_types[i] == "shared"``, else DeepSeek's freq/pattern rule).  With
    ``gated_mla`` a ColumnParallel ``linear_gate`` (one or ``v_head_dim`` outputs per head);
    with ``learnable_sink`` a per-local-head fp32 sink.  The rotary cache is a plain
    ``get_rope`` one: ``[max_position_embeddings, qk_rope_head_dim]`` in the model dtype
    (the indexer's rope is the same cached instance).

    MLP (``moe.py``): layer ``i`` is dense when ``mlp_layer_types[i] == "dense"``
    (``gate_up_proj``/``down_proj`` of ``intermediate_size``), else ``HYV4MoEFused``: an fp32
    ``GateLinear`` router ``[experts, h]``, an fp32 ``expert_bias`` ``[experts]``, shared experts
    of ``moe_intermediate_size × n_shared_experts`` and the fused routed experts.  With
    ``enable_ihc`` each layer has two ``HYV4HCPreLayer`` (fp32 ``hc_fn`` ``[2·hc, hc·h]``,
    ``hc_scale`` ``[2]``, ``hc_base`` ``[2·hc]``) and the last stage an ``HYV4HCHeadLayer``.
    The model keeps a ``topk_indices_buffer`` ``[max_num_batched_tokens, index_topk]`` int32.
    """

    architectures = ("HYV4ForCausalLM",)

    def _sparse(self, layer_id: int) -> bool:
        text = self.config.text
        types = text.get("layer_types")
        return ("index_topk" in text and isinstance(types, list) and layer_id < len(types)
                and types[layer_id] in _SPARSE_LAYER_TYPES)

    def _skip_topk(self) -> set[int]:
        """attention.py::compute_skip_topk_layers."""
        text = self.config.text
        n = self.config.num_hidden_layers
        kinds = text.get("indexer_types")
        if isinstance(kinds, list):
            if len(kinds) != n or set(kinds) - {"full", "shared"}:
                raise UsageError("config.json: indexer_types must list 'full' or 'shared' for every layer",
                                 hint="vLLM's HY V4 refuses other values")
            return {i for i, k in enumerate(kinds) if k == "shared"}
        return {i for i in range(n) if not DeepseekV32.has_indexer(self, i)}

    def has_indexer(self, layer_id: int) -> bool:
        if layer_id >= self.config.num_hidden_layers:  # an MTP layer always builds one
            return self._sparse(layer_id) or "index_topk" in self.config.text
        return self._sparse(layer_id) and layer_id not in self._skip_topk()

    def is_moe_layer(self, index: int) -> bool:
        kinds = self.config.text.get("mlp_layer_types")
        if isinstance(kinds, list) and index < len(kinds):
            return kinds[index] != "dense"
        return True

    def _flag(self, key: str) -> bool:
        """enable_ihc / gated_mla / learnable_sink: vLLM parses ``hy_v4`` with its own config
        class (vllm/transformers_utils/configs/hy_v4.py::HYV4Config), whose defaults are True."""
        return bool(self.config.text.get(key, True))

    def _ihc(self) -> int:
        return int(self.config.text.get("hc_mult", 4)) if self._flag("enable_ihc") else 0

    def gate_tensors(self, experts: int, moe: int) -> list[WeightTensor]:
        """HYV4MoEFused: an fp32 GateLinear router and an fp32 ``expert_bias``."""
        return router_tensors("mlp.gate", experts, self.config.hidden_size, moe, dtype="float32",
                              bias="mlp.expert_bias")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        span = self.rank_span(ctx)
        h, n, start, end = span.hidden, span.layers, span.start, span.end
        tied = bool(text.get("tie_word_embeddings", False))
        heads_local = self.config.num_attention_heads // span.tp
        out = stage_embedding(span, tied=tied)
        if n:
            moe = sum(1 for i in range(start, end) if self.is_moe_layer(i))
            indexers = sum(1 for i in range(start, end) if self.has_indexer(i))
            out += self.attention_tensors(n, ctx)
            if indexers:
                out += self.extra_layer_tensors(indexers, ctx)
            out += self.mlp_tensors(n - moe, moe, ctx)
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            # (attention_tensors holds the W_UK_T / W_UV decode copies of kv_b_proj and the four fp32
            # scales of each layer: models/mla_common.py::mla_decode_copies)
            if self._flag("gated_mla"):
                per_head = 1 if text.get("gating_type", "elementwise") == "headwise" else self.v_head_dim
                out.append(WeightTensor("self_attn.linear_gate", "linear", heads_local * per_head, h, n, True,
                                        in_features_full=h))
            if self._flag("learnable_sink"):
                out.append(WeightTensor("self_attn.learnable_sink_param", "norm", heads_local, 1, n,
                                        dtype="float32"))
            hc = self._ihc()
            if hc:
                out += [
                    WeightTensor("hc_{attn,mlp}_layer.hc_pre.hc_fn", "linear", 2 * hc, hc * h, 2 * n,
                                 dtype="float32"),
                    WeightTensor("hc_{attn,mlp}_layer.hc_pre.hc_scale+hc_base", "norm", 2 + 2 * hc, 1, 2 * n,
                                 dtype="float32"),
                ]
            out.append(self.rope_cache(ctx))
            if "index_topk" in text:
                topk = int(text["index_topk"])
                tokens = ctx.max_num_batched_tokens
                out.append(WeightTensor("model.topk_indices_buffer", "buffer", tokens, topk, dtype="int32"))
                # each sparse layer's MLAAttention builds its own SparseMLAIndexGroupBuilder (no
                # builder is passed in): a physical top-k table [rows + 1, topk] and valid counts
                # [rows + 1], int32 (vllm/v1/attention/backends/mla/index_group.py, 0.33.0)
                sparse = sum(1 for i in range(start, end) if self._sparse(i))
                if sparse:
                    out.append(WeightTensor("self_attn.mla_attn.index_group.physical_topk_indices+valid_topk_counts",
                                            "buffer", tokens + 1, topk + 1, sparse, dtype="int32"))
        out += stage_head(span, head=not tied)
        if span.last:
            hc = self._ihc()
            if hc:
                out += [WeightTensor("model.hc_head.hc_head_fn", "linear", hc, hc * h, 1, dtype="float32"),
                        WeightTensor("model.hc_head.hc_head_base+hc_head_scale", "norm", hc + 1, 1,
                                     dtype="float32")]
        return out

    def notes(self) -> tuple[str, ...]:
        n = self.config.num_hidden_layers
        idx = sum(1 for i in range(n) if self.has_indexer(i))
        return (f"sparse MLA latent cache on every layer; {idx} of {n} layers build a lightning indexer "
                "with its own 132-byte K cache, the others reuse the previous indexer's top-k",)
