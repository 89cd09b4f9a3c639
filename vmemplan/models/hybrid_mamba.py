"""Mamba hybrids: Jamba (Mamba-1 + attention + MoE) and Nemotron-H (Mamba-2 + attention +
MLP / MoE).

Mirrors vllm/model_executor/models/jamba.py with vllm/model_executor/layers/mamba/
mamba_mixer.py (MambaMixer), and vllm/model_executor/models/nemotron_h.py with
vllm/model_executor/layers/mamba/mamba_mixer2.py (MambaMixer2), 0.33.0.
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import LayerKind, StateTensor, mamba1_state, state_dtypes
from vmemplan.models.mixer_blocks import (
    Mamba2Hybrid,
    RecurrentHybrid,
    embedding_tensors,
    fused_expert_tensors,
    gqa_attention_tensors,
    head_tensors,
    mamba1_mixer_tensors,
    mamba2_layer_state,
    mamba2_mixer_tensors,
    mlp_tensors,
    need_int,
    stated_head_dim,
)

__all__ = ["Jamba", "NemotronH"]


def _int(text, key: str) -> int:
    return need_int(text, key, " (needed for the Mamba layers)")


@register
class Jamba(RecurrentHybrid):
    """AI21 Jamba: attention every ``attn_layer_period`` layers (at ``attn_layer_offset``),
    Mamba-1 elsewhere; MoE feed-forward every ``expert_layer_period`` layers.

    Layer plan from transformers JambaConfig.layers_block_type / layers_num_experts (4.57.1).
    The Mamba mixer is built without a quant config (every projection stays at the model
    width); attention has no rotary embedding.
    """

    architectures = ("JambaForCausalLM",)
    attention_layer_name = "model.layers.{i}.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        period = self._get("attn_layer_period", 8)
        offset = self._get("attn_layer_offset", 4)
        return tuple("attention" if i % period == offset else "mamba"
                     for i in range(self.config.num_hidden_layers))

    def layers_num_experts(self) -> tuple[int, ...]:
        period = self._get("expert_layer_period", 2)
        offset = self._get("expert_layer_offset", 1)
        e = self._get("num_experts", 16)
        return tuple(e if i % period == offset else 1 for i in range(self.config.num_hidden_layers))

    @property
    def family(self):  # type: ignore[override]
        return "moe" if max(self.layers_num_experts()) > 1 else "dense"

    @property
    def attention_head_size(self) -> int:
        # JambaAttentionDecoderLayer: head_dim = hidden_size // num_attention_heads
        return self.config.hidden_size // self.config.num_attention_heads

    def _inner(self) -> int:
        return self._get("mamba_expand", 2) * self.config.hidden_size

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-1 state (JambaForCausalLM.get_mamba_state_shape_from_config, 0.33.0)."""
        conv, ssm = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return mamba1_state(
            tp=ctx.tensor_parallel_size,
            intermediate_size=self._inner(),
            state_size=_int(self.config.text, "mamba_d_state"),
            conv_kernel=_int(self.config.text, "mamba_d_conv"),
            conv_dtype=conv,
            ssm_dtype=ssm,
        )

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg, text = self.config, self.config.text
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        kinds = self.stage_kinds(span)
        experts = self.layers_num_experts()
        n_moe = sum(1 for i in range(span.start, span.end) if experts[i] > 1)
        n_mlp = span.layers - n_moe
        out = embedding_tensors(span)
        if kinds["attention"]:
            out += gqa_attention_tensors("attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp),
                                         head_dim=self.attention_head_size, count=kinds["attention"])
        if kinds["mamba"]:
            out += mamba1_mixer_tensors(
                tp=tp, hidden_size=h, intermediate_size=self._inner(), state_size=_int(text, "mamba_d_state"),
                dt_rank=_int(text, "mamba_dt_rank"), conv_kernel=_int(text, "mamba_d_conv"), count=kinds["mamba"],
                conv_bias=bool(self._get("mamba_conv_bias", True)),
                proj_bias=bool(self._get("mamba_proj_bias", False)), inner_norms=True,
            )
        inter = cfg.intermediate_size
        if n_moe:
            e = self._get("num_experts", 16)
            out.append(WeightTensor("feed_forward.router", "router", e, h, n_moe))
            out += fused_expert_tensors("feed_forward.experts", num_experts=e, inter=inter, hidden=h, count=n_moe,
                                        ctx=ctx)
        if n_mlp:
            out += mlp_tensors("feed_forward", tp=tp, hidden=h, inter=inter, count=n_mlp)
        if span.layers:
            out.append(self.vector("input_layernorm+pre_ff_layernorm", h, 2 * span.layers))
        return out + head_tensors(span, norm="model.final_layernorm", tied=cfg.tie_word_embeddings)


@register
class NemotronH(Mamba2Hybrid):
    """NVIDIA Nemotron-H / Nemotron-3: ``hybrid_override_pattern`` letters M (Mamba-2),
    ``*`` (attention), ``-`` (relu² MLP), E (MoE), one block per layer.  The SSM state
    defaults to float32 (config ``mamba_ssm_cache_dtype`` else float32:
    vllm/model_executor/models/config.py::NemotronHForCausalLMConfig, 0.33.0)."""

    architectures = ("NemotronHForCausalLM",)  # NemotronHPuzzleForCausalLM: models/nemotron_h_puzzle.py
    attention_layer_name = "model.layers.{i}.mixer.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    def pattern(self) -> str:
        p = self.config.text.get("hybrid_override_pattern")
        if not isinstance(p, str) or not p:
            raise ModelConfigError("config.json lacks 'hybrid_override_pattern'")
        bad = set(p) - set("M*-E")
        if bad:
            raise ModelConfigError(f"hybrid_override_pattern has unknown layer letters {sorted(bad)}")
        return p

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        table: dict[str, LayerKind] = {"M": "mamba", "*": "attention", "-": "none", "E": "none"}
        return tuple(table[c] for c in self.pattern())

    @property
    def family(self):  # type: ignore[override]
        return "moe" if "E" in self.pattern() else "dense"

    @property
    def attention_head_size(self) -> int:
        return stated_head_dim(self.config)

    def _mamba_inner(self) -> int:
        return _int(self.config.text, "mamba_num_heads") * _int(self.config.text, "mamba_head_dim")

    def ssm_dtype(self, ctx: GraphContext) -> str:
        if ctx.mamba_ssm_cache_dtype != "auto":
            return ctx.mamba_ssm_cache_dtype
        return str(self._get("mamba_ssm_cache_dtype", "float32"))

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-2 state (NemotronHForCausalLM.get_mamba_state_shape_from_config, 0.33.0; the
        ReplaySSM ring is off by default)."""
        t = self.config.text
        return mamba2_layer_state(
            ctx, intermediate_size=self._mamba_inner(), n_groups=_int(t, "n_groups"),
            num_heads=_int(t, "mamba_num_heads"), head_dim=_int(t, "mamba_head_dim"),
            state_size=_int(t, "ssm_state_size"), conv_kernel=_int(t, "conv_kernel"),
            ssm_cache_dtype=self.ssm_dtype(ctx),
        )

    def _mlp_intermediate(self, mlp_index: int) -> int:
        inter = self.config.text.get("intermediate_size")
        if isinstance(inter, list):
            return int(inter[0] if len(inter) == 1 else inter[mlp_index])
        return self.config.intermediate_size

    @property
    def intermediate_size(self) -> int:
        if "E" in self.pattern():
            return int(self._get("moe_intermediate_size")) * int(self._get("num_experts_per_tok", 1))
        return self._mlp_intermediate(0)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg, t = self.config, self.config.text
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        pat = self.pattern()
        letters = pat[span.start:span.end]
        out = embedding_tensors(span)
        n_attn = letters.count("*")
        if n_attn:
            out += gqa_attention_tensors("mixer", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp),
                                         head_dim=self.attention_head_size, count=n_attn)
        n_mamba = letters.count("M")
        if n_mamba:
            out += mamba2_mixer_tensors(
                tp=tp, hidden_size=h, intermediate_size=self._mamba_inner(), n_groups=_int(t, "n_groups"),
                num_heads=_int(t, "mamba_num_heads"), state_size=_int(t, "ssm_state_size"),
                conv_kernel=_int(t, "conv_kernel"), use_conv_bias=bool(self._get("use_conv_bias", True)),
                use_bias=bool(self._get("use_bias", False)), count=n_mamba,
            )
        mlp_bias = bool(self._get("mlp_bias", False))
        # dense MLP layers: up / down (relu², no gate), intermediate may differ per MLP layer
        for i in range(span.start, span.end):
            if pat[i] == "-":
                out += mlp_tensors("mixer", tp=tp, hidden=h, inter=self._mlp_intermediate(pat[: i + 1].count("-") - 1),
                                   count=1, names=("up_proj", "down_proj"), gated=False, bias=mlp_bias)
        n_moe = letters.count("E")
        if n_moe:
            out += self._moe_tensors(ctx, n_moe)
        if span.layers:
            out.append(self.vector("norm", h, span.layers))
        return out + head_tensors(span, norm="model.norm_f", tied=cfg.tie_word_embeddings)

    def _moe_tensors(self, ctx: GraphContext, n_moe: int) -> list[WeightTensor]:
        """The E layers' router (with its fp32 score-correction bias), relu² experts (w13 holds
        only the up projection), shared experts and the optional latent projections."""
        t, tp, h = self.config.text, ctx.tensor_parallel_size, self.config.hidden_size
        e = _int(t, "n_routed_experts")
        latent = self._get("moe_latent_size")
        moe_h = int(latent) if latent else h
        out = [
            WeightTensor("mixer.gate", "router", e, h, n_moe),
            WeightTensor("mixer.gate.e_score_correction_bias", "router", e, 1, n_moe, dtype="float32"),
            *fused_expert_tensors("mixer.experts", num_experts=e, inter=_int(t, "moe_intermediate_size"),
                                  hidden=moe_h, count=n_moe, ctx=ctx, gated=False),
        ]
        shared = (self._get("moe_shared_expert_intermediate_size", 0) or 0) * (self._get("n_shared_experts", 0) or 0)
        if shared:
            out += mlp_tensors("mixer.shared_experts", tp=tp, hidden=h, inter=shared, count=n_moe,
                               names=("up_proj", "down_proj"), gated=False)
        if latent:
            out += [
                self.linear("mixer.fc1_latent_proj", moe_h, h, n_moe, in_full=h),
                self.linear("mixer.fc2_latent_proj", h, moe_h, n_moe, in_full=moe_h),
            ]
        return out
