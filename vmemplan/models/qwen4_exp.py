"""Qwen4-Exp (``Qwen4ExpForCausalLM``, Qwen3.8-Flash-Next's text model): Qwen3.5's gated-delta
hybrid with hyper-connection residual streams in place of the layer norms, QSA sparse
attention (an indexer fused into ``qkv_proj`` with a raw-key ring and a compressed-key cache),
and an n-gram "PLE" embedding with its own short-conv state on the layers listed in
``ple_layer_ids``.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import CircularBufferSpec, MambaSpec, MLAAttentionSpec
from vmemplan.core.units import dtype_bytes, round_up
from vmemplan.models.base import register
from vmemplan.models.hybrid_qwen import Qwen3Next
from vmemplan.models.mixer_blocks import embedding_tensors

__all__ = ["Qwen4Exp"]


@register
class Qwen4Exp(Qwen3Next):
    """vllm/models/qwen4_exp/nvidia/model.py::Qwen4ExpForCausalLM (0.33.0), bf16.

    * Gated-delta layers and the MoE block (router, ``shared_expert_gate``, fused experts, a
      shared expert) as Qwen3-Next / Qwen3.5 (``QwenGatedDeltaNetAttention``).
    * Attention layers (``indexed_attention``): gated q (``2·heads·hd``) and GQA k/v in
      ``qkv_proj``, with the QSA indexer's q/k projection (``indexer_n_heads · indexer_head_dim``
      + ``indexer_head_dim``, replicated) fused into it (``Qwen4ExpQSAQKVIndexerLinear``);
      ``q_norm``/``k_norm [hd]``, the indexer's ``q_layernorm``/``k_layernorm [indexer_head_dim]``,
      the four fp32 scales and an int32 ``topk_indices_buffer [max_num_batched_tokens,
      indexer_budget + indexer_compress_ratio]`` (nvidia/qsa.py, ``packed_output_width``).
    * No RMSNorms around the sublayers and no final norm: each layer has
      ``attn_hyper_connection`` and ``mlp_hyper_connection`` (nvidia/hyperconnection.py::
      GatedResidual, bf16, replicated): ``input_mix_weight_down_block_inject [hc_lowrank +
      hc_count rounded up to 16, hc_count·hidden]``, ``input_mix_weight_up [hc_count·hidden,
      hc_lowrank]``, ``hc_norm [hc_count·hidden]``; the model ends in a
      ``hyper_connection_mixer`` (``input_mix_weight_down [hc_lowrank, hc_count·hidden]``, up,
      ``hc_norm``).
    * PLE layers (``ple_layer_ids`` are one-based): ``Qwen4ExpPLELayer`` holds a replicated
      ``kv_proj [hc·hidden + hidden, ple_embed_dim]``, a depthwise ``conv1d [hc·hidden, 1, K]``,
      three grouped norms ``[hc·hidden]``, the int64 hash buffers (``ngram_heads_vocab_sizes``,
      ``ngram_heads_offsets`` ``[(ngram_size − 1)·heads_per_ngram]``, ``layer_multipliers
      [ngram_size]``) and an int64 ``_prefetch_ids [max_num_batched_tokens, ngram heads]``.  The
      n-gram table itself lives in pinned host memory (``EngramConfig.cpu_offload``, on by
      default), so it is not GPU weight.

    KV cache: the gated-delta ``MambaSpec`` per linear layer; per PLE layer a short-conv
    ``MambaSpec`` ``[(K − 1)·ngram_size + spec, hc·hidden]``, TP-replicated, padded like the
    others (``Qwen4ExpPLELayer.get_state_shape``); per attention layer its full-attention spec,
    the indexer's raw-key ring (``CircularBufferSpec``, ``round_up(ratio + spec, ratio)``
    tokens of one ``indexer_head_dim`` key, no V) and the compressed-key cache
    (``MLAAttentionSpec``, one ``indexer_head_dim`` row per ``indexer_compress_ratio`` tokens),
    common/qsa_cache.py.
    """

    architectures = ("Qwen4ExpForCausalLM",)
    attention_layer_types = ("indexed_attention", "full_attention")
    layer_type_family = "Qwen4-Exp"

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        if ctx.pipeline_parallel_size > 1:
            raise UsageError("Qwen4-Exp's n-gram PLE embedding needs --pipeline-parallel-size 1 (vLLM 0.33.0 refuses PP)",
                             hint="use tensor parallelism")

    # -- config facts -----------------------------------------------------------------------
    def _int(self, key: str, default: int) -> int:
        v = self.config.text.get(key)
        return int(v) if isinstance(v, int) and not isinstance(v, bool) else default

    def ple_layers(self) -> list[int]:
        ids = self.config.text.get("ple_layer_ids") or []
        return sorted({int(i) - 1 for i in ids})

    def hc(self) -> tuple[int, int]:
        return self._int("hc_count", 4), self._int("hc_lowrank", 320)

    def qsa(self) -> tuple[int, int, int, int]:
        """(indexer heads, indexer head dim, budget, compress ratio)."""
        return (self._int("indexer_n_heads", 0), self._int("indexer_head_dim", 0),
                self._int("indexer_budget", 0), self._int("indexer_compress_ratio", 0))

    def ngram_heads(self) -> int:
        return (self._int("ngram_size", 3) - 1) * self._int("heads_per_ngram", 8)

    # -- weights ----------------------------------------------------------------------------
    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        self.validate_parallel(ctx)
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        hd = cfg.head_dim
        kinds = self.stage_kinds(span)
        n_attn, n_gdn, n = kinds["attention"], kinds["mamba"], span.layers
        lin, vec = self.linear, self.vector
        hc, lowrank = self.hc()
        wide = hc * h
        out = embedding_tensors(span)
        if n_attn:
            qn, qd, budget, ratio = self.qsa()
            heads = cfg.num_attention_heads
            kv = self.attention_kv_heads(tp)
            out += [
                lin("self_attn.qkv_proj", 2 * heads * hd // tp + 2 * kv * hd, h, n_attn, in_full=h),
                lin("self_attn.qkv_proj[indexer, replicated]", qn * qd + qd, h, n_attn, in_full=h),
                lin("self_attn.o_proj", h, heads * hd // tp, n_attn, in_full=heads * hd),
                vec("self_attn.q_norm+k_norm", hd, 2 * n_attn),
                attention_scales("self_attn", n_attn),
            ]
            if qn:
                out += [vec("self_attn.indexer.q_layernorm+k_layernorm", qd, 2 * n_attn),
                        WeightTensor("self_attn.topk_indices_buffer", "buffer", ctx.max_num_batched_tokens,
                                     budget + ratio, n_attn, dtype="int32")]
            rotary_dim = int(hd * self._partial_rotary())
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, rotary_dim))
        if n_gdn:
            out += self.gated_delta_tensors(ctx, n_gdn)
        if n:
            out += self.sparse_moe_tensors(ctx, n)
            down_rows = round_up(lowrank + hc, 16)
            out += [  # attn_ and mlp_hyper_connection: bf16, replicated
                WeightTensor("hyper_connection.input_mix_weight_down_block_inject", "linear", down_rows, wide,
                             2 * n, dtype="bfloat16"),
                WeightTensor("hyper_connection.input_mix_weight_up", "linear", wide, lowrank, 2 * n, dtype="bfloat16"),
                WeightTensor("hyper_connection.hc_norm", "norm", wide, 1, 2 * n, dtype="bfloat16"),
            ]
        ple = [i for i in self.ple_layers() if span.start <= i < span.end]
        if ple:
            m = len(ple)
            ple_dim = self._int("ple_embed_dim", h)
            k = self._int("ple_conv_kernel_size", 4)
            g = self.ngram_heads()
            out += [
                WeightTensor("ple.kv_proj", "linear", wide + h, ple_dim, m, True, in_features_full=ple_dim),
                WeightTensor("ple.conv1d", "norm", wide, k, m),
                WeightTensor("ple.norm_key+norm_query+norm_conv", "norm", wide, 1, 3 * m),
                WeightTensor("ple.ple_embedding.ngram_heads_vocab_sizes+offsets", "buffer", g, 1, 2 * m, dtype="int64"),
                WeightTensor("ple.ple_embedding.layer_multipliers", "buffer", self._int("ngram_size", 3), 1, m,
                             dtype="int64"),
                WeightTensor("ple.ple_embedding._prefetch_ids", "buffer", ctx.max_num_batched_tokens, g, m,
                             dtype="int64"),
            ]
        if span.last:
            out += [
                WeightTensor("model.hyper_connection_mixer.input_mix_weight_down", "linear", lowrank, wide,
                             dtype="bfloat16"),
                WeightTensor("model.hyper_connection_mixer.input_mix_weight_up", "linear", wide, lowrank,
                             dtype="bfloat16"),
                WeightTensor("model.hyper_connection_mixer.hc_norm", "norm", wide, 1, dtype="bfloat16"),
            ]
            if not (cfg.tie_word_embeddings and span.first):
                out.append(WeightTensor("lm_head", "lm_head", span.vocab_rows, h))
        return out

    # -- KV cache ---------------------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        specs = super().kv_cache_specs(ctx)
        start, end = self.layer_range(ctx)
        kinds = self.layer_kinds()
        gdn = next((s for s in specs.values() if isinstance(s, MambaSpec)), None)
        attn = specs.get(next((self.attention_layer_name.format(i=i) for i in range(start, end)
                               if kinds[i] == "attention"), ""), None)
        width = dtype_bytes(ctx.model_dtype)
        spec_tokens = ctx.num_speculative_tokens
        ple = [i for i in self.ple_layers() if start <= i < end]
        if ple and gdn is not None:
            hc, _ = self.hc()
            rows = (self._int("ple_conv_kernel_size", 4) - 1) * self._int("ngram_size", 3) + spec_tokens
            ple_spec = MambaSpec(
                block_size=gdn.block_size, page_bytes_unpadded=rows * hc * self.config.hidden_size * width,
                mamba_cache_mode=gdn.mamba_cache_mode, num_speculative_blocks=gdn.num_speculative_blocks,
                page_size_padded=gdn.page_size_padded, num_prefill_checkpoint_blocks=gdn.num_prefill_checkpoint_blocks,
                tp_replicated=True)
            for i in ple:
                specs[f"model.layers.{i}.ple"] = ple_spec
        qn, qd, _, ratio = self.qsa()
        if qn and attn is not None:
            ring = CircularBufferSpec(block_size=round_up(ratio + spec_tokens, ratio), num_kv_heads=1, head_size=qd,
                                      cache_dtype=ctx.model_dtype, dtype_bytes=width, head_size_v=0)
            compressed = MLAAttentionSpec(block_size=attn.block_size, head_size=qd, cache_dtype=ctx.model_dtype,
                                          dtype_bytes=width, compress_ratio=ratio)
            for i in range(start, end):
                if kinds[i] == "attention":
                    specs[f"model.layers.{i}.self_attn.indexer.raw_key_cache"] = ring
                    specs[f"model.layers.{i}.self_attn.indexer.compressed_key_cache"] = compressed
        return specs

    def notes(self) -> tuple[str, ...]:
        if not self.ple_layers():
            return ()
        return ("the n-gram PLE table stays in pinned host memory (vLLM's EngramConfig cpu_offload default), "
                "not counted as GPU weights",)
