"""HRM-Text (``HrmTextForCausalLM``): two weight-shared transformer stacks (``H`` slow, ``L``
fast) run in nested recurrence loops, each recurrence step of each layer with its own KV cache.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import LlamaLike

__all__ = ["HrmText"]


def _positive_int(text: dict, key: str, default: int | None) -> int:
    value = text.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"config.json: {key} must be a whole number >= 1, got {value!r}",
                         hint="HRM-Text reads H_cycles, L_cycles and num_layers_per_stack")
    return value


@register
class HrmText(LlamaLike):
    """vllm/model_executor/models/hrm_text.py::HrmTextForCausalLM (0.33.0).

    Weights (``HrmTextModel``): a vocab-parallel ``embed_tokens``; two ``HrmTextStack``s
    (``L_module``, ``H_module``) of ``num_layers_per_stack`` ``HrmTextDecoderLayer``s each, so
    ``2 · num_layers_per_stack`` physical layers; a ``z_L_init`` parameter ``[hidden]``; an
    untied (unless ``tie_word_embeddings``) ``ParallelLMHead``.  A layer (``HrmTextAttention``,
    MHA: KV heads = attention heads) holds a MergedColumnParallel ``gqkv_proj`` with four equal
    ``heads · head_dim`` outputs (gate, q, k, v; ``heads/tp · head_dim`` each a rank), a
    RowParallel ``o_proj``, ``HrmTextMLP``'s merged ``gate_up_proj`` and ``down_proj`` (biases
    from ``attention_bias`` / ``mlp_bias``).  Every RMSNorm (``input_layernorm``,
    ``post_attention_layernorm``, each stack's ``final_norm``) is built ``has_weight=False``:
    no parameter, but ``RMSNorm.__init__`` still keeps its ``torch.ones(hidden)`` in the model
    dtype as a plain device tensor (vllm/model_executor/layers/layernorm.py::RMSNorm), so
    ``2 · 2 · num_layers_per_stack + 2`` of them.  One rotary cache ``[max_position_embeddings, head_dim]``.

    KV cache: each layer builds one ``PrefillPrefixLMAttention`` per recurrence step its stack
    runs (``attn_per_step``): the L stack at steps ``h · (L_cycles + 1) + l`` (``H_cycles ·
    L_cycles`` of them), the H stack at ``h · (L_cycles + 1) + L_cycles`` (``H_cycles``), named
    ``model.{L,H}_module.layers.{step · num_layers_per_stack + i}.self_attn.attn`` (the layer's
    prefix with ``layers.{i}`` replaced by that global index, plus ``.attn``).  Each is a
    full-attention layer (its spec only gains ``non_causal=True``, which makes the engine core
    turn chunked prefill and prefix caching off: vllm/v1/engine/core.py::
    EngineCore._initialize_kv_caches) and holds the four fp32 scales.  No pipeline parallelism.
    """

    architectures = ("HrmTextForCausalLM",)

    def cycles(self) -> tuple[int, int, int]:
        text = self.config.text
        h = _positive_int(text, "H_cycles", 2)
        low = _positive_int(text, "L_cycles", 3)
        per = text.get("num_layers_per_stack")
        if per is None:  # transformers' HrmTextConfig.__post_init__: a legacy config's num_hidden_layers
            per = self.config.num_hidden_layers
        return h, low, _positive_int({"num_layers_per_stack": per}, "num_layers_per_stack", None)

    def steps(self) -> dict[str, list[int]]:
        """Recurrence steps each stack runs (HrmTextAttention.__init__'s ``steps_used``)."""
        h, low, _ = self.cycles()
        return {
            "L": [hi * (low + 1) + lo for hi in range(h) for lo in range(low)],
            "H": [hi * (low + 1) + low for hi in range(h)],
        }

    def layer_range(self, ctx: GraphContext) -> tuple[int, int]:
        return 0, self.cycles()[2]

    def kv_heads_per_rank(self, tp: int) -> int:
        return self.config.num_attention_heads // tp  # MHA: total_num_kv_heads = num_attention_heads

    def validate_parallel(self, ctx: GraphContext) -> None:
        if ctx.pipeline_parallel_size > 1:
            raise UsageError("HrmTextForCausalLM does not support pipeline parallelism (vLLM 0.33.0 refuses it)",
                             hint="use --pipeline-parallel-size 1")
        heads = self.config.num_attention_heads
        if heads % ctx.tensor_parallel_size:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} does not divide the "
                             f"{heads} attention heads", hint=f"use a divisor of {heads}")

    def prefix_caching_supported(self) -> bool:
        return False  # non-causal specs: EngineCore._initialize_kv_caches turns prefix caching off

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        self.validate_parallel(ctx)
        tp = ctx.tensor_parallel_size
        h, hd = cfg.hidden_size, cfg.head_dim
        heads = cfg.num_attention_heads
        per_rank = heads // tp * hd
        inter = cfg.intermediate_size // tp
        n = 2 * self.cycles()[2]  # L_module + H_module layers
        vocab_rows = self.rank_span(ctx).vocab_rows
        attn_bias = bool(cfg.text.get("attention_bias", False))
        out = [
            WeightTensor("model.embed_tokens", "embedding", vocab_rows, h),
            WeightTensor("self_attn.gqkv_proj", "linear", 4 * per_rank, h, n, True, in_features_full=h),
            WeightTensor("self_attn.o_proj", "linear", h, per_rank, n, True, in_features_full=heads * hd),
            WeightTensor("mlp.gate_up_proj", "linear", 2 * inter, h, n, True, in_features_full=h),
            WeightTensor("mlp.down_proj", "linear", h, inter, n, True, in_features_full=cfg.intermediate_size),
            WeightTensor("model.z_L_init", "norm", h, 1),
            # weightless RMSNorms: each still holds a plain ones(hidden) device tensor
            WeightTensor("input_layernorm+post_attention_layernorm+final_norm.ones", "norm", h, 1, 2 * n + 2),
            attention_scales("self_attn.attn_per_step", self.num_attention_layers()),
        ]
        if attn_bias:
            out += [WeightTensor("self_attn.gqkv_proj.bias", "bias", 4 * per_rank, 1, n),
                    WeightTensor("self_attn.o_proj.bias", "bias", h, 1, n)]
        if self.mlp_bias():
            out += [WeightTensor("mlp.gate_up_proj.bias", "bias", 2 * inter, 1, n),
                    WeightTensor("mlp.down_proj.bias", "bias", h, 1, n)]
        if not self.head_tied():
            out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        positions, rotary_dim = rope_cache_positions(cfg)
        out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, rotary_dim))
        return out

    def num_attention_layers(self) -> int:
        per = self.cycles()[2]
        return per * sum(len(s) for s in self.steps().values())

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        spec = FullAttentionSpec(block_size=ctx.block_size, num_kv_heads=self.kv_heads_per_rank(ctx.tensor_parallel_size),
                                 head_size=cfg.head_dim, cache_dtype=cache_dtype, dtype_bytes=nbytes)
        per = self.cycles()[2]
        specs: dict[str, Any] = {}
        for stack, steps in self.steps().items():
            for step in steps:
                for i in range(per):
                    specs[f"model.{stack}_module.layers.{step * per + i}.self_attn.attn"] = spec
        return specs

    def notes(self) -> tuple[str, ...]:
        h, low, per = self.cycles()
        return (f"two {per}-layer stacks run {h} x ({low} L + 1 H) recurrence steps: "
                f"{self.num_attention_layers()} KV caches over {2 * per} physical layers; "
                "prefix-LM attention, so vLLM turns prefix caching and chunked prefill off",)
