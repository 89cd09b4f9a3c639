"""IQuest LoopCoder (``IQuestLoopCoderForCausalLM``): a Llama stack run ``loop_num`` times, each
pass with its own KV cache: pass 0 a full-attention cache, later passes a sliding-window one.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike

__all__ = ["IQuestLoopCoder"]


def _positive_int(text: Any, key: str, default: int) -> int:
    value = text.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"config.json: {key} must be a whole number >= 1, got {value!r}",
                         hint=f"IQuest LoopCoder reads {key} (default {default})")
    return value


@register
class IQuestLoopCoder(LlamaLike):
    """vllm/model_executor/models/iquest_loopcoder.py::IQuestLoopCoderForCausalLM (0.33.0).

    The weights are Llama's (``LoopCoderDecoderLayer``: QKVParallel ``qkv_proj`` without bias,
    RowParallel ``o_proj``, ``LlamaMLP``, two RMSNorms; vocab-parallel embedding, final norm,
    ``ParallelLMHead`` tied when ``tie_word_embeddings``) plus one ``LoopGateProjection`` a
    layer: a ColumnParallel ``head_dim → num_attention_heads`` linear with bias (``[heads/tp,
    head_dim]`` and ``[heads/tp]`` a rank).  The head size is ``hidden_size //
    num_attention_heads`` (``LoopCoderAttention`` ignores ``head_dim``).

    Each layer builds ``loop_num`` (default 2) ``Attention`` modules, named
    ``model.layers.{loop · L + i}.self_attn.attn``: loop 0 with the engine's cache config (full
    attention), the others with ``CacheConfig.sliding_window = loop_window_size`` (default 64),
    so they get a ``SlidingWindowSpec``.  Every Attention holds its four fp32 scales.
    """

    architectures = ("IQuestLoopCoderForCausalLM",)

    def loops(self) -> tuple[int, int]:
        text = self.config.text
        return _positive_int(text, "loop_num", 2), _positive_int(text, "loop_window_size", 64)

    def _head_dim(self) -> int:
        cfg = self.config
        return cfg.hidden_size // cfg.num_attention_heads

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        if cfg.head_dim != self._head_dim():
            raise UsageError(f"IQuest LoopCoder uses hidden_size // num_attention_heads = {self._head_dim()} as "
                             f"the head size, but the config says head_dim {cfg.head_dim}",
                             hint="vLLM's LoopCoderAttention ignores head_dim; check the config")
        out = super().weight_tensors(ctx)
        loop_num, _ = self.loops()
        start, end = self.layer_range(ctx)
        n = end - start
        tp = ctx.tensor_parallel_size
        heads = cfg.num_attention_heads // tp
        if n:
            out += [
                WeightTensor("gate_projections.gate_proj", "linear", heads, self._head_dim(), n, True,
                             in_features_full=self._head_dim()),
                WeightTensor("gate_projections.gate_proj.bias", "bias", heads, 1, n),
            ]
            if loop_num > 1:
                out.append(attention_scales("self_attn.attn[loop>0]", n * (loop_num - 1)))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        loop_num, window = self.loops()
        heads = self.kv_heads_per_rank(ctx.tensor_parallel_size)
        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        common = dict(block_size=ctx.block_size, num_kv_heads=heads, head_size=self._head_dim(),
                      cache_dtype=cache_dtype, dtype_bytes=nbytes)
        full = FullAttentionSpec(**common)
        local = SlidingWindowSpec(sliding_window=window, **common)
        start, end = self.layer_range(ctx)
        total = cfg.num_hidden_layers
        specs: dict[str, Any] = {}
        for loop in range(loop_num):
            for i in range(start, end):
                specs[f"model.layers.{loop * total + i}.self_attn.attn"] = full if loop == 0 else local
        return specs

    def notes(self) -> tuple[str, ...]:
        loop_num, window = self.loops()
        return (f"the {self.config.num_hidden_layers} layers run {loop_num} times; pass 1 keeps a full "
                f"KV cache, later passes a {window}-token sliding-window cache each",)
