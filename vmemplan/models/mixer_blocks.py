"""What the hybrid and recurrent-state families share (helpers only: no adapter is registered here).

The families (vmemplan/models/hybrid_mamba.py, mamba_ssm.py, falcon_h1.py, granite_hybrid.py,
zamba2.py, olmo_hybrid.py, lfm2.py, hybrid_kimi.py, hybrid_qwen.py, alice_ai.py,
bailing_linear.py) build their ``weight_tensors`` from these blocks: the Mamba-1 / Mamba-2
mixers, the Kimi delta-attention mixer, a hybrid's grouped-query or latent attention block,
gated (or plain) MLPs, fused-MoE experts, and the embedding / final norm / LM head of a
pipeline stage.  Every block returns one rank's tensors for ``count`` layers, in the order vLLM
registers them.  The base classes (:class:`RecurrentHybrid`, :class:`Mamba2Hybrid`,
:class:`LinearMlaHybrid`) hold the checks and hooks several families answer alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import RankSpan
from vmemplan.models.hybrid import (
    HybridAdapter,
    StateTensor,
    experts_per_rank,
    extra_groups_for_head_shards,
    mamba2_state,
    state_dtypes,
)
from vmemplan.models.mla_copies import mla_decode_copies

__all__ = [
    "MAMBA2_CHECKPOINT_SINCE",
    "Mamba2CheckpointPage",
    "RecurrentHybrid",
    "Mamba2Hybrid",
    "LinearMlaHybrid",
    "need_int",
    "positive_int",
    "stated_head_dim",
    "listed_layer_types",
    "mamba2_layer_state",
    "embedding_tensors",
    "head_tensors",
    "gqa_attention_tensors",
    "mlp_tensors",
    "fused_expert_tensors",
    "mamba1_mixer_tensors",
    "mamba2_mixer_tensors",
    "kda_mixer_tensors",
    "mla_attention_tensors",
]

_lin = HybridAdapter.linear
_vec = HybridAdapter.vector

#: first release whose MambaMixer2.get_kv_cache_spec sets ``num_prefill_checkpoint_blocks=1``
#: (read from the wheels: absent in 0.21.0, 0.26.0, 0.28.0, 0.30.0 and 0.31.0; present in 0.32.0, 0.33.0)
MAMBA2_CHECKPOINT_SINCE: tuple[int, ...] = (0, 32)


class Mamba2CheckpointPage:
    """Mixin of the families whose recurrent layers are MambaMixer2."""

    def prefill_checkpoint_blocks(self, ctx: GraphContext, mode: str) -> int:
        """One prefill-checkpoint page per Mamba-2 layer in "align" mode from
        :data:`MAMBA2_CHECKPOINT_SINCE` on: MambaMixer2.get_kv_cache_spec sets
        ``num_prefill_checkpoint_blocks=1`` (and a spec alignment of 1 token) while
        MambaMixer2 declares no ``get_prefill_checkpoint_alignment``, so the page is charged
        (MambaSpec.max_memory_usage_bytes: 2 + speculative + 1) but the platform's hybrid
        block-size alignment is unchanged (vllm/model_executor/layers/mamba/mamba_mixer2.py,
        abstract.py::get_mamba_prefill_checkpoint_alignment, 0.33.0)."""
        return 1 if (mode == "align" and ctx.at_least(*MAMBA2_CHECKPOINT_SINCE)) else 0


class RecurrentHybrid(HybridAdapter):
    """A hybrid whose layout check is the attention heads' (:meth:`Adapter.validate_parallel`)
    and then one recurrent layer's state, which raises when tp does not divide its heads or
    channels; its context length is ``max_position_embeddings`` as config.json states it (no
    rope-scaling factor applied)."""

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings


class Mamba2Hybrid(Mamba2CheckpointPage, RecurrentHybrid):
    """A :class:`RecurrentHybrid` whose recurrent layers are MambaMixer2 (one prefill-checkpoint
    page each in "align" mode, :class:`Mamba2CheckpointPage`)."""


class LinearMlaHybrid(HybridAdapter):
    """Linear-attention layers (Kimi delta attention, lightning attention) next to MLA
    full-attention layers, with MoE: Kimi-Linear and Bailing V2.5 / V3.  A linear layer's
    recurrent state is registered under the layer's ``self_attn``."""

    uses_mla = True
    mamba_layer_name = "model.layers.{i}.self_attn"
    family = "moe"  # type: ignore[assignment]

    def check_heads(self, ctx: GraphContext) -> None:
        """tp must divide the attention heads (the linear and the MLA layers split them)."""
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        if heads % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads")


def positive_int(text, key: str) -> int | None:
    """``text[key]`` when it is a positive integer, else None (for ``positive_int(...) or
    default``)."""
    value = text.get(key)
    return value if isinstance(value, int) and value > 0 else None


def stated_head_dim(config) -> int:
    """``head_dim`` when config.json states a positive one, else ``hidden_size //
    num_attention_heads``."""
    return positive_int(config.text, "head_dim") or config.hidden_size // config.num_attention_heads


def listed_layer_types(text, num_layers: int, allowed, family: str) -> list:
    """config.json's ``layer_types``: one entry per layer, each one of ``allowed``; else a
    ModelConfigError naming ``family``."""
    types = text.get("layer_types")
    if not isinstance(types, list) or len(types) != num_layers:
        raise ModelConfigError(f"config.json lacks 'layer_types' with one entry per layer ({family})")
    bad = sorted({str(t) for t in types} - set(allowed))
    if bad:
        raise ModelConfigError(f"layer_types has unknown kinds {bad}")
    return types


def mamba2_layer_state(ctx: GraphContext, *, intermediate_size: int, n_groups: int, num_heads: int, head_dim: int,
                       state_size: int, conv_kernel: int, ssm_cache_dtype: str | None = None) -> tuple[StateTensor, ...]:
    """One MambaMixer2 layer's per-rank state (:func:`vmemplan.models.hybrid.mamba2_state`)
    with ``ctx``'s speculative tokens, in the dtypes of ``--mamba-cache-dtype`` and
    ``--mamba-ssm-cache-dtype`` (or the family's ``ssm_cache_dtype``) over the model dtype
    (:func:`vmemplan.models.hybrid.state_dtypes`)."""
    ssm_flag = ctx.mamba_ssm_cache_dtype if ssm_cache_dtype is None else ssm_cache_dtype
    conv, ssm = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ssm_flag)
    return mamba2_state(tp=ctx.tensor_parallel_size, intermediate_size=intermediate_size, n_groups=n_groups,
                        num_heads=num_heads, head_dim=head_dim, state_size=state_size, conv_kernel=conv_kernel,
                        num_spec=ctx.num_speculative_tokens, conv_dtype=conv, ssm_dtype=ssm)


def need_int(text, key: str, why: str = "") -> int:
    """The positive integer ``text[key]`` (not a bool), else a ModelConfigError
    ``config.json lacks 'key'`` followed by ``why``."""
    value = text.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"config.json lacks {key!r}{why}")
    return value


# -- the ends of the layer stack ------------------------------------------------------------


def embedding_tensors(span: RankSpan, name: str = "model.embed_tokens") -> list[WeightTensor]:
    """The vocab-parallel embedding, held by the first pipeline stage only."""
    return [WeightTensor(name, "embedding", span.vocab_rows, span.hidden)] if span.first else []


def head_tensors(span: RankSpan, *, norm: str = "model.norm", tied: bool) -> list[WeightTensor]:
    """The last stage's final norm and LM head; a head tied to the embedding is that
    embedding's storage when the stage also holds it (single-stage), else its own copy."""
    if not span.last:
        return []
    out = [_vec(norm, span.hidden, 1)]
    if not (tied and span.first):
        out.append(WeightTensor("lm_head", "lm_head", span.vocab_rows, span.hidden))
    return out


# -- attention and feed-forward --------------------------------------------------------------


def gqa_attention_tensors(prefix: str, *, tp: int, hidden: int, heads: int, kv_heads_local: int, head_dim: int,
                          count: int, out_name: str = "o_proj", out_in_full: int | None = None, gate: int = 1,
                          norms: Sequence[WeightTensor] = (), qkv_bias: bool = False,
                          out_bias: bool = False) -> list[WeightTensor]:
    """A hybrid's grouped-query attention block on one rank, for ``count`` layers.

    ``qkv_proj`` (QKVParallelLinear: ``heads x gate / tp`` query heads, with ``gate`` 2 when
    the query carries an output gate, and ``kv_heads_local`` KV heads), the row-parallel
    output projection ``out_name`` (input ``heads x head_dim`` unless ``out_in_full``), the
    given ``norms``, the Attention's four fp32 scales
    (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales, 0.33.0),
    then the optional biases.
    """
    q_rows = heads * gate // tp * head_dim
    qkv_rows = q_rows + 2 * kv_heads_local * head_dim
    in_full = heads * head_dim if out_in_full is None else out_in_full
    out = [
        _lin(f"{prefix}.qkv_proj", qkv_rows, hidden, count, in_full=hidden),
        _lin(f"{prefix}.{out_name}", hidden, heads // tp * head_dim, count, in_full=in_full),
        *norms,
        attention_scales(f"{prefix}.attn", count),
    ]
    if qkv_bias:
        out.append(_vec(f"{prefix}.qkv_proj.bias", qkv_rows, count, kind="bias"))
    if out_bias:
        out.append(_vec(f"{prefix}.{out_name}.bias", hidden, count, kind="bias"))
    return out


def mla_attention_tensors(prefix: str, *, tp: int, hidden: int, heads: int, nope: int, rope: int, v: int,
                          kv_lora: int, q_lora: int | None, count: int) -> list[WeightTensor]:
    """A hybrid's multi-head latent attention projections on one rank, for ``count`` layers.

    ``q_proj`` (or, with ``q_lora``, ``fused_qkv_a_proj`` + ``q_a_layernorm`` + ``q_b_proj``),
    the replicated ``kv_a_proj_with_mqa``, ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``, and
    the decode-time copies of ``kv_b_proj``'s halves (:func:`vmemplan.models.mla_copies.
    mla_decode_copies`).  Mirrors vllm/model_executor/layers/mla.py::MultiHeadLatentAttentionWrapper
    as built by vllm/models/kimi_k3/nvidia/mla.py and
    vllm/model_executor/models/bailing_moe_linear.py::BailingMoeV25MLAAttention (0.33.0).
    """
    h, n = hidden, count
    if q_lora:
        out = [
            _lin(f"{prefix}.fused_qkv_a_proj", q_lora + kv_lora + rope, h, n, in_full=h),
            _vec(f"{prefix}.q_a_layernorm", q_lora, n),
            _lin(f"{prefix}.q_b_proj", heads * (nope + rope) // tp, q_lora, n, in_full=q_lora),
        ]
    else:
        out = [
            _lin(f"{prefix}.q_proj", heads * (nope + rope) // tp, h, n, in_full=h),
            _lin(f"{prefix}.kv_a_proj_with_mqa", kv_lora + rope, h, n, in_full=h),
        ]
    out += [
        _vec(f"{prefix}.kv_a_layernorm", kv_lora, n),
        _lin(f"{prefix}.kv_b_proj", heads * (nope + v) // tp, kv_lora, n, in_full=kv_lora),
        _lin(f"{prefix}.o_proj", h, heads * v // tp, n, in_full=heads * v),
    ]
    return out + mla_decode_copies(n, heads_local=heads // tp, kv_lora_rank=kv_lora, qk_nope_head_dim=nope,
                                   v_head_dim=v)


def mlp_tensors(prefix: str, *, tp: int, hidden: int, inter: int, count: int,
                names: tuple[str, str] = ("gate_up_proj", "down_proj"), gated: bool = True,
                bias: bool = False) -> list[WeightTensor]:
    """A column-parallel up (gate+up when ``gated``) and a row-parallel down projection of
    width ``inter``, for ``count`` layers, with their biases when ``bias``."""
    up, down = names
    up_rows = (2 if gated else 1) * inter // tp
    out = [
        _lin(f"{prefix}.{up}", up_rows, hidden, count, in_full=hidden),
        _lin(f"{prefix}.{down}", hidden, inter // tp, count, in_full=inter),
    ]
    if bias:
        out += [_vec(f"{prefix}.{up}.bias", up_rows, count, kind="bias"),
                _vec(f"{prefix}.{down}.bias", hidden, count, kind="bias")]
    return out


def fused_expert_tensors(prefix: str, *, num_experts: int, inter: int, hidden: int, count: int, ctx: GraphContext,
                         gated: bool = True) -> list[WeightTensor]:
    """The fused ``w13`` (gate+up, or up alone when not ``gated``) and ``w2`` expert weights
    of ``count`` MoE layers on one rank, one allocation a layer: every expert sharded on
    its intermediate dimension by tp, or whole experts under expert parallelism
    (:func:`vmemplan.models.hybrid.experts_per_rank`; vllm/model_executor/layers/fused_moe/
    layer.py::FusedMoE.__init__, 0.33.0)."""
    local, div = experts_per_rank(num_experts, ctx)
    return [
        WeightTensor(f"{prefix}.w13", "expert", (2 if gated else 1) * inter // div, hidden, local * count, True,
                     in_features_full=hidden, allocations=count),
        WeightTensor(f"{prefix}.w2", "expert", hidden, inter // div, local * count, True,
                     in_features_full=inter, allocations=count),
    ]


# -- recurrent mixers -----------------------------------------------------------------------


def mamba1_mixer_tensors(*, tp: int, hidden_size: int, intermediate_size: int, state_size: int, dt_rank: int,
                         conv_kernel: int, count: int, conv_bias: bool, proj_bias: bool,
                         inner_norms: bool = False) -> list[WeightTensor]:
    """One rank's MambaMixer tensors, repeated ``count`` times.

    The mixer passes no quant config to its linears: conv1d ``I/tp x kernel``, in_proj
    ``2I/tp x H``, x_proj ``(dt_rank + 2 d_state) x I/tp``, dt_proj ``I/tp x dt_rank`` (with a
    bias), A ``I/tp x d_state`` (fp32), D ``I/tp``, out_proj ``H x I/tp``; with
    ``inner_norms`` (Jamba) the dt / B / C RMSNorms.  Mirrors
    vllm/model_executor/layers/mamba/mamba_mixer.py::MambaMixer.__init__ (0.33.0).
    """
    if intermediate_size % tp:
        raise UsageError(f"--tensor-parallel-size {tp} does not divide the {intermediate_size} Mamba channels")
    ip = intermediate_size // tp
    h, ds, n = hidden_size, state_size, count
    nq = dict(quantizable=False)  # MambaMixer passes no quant_config to its linears
    out = [
        _lin("mixer.conv1d", ip, conv_kernel, n, **nq),
        _lin("mixer.in_proj", 2 * ip, h, n, **nq),
        _lin("mixer.x_proj", dt_rank + 2 * ds, ip, n, **nq),
        _lin("mixer.dt_proj", ip, dt_rank, n, **nq),
        _vec("mixer.dt_proj.bias", ip, n, kind="bias"),
        WeightTensor("mixer.A", "bias", ip, ds, n, False, "float32"),
        _vec("mixer.D", ip, n, kind="bias"),
        _lin("mixer.out_proj", h, ip, n, **nq),
    ]
    if inner_norms:
        out += [_vec("mixer.dt_layernorm", dt_rank, n), _vec("mixer.b_layernorm+c_layernorm", ds, 2 * n)]
    if conv_bias:
        out.append(_vec("mixer.conv1d.bias", ip, n, kind="bias"))
    if proj_bias:
        out += [_vec("mixer.in_proj.bias", 2 * ip, n, kind="bias"), _vec("mixer.out_proj.bias", h, n, kind="bias")]
    return out


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
    out = [
        _lin(f"{prefix}.conv1d", conv_dim // tp, conv_kernel, count, quantizable=False),
        _lin(f"{prefix}.in_proj", in_rows // tp, hidden_size, count, in_full=hidden_size),
        _vec(f"{prefix}.A", num_heads // tp, count, kind="bias", dtype="float32"),
        _vec(f"{prefix}.D+dt_bias", num_heads // tp, 2 * count, kind="bias"),
        _vec(f"{prefix}.norm", intermediate_size // tp, count),
        _lin(f"{prefix}.out_proj", hidden_size, intermediate_size // tp, count, in_full=intermediate_size),
    ]
    if use_conv_bias:
        out.append(_vec(f"{prefix}.conv1d.bias", conv_dim // tp, count, kind="bias"))
    if use_bias:
        out.append(_vec(f"{prefix}.in_proj.bias", in_rows // tp, count, kind="bias"))
        out.append(_vec(f"{prefix}.out_proj.bias", hidden_size, count, kind="bias"))
    return out


def kda_mixer_tensors(prefix: str, *, tp: int, hidden: int, num_heads: int, head_dim: int, conv_kernel: int,
                      count: int) -> list[WeightTensor]:
    """One rank's Kimi delta-attention tensors (no full-rank gate), for ``count`` layers.

    ``P = heads x head_dim``: the fused ``in_proj_qkvgfab`` ([q, k, v (P each), beta (heads),
    f_a (head_dim, replicated)]), ``f_b_proj``, fp32 ``dt_bias [P/tp]``, an fp32 ``conv1d``
    (no quant config), fp32 ``A_log [heads/tp]``, the replicated ``g_a_proj``, ``g_b_proj``,
    ``o_norm [head_dim]`` and ``o_proj``.  Mirrors
    vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py (0.33.0).
    """
    nh, hd, h, n = num_heads, head_dim, hidden, count
    p = nh * hd
    return [
        # [q, k, v (P each), beta (heads), f_a (head_dim, replicated)]
        _lin(f"{prefix}.in_proj_qkvgfab", 3 * p // tp + nh // tp + hd, h, n, in_full=h),
        _lin(f"{prefix}.f_b_proj", p // tp, hd, n, in_full=hd),
        _vec(f"{prefix}.dt_bias", p // tp, n, kind="bias", dtype="float32"),
        _lin(f"{prefix}.conv1d", 3 * p // tp, conv_kernel, n, quantizable=False, dtype="float32"),
        _vec(f"{prefix}.A_log", nh // tp, n, kind="bias", dtype="float32"),
        _lin(f"{prefix}.g_a_proj", hd, h, n, in_full=h),
        _lin(f"{prefix}.g_b_proj", p // tp, hd, n, in_full=hd),
        _vec(f"{prefix}.o_norm", hd, n),
        _lin(f"{prefix}.o_proj", h, p // tp, n, in_full=p),
    ]
