"""Heterogeneous (NAS-derived) Llama: ``DeciLMForCausalLM`` (Llama-3.1/3.3-Nemotron
Super / Ultra, DeciLM).

Mirrors vllm/model_executor/models/nemotron_nas.py (0.33.0).  ``block_configs[i]``
describes layer ``i``:

* ``attention.no_op``: the layer has no attention, no ``input_layernorm`` and no KV cache
  (vllm/config/model.py::ModelConfig.get_num_layers_by_block_type counts only the others);
  otherwise a Llama attention with ``num_attention_heads // attention.n_heads_in_group``
  KV heads;
* ``ffn.no_op``: no MLP and no ``post_attention_layernorm``; otherwise a gated MLP of width
  ``_find_multiple(int(2 × ffn_mult × hidden / 3), 256)`` (or ``ffn.intermediate_size``).

``replace_with_linear`` blocks are not built by vLLM 0.33.0 (the layer code only reads
``no_op``): a block asking for one is rejected rather than sized wrongly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UnsupportedArchitecture, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import LlamaLike, pad_vocab

__all__ = ["DeciLM", "ffn_mult_to_intermediate_size", "BlockShape"]


def ffn_mult_to_intermediate_size(ffn_mult: float, hidden_size: int) -> int:
    """``int(2 × ffn_mult × hidden / 3)`` rounded up to a multiple of 256
    (nemotron_nas.py::_ffn_mult_to_intermediate_size / _find_multiple)."""
    size = int(2 * ffn_mult * hidden_size / 3)
    return -(-size // 256) * 256


class BlockShape(tuple):
    """``(kv_heads or None, intermediate or None)`` of one layer (None = no-op)."""

    __slots__ = ()

    def __new__(cls, kv_heads: int | None, intermediate: int | None):
        return super().__new__(cls, (kv_heads, intermediate))

    @property
    def kv_heads(self) -> int | None:
        return self[0]

    @property
    def intermediate(self) -> int | None:
        return self[1]


def _section(block: Any, key: str, index: int) -> Mapping[str, Any]:
    sec = block.get(key) if isinstance(block, Mapping) else None
    if not isinstance(sec, Mapping):
        raise UsageError(f"block_configs[{index}] lacks its {key!r} section")
    return sec


def _builds(sec: Mapping[str, Any], index: int, what: str, block: str) -> bool:
    """Whether the section builds its block (False: ``no_op``); vLLM 0.33.0 refuses a block
    ``replace_with_linear`` turns into one linear layer."""
    if sec.get("no_op", False):
        return False
    if sec.get("replace_with_linear", False):
        raise UnsupportedArchitecture(f"block_configs[{index}] replaces {what} with a linear layer",
                                      hint=f"vLLM 0.33.0 builds only no-op or {block} blocks")
    return True


@register
class DeciLM(LlamaLike):
    """Per-layer Llama blocks from ``block_configs``."""

    architectures = ("DeciLMForCausalLM",)

    def block_shapes(self) -> list[BlockShape]:
        cfg = self.config
        blocks = cfg.text.get("block_configs")
        if not isinstance(blocks, list) or len(blocks) < cfg.num_hidden_layers:
            raise UsageError(
                "DeciLMForCausalLM needs block_configs with one entry per hidden layer",
                hint="is this the model's config.json?",
            )
        out = []
        for i in range(cfg.num_hidden_layers):
            attn = _section(blocks[i], "attention", i)
            ffn = _section(blocks[i], "ffn", i)
            kv: int | None = None
            if _builds(attn, i, "attention", "attention"):
                group = attn.get("n_heads_in_group")
                if not isinstance(group, int) or group < 1 or cfg.num_attention_heads % group:
                    raise UsageError(f"block_configs[{i}].attention.n_heads_in_group is {group!r}")
                kv = cfg.num_attention_heads // group
            inter: int | None = None
            if _builds(ffn, i, "the FFN", "MLP"):
                mult = ffn.get("ffn_mult")
                if isinstance(mult, (int, float)) and not isinstance(mult, bool):
                    inter = ffn_mult_to_intermediate_size(float(mult), cfg.hidden_size)
                elif isinstance(ffn.get("intermediate_size"), int):
                    inter = int(ffn["intermediate_size"])
                else:
                    raise UsageError(f"block_configs[{i}].ffn has neither ffn_mult nor intermediate_size")
            out.append(BlockShape(kv, inter))
        return out

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        if heads % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads")
        for i, b in enumerate(self.block_shapes()):
            kv = b.kv_heads
            if kv is not None and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
                raise UsageError(f"--tensor-parallel-size {tp} and layer {i}'s {kv} KV heads do not divide one another")
            if b.intermediate is not None and b.intermediate % tp:
                raise UsageError(f"--tensor-parallel-size {tp} does not divide layer {i}'s FFN width {b.intermediate}")

    @property
    def intermediate_size(self) -> int:
        widths = [b.intermediate for b in self.block_shapes() if b.intermediate]
        return max(widths) if widths else self.config.intermediate_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """Embedding on the first stage (and a tied last stage), head and final norm on the
        last; per layer what its block builds (DeciModel / DeciLMDecoderLayer)."""
        cfg = self.config
        tp = ctx.tensor_parallel_size
        h, hd = cfg.hidden_size, cfg.head_dim
        q_rows = cfg.num_attention_heads // tp * hd
        start, end = self.layer_range(ctx)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        if first or (cfg.tie_word_embeddings and last):
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        shapes = self.block_shapes()[start:end]
        attn_count: dict[int, int] = {}
        ffn_count: dict[int, int] = {}
        for b in shapes:
            if b.kv_heads is not None:
                attn_count[b.kv_heads] = attn_count.get(b.kv_heads, 0) + 1
            if b.intermediate is not None:
                ffn_count[b.intermediate] = ffn_count.get(b.intermediate, 0) + 1
        for kv, n in sorted(attn_count.items()):
            kv_rows = max(1, kv // tp) * hd
            out += [
                WeightTensor(f"self_attn[kv{kv}].qkv_proj", "linear", q_rows + 2 * kv_rows, h, n, True,
                             in_features_full=h),
                WeightTensor(f"self_attn[kv{kv}].o_proj", "linear", h, q_rows, n, True,
                             in_features_full=cfg.num_attention_heads * hd),
                WeightTensor(f"input_layernorm[kv{kv}]", "norm", h, 1, n),
            ]
            if self.qkv_bias():
                out.append(WeightTensor(f"self_attn[kv{kv}].qkv_proj.bias", "bias", q_rows + 2 * kv_rows, 1, n))
            if self.o_bias():
                out.append(WeightTensor(f"self_attn[kv{kv}].o_proj.bias", "bias", h, 1, n))
        for inter, n in sorted(ffn_count.items()):
            part = inter // tp
            out += [
                WeightTensor(f"mlp[{inter}].gate_up_proj", "linear", 2 * part, h, n, True, in_features_full=h),
                WeightTensor(f"mlp[{inter}].down_proj", "linear", h, part, n, True, in_features_full=inter),
                WeightTensor(f"post_attention_layernorm[{inter}]", "norm", h, 1, n),
            ]
            if self.mlp_bias():
                out += [WeightTensor(f"mlp[{inter}].gate_up_proj.bias", "bias", 2 * part, 1, n),
                        WeightTensor(f"mlp[{inter}].down_proj.bias", "bias", h, 1, n)]
        if attn_count:
            # each Attention layer's four fp32 scalars (attention.py::set_default_quant_scales)
            out.append(attention_scales("self_attn.attn", sum(attn_count.values())))
        if last:
            out.append(WeightTensor("model.norm", "norm", h, 1))
            if not cfg.tie_word_embeddings:
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        if attn_count:
            positions, rotary_dim = rope_cache_positions(cfg)
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, rotary_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """A ``FullAttentionSpec`` for each attention layer on this stage, with that layer's
        per-rank KV heads ``max(1, kv // tp)``; no-op layers own none.  Different head
        counts give different pages, so vLLM bundles them in one
        ``UniformTypeKVCacheSpecs`` group (page = sum)."""

        cfg = self.config
        tp = ctx.tensor_parallel_size
        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        start, end = self.layer_range(ctx)
        shapes = self.block_shapes()
        return {
            f"model.layers.{i}.self_attn.attn": FullAttentionSpec(
                block_size=ctx.block_size, num_kv_heads=max(1, shapes[i].kv_heads // tp),
                head_size=cfg.head_dim, cache_dtype=cache_dtype, dtype_bytes=nbytes,
            )
            for i in range(start, end)
            if shapes[i].kv_heads is not None
        }

    def notes(self) -> tuple[str, ...]:
        shapes = self.block_shapes()
        no_attn = sum(b.kv_heads is None for b in shapes)
        no_ffn = sum(b.intermediate is None for b in shapes)
        return (f"heterogeneous layers: {no_attn} without attention, {no_ffn} without FFN, "
                f"{len({b.kv_heads for b in shapes if b.kv_heads})} KV-head counts, "
                f"{len({b.intermediate for b in shapes if b.intermediate})} FFN widths",)
