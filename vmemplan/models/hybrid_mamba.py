"""Mamba hybrids: Jamba (Mamba-1 + attention + MoE) and Nemotron-H (Mamba-2 + attention +
MLP / MoE).

Mirrors vllm/model_executor/models/jamba.py with vllm/model_executor/layers/mamba/
mamba_mixer.py (MambaMixer), and vllm/model_executor/models/nemotron_h.py with
vllm/model_executor/layers/mamba/mamba_mixer2.py (MambaMixer2), 0.33.0.
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.hybrid import (
    HybridAdapter,
    LayerKind,
    StateTensor,
    experts_per_rank,
    extra_groups_for_head_shards,
    mamba1_state,
    mamba2_state,
    state_dtypes,
)

__all__ = ["Jamba", "NemotronH", "mamba2_mixer_tensors", "MAMBA2_CHECKPOINT_SINCE"]

#: first release whose MambaMixer2.get_kv_cache_spec sets ``num_prefill_checkpoint_blocks=1``
#: (read from the wheels: absent in 0.21.0, 0.26.0, 0.28.0, 0.30.0 and 0.31.0; present in 0.32.0, 0.33.0)
MAMBA2_CHECKPOINT_SINCE: tuple[int, ...] = (0, 32)


def _int(text, key: str) -> int:
    value = text.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"config.json lacks {key!r} (needed for the Mamba layers)")
    return value


def mamba2_mixer_tensors(*, tp: int, hidden_size: int, intermediate_size: int, n_groups: int,
                         num_heads: int, state_size: int, conv_kernel: int, use_conv_bias: bool,
                         use_bias: bool, count: int, prefix: str = "mixer") -> list[WeightTensor]:
    """One rank's MambaMixer2 tensors, repeated ``count`` times.

    Groups are padded to ``n_groups + extra`` so every rank keeps its heads' groups; then
    ``gss = groups * d_state``, ``conv_dim = I + 2 gss``: conv1d ``conv_dim/tp x kernel``
    (never quantized), in_proj ``(2I + 2gss + heads)/tp x H``, A (fp32), D, dt_bias
    ``heads/tp``, gated norm ``I/tp``, out_proj ``H x I/tp``.  Mirrors
    vllm/model_executor/layers/mamba/mamba_mixer2.py::MambaMixer2.__init__ (0.33.0).
    """
    groups = n_groups + extra_groups_for_head_shards(n_groups, tp)
    gss = groups * state_size
    conv_dim = intermediate_size + 2 * gss
    in_rows = 2 * intermediate_size + 2 * gss + num_heads
    for what, value in (("Mamba-2 heads", num_heads), ("Mamba-2 conv channels", conv_dim),
                        ("Mamba-2 in_proj rows", in_rows), ("Mamba-2 inner channels", intermediate_size)):
        if value % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {value} {what}")
    lin = HybridAdapter.linear
    vec = HybridAdapter.vector
    out = [
        lin(f"{prefix}.conv1d", conv_dim // tp, conv_kernel, count, quantizable=False),
        lin(f"{prefix}.in_proj", in_rows // tp, hidden_size, count, in_full=hidden_size),
        vec(f"{prefix}.A", num_heads // tp, count, kind="bias", dtype="float32"),
        vec(f"{prefix}.D+dt_bias", num_heads // tp, 2 * count, kind="bias"),
        vec(f"{prefix}.norm", intermediate_size // tp, count),
        lin(f"{prefix}.out_proj", hidden_size, intermediate_size // tp, count, in_full=intermediate_size),
    ]
    if use_conv_bias:
        out.append(vec(f"{prefix}.conv1d.bias", conv_dim // tp, count, kind="bias"))
    if use_bias:
        out.append(vec(f"{prefix}.in_proj.bias", in_rows // tp, count, kind="bias"))
        out.append(vec(f"{prefix}.out_proj.bias", hidden_size, count, kind="bias"))
    return out


@register
class Jamba(HybridAdapter):
    """AI21 Jamba: attention every ``attn_layer_period`` layers (at ``attn_layer_offset``),
    Mamba-1 elsewhere; MoE feed-forward every ``expert_layer_period`` layers.

    Layer plan from transformers JambaConfig.layers_block_type / layers_num_experts (4.57.1).
    The Mamba mixer is built without a quant config (every projection stays at the model
    width); attention has no rotary embedding.
    """

    architectures = ("JambaForCausalLM",)
    attention_layer_name = "model.layers.{i}.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    def _get(self, key: str, default=None):
        v = self.config.text.get(key, default)
        return default if v is None else v

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

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings

    @property
    def intermediate_size(self) -> int:
        return self.config.intermediate_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        hd = self.attention_head_size
        kinds = self.layer_kinds()
        experts = self.layers_num_experts()
        start, end = self.layer_range(ctx)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        rng = range(start, end)
        n_attn = sum(1 for i in rng if kinds[i] == "attention")
        n_mamba = sum(1 for i in rng if kinds[i] == "mamba")
        n_moe = sum(1 for i in rng if experts[i] > 1)
        n_mlp = len(rng) - n_moe
        lin, vec = self.linear, self.vector
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n_attn:
            q_rows = cfg.num_attention_heads // tp * hd
            kv_rows = self.attention_kv_heads(tp) * hd
            out += [
                lin("attn.qkv_proj", q_rows + 2 * kv_rows, h, n_attn, in_full=h),
                lin("attn.o_proj", h, q_rows, n_attn, in_full=cfg.num_attention_heads * hd),
                # each Attention's _k_scale/_v_scale/_q_scale/_prob_scale: four fp32 scalars
                # (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales)
                attention_scales("attn.attn", n_attn),
            ]
        if n_mamba:
            inner = self._inner()
            if inner % tp:
                raise UsageError(f"--tensor-parallel-size {tp} does not divide the {inner} Mamba channels")
            ip = inner // tp
            ds = _int(text, "mamba_d_state")
            dt_rank = _int(text, "mamba_dt_rank")
            kernel = _int(text, "mamba_d_conv")
            nq = dict(quantizable=False)  # MambaMixer passes no quant_config to its linears
            out += [
                lin("mixer.conv1d", ip, kernel, n_mamba, **nq),
                lin("mixer.in_proj", 2 * ip, h, n_mamba, **nq),
                lin("mixer.x_proj", dt_rank + 2 * ds, ip, n_mamba, **nq),
                lin("mixer.dt_proj", ip, dt_rank, n_mamba, **nq),
                vec("mixer.dt_proj.bias", ip, n_mamba, kind="bias"),
                WeightTensor("mixer.A", "bias", ip, ds, n_mamba, False, "float32"),
                vec("mixer.D", ip, n_mamba, kind="bias"),
                lin("mixer.out_proj", h, ip, n_mamba, **nq),
                vec("mixer.dt_layernorm", dt_rank, n_mamba),
                vec("mixer.b_layernorm+c_layernorm", ds, 2 * n_mamba),
            ]
            if self._get("mamba_conv_bias", True):
                out.append(vec("mixer.conv1d.bias", ip, n_mamba, kind="bias"))
            if self._get("mamba_proj_bias", False):
                out.append(vec("mixer.in_proj.bias", 2 * ip, n_mamba, kind="bias"))
                out.append(vec("mixer.out_proj.bias", h, n_mamba, kind="bias"))
        inter = cfg.intermediate_size
        if n_moe:
            e = self._get("num_experts", 16)
            local, div = experts_per_rank(e, ctx)
            out += [
                WeightTensor("feed_forward.router", "router", e, h, n_moe),
                WeightTensor("feed_forward.experts.w13", "expert", 2 * inter // div, h, local * n_moe, True,
                             in_features_full=h, allocations=n_moe),
                WeightTensor("feed_forward.experts.w2", "expert", h, inter // div, local * n_moe, True,
                             in_features_full=inter, allocations=n_moe),
            ]
        if n_mlp:
            out += [
                lin("feed_forward.gate_up_proj", 2 * inter // tp, h, n_mlp, in_full=h),
                lin("feed_forward.down_proj", h, inter // tp, n_mlp, in_full=inter),
            ]
        if len(rng):
            out.append(vec("input_layernorm+pre_ff_layernorm", h, 2 * len(rng)))
        if last:
            out.append(vec("model.final_layernorm", h, 1))
            if not (cfg.tie_word_embeddings and first):
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        return out


@register
class NemotronH(HybridAdapter):
    """NVIDIA Nemotron-H / Nemotron-3: ``hybrid_override_pattern`` letters M (Mamba-2),
    ``*`` (attention), ``-`` (relu² MLP), E (MoE), one block per layer.  The SSM state
    defaults to float32 (config ``mamba_ssm_cache_dtype`` else float32:
    vllm/model_executor/models/config.py::NemotronHForCausalLMConfig, 0.33.0)."""

    architectures = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")
    attention_layer_name = "model.layers.{i}.mixer.attn"
    mamba_layer_name = "model.layers.{i}.mixer"

    def _get(self, key: str, default=None):
        v = self.config.text.get(key, default)
        return default if v is None else v

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
        hd = self.config.text.get("head_dim")
        if isinstance(hd, int) and hd > 0:
            return hd
        return self.config.hidden_size // self.config.num_attention_heads

    def _mamba_inner(self) -> int:
        return _int(self.config.text, "mamba_num_heads") * _int(self.config.text, "mamba_head_dim")

    def ssm_dtype(self, ctx: GraphContext) -> str:
        if ctx.mamba_ssm_cache_dtype != "auto":
            return ctx.mamba_ssm_cache_dtype
        return str(self._get("mamba_ssm_cache_dtype", "float32"))

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Mamba-2 state (NemotronHForCausalLM.get_mamba_state_shape_from_config, 0.33.0; the
        ReplaySSM ring is off by default)."""
        conv, ssm = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, self.ssm_dtype(ctx))
        t = self.config.text
        return mamba2_state(
            tp=ctx.tensor_parallel_size,
            intermediate_size=self._mamba_inner(),
            n_groups=_int(t, "n_groups"),
            num_heads=_int(t, "mamba_num_heads"),
            head_dim=_int(t, "mamba_head_dim"),
            state_size=_int(t, "ssm_state_size"),
            conv_kernel=_int(t, "conv_kernel"),
            num_spec=ctx.num_speculative_tokens,
            conv_dtype=conv,
            ssm_dtype=ssm,
        )

    def prefill_checkpoint_blocks(self, ctx: GraphContext, mode: str) -> int:
        """One prefill-checkpoint page per Mamba-2 layer in "align" mode from
        :data:`MAMBA2_CHECKPOINT_SINCE` on: MambaMixer2.get_kv_cache_spec sets
        ``num_prefill_checkpoint_blocks=1`` (and a spec alignment of 1 token) while
        MambaMixer2 declares no ``get_prefill_checkpoint_alignment``, so the page is charged
        (MambaSpec.max_memory_usage_bytes: 2 + speculative + 1) but the platform's hybrid
        block-size alignment is unchanged (vllm/model_executor/layers/mamba/mamba_mixer2.py,
        abstract.py::get_mamba_prefill_checkpoint_alignment, 0.33.0)."""
        return 1 if (mode == "align" and ctx.at_least(*MAMBA2_CHECKPOINT_SINCE)) else 0

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings

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
        cfg = self.config
        t = cfg.text
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        hd = self.attention_head_size
        pat = self.pattern()
        start, end = self.layer_range(ctx)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        letters = pat[start:end]
        lin, vec = self.linear, self.vector
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        n_attn = letters.count("*")
        if n_attn:
            q_rows = cfg.num_attention_heads // tp * hd
            kv_rows = self.attention_kv_heads(tp) * hd
            out += [
                lin("mixer.qkv_proj", q_rows + 2 * kv_rows, h, n_attn, in_full=h),
                lin("mixer.o_proj", h, q_rows, n_attn, in_full=cfg.num_attention_heads * hd),
                attention_scales("mixer.attn", n_attn),
            ]
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
        for i in range(start, end):
            if pat[i] != "-":
                continue
            inter = self._mlp_intermediate(pat[: i + 1].count("-") - 1)
            out += [
                lin("mixer.up_proj", inter // tp, h, 1, in_full=h),
                lin("mixer.down_proj", h, inter // tp, 1, in_full=inter),
            ]
            if mlp_bias:
                out += [vec("mixer.up_proj.bias", inter // tp, 1, kind="bias"),
                        vec("mixer.down_proj.bias", h, 1, kind="bias")]
        n_moe = letters.count("E")
        if n_moe:
            e = _int(t, "n_routed_experts")
            inter = _int(t, "moe_intermediate_size")
            latent = self._get("moe_latent_size")
            moe_h = int(latent) if latent else h
            local, div = experts_per_rank(e, ctx)
            out += [
                WeightTensor("mixer.gate", "router", e, h, n_moe),
                WeightTensor("mixer.gate.e_score_correction_bias", "router", e, 1, n_moe, dtype="float32"),
                # relu² has no gate: w13 holds only the up projection
                WeightTensor("mixer.experts.w13", "expert", inter // div, moe_h, local * n_moe, True,
                             in_features_full=moe_h, allocations=n_moe),
                WeightTensor("mixer.experts.w2", "expert", moe_h, inter // div, local * n_moe, True,
                             in_features_full=inter, allocations=n_moe),
            ]
            shared = (self._get("moe_shared_expert_intermediate_size", 0) or 0) * (self._get("n_shared_experts", 0) or 0)
            if shared:
                out += [
                    lin("mixer.shared_experts.up_proj", shared // tp, h, n_moe, in_full=h),
                    lin("mixer.shared_experts.down_proj", h, shared // tp, n_moe, in_full=shared),
                ]
            if latent:
                out += [
                    lin("mixer.fc1_latent_proj", moe_h, h, n_moe, in_full=h),
                    lin("mixer.fc2_latent_proj", h, moe_h, n_moe, in_full=moe_h),
                ]
        if end > start:
            out.append(vec("norm", h, end - start))
        if last:
            out.append(vec("model.norm_f", h, 1))
            if not (cfg.tie_word_embeddings and first):
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        return out
