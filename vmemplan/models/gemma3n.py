"""Gemma-3n (``Gemma3nForCausalLM``): AltUp streams, LAuReL blocks, per-layer embeddings,
per-layer (MatFormer) FFN widths, and a KV-sharing tail whose layers own no cache.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.windowed import (
    _int,
    _rope_positions,
    _window,
    _WindowedBase,
    gemma_layer_types,
    window_global_notes,
)

__all__ = ["Gemma3n"]


@register
class Gemma3n(_WindowedBase):
    """Gemma-3n text model (vllm/model_executor/models/gemma3n.py::Gemma3nForCausalLM, 0.33.0).

    Per layer (``Gemma3nDecoderLayer``): ``Gemma3nAltUp`` (replicated ``correction_coefs``
    ``[A, A]``, ``prediction_coefs`` ``[A², A]``, ``modality_router`` ``[A, h]``, a
    ``router_norm``, a model-dtype ``router_input_scale`` scalar buffer and an fp32
    ``correct_output_scale`` ``[h]``); ``Gemma3nAttention`` with a QKVParallel ``qkv_proj``,
    ``q_norm``/``k_norm``/``v_norm`` (``v_norm`` has no parameter, but its ``[head_dim]``
    ones tensor sits on the device) on layers that own a cache, and only a
    ColumnParallel ``q_proj`` plus ``q_norm`` on the last ``num_kv_shared_layers`` layers
    (``is_kv_shared_layer``); a gated MLP of the layer's own ``intermediate_size[i]``;
    ``Gemma3nLaurelBlock`` (ColumnParallel ``linear_left`` ``h → laurel_rank``, RowParallel
    ``linear_right``, ``post_laurel_norm``); replicated ``per_layer_input_gate`` /
    ``per_layer_projection``; five RMSNorms; the Attention's four fp32 scale scalars.

    Model (``Gemma3nTextModel`` / ``Gemma3nSelfDecoder``): ``A - 1`` altup projections and
    ``A - 1`` unembed projections (ColumnParallel, gather_output: ``h / tp`` rows), the
    vocab-parallel ``embed_tokens`` (also the LM head: ``compute_logits`` uses it) and
    ``embed_tokens_per_layer`` ``[vocab_size_per_layer_input, L · hpl]``, the ColumnParallel
    ``per_layer_model_projection``, ``per_layer_projection_norm``, four model-dtype scalar
    buffers and the final norm.  Two rotary caches (``get_rope`` per layer type).

    KV sharing: a shared layer reads the cache of layer ``first_shared - 2`` when it is a
    window layer and ``first_shared - 1`` otherwise (``Gemma3nAttention.__init__``); it owns
    no spec (``GPUModelRunner.get_kv_cache_spec`` skips ``kv_sharing_target_layer_name``).
    """

    architectures = ("Gemma3nForCausalLM",)

    def layer_types(self) -> list[str]:
        return gemma_layer_types(self.config.text, default_pattern=5)

    def first_kv_shared_layer(self) -> int:
        return self.config.num_hidden_layers - _int(self.config.text, "num_kv_shared_layers", 0)

    def kv_sharing_target(self, index: int) -> int | None:
        """The layer whose cache layer ``index`` reads, or None when it owns one."""
        first = self.first_kv_shared_layer()
        if index < first:
            return None
        offset = 2 if self.layer_types()[index] == "sliding_attention" else 1
        target = first - offset
        return target if target >= 0 else None

    def _intermediate(self, index: int) -> int:
        inter = self.config.text.get("intermediate_size")
        if isinstance(inter, list):
            if len(inter) <= index:
                raise UsageError(f"intermediate_size lists {len(inter)} widths for "
                                 f"{self.config.num_hidden_layers} layers")
            return int(inter[index])
        return self.config.intermediate_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        span = self.rank_span(ctx)
        tp, h, hd, L = span.tp, span.hidden, cfg.head_dim, cfg.num_hidden_layers
        a = _int(text, "altup_num_inputs", 4)
        rank = _int(text, "laurel_rank", 64)
        hpl = _int(text, "hidden_size_per_layer_input", 256)
        vocab_ple = _int(text, "vocab_size_per_layer_input", cfg.vocab_size)
        bias = bool(text.get("attention_bias", False))
        if rank % tp or (hpl * L) % tp or h % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide Gemma-3n's laurel rank {rank}, "
                             f"per-layer width {hpl * L} or hidden size {h}")
        # the embedding is the LM head (Gemma3nForCausalLM.compute_logits uses embed_tokens)
        out = self._embedding_and_head(ctx, tied=True)
        start, end, n = span.start, span.end, span.layers
        shared = sum(1 for i in range(start, end) if i >= self.first_kv_shared_layer())
        owning = n - shared
        out += self._attn_tensors(ctx, name="self_attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=hd, count=owning,
                                  qkv_bias=bias, o_bias=bias)
        out += self._attn_tensors(ctx, name="self_attn[kv-shared]", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=hd, count=shared,
                                  qkv_bias=bias, o_bias=bias, q_only=True)
        widths: dict[int, int] = {}
        for i in range(start, end):
            widths[self._intermediate(i)] = widths.get(self._intermediate(i), 0) + 1
        for inter, count in widths.items():
            out += self._mlp_tensors(ctx, name=f"mlp[{inter}]", intermediate=inter, count=count)
        if n:
            out += [
                # v_norm (has_weight=False) still keeps a plain ones tensor [hd] on the device
                # (vllm/model_executor/layers/layernorm.py::RMSNorm.__init__)
                WeightTensor("self_attn.q_norm+k_norm+v_norm", "norm", hd, 1, n + 2 * owning),
                attention_scales("self_attn.attn", n),
                WeightTensor("altup.correction_coefs", "linear", a, a, n, True, in_features_full=a),
                WeightTensor("altup.prediction_coefs", "linear", a * a, a, n, True, in_features_full=a),
                WeightTensor("altup.modality_router", "linear", a, h, n, True, in_features_full=h),
                WeightTensor("altup.router_norm", "norm", h, 1, n),
                WeightTensor("altup.router_input_scale", "buffer", 1, 1, n),
                WeightTensor("altup.correct_output_scale", "norm", h, 1, n, dtype="float32"),
                WeightTensor("laurel.linear_left", "linear", rank // tp, h, n, True, in_features_full=h),
                WeightTensor("laurel.linear_right", "linear", h, rank // tp, n, True, in_features_full=rank),
                WeightTensor("laurel.post_laurel_norm", "norm", h, 1, n),
                WeightTensor("per_layer_input_gate", "linear", hpl, h, n, True, in_features_full=h),
                WeightTensor("per_layer_projection", "linear", h, hpl, n, True, in_features_full=hpl),
                WeightTensor("5 RMSNorms", "norm", h, 1, 5 * n),
            ]
            out += self._rope_tensors()
        out += [
            WeightTensor("model.altup_projections+altup_unembed_projections", "linear", h // tp, h,
                         2 * (a - 1), True, in_features_full=h),
            WeightTensor("model.embed_tokens_per_layer", "embedding", pad_vocab(vocab_ple) // tp, L * hpl),
            WeightTensor("model.per_layer_model_projection", "linear", L * hpl // tp, h, 1, True,
                         in_features_full=h),
            WeightTensor("model.per_layer_projection_norm", "norm", hpl, 1),
            # embed_scale, embed_scale_per_layer, per_layer_input_scale, per_layer_projection_scale
            WeightTensor("model.4 scalar buffers", "buffer", 1, 1, 4),
        ]
        return out

    def _rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        rope = cfg.text.get("rope_parameters")
        out = []
        for kind in sorted(set(self.layer_types())):
            params = rope.get(kind) if isinstance(rope, dict) and isinstance(rope.get(kind), dict) else None
            out.append(WeightTensor(f"rotary_emb({kind}).cos_sin_cache", "buffer",
                                    _rope_positions(cfg.text, params, cfg.max_position_embeddings),
                                    cfg.head_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        return self._window_specs(ctx, self.layer_types(), window=_window(self.config.text),
                                  skip=lambda i: self.kv_sharing_target(i) is not None)

    def notes(self) -> tuple[str, ...]:
        shared = self.config.num_hidden_layers - self.first_kv_shared_layer()
        return tuple(window_global_notes(self.layer_types(), shared))
