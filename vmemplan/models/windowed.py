"""Sliding-window, chunked-local and interleaved local/global attention families.

Covers:

* Mistral-7B-v0.1 (``MistralForCausalLM`` with a model-level ``sliding_window``): every layer
  is a window layer.  Checkpoints with ``sliding_window`` null (Mistral v0.3, Mistral-Small)
  stay full attention, exactly as the dense Llama adapter sizes them.
* Gemma-2 (``Gemma2ForCausalLM``): window on even layers, four RMSNorms a layer, the LM
  head is the embedding (no ``lm_head`` tensor at all).
* Gemma-3 (``Gemma3ForCausalLM`` and the language model of
  ``Gemma3ForConditionalGeneration``): five window layers to one global layer, per-head q/k
  norms, a local and a global rotary cache.
* Gemma-4 (``Gemma4ForCausalLM`` / ``Gemma4ForConditionalGeneration``): per-layer-type head
  size and KV heads, KV-sharing tail layers that own no cache, optional MoE block parallel
  to the dense MLP, optional per-layer embeddings (E-series).
* gpt-oss (``GptOssForCausalLM``): window on even layers, attention sinks, biased
  projections, MoE experts (mxfp4 in the checkpoint; priced by the quantization scheme).
* Llama-4 (``Llama4ForCausalLM`` / ``Llama4ForConditionalGeneration``): chunked local
  attention on RoPE layers, global attention on the NoPE layers, MoE with a shared expert.

Vision / audio towers of the multimodal wrappers are *not* listed (see :meth:`notes`):
their module trees live in transformers or in separate vLLM files this module does not
mirror.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.model_config import gemma3_text_defaults
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import Adapter, register
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.dense import LlamaLike, pad_vocab, pp_layer_range
from vmemplan.core.kv_specs import ChunkedLocalAttentionSpec, FullAttentionSpec, SlidingWindowSpec, kv_dtype_bytes
from vmemplan.laws import moe
from vmemplan.laws.multimodal import limit_for

__all__ = [
    "MistralWindowed",
    "Gemma2",
    "Gemma3",
    "Gemma4",
    "GptOss",
    "Llama4",
    "gemma_layer_types",
    "llama4_no_rope_layers",
    "moe_shard",
    "chunked_attention_uses_hybrid_manager",
]

# --------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------


def _int(text: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = text.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value is None:
        if default is None:
            raise UsageError(f"config.json lacks {key!r}", hint="this family needs it to size the model")
        return int(default)
    return int(value)


def _window(text: Mapping[str, Any]) -> int | None:
    """``sliding_window`` as vLLM keeps it: 0 and null both mean no window
    (vllm/config/model.py::ModelConfig.__post_init__, 0.33.0)."""
    w = text.get("sliding_window")
    if isinstance(w, bool) or not isinstance(w, (int, float)) or int(w) <= 0:
        return None
    return int(w)


def gemma_layer_types(text: Mapping[str, Any], *, default_pattern: int) -> list[str]:
    """Per-layer attention type of a Gemma text config.

    ``layer_types`` when the config lists it; otherwise transformers' default: layer ``i``
    is ``full_attention`` when ``(i + 1) % sliding_window_pattern == 0`` and
    ``sliding_attention`` otherwise (pattern 2 for Gemma-2, 6 for Gemma-3).
    """
    n = _int(text, "num_hidden_layers")
    lt = text.get("layer_types")
    if isinstance(lt, list) and lt:
        if len(lt) < n:
            raise UsageError(f"layer_types lists {len(lt)} layers for {n} hidden layers")
        return [str(x) for x in lt[:n]]
    pattern = text.get("sliding_window_pattern", default_pattern)
    if not isinstance(pattern, int) or pattern < 1:
        pattern = default_pattern
    return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n)]


def moe_shard(ctx: GraphContext, num_experts: int, intermediate: int) -> tuple[int, int]:
    """``(experts on this rank, expert FFN width on this rank)``.

    Mirrors vllm/model_executor/layers/fused_moe/config.py::FusedMoEParallelConfig.make
    (0.33.0): without expert parallelism every rank holds every expert with its FFN split
    by TP; with it the experts are split over ``tp × dp`` ranks and each keeps the full
    width.  Redundant EPLB experts add to the local count.
    """
    local, ways = moe.moe_shard(ctx, num_experts)
    if intermediate % ways:
        raise UsageError(f"the expert width {intermediate} does not split {ways} ways",
                         hint="choose a tensor-parallel size dividing the expert width")
    return local, intermediate // ways


def _kv_heads(total: int, tp: int) -> int:
    """KV heads a rank holds: split when tp divides them, one replica otherwise
    (QKVParallelLinear / ``max(1, total // tp)``)."""
    return max(1, total // tp)


def _check_heads(num_heads: int, num_kv_heads: int, tp: int) -> None:
    if num_heads % tp:
        raise UsageError(
            f"--tensor-parallel-size {tp} does not divide the {num_heads} attention heads",
            hint=f"use a divisor of {num_heads}",
        )
    if (num_kv_heads >= tp and num_kv_heads % tp) or (num_kv_heads < tp and tp % num_kv_heads):
        raise UsageError(
            f"--tensor-parallel-size {tp} and the {num_kv_heads} KV heads do not divide one another",
            hint="vLLM splits or replicates whole KV heads",
        )


def _cache_dtype_and_bytes(ctx: GraphContext) -> tuple[str, int]:

    nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
    return (ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype), nbytes


def _attention_spec(ctx: GraphContext, *, num_kv_heads: int, head_size: int, window: int | None = None,
                    chunk: int | None = None):
    """The spec ``Attention.get_kv_cache_spec`` returns for one layer (0.33.0):
    ``SlidingWindowSpec`` with a window, ``ChunkedLocalAttentionSpec`` for
    ``ChunkedLocalAttention``, else ``FullAttentionSpec``.  The window layer's block size is
    the primary block size (``_largest_kernel_block_within`` picks it whenever the backend
    runs it; the page unification then scales it if pages differ)."""
    cache_dtype, nbytes = _cache_dtype_and_bytes(ctx)
    common = dict(block_size=ctx.block_size, num_kv_heads=num_kv_heads, head_size=head_size,
                  cache_dtype=cache_dtype, dtype_bytes=nbytes)
    if window is not None:
        return SlidingWindowSpec(sliding_window=window, **common)
    if chunk is not None:
        return ChunkedLocalAttentionSpec(attention_chunk_size=chunk, **common)
    return FullAttentionSpec(**common)


def _rope_positions(text: Mapping[str, Any], rope: Mapping[str, Any] | None, max_pos: int) -> int:
    """Rows of one rotary cos/sin cache: linear / yarn / dynamic scalings build the cache
    over ``base × factor`` positions (yarn over the original length × factor)
    (vllm/model_executor/layers/rotary_embedding/*_rope.py::_compute_cos_sin_cache)."""
    if not rope:
        return max_pos
    rtype = str(rope.get("rope_type", rope.get("type", "default")))
    factor = rope.get("factor")
    if rtype in ("linear", "dynamic") and isinstance(factor, (int, float)):
        return int(max_pos * factor)
    if rtype == "yarn" and isinstance(factor, (int, float)):
        orig = rope.get("original_max_position_embeddings", max_pos)
        return int(int(orig) * factor)
    return max_pos


class _WindowedBase(Adapter):
    """Helpers common to the families below."""

    def _text(self) -> Mapping[str, Any]:
        return self.config.text

    def layer_range(self, ctx: GraphContext) -> tuple[int, int]:
        return pp_layer_range(self.config.num_hidden_layers, ctx.pipeline_parallel_size, ctx.pipeline_rank)

    def _stage_flags(self, ctx: GraphContext) -> tuple[bool, bool]:
        return ctx.pipeline_rank == 0, ctx.pipeline_rank == ctx.pipeline_parallel_size - 1

    #: Gemma, Gemma-4 and gpt-oss build the embedding, final norm and LM head on every
    #: pipeline stage (no PPMissingLayer); Llama-4 follows LlamaModel (first / last stage).
    modules_on_every_stage = True

    def _embedding_and_head(self, ctx: GraphContext, *, tied: bool, vocab: int | None = None,
                            no_head_module: bool = False) -> list[WeightTensor]:
        """Vocab-parallel embedding, final norm and LM head rows (vocab padded to 64, split
        by TP).  A tied head shares the embedding's storage; Gemma-2 has no head module (it
        computes logits with the embedding).  With ``modules_on_every_stage`` every
        pipeline stage holds them, else the embedding sits on the first stage (and a tied
        last stage) and the norm and head on the last."""
        cfg = self.config
        h = cfg.hidden_size
        rows = pad_vocab(vocab if vocab is not None else cfg.vocab_size) // ctx.tensor_parallel_size
        first, last = self._stage_flags(ctx)
        if self.modules_on_every_stage:
            first = last = True
        out: list[WeightTensor] = []
        has_embed = first or (tied and last)
        if has_embed:
            out.append(WeightTensor("model.embed_tokens", "embedding", rows, h))
        if last:
            out.append(WeightTensor("model.norm", "norm", h, 1))
            if not no_head_module and not tied:
                out.append(WeightTensor("lm_head", "lm_head", rows, h))
        return out

    def _attn_tensors(self, ctx: GraphContext, *, name: str, num_heads: int, num_kv_heads: int,
                      head_dim: int, count: int, qkv_bias: bool = False, o_bias: bool = False,
                      q_only: bool = False) -> list[WeightTensor]:
        """``qkv_proj`` (QKVParallelLinear) and ``o_proj`` (RowParallelLinear) of ``count``
        layers; ``q_only`` for KV-shared layers that build a ColumnParallel ``q_proj``."""
        if not count:
            return []
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        q_rows = num_heads // tp * head_dim
        kv_rows = 0 if q_only else _kv_heads(num_kv_heads, tp) * head_dim
        proj = f"{name}.q_proj" if q_only else f"{name}.qkv_proj"
        out = [
            WeightTensor(proj, "linear", q_rows + 2 * kv_rows, h, count, True, in_features_full=h),
            WeightTensor(f"{name}.o_proj", "linear", h, q_rows, count, True,
                         in_features_full=num_heads * head_dim),
        ]
        if qkv_bias:
            out.append(WeightTensor(f"{proj}.bias", "bias", q_rows + 2 * kv_rows, 1, count))
        if o_bias:
            # RowParallelLinear keeps the whole bias on every rank
            out.append(WeightTensor(f"{name}.o_proj.bias", "bias", h, 1, count))
        return out

    def _mlp_tensors(self, ctx: GraphContext, *, name: str, intermediate: int, count: int,
                     bias: bool = False) -> list[WeightTensor]:
        """Gated MLP: MergedColumnParallel ``gate_up_proj`` and RowParallel ``down_proj``."""
        if not count:
            return []
        tp = ctx.tensor_parallel_size
        if intermediate % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the FFN width {intermediate}")
        h = self.config.hidden_size
        inter = intermediate // tp
        out = [
            WeightTensor(f"{name}.gate_up_proj", "linear", 2 * inter, h, count, True, in_features_full=h),
            WeightTensor(f"{name}.down_proj", "linear", h, inter, count, True, in_features_full=intermediate),
        ]
        if bias:
            out.append(WeightTensor(f"{name}.gate_up_proj.bias", "bias", 2 * inter, 1, count))
            out.append(WeightTensor(f"{name}.down_proj.bias", "bias", h, 1, count))
        return out


# --------------------------------------------------------------------------------------
# Mistral with a model-level window
# --------------------------------------------------------------------------------------


@register
class MistralWindowed(LlamaLike):
    """``MistralForCausalLM`` (vllm/model_executor/models/mistral.py, a LlamaForCausalLM).

    The weights are the Llama ones.  The window: ``EngineArgs.create_engine_config`` sets
    ``CacheConfig.sliding_window`` to the config's ``sliding_window`` when the config has
    no ``layer_types`` (or only window layers), and ``Attention.__init__`` gives that
    window to every layer without its own (vllm/engine/arg_utils.py,
    vllm/model_executor/layers/attention/attention.py, 0.33.0).  So Mistral-7B-v0.1
    (window 4096) caches every layer as a ``SlidingWindowSpec``; v0.3 / Mistral-Small
    (``sliding_window`` null) stay full attention.
    """

    architectures = ("MistralForCausalLM",)

    def sliding_window_for_layer(self, index: int) -> int | None:
        text = self.config.text
        layer_types = text.get("layer_types")
        window = _window(text)
        if isinstance(layer_types, list) and layer_types:
            if all(t == "sliding_attention" for t in layer_types):
                return window
            return window if index < len(layer_types) and layer_types[index] == "sliding_attention" else None
        return window

    def notes(self) -> tuple[str, ...]:
        w = _window(self.config.text)
        if w is None:
            return ()
        return (f"sliding window of {w} tokens on every layer (model-level sliding_window)",)


# --------------------------------------------------------------------------------------
# Gemma-2 / Gemma-3
# --------------------------------------------------------------------------------------


@register
class Gemma2(_WindowedBase):
    """Gemma-2 (vllm/model_executor/models/gemma2.py, 0.33.0).

    Per layer: ``qkv_proj`` / ``o_proj`` (biases when ``attention_bias``), gated GeLU MLP,
    four GemmaRMSNorms (input, post-attention, pre- and post-feedforward).  The model has a
    final norm and a ``normalizer`` scalar buffer; logits use ``embed_tokens`` directly
    (no ``lm_head`` module).  Window on layers whose ``layer_types`` entry is
    ``sliding_attention``, by default the even layers.  One rotary cache
    ``[max_position_embeddings, head_dim]``.  Soft-capping and ``query_pre_attn_scalar``
    change no memory.
    """

    architectures = ("Gemma2ForCausalLM",)
    default_pattern = 2
    qk_norm = False
    no_head_module = True

    def layer_types(self) -> list[str]:
        return gemma_layer_types(self.config.text, default_pattern=self.default_pattern)

    def validate_parallel(self, ctx: GraphContext) -> None:
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)

    def _tied(self) -> bool:
        return bool(self.config.text.get("tie_word_embeddings", True))

    def rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        return [WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                             _rope_positions(cfg.text, cfg.rope_scaling(), cfg.max_position_embeddings),
                             cfg.head_dim)]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        start, end = self.layer_range(ctx)
        n = end - start
        bias = bool(text.get("attention_bias", False))
        out = self._embedding_and_head(ctx, tied=self._tied(), no_head_module=self.no_head_module)
        out += self._attn_tensors(ctx, name="self_attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n,
                                  qkv_bias=bias, o_bias=bias)
        out += self._mlp_tensors(ctx, name="mlp", intermediate=cfg.intermediate_size, count=n)
        if n:
            out.append(WeightTensor("4 GemmaRMSNorms", "norm", cfg.hidden_size, 1, 4 * n))
            if self.qk_norm:
                out.append(WeightTensor("self_attn.q_norm+k_norm", "norm", cfg.head_dim, 1, 2 * n))
            out += self.rope_tensors()
        out.append(WeightTensor("model.normalizer", "buffer", 1, 1))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """One spec per layer: ``SlidingWindowSpec(sliding_window)`` on window layers,
        ``FullAttentionSpec`` on global ones, per-rank KV heads ``max(1, KV // tp)``."""
        cfg = self.config
        window = _window(cfg.text)
        types = self.layer_types()
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            w = window if types[i] == "sliding_attention" else None
            specs[f"model.layers.{i}.self_attn.attn"] = _attention_spec(
                ctx, num_kv_heads=heads, head_size=cfg.head_dim, window=w)
        return specs

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        n_win = sum(t == "sliding_attention" for t in types)
        return (f"{n_win} of {len(types)} layers use a {_window(self.config.text)}-token sliding window",)


@register
class Gemma3(Gemma2):
    """Gemma-3 text model (vllm/model_executor/models/gemma3.py, 0.33.0), also the
    language model of ``Gemma3ForConditionalGeneration`` (gemma3_mm.py builds it from
    ``text_config`` as ``Gemma3ForCausalLM``).

    As Gemma-2 plus per-head ``q_norm``/``k_norm``, a real ``lm_head`` tied to the
    embedding when ``tie_word_embeddings`` (transformers' default for Gemma-3 is tied), and
    two rotary caches: window layers use ``rope_local_base_freq`` without scaling, global
    layers ``rope_theta`` with the config's scaling (linear x8 on 4B-27B: a cache of
    ``max_position_embeddings × 8`` rows).  Layer types: ``layer_types`` or every
    ``sliding_window_pattern``-th (default 6th) layer global.
    """

    architectures = ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration")
    default_pattern = 6
    qk_norm = True
    no_head_module = False

    def rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        types = set(self.layer_types())
        rope = cfg.rope_scaling()
        max_pos = cfg.max_position_embeddings
        out = []
        # transformers >= 5 nests per-type parameters under rope_parameters
        nested = isinstance(rope, Mapping) and any(isinstance(v, Mapping) for v in rope.values())
        if "sliding_attention" in types:
            local = rope.get("sliding_attention") if nested else None
            out.append(WeightTensor("rotary_emb(local).cos_sin_cache", "buffer",
                                    _rope_positions(cfg.text, local, max_pos), cfg.head_dim))
        if "full_attention" in types:
            glob = rope.get("full_attention") if nested else rope
            out.append(WeightTensor("rotary_emb(global).cos_sin_cache", "buffer",
                                    _rope_positions(cfg.text, glob, max_pos), cfg.head_dim))
        return out

    def notes(self) -> tuple[str, ...]:
        base = super().notes()
        if self.config.architecture == "Gemma3ForConditionalGeneration":
            base += ("the SigLIP vision tower and projector are not included in the weights figure",)
        return base


# --------------------------------------------------------------------------------------
# Gemma-4
# --------------------------------------------------------------------------------------


@register
class Gemma4(_WindowedBase):
    """Gemma-4 text model (vllm/model_executor/models/gemma4.py, 0.33.0).

    Per layer type (the ``per_layer_config`` view; 0.19.0 states it explicitly in
    ``Gemma4DecoderLayer.__init__``): window layers use ``head_dim`` and
    ``num_key_value_heads``; global layers ``global_head_dim`` and, when
    ``attention_k_eq_v``, ``num_global_key_value_heads``.  ``k_eq_v`` layers still build a
    full QKVParallelLinear (K is loaded into both the K and V slots) and cache K and V.
    The last ``num_kv_shared_layers`` layers read the cache of the last earlier layer of
    the same type: they build only ``q_proj`` and own no KV spec.  Each layer has q/k norms
    (v_norm has no weight), 4 norms, a dense gated MLP (doubled on KV-shared layers with
    ``use_double_wide_mlp``), and with ``num_experts`` a router (scale, per-expert scale,
    replicated projection) plus experts and three more norms.  E-series per-layer
    embeddings (``hidden_size_per_layer_input``) add a vocab-parallel table, a projection
    and per-layer gate/projection/norm.
    """

    architectures = ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration")

    @property
    def family(self) -> str:  # type: ignore[override]
        return "moe" if self.config.text.get("num_experts") else "dense"

    def layer_types(self) -> list[str]:
        return gemma_layer_types(self.config.text, default_pattern=6)

    def _layer_shape(self, index: int) -> tuple[int, int]:
        """(head_dim, total KV heads) of layer ``index``."""
        text = self.config.text
        cfg = self.config
        if self.layer_types()[index] == "full_attention":
            head_dim = _int(text, "global_head_dim", cfg.head_dim)
            if text.get("attention_k_eq_v", False):
                return head_dim, _int(text, "num_global_key_value_heads", cfg.num_key_value_heads)
            return head_dim, cfg.num_key_value_heads
        return cfg.head_dim, cfg.num_key_value_heads

    def first_kv_shared_layer(self) -> int:
        n = self.config.num_hidden_layers
        return n - _int(self.config.text, "num_kv_shared_layers", 0)

    def kv_sharing_target(self, index: int) -> int | None:
        """The layer whose cache layer ``index`` reads, or None when it owns one."""
        first = self.first_kv_shared_layer()
        if index < first or first == self.config.num_hidden_layers:
            return None
        types = self.layer_types()
        prev = types[:first]
        want = types[index]
        if want not in prev:
            return None
        return len(prev) - 1 - prev[::-1].index(want)

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        for i in range(self.config.num_hidden_layers):
            _, kv = self._layer_shape(i)
            _check_heads(self.config.num_attention_heads, kv, tp)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        h = cfg.hidden_size
        start, end = self.layer_range(ctx)
        tied = bool(text.get("tie_word_embeddings", cfg.raw.get("tie_word_embeddings", True)))
        out = self._embedding_and_head(ctx, tied=tied)
        bias = bool(text.get("attention_bias", False))
        first_shared = self.first_kv_shared_layer()
        double_wide = bool(text.get("use_double_wide_mlp", False))
        num_experts = text.get("num_experts")
        # group identical layers so the tensor list stays short
        shapes: dict[tuple[int, int, bool, int], int] = {}
        for i in range(start, end):
            hd, kv = self._layer_shape(i)
            shared = self.kv_sharing_target(i) is not None and i >= first_shared
            inter = cfg.intermediate_size * (2 if double_wide and i >= first_shared > 0 else 1)
            key = (hd, kv, shared, inter)
            shapes[key] = shapes.get(key, 0) + 1
        for (hd, kv, shared, inter), count in shapes.items():
            tag = f"[hd{hd},kv{kv}{',shared' if shared else ''}]"
            out += self._attn_tensors(ctx, name=f"self_attn{tag}", num_heads=cfg.num_attention_heads,
                                      num_kv_heads=kv, head_dim=hd, count=count, qkv_bias=bias,
                                      o_bias=bias, q_only=shared)
            out.append(WeightTensor(f"self_attn{tag}.q_norm+k_norm", "norm", hd, 1,
                                    count * (1 if shared else 2)))
            out += self._mlp_tensors(ctx, name=f"mlp[{inter}]", intermediate=inter, count=count)
        n = end - start
        if n:
            out.append(WeightTensor("4 RMSNorms", "norm", h, 1, 4 * n))
            out.append(WeightTensor("layer_scalar", "buffer", 1, 1, n))
            if isinstance(num_experts, int) and num_experts > 0:
                moe_inter = _int(text, "moe_intermediate_size", text.get("expert_intermediate_size"))
                local, inter = moe_shard(ctx, num_experts, moe_inter)
                out += [
                    WeightTensor("router.proj", "router", num_experts, h, n),
                    WeightTensor("router.scale", "norm", h, 1, n),
                    WeightTensor("router.per_expert_scale", "norm", num_experts, 1, n),
                    WeightTensor("experts.w13_weight", "expert", 2 * inter, h, n * local, True,
                                 in_features_full=h),
                    WeightTensor("experts.w2_weight", "expert", h, inter, n * local, True,
                                 in_features_full=moe_inter),
                    WeightTensor("3 MoE RMSNorms", "norm", h, 1, 3 * n),
                ]
            hpl = _int(text, "hidden_size_per_layer_input", 0)
            if hpl > 0:
                out += [
                    WeightTensor("per_layer_input_gate", "linear", hpl, h, n, True, in_features_full=h),
                    WeightTensor("per_layer_projection", "linear", h, hpl, n, True, in_features_full=hpl),
                    WeightTensor("post_per_layer_input_norm", "norm", h, 1, n),
                ]
            out += self._rope_tensors()
        hpl = _int(text, "hidden_size_per_layer_input", 0)
        if hpl > 0:
            total = hpl * cfg.num_hidden_layers
            vocab_ple = _int(text, "vocab_size_per_layer_input", cfg.vocab_size)
            tp = ctx.tensor_parallel_size
            out += [
                WeightTensor("model.embed_tokens_per_layer", "embedding", pad_vocab(vocab_ple) // tp, total),
                # ColumnParallelLinear(gather_output=True): rows split by TP
                WeightTensor("model.per_layer_model_projection", "linear", total // tp, h, 1, True,
                             in_features_full=h),
                WeightTensor("model.per_layer_projection_norm", "norm", hpl, 1),
            ]
        if ctx.pipeline_rank == 0:
            out += gemma4_vision_tensors(cfg.raw, h, ctx)
        return out

    def _rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        max_pos = cfg.max_position_embeddings
        types = set(self.layer_types())
        out = []
        if "sliding_attention" in types:
            out.append(WeightTensor("rotary_emb(sliding).cos_sin_cache", "buffer", max_pos, cfg.head_dim))
        if "full_attention" in types:
            # proportional rope builds its cache over the whole head (gemma4_rope.py)
            out.append(WeightTensor("rotary_emb(full).cos_sin_cache", "buffer", max_pos,
                                    _int(text, "global_head_dim", cfg.head_dim)))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """A spec for every layer that owns a cache; KV-shared layers add nothing
        (GPUModelRunner.get_kv_cache_spec skips ``kv_sharing_target_layer_name``)."""
        cfg = self.config
        window = _window(cfg.text)
        types = self.layer_types()
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            if self.kv_sharing_target(i) is not None:
                continue
            hd, kv = self._layer_shape(i)
            w = window if types[i] == "sliding_attention" else None
            specs[f"model.layers.{i}.self_attn.attn"] = _attention_spec(
                ctx, num_kv_heads=_kv_heads(kv, ctx.tensor_parallel_size), head_size=hd, window=w)
        return specs

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        shared = self.config.num_hidden_layers - self.first_kv_shared_layer()
        out = [f"{sum(t == 'sliding_attention' for t in types)} window and "
               f"{sum(t == 'full_attention' for t in types)} global layers"]
        if shared:
            out.append(f"the last {shared} layers reuse earlier layers' KV caches and own none")
        if self.config.architecture == "Gemma4ForConditionalGeneration":
            if isinstance(self.config.raw.get("audio_config"), dict):
                out.append("the audio tower is not included in the weights figure")
            if isinstance(self.config.raw.get("vision_config"), dict):
                out.append("the vision tower (transformers' Gemma4VisionModel) is replicated on every rank")
        return tuple(out)


def gemma4_vision_tensors(raw: Mapping[str, Any], text_hidden: int, ctx: GraphContext) -> list[WeightTensor]:
    """The Gemma-4 vision tower and its embedder, as vLLM loads them.

    vllm/model_executor/models/gemma4_mm.py::Gemma4ForConditionalGeneration (0.33.0) builds
    the tower with ``AutoModel.from_config(config.vision_config)``: transformers'
    Gemma4VisionModel in plain ``nn.Linear`` layers, so every tensor-parallel rank holds all
    of it.  Per transformers 5.x modeling_gemma4.py: a patch embedder (``3·p² → h`` and a
    ``2 × position_embedding_size × h`` position table), layers of q/k/v/o (with q/k norms),
    a gated MLP (gate, up, down) and four RMSNorms, optional clipping buffers, and the
    ``std_bias``/``std_scale`` buffers.  The embedder is a ReplicatedLinear ``h → text
    hidden``.  None when the model has no vision config or ``--limit-mm-per-prompt`` turns
    images and video off.
    """
    vc = raw.get("vision_config")
    if not isinstance(vc, Mapping):
        return []

    if all(limit_for(ctx.limit_mm_per_prompt, m) == 0 for m in ("image", "video")):
        return []
    h = _int(vc, "hidden_size")
    inter = _int(vc, "intermediate_size")
    layers = _int(vc, "num_hidden_layers")
    heads = _int(vc, "num_attention_heads")
    kv = _int(vc, "num_key_value_heads", heads)
    hd = _int(vc, "head_dim", h // heads)
    patch = _int(vc, "patch_size")
    positions = _int(vc, "position_embedding_size")
    out = [
        WeightTensor("vision_tower.patch_embedder.input_proj", "encoder", h, 3 * patch * patch),
        WeightTensor("vision_tower.patch_embedder.position_embedding_table", "encoder", 2 * positions, h),
        WeightTensor("vision_tower.layers.q_proj+o_proj", "encoder", heads * hd, h, 2 * layers),
        WeightTensor("vision_tower.layers.k_proj+v_proj", "encoder", kv * hd, h, 2 * layers),
        WeightTensor("vision_tower.layers.q_norm+k_norm", "encoder", hd, 1, 2 * layers),
        WeightTensor("vision_tower.layers.gate_proj+up_proj", "encoder", inter, h, 2 * layers),
        WeightTensor("vision_tower.layers.down_proj", "encoder", h, inter, layers),
        WeightTensor("vision_tower.layers.4 RMSNorms", "encoder", h, 1, 4 * layers),
        WeightTensor("embed_vision.embedding_projection", "linear", text_hidden, h, 1, True, in_features_full=h),
    ]
    if vc.get("standardize"):
        out.append(WeightTensor("vision_tower.std_bias+std_scale", "buffer", h, 1, 2))
    if vc.get("use_clipped_linears"):
        # four scalar bounds per clippable linear (7 per layer)
        out.append(WeightTensor("vision_tower clipping bounds", "buffer", 1, 1, 4 * 7 * layers, dtype="float32"))
    return out


# --------------------------------------------------------------------------------------
# gpt-oss
# --------------------------------------------------------------------------------------


@register
class GptOss(_WindowedBase):
    """gpt-oss (vllm/model_executor/models/gpt_oss.py, 0.33.0).

    Attention: biased ``qkv_proj`` / ``o_proj``, per-head ``sinks`` (``num_heads // tp``),
    window ``sliding_window`` on even layers (``layer_idx % 2 == 0``; the config's
    ``layer_types`` is not read), one fp32 YaRN rotary cache of
    ``original_max_position_embeddings × factor`` rows.  MLP block: a replicated biased
    router ``[E, H]`` and ``E`` experts with biases (``w13`` ``[2I, H]``, ``w2`` ``[H, I]``),
    stored mxfp4 in the checkpoint: the expert weights are ``kind="expert"`` and
    quantizable, everything else stays at the model dtype (the config's
    ``modules_to_not_convert``).  Untied LM head.
    """

    architectures = ("GptOssForCausalLM",)
    family = "moe"

    def validate_parallel(self, ctx: GraphContext) -> None:
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)

    def _num_experts(self) -> int:
        return _int(self.config.text, "num_local_experts")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        h = cfg.hidden_size
        tp = ctx.tensor_parallel_size
        start, end = self.layer_range(ctx)
        n = end - start
        out = self._embedding_and_head(ctx, tied=cfg.tie_word_embeddings)
        out += self._attn_tensors(ctx, name="attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n,
                                  qkv_bias=True, o_bias=True)
        if n:
            e = self._num_experts()
            local, inter = moe_shard(ctx, e, cfg.intermediate_size)
            out += [
                WeightTensor("attn.sinks", "norm", cfg.num_attention_heads // tp, 1, n),
                WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n),
                WeightTensor("mlp.router", "router", e, h, n),
                WeightTensor("mlp.router.bias", "bias", e, 1, n),
                WeightTensor("mlp.experts.w13_weight", "expert", 2 * inter, h, n * local, True,
                             in_features_full=h),
                WeightTensor("mlp.experts.w2_weight", "expert", h, inter, n * local, True,
                             in_features_full=cfg.intermediate_size),
                WeightTensor("mlp.experts.w13_bias", "bias", 2 * inter, 1, n * local),
                WeightTensor("mlp.experts.w2_bias", "bias", h, 1, n * local),
                WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                             _rope_positions(cfg.text, cfg.rope_scaling(), cfg.max_position_embeddings),
                             cfg.head_dim, dtype="float32"),
            ]
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Even layers ``SlidingWindowSpec(sliding_window)``, odd layers full attention."""
        cfg = self.config
        window = _window(cfg.text)
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        start, end = self.layer_range(ctx)
        return {
            f"model.layers.{i}.attn.attn": _attention_spec(
                ctx, num_kv_heads=heads, head_size=cfg.head_dim, window=window if i % 2 == 0 else None)
            for i in range(start, end)
        }

    def notes(self) -> tuple[str, ...]:
        n = self.config.num_hidden_layers
        return (f"{(n + 1) // 2} of {n} layers use a {_window(self.config.text)}-token sliding window "
                "with attention sinks",)


# --------------------------------------------------------------------------------------
# Llama-4
# --------------------------------------------------------------------------------------


def llama4_no_rope_layers(text: Mapping[str, Any]) -> list[int]:
    """``no_rope_layers`` (1 = RoPE + chunked local attention, 0 = NoPE global layer).

    An empty or missing list takes transformers' default (Llama4TextConfig): every
    ``no_rope_layer_interval``-th layer (default 4th) is NoPE."""
    n = _int(text, "num_hidden_layers")
    given = text.get("no_rope_layers")
    if isinstance(given, list) and given:
        if len(given) < n:
            raise UsageError(f"no_rope_layers lists {len(given)} layers for {n} hidden layers")
        return [int(x) for x in given[:n]]
    interval = text.get("no_rope_layer_interval", 4)
    if not isinstance(interval, int) or interval < 1:
        interval = 4
    return [int((i + 1) % interval != 0) for i in range(n)]


def chunked_attention_uses_hybrid_manager(vllm_version: Sequence[int] | None = None, *,
                                          speculative_method: str | None = None) -> bool:
    """Whether chunked local layers keep their own spec (hybrid KV cache manager on).

    Mirrors VllmConfig.__post_init__ (vllm/config/vllm.py, 0.33.0): with
    ``attention_chunk_size`` set the manager is disabled for EAGLE-style speculation, or
    when ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` is 0.  That variable
    defaults to 1 from 0.17.0 (read in 0.17.0 … 0.33.0 envs.py) and to 0 in 0.10.x–0.13.0;
    releases 0.14–0.16 were not read and are treated as 0.17.0.  With the manager off the
    chunked layers are allocated as full attention.
    """
    if speculative_method and ("eagle" in speculative_method.lower() or speculative_method == "mtp"):
        return False
    if vllm_version is not None and tuple(vllm_version[:2]) < (0, 14):
        return False
    return True


@register
class Llama4(_WindowedBase):
    """Llama-4 text model (vllm/model_executor/models/llama4.py, 0.33.0).

    Attention: fused ``qkv_proj`` / ``o_proj`` without biases; RoPE layers use
    ``ChunkedLocalAttention(attention_chunk_size)``, NoPE layers (``no_rope_layers[i] == 0``)
    plain global attention; the qk norm has no weight.  FFN: layer ``i`` is MoE when
    ``(i + 1) % interleave_moe_layer_step == 0`` (router ``[E, H]``, experts of width
    ``intermediate_size``, one shared expert as a TP-split gated MLP of the same width),
    otherwise a dense MLP of width ``intermediate_size_mlp``.  One rotary cache (llama3
    scaling keeps ``max_position_embeddings`` rows).  Untied head.
    The KV specs follow 0.33.0's default (hybrid manager on: chunked layers keep a
    ``ChunkedLocalAttentionSpec``); the planner passes
    ``disable_hybrid_kv_cache_manager`` when :func:`chunked_attention_uses_hybrid_manager`
    says otherwise, and the pool then allocates those layers as full attention.
    """

    architectures = ("Llama4ForCausalLM", "Llama4ForConditionalGeneration")
    family = "moe"
    modules_on_every_stage = False

    def validate_parallel(self, ctx: GraphContext) -> None:
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)

    def _is_moe_layer(self, index: int) -> bool:
        step = _int(self.config.text, "interleave_moe_layer_step", 1)
        return step > 0 and (index + 1) % step == 0

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        h = cfg.hidden_size
        start, end = self.layer_range(ctx)
        n = end - start
        out = self._embedding_and_head(ctx, tied=cfg.tie_word_embeddings)
        out += self._attn_tensors(ctx, name="self_attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n,
                                  qkv_bias=bool(text.get("attention_bias", False)),
                                  o_bias=False)
        n_moe = sum(self._is_moe_layer(i) for i in range(start, end))
        n_dense = n - n_moe
        if n_moe:
            e = _int(text, "num_local_experts")
            local, inter = moe_shard(ctx, e, cfg.intermediate_size)
            out += [
                WeightTensor("feed_forward.router", "router", e, h, n_moe),
                WeightTensor("feed_forward.experts.w13_weight", "expert", 2 * inter, h, n_moe * local, True,
                             in_features_full=h),
                WeightTensor("feed_forward.experts.w2_weight", "expert", h, inter, n_moe * local, True,
                             in_features_full=cfg.intermediate_size),
            ]
            out += self._mlp_tensors(ctx, name="feed_forward.shared_expert",
                                     intermediate=cfg.intermediate_size, count=n_moe)
        if n_dense:
            out += self._mlp_tensors(ctx, name="feed_forward(dense)",
                                     intermediate=_int(text, "intermediate_size_mlp"), count=n_dense)
        if n:
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                                    _rope_positions(text, cfg.rope_scaling(), cfg.max_position_embeddings),
                                    cfg.head_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """RoPE layers ``ChunkedLocalAttentionSpec(attention_chunk_size)`` (when the config
        sets a chunk), NoPE layers ``FullAttentionSpec``."""
        cfg = self.config
        chunk = cfg.text.get("attention_chunk_size")
        chunk = int(chunk) if isinstance(chunk, int) and chunk > 0 else None
        rope = llama4_no_rope_layers(cfg.text)
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        start, end = self.layer_range(ctx)
        return {
            f"language_model.model.layers.{i}.self_attn.attn": _attention_spec(
                ctx, num_kv_heads=heads, head_size=cfg.head_dim, chunk=chunk if rope[i] else None)
            for i in range(start, end)
        }

    def disables_hybrid_kv_cache_manager(self, ctx: GraphContext, vllm_version: Sequence[int] | None = None) -> bool:
        if not isinstance(self.config.text.get("attention_chunk_size"), int):
            return False
        return not chunked_attention_uses_hybrid_manager(vllm_version, speculative_method=ctx.speculative_method)

    def notes(self) -> tuple[str, ...]:
        rope = llama4_no_rope_layers(self.config.text)
        chunk = self.config.text.get("attention_chunk_size")
        out = [f"{sum(rope)} chunked-local layers (chunk {chunk}) and {len(rope) - sum(rope)} global NoPE layers"]
        if self.config.architecture == "Llama4ForConditionalGeneration":
            out.append("the vision tower and projector are not included in the weights figure")
        return tuple(out)
