"""Dense decoder-only transformers of the Llama shape.

Covers Llama (1–3.3, CodeLlama), Mistral, Qwen2/2.5, Qwen3 dense, Phi-3 and the generic
decoder fallback.  Mirrors vllm/model_executor/models/llama.py (LlamaModel,
LlamaDecoderLayer, LlamaAttention, LlamaMLP), qwen2.py and qwen3.py (0.33.0): a fused
``qkv_proj`` (QKVParallelLinear), ``o_proj`` (RowParallelLinear), fused ``gate_up_proj``
(MergedColumnParallelLinear), ``down_proj`` (RowParallelLinear), two RMSNorms per layer, a
vocab-parallel embedding and LM head padded to a multiple of 64 rows, and one shared rotary
cos/sin cache.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.models.base import (  # noqa: F401 (pad_vocab, pp_layer_range: re-exported)
    VOCAB_PADDING,
    Adapter,
    pad_vocab,
    pp_layer_range,
    register,
    register_generic,
    rope_cache_positions,
)
from vmemplan.models.dense_blocks import kv_spec_fields, llama_layer_tensors

__all__ = ["LlamaLike", "Qwen2", "Qwen3", "GenericDecoder", "pad_vocab", "pp_layer_range"]


class LlamaLike(Adapter):
    """The Llama family.  Subclasses switch biases and per-head norms."""

    architectures = (
        "LlamaForCausalLM",
        "Phi3ForCausalLM",
        "InternLM3ForCausalLM",
    )
    qkv_bias_default = False
    qk_norm = False
    reads_max_model_len = False  # its weights and specs never depend on the context length
    # -- switches a declared architecture (registry/architectures.yaml) may set; the
    # defaults are Llama's.  None means "as the config says".
    #: forced biases on qkv_proj / o_proj / the MLP linears (None: the config's keys)
    attn_qkv_bias: bool | None = None
    attn_o_bias: bool | None = None
    mlp_has_bias: bool | None = None
    #: "head": q_norm/k_norm over one head (Qwen3); "full": over all heads of the rank (OLMo-2);
    #: "total": over every head of the model, replicated on each rank (OLMoE)
    qk_norm_shape: str = "head"
    #: "rms": RMSNorm (a weight); "layer": LayerNorm (a weight and a bias)
    norm_kind: str = "rms"
    #: norms in one decoder layer (1 for a parallel attention+MLP block, 4 for a sandwich)
    norms_per_layer: int = 2
    #: "gated": fused gate_up_proj + down_proj; "plain": up_proj (fc1) + down_proj (fc2)
    mlp_kind: str = "gated"
    #: the LM head tied to the embedding (None: the config's tie_word_embeddings)
    tied_head: bool | None = None
    #: whether the model builds a rotary cos/sin cache
    rotary: bool = True
    #: a learned absolute position table of max_position_embeddings + this many rows (None: none)
    learned_positions_offset: int | None = None
    #: a LayerNorm right after the embedding (BLOOM's word_embeddings_layernorm)
    embedding_norm: bool = False

    def qkv_bias(self) -> bool:
        if self.attn_qkv_bias is not None:
            return self.attn_qkv_bias
        text = self.config.text
        bias = bool(text.get("attention_bias", False) or text.get("bias", False))
        if "qkv_bias" in text:
            bias = bool(text["qkv_bias"])
        return bias or self.qkv_bias_default

    def o_bias(self) -> bool:
        if self.attn_o_bias is not None:
            return self.attn_o_bias
        text = self.config.text
        return bool(text.get("attention_bias", False) or text.get("bias", False))

    def mlp_bias(self) -> bool:
        if self.mlp_has_bias is not None:
            return self.mlp_has_bias
        return bool(self.config.text.get("mlp_bias", False))

    def head_tied(self) -> bool:
        return self.config.tie_word_embeddings if self.tied_head is None else self.tied_head

    def _norm(self, name: str, width: int, count: int = 1) -> list[WeightTensor]:
        out = [WeightTensor(name, "norm", width, 1, count)]
        if self.norm_kind == "layer":
            out.append(WeightTensor(name + ".bias", "norm", width, 1, count))
        return out

    def kv_heads_per_rank(self, tp: int) -> int:
        """KV heads on one rank: split when tp divides them, one replicated head otherwise.

        Mirrors vllm/model_executor/models/llama.py::LlamaAttention.__init__:
        ``max(1, total_num_kv_heads // tp_size)``.
        """
        return max(1, self.config.num_key_value_heads // tp)

    def sliding_window_for_layer(self, index: int) -> int | None:
        """The window of layer ``index``: its own from ``layer_types``, else the model-level
        ``CacheConfig.sliding_window`` a config without ``layer_types`` gets (Phi-3, Phi-3.5-MoE,
        Mistral-7B-v0.1).  See :mod:`vmemplan.models.sliding`."""
        from vmemplan.models.sliding import layer_sliding_window

        return layer_sliding_window(self.config.text, index, self.config.num_hidden_layers)

    # -- weights ------------------------------------------------------------------
    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h, hd, n = span.tp, span.hidden, cfg.head_dim, span.layers
        first, last, vocab_rows = span.first, span.last, span.vocab_rows
        q_rows = cfg.num_attention_heads // tp * hd
        kv_rows = self.kv_heads_per_rank(tp) * hd
        gated = self.mlp_kind == "gated"
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n:
            out += llama_layer_tensors(cfg, tp=tp, kv_rows=kv_rows, count=n, gated=gated)
            out += self._norm("input_layernorm+post_attention_layernorm", h, self.norms_per_layer * n)
            # each Attention layer's _k_scale/_v_scale/_q_scale/_prob_scale: four fp32 scalars
            # (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales)
            out.append(attention_scales("self_attn.attn", n))
            if self.qkv_bias():
                out.append(WeightTensor("self_attn.qkv_proj.bias", "bias", q_rows + 2 * kv_rows, 1, n))
            if self.o_bias():
                out.append(WeightTensor("self_attn.o_proj.bias", "bias", h, 1, n))
            if self.mlp_bias():
                up_rows = (2 if gated else 1) * (cfg.intermediate_size // tp)
                out.append(WeightTensor("mlp.gate_up_proj.bias" if gated else "mlp.up_proj.bias",
                                        "bias", up_rows, 1, n))
                out.append(WeightTensor("mlp.down_proj.bias", "bias", h, 1, n))
            if self.qk_norm:
                if self.qk_norm_shape == "full":
                    out += self._norm("self_attn.q_norm", q_rows, n) + self._norm("self_attn.k_norm", kv_rows, n)
                elif self.qk_norm_shape == "total":
                    out += (self._norm("self_attn.q_norm", cfg.num_attention_heads * hd, n)
                            + self._norm("self_attn.k_norm", cfg.num_key_value_heads * hd, n))
                else:
                    out += self._norm("self_attn.q_norm+k_norm", hd, 2 * n)
        if first and self.learned_positions_offset is not None:
            out.append(WeightTensor("model.embed_positions", "embedding",
                                    cfg.max_position_embeddings + self.learned_positions_offset, h))
        if first and self.embedding_norm:
            out += self._norm("model.embed_layernorm", h)
        if last:
            out += self._norm("model.norm", h)
            if not (self.head_tied() and first):
                # A tied head shares the embedding's storage; on a last stage without the
                # embedding vLLM still allocates its own copy.
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        if n and self.rotary:
            positions, rotary_dim = rope_cache_positions(cfg)
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, rotary_dim))
        return out

    # -- KV cache -----------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """One full-attention spec per layer on this stage (a sliding one where
        ``layer_types`` says so).

        Mirrors vllm/model_executor/layers/attention/attention.py::Attention.get_kv_cache_spec
        (0.33.0): ``FullAttentionSpec`` with the per-rank KV heads and head size, or
        ``SlidingWindowSpec`` when the layer has a window.
        """

        cfg = self.config
        common = kv_spec_fields(ctx, num_kv_heads=self.kv_heads_per_rank(ctx.tensor_parallel_size),
                                head_size=cfg.head_dim)
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        by_window: dict[int | None, Any] = {}  # one (frozen) spec object per layer kind
        windows = self.__dict__.get("_windows")
        if windows is None:  # the config is fixed: every layer's window, once per adapter
            windows = self.__dict__["_windows"] = tuple(
                self.sliding_window_for_layer(i) for i in range(cfg.num_hidden_layers))
        for i in range(start, end):
            window = windows[i]
            spec = by_window.get(window)
            if spec is None:
                spec = by_window[window] = (FullAttentionSpec(**common) if window is None
                                            else SlidingWindowSpec(sliding_window=window, **common))
            specs[f"model.layers.{i}.self_attn.attn"] = spec
        return specs


@register
class Llama(LlamaLike):
    architectures = LlamaLike.architectures


@register
class Qwen2(LlamaLike):
    """Qwen2 / Qwen2.5: biases on q, k and v only (vllm/model_executor/models/qwen2.py)."""

    architectures = ("Qwen2ForCausalLM",)
    qkv_bias_default = True

    def o_bias(self) -> bool:
        return False

    def sliding_window_for_layer(self, index: int) -> int | None:
        """Qwen2 configs carry ``sliding_window`` but keep it only with ``use_sliding_window``
        (false in every released checkpoint).  vLLM's Qwen2Model refuses a window on only some
        layers (``max_window_layers`` below the layer count: vllm/model_executor/models/
        qwen2.py::Qwen2Model.__init__, 0.33.0)."""
        from vmemplan.core.errors import UsageError
        from vmemplan.models.sliding import config_layer_types

        types = config_layer_types(self.config.text, self.config.num_hidden_layers)
        if types is not None and len(set(types)) > 1:
            raise UsageError("this Qwen2 config puts a sliding window on only some layers "
                             "(use_sliding_window with max_window_layers below num_hidden_layers)",
                             hint="vLLM refuses it too (Qwen2Model asserts max_window_layers == num_hidden_layers)")
        return super().sliding_window_for_layer(index)


@register
class Qwen3(LlamaLike):
    """Qwen3 dense: per-head RMSNorm on q and k, no biases unless attention_bias
    (vllm/model_executor/models/qwen3.py::Qwen3Attention)."""

    architectures = ("Qwen3ForCausalLM",)
    qk_norm = True

    def o_bias(self) -> bool:
        return False


@register_generic
class GenericDecoder(LlamaLike):
    """The fallback for an unknown decoder-only architecture with none of the markers of a
    family vmemplan would get wrong.  Flagged in warnings and provenance."""

    architectures = ()
    fidelity = "generic"

    def notes(self) -> tuple[str, ...]:
        arch = self.config.architecture or self.config.model_type or "unknown"
        return (
            f"{arch} is not a known architecture; sized as a generic Llama-shaped decoder "
            "(fused qkv, gated MLP, RMSNorm). Check the weights figure against the checkpoint.",
        )
