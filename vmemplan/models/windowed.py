"""What the sliding-window, chunked-local and interleaved local/global families share.

The families live one a module (each registers its adapter with ``@register``):
``mistral_windowed`` (Mistral-7B-v0.1's model-level window), ``gemma2``, ``gemma3``,
``gemma4``, ``gpt_oss`` and ``llama4``.  Here: config readers, the per-rank head split, the
attention spec a window layer gets, rotary-cache sizes and :class:`_WindowedBase`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import ChunkedLocalAttentionSpec, FullAttentionSpec, SlidingWindowSpec
from vmemplan.laws import moe
from vmemplan.models.base import Adapter, pad_vocab
from vmemplan.models.dense_blocks import kv_spec_fields

__all__ = ["gemma_layer_types", "moe_shard", "per_layer_list", "window_global_notes"]

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
    listed = per_layer_list(text, "layer_types", n)
    if listed is not None:
        return [str(x) for x in listed]
    pattern = text.get("sliding_window_pattern", default_pattern)
    if not isinstance(pattern, int) or pattern < 1:
        pattern = default_pattern
    return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n)]


def per_layer_list(text: Mapping[str, Any], key: str, num_layers: int) -> list[Any] | None:
    """The first ``num_layers`` entries of the per-layer list ``text[key]``; None when the
    config has no such (non-empty) list, an error when it lists fewer layers than the model has."""
    given = text.get(key)
    if not isinstance(given, list) or not given:
        return None
    if len(given) < num_layers:
        raise UsageError(f"{key} lists {len(given)} layers for {num_layers} hidden layers")
    return given[:num_layers]


def window_global_notes(types: list[str], kv_shared_layers: int) -> list[str]:
    """The notes of an interleaved window/global model with a KV-sharing tail (Gemma-3n, Gemma-4)."""
    out = [f"{sum(t == 'sliding_attention' for t in types)} window and "
           f"{sum(t == 'full_attention' for t in types)} global layers"]
    if kv_shared_layers:
        out.append(f"the last {kv_shared_layers} layers reuse earlier layers' KV caches and own none")
    return out


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


def _attention_spec(ctx: GraphContext, *, num_kv_heads: int, head_size: int, window: int | None = None,
                    chunk: int | None = None):
    """The spec ``Attention.get_kv_cache_spec`` returns for one layer (0.33.0):
    ``SlidingWindowSpec`` with a window, ``ChunkedLocalAttentionSpec`` for
    ``ChunkedLocalAttention``, else ``FullAttentionSpec``.  The window layer's block size is
    the primary block size (``_largest_kernel_block_within`` picks it whenever the backend
    runs it; the page unification then scales it if pages differ)."""
    common = kv_spec_fields(ctx, num_kv_heads=num_kv_heads, head_size=head_size)
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

    def validate_parallel(self, ctx: GraphContext) -> None:
        """TP must divide the attention heads and split or replicate whole KV heads."""
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)

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

    def _window_specs(self, ctx: GraphContext, types: list[str], *, window: int | None,
                      window_type: str = "sliding_attention",
                      shape: Callable[[int], tuple[int, int]] | None = None,
                      skip: Callable[[int], bool] | None = None) -> dict[str, Any]:
        """One spec per layer of the stage, keyed ``model.layers.{i}.self_attn.attn``: a
        ``SlidingWindowSpec(window)`` on the layers whose type is ``window_type``, a
        ``FullAttentionSpec`` on the others, with per-rank KV heads ``max(1, KV // tp)``.
        ``shape(i)`` gives layer ``i``'s (head size, total KV heads) (default: the config's);
        a layer for which ``skip(i)`` holds owns no spec (GPUModelRunner.get_kv_cache_spec
        skips the layers with a ``kv_sharing_target_layer_name``, 0.33.0)."""
        cfg = self.config
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            if skip is not None and skip(i):
                continue
            head_size, kv = shape(i) if shape is not None else (cfg.head_dim, cfg.num_key_value_heads)
            specs[f"model.layers.{i}.self_attn.attn"] = _attention_spec(
                ctx, num_kv_heads=_kv_heads(kv, ctx.tensor_parallel_size), head_size=head_size,
                window=window if types[i] == window_type else None)
        return specs

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
