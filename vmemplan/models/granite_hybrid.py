"""IBM Granite 4.0 hybrids (``GraniteMoeHybridForCausalLM``): Mamba-2 and attention layers,
each followed by an optional routed MoE and an optional shared MLP.

Mirrors vllm/model_executor/models/granitemoehybrid.py (GraniteMoeHybridModel,
GraniteMoeHybridMambaDecoderLayer, GraniteMoeHybridAttentionDecoderLayer,
GraniteMoeHybridAttention), granitemoe.py::GraniteMoeMoE, granitemoeshared.py::
GraniteMoeSharedMLP and vllm/model_executor/layers/mamba/mamba_mixer2.py::MambaMixer2
(0.33.0).  ``layer_types`` lists "mamba" / "attention" per layer (transformers'
GraniteMoeHybridConfig); the Mamba-2 mixer is built with the model's quant config; the
attention has no rotary embedding unless ``position_embedding_type`` is "rope".
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import pad_vocab
from vmemplan.models.hybrid import (
    HybridAdapter,
    LayerKind,
    StateTensor,
    experts_per_rank,
    mamba2_state,
    state_dtypes,
)
from vmemplan.models.hybrid_mamba import MAMBA2_CHECKPOINT_SINCE, mamba2_mixer_tensors

__all__ = ["GraniteMoeHybrid"]


def _need(text, key: str) -> int:
    value = text.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"config.json lacks {key!r} (needed for the Mamba-2 layers)")
    return value


@register
class GraniteMoeHybrid(HybridAdapter):
    """Granite 4.0-H: ``layer_types`` picks a Mamba-2 mixer or grouped-query attention per
    layer; every layer then runs ``block_sparse_moe`` (when ``num_local_experts`` > 0) and
    ``shared_mlp`` (when ``shared_intermediate_size`` > 0)."""

    architectures = ("GraniteMoeHybridForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    def _get(self, key: str, default=None):
        v = self.config.text.get(key, default)
        return default if v is None else v

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        types = self.config.text.get("layer_types")
        n = self.config.num_hidden_layers
        if not isinstance(types, list) or len(types) != n:
            raise ModelConfigError("config.json lacks 'layer_types' with one entry per layer (Granite 4.0 hybrid)")
        table: dict[str, LayerKind] = {"mamba": "mamba", "attention": "attention"}
        bad = sorted({str(t) for t in types} - set(table))
        if bad:
            raise ModelConfigError(f"layer_types has unknown kinds {bad}")
        return tuple(table[t] for t in types)

    @property
    def family(self):  # type: ignore[override]
        return "moe" if self._get("num_local_experts", 0) else "dense"

    @property
    def attention_head_size(self) -> int:
        # GraniteMoeHybridAttention: head_dim = hidden_size // num_attention_heads
        return self.config.hidden_size // self.config.num_attention_heads

    def _inner(self) -> int:
        return int(self._get("mamba_expand", 2)) * self.config.hidden_size

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-2 state (GraniteMoeHybridForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        conv, ssm = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        t = self.config.text
        return mamba2_state(
            tp=ctx.tensor_parallel_size, intermediate_size=self._inner(), n_groups=int(self._get("mamba_n_groups", 1)),
            num_heads=_need(t, "mamba_n_heads"), head_dim=_need(t, "mamba_d_head"),
            state_size=_need(t, "mamba_d_state"), conv_kernel=_need(t, "mamba_d_conv"),
            num_spec=ctx.num_speculative_tokens, conv_dtype=conv, ssm_dtype=ssm,
        )

    def prefill_checkpoint_blocks(self, ctx: GraphContext, mode: str) -> int:
        """MambaMixer2's one prefill-checkpoint page in "align" mode (as Nemotron-H:
        :meth:`vmemplan.models.hybrid_mamba.NemotronH.prefill_checkpoint_blocks`)."""
        return 1 if (mode == "align" and ctx.at_least(*MAMBA2_CHECKPOINT_SINCE)) else 0

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings

    @property
    def intermediate_size(self) -> int:
        e = int(self._get("num_local_experts", 0))
        routed = int(self._get("intermediate_size", 0)) * int(self._get("num_experts_per_tok", 1)) if e else 0
        return routed + int(self._get("shared_intermediate_size", 0))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        t = cfg.text
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        hd = self.attention_head_size
        kinds = self.layer_kinds()
        start, end = self.layer_range(ctx)
        rng = range(start, end)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        lin, vec = self.linear, self.vector
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        n_attn = sum(1 for i in rng if kinds[i] == "attention")
        n_mamba = len(rng) - n_attn
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n_attn:
            q_rows = cfg.num_attention_heads // tp * hd
            kv_rows = self.attention_kv_heads(tp) * hd
            out += [
                lin("self_attn.qkv_proj", q_rows + 2 * kv_rows, h, n_attn, in_full=h),
                lin("self_attn.o_proj", h, q_rows, n_attn, in_full=h),
                attention_scales("self_attn.attn", n_attn),
            ]
            if self._get("attention_bias", False):
                out += [vec("self_attn.qkv_proj.bias", q_rows + 2 * kv_rows, n_attn, kind="bias"),
                        vec("self_attn.o_proj.bias", h, n_attn, kind="bias")]
            if self._get("position_embedding_type", "nope") == "rope":
                positions, _ = rope_cache_positions(cfg)
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, hd))
        if n_mamba:
            out += mamba2_mixer_tensors(
                tp=tp, hidden_size=h, intermediate_size=self._inner(), n_groups=int(self._get("mamba_n_groups", 1)),
                num_heads=_need(t, "mamba_n_heads"), state_size=_need(t, "mamba_d_state"),
                conv_kernel=_need(t, "mamba_d_conv"), use_conv_bias=bool(self._get("mamba_conv_bias", True)),
                use_bias=bool(self._get("mamba_proj_bias", False)), count=n_mamba, prefix="mamba",
            )
        n = len(rng)
        e = int(self._get("num_local_experts", 0))
        if n and e:
            inter = _need(t, "intermediate_size")
            local, div = experts_per_rank(e, ctx)
            out += [
                WeightTensor("block_sparse_moe.gate", "router", e, h, n),
                WeightTensor("block_sparse_moe.experts.w13", "expert", 2 * inter // div, h, local * n, True,
                             in_features_full=h, allocations=n),
                WeightTensor("block_sparse_moe.experts.w2", "expert", h, inter // div, local * n, True,
                             in_features_full=inter, allocations=n),
            ]
        shared = int(self._get("shared_intermediate_size", 0))
        if n and shared:
            out += [
                lin("shared_mlp.input_linear", 2 * shared // tp, h, n, in_full=h),
                lin("shared_mlp.output_linear", h, shared // tp, n, in_full=shared),
            ]
        if n:
            out.append(vec("input_layernorm+post_attention_layernorm", h, 2 * n))
        if last:
            out.append(vec("model.norm", h, 1))
            if not (cfg.tie_word_embeddings and first):
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        return out
