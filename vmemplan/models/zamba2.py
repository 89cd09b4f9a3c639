"""Zyphra Zamba2 (``Zamba2ForCausalLM``): a Mamba-2 mixer in every layer; each "hybrid"
layer first runs one of ``num_mem_blocks`` *shared* transformer blocks (attention over
``concat(hidden, embedding)``, GELU MLP, per-use LoRA adapters), projected by its own
``linear``.  Every use of a shared block has its own ``Attention`` (``model.attn.{j}``), so
every hybrid layer caches keys/values besides its Mamba-2 state.

Mirrors vllm/model_executor/models/zamba2.py (Zamba2LoRA, Zamba2Attention, Zamba2MLP,
Zamba2AttentionDecoderLayer, Zamba2MambaDecoderLayer, Zamba2HybridLayer, Zamba2Model,
Zamba2ForCausalLM) and vllm/model_executor/layers/mamba/mamba_mixer2.py::MambaMixer2 (0.33.0).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.hybrid import HybridAdapter, LayerKind, StateTensor, _divide
from vmemplan.models.mixer_blocks import Mamba2CheckpointPage, mamba2_layer_state, mamba2_mixer_tensors, mlp_tensors
from vmemplan.models.mixer_blocks import need_int as _need

__all__ = ["Zamba2", "zamba2_attention_index"]


def zamba2_attention_index(hybrid_index: int, num_hybrid: int, num_mem_blocks: int) -> int:
    """The ``j`` of ``model.attn.{j}`` the ``hybrid_index``-th hybrid layer's Attention gets:
    shared block ``b = k % M`` numbers its uses from ``b * (H + M - 1) // M``
    (vllm/model_executor/models/zamba2.py::Zamba2Attention.__init__, 0.33.0)."""
    b = hybrid_index % num_mem_blocks
    return b * (num_hybrid + num_mem_blocks - 1) // num_mem_blocks + hybrid_index // num_mem_blocks


@register
class Zamba2(Mamba2CheckpointPage, HybridAdapter):
    """Zamba2: ``layers_block_type`` lists "mamba" (or "linear_attention") / "hybrid"; a hybrid layer holds a Mamba-2
    mixer *and* (through its shared block) an attention cache.  Shared-block weights are
    held once per block; adapters, ``linear`` and attention scales once per use."""

    architectures = ("Zamba2ForCausalLM",)

    def _types(self) -> list[str]:
        types = self.config.text.get("layers_block_type")
        if not isinstance(types, list) or not types:
            raise ModelConfigError("config.json lacks 'layers_block_type' (Zamba2's layer plan)")
        # transformers >= 5 (remap_legacy_layer_types) writes "linear_attention" for "mamba";
        # Zamba2Model builds a hybrid layer for "hybrid" and a Mamba layer for anything else
        bad = sorted({str(t) for t in types} - {"mamba", "linear_attention", "hybrid"})
        if bad:
            raise ModelConfigError(f"layers_block_type has unknown kinds {bad}")
        return types

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        return tuple("attention+mamba" if t == "hybrid" else "mamba" for t in self._types())

    def layer_range(self, ctx: GraphContext) -> tuple[int, int]:
        # Zamba2ForCausalLM is not SupportsPP: every layer lives on one stage
        return 0, len(self._types())

    def _heads(self) -> int:
        return self.config.num_attention_heads

    def _attn_hidden(self) -> int:
        return int(self._get("attention_hidden_size", 2 * self.config.hidden_size))

    @property
    def attention_head_size(self) -> int:
        return int(self._get("attention_head_dim", self._attn_hidden() // self._heads()))

    def attention_kv_heads(self, tp: int) -> int:
        # Zamba2Attention builds Attention without num_kv_heads: one KV head per query head
        return _divide(self._heads(), tp, "attention heads")

    def _inner(self) -> int:
        return int(self._get("mamba_expand", 2)) * self.config.hidden_size

    def _mamba_heads(self) -> int:
        return _need(self.config.text, "n_mamba_heads")

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-2 state (Zamba2ForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        t = self.config.text
        return mamba2_layer_state(
            ctx, intermediate_size=self._inner(), n_groups=int(self._get("mamba_ngroups", 1)),
            num_heads=self._mamba_heads(), head_dim=_need(t, "mamba_headdim"),
            state_size=_need(t, "mamba_d_state"), conv_kernel=_need(t, "mamba_d_conv"),
        )

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        if ctx.pipeline_parallel_size > 1:
            raise ModelConfigError("Zamba2ForCausalLM does not support pipeline parallelism in vLLM 0.33.0")
        self.attention_kv_heads(ctx.tensor_parallel_size)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings

    def kv_cache_specs_for(self, ctx: GraphContext, **kw: Any) -> dict[str, Any]:
        """The base specs renamed as vLLM names the layers: each use's Attention
        ``model.attn.{j}`` (:func:`zamba2_attention_index`), each mixer ``{H + i}.mixer``
        (Zamba2Model.__init__ prefixes layer ``i`` with ``str(H + i)``)."""
        specs = super().kv_cache_specs_for(ctx, **kw)
        kinds = self.layer_kinds()
        n_h = sum(1 for k in kinds if k == "attention+mamba")
        m = int(self._get("num_mem_blocks", 1))
        out: dict[str, Any] = {}
        k = 0
        for i, kind in enumerate(kinds):
            if kind == "attention+mamba":
                out[f"model.attn.{zamba2_attention_index(k, n_h, m)}"] = specs[self.attention_layer_name.format(i=i)]
                k += 1
            out[f"{n_h + i}.mixer"] = specs[self.mamba_layer_name.format(i=i)]
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        t = cfg.text
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        kinds = self.layer_kinds()
        n = len(kinds)
        n_h = sum(1 for k in kinds if k == "attention+mamba")
        m = int(self._get("num_mem_blocks", 1))
        a = self._attn_hidden()
        hd = self.attention_head_size
        q_rows = self.attention_kv_heads(tp) * hd
        inter = cfg.intermediate_size
        rank = int(self._get("adapter_rank", 128))
        bias = bool(self._get("add_bias_linear", False))
        lin, vec = self.linear, self.vector
        out = [WeightTensor("model.embed_tokens", "embedding", self.rank_span(ctx).vocab_rows, h)]  # lm_head tied
        if n_h:
            out += [
                # the num_mem_blocks shared blocks (Zamba2AttentionDecoderLayer), each held once
                lin("shared.self_attn.qkv_proj", 3 * q_rows, a, m, in_full=a),
                lin("shared.self_attn.o_proj", h, a // tp, m, in_full=a),
                *mlp_tensors("shared.feed_forward", tp=tp, hidden=h, inter=inter, count=m),
                vec("shared.input_layernorm", 2 * h, m),
                vec("shared.pre_ff_layernorm", h, m),
                # one per use: its Attention's scales, MLP LoRA (A gathers, B column-split),
                # and the hybrid layer's ReplicatedLinear
                attention_scales("model.attn", n_h),
                lin("feed_forward.gate_up_proj_adapter.A", rank // tp, h, n_h, in_full=h),
                lin("feed_forward.gate_up_proj_adapter.B", 2 * inter // tp, rank, n_h, in_full=rank),
                lin("linear", h, h, n_h, in_full=h),
            ]
            if bias:
                out += [vec("shared.feed_forward.gate_up_proj.bias", 2 * inter // tp, m, kind="bias"),
                        vec("shared.feed_forward.down_proj.bias", h, m, kind="bias")]
            if self._get("use_shared_attention_adapter", False):
                out += [lin("self_attn.linear_q/k/v_adapter.A", rank // tp, a, 3 * n_h, in_full=a),
                        lin("self_attn.linear_q/k/v_adapter.B", a // tp, rank, 3 * n_h, in_full=rank)]
            if self._get("use_mem_rope", False):
                # get_rope caches the module: one cos/sin cache for every block
                positions, _ = rope_cache_positions(cfg)
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, hd))
        out += mamba2_mixer_tensors(
            tp=tp, hidden_size=h, intermediate_size=self._inner(), n_groups=int(self._get("mamba_ngroups", 1)),
            num_heads=self._mamba_heads(), state_size=_need(t, "mamba_d_state"),
            conv_kernel=_need(t, "mamba_d_conv"), use_conv_bias=bool(self._get("use_conv_bias", True)),
            use_bias=bias, count=n, prefix="mamba",
        )
        out += [vec("input_layernorm", h, n), vec("model.final_layernorm", h, 1)]
        return out
