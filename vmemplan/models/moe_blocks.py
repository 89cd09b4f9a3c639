"""Tensor lists the MLA and MoE families share (helpers only, no adapter).

DeepSeek's MLA decoders (:mod:`vmemplan.models.deepseek` and the families built on it),
DeepSeek-V4, LongCat-Flash, K2 Horizon, MiniCPM3 and the Llama-shaped MoE decoders of
:mod:`vmemplan.models.moe` build their ``weight_tensors`` from these blocks: a gated MLP and
its biases, a replicated router with its per-expert bias, the shared and the routed experts,
and the embedding / final norm / LM head of a pipeline stage.  Every function returns one
rank's tensors for ``count`` (``num_layers``) layers.

Beside them, two adapter pieces several of these families share: :class:`LinearBiasFlags` (every
linear biased under one config key: ChatGLM, Bailing) and :class:`SandwichNormLlama` (a Llama
graph with two more norms a layer under one key: openPangu-Embedded, HyperCLOVA X), and
:func:`windowed_stage_attention` for the gpt-oss / Llama-4 graphs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws.moe import moe_shard
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import RankSpan
from vmemplan.models.dense import LlamaLike

if TYPE_CHECKING:
    from vmemplan.models.windowed import _WindowedBase

__all__ = [
    "experts_per_rank",
    "gated_mlp_tensors",
    "gated_mlp_biases",
    "router_tensors",
    "shared_expert_tensors",
    "moe_expert_tensors",
    "mxfp4_expert_tensors",
    "moe_experts",
    "stage_embedding",
    "stage_head",
    "windowed_stage_attention",
    "LinearBiasFlags",
    "SandwichNormLlama",
]


def experts_per_rank(num_experts: int, ctx: GraphContext) -> int:
    """Routed experts the fullest rank holds (vmemplan.laws.moe.moe_shard: without expert
    parallelism every expert, a slice of each; with it whole experts over tp × dp ranks, the
    fuller rank holding one more where they do not divide)."""
    return moe_shard(ctx, num_experts)[0]


def gated_mlp_tensors(prefix: str, inter: int, hidden: int, count: int, tp: int) -> list[WeightTensor]:
    """A gated MLP of width ``inter`` in ``count`` layers: the merged column-parallel
    ``gate_up_proj [2·inter/tp, hidden]`` and the row-parallel ``down_proj [hidden, inter/tp]``
    (vllm/model_executor/models/llama.py::LlamaMLP, deepseek_v2.py::DeepseekV2MLP, 0.33.0).
    Empty for no layers."""
    if count <= 0:
        return []
    return [
        WeightTensor(f"{prefix}.gate_up_proj", "linear", 2 * inter // tp, hidden, count, True,
                     in_features_full=hidden, out_features_full=2 * inter),
        WeightTensor(f"{prefix}.down_proj", "linear", hidden, inter // tp, count, True,
                     in_features_full=inter, out_features_full=hidden),
    ]


def gated_mlp_biases(prefix: str, inter: int, hidden: int, count: int, tp: int) -> list[WeightTensor]:
    """The biases of :func:`gated_mlp_tensors`: ``gate_up_proj`` split like its weight, the
    row-parallel ``down_proj`` bias whole on every rank."""
    if count <= 0:
        return []
    return [WeightTensor(f"{prefix}.gate_up_proj.bias", "bias", 2 * inter // tp, 1, count),
            WeightTensor(f"{prefix}.down_proj.bias", "bias", hidden, 1, count)]


def router_tensors(name: str, experts: int, hidden: int, count: int, *, dtype: str | None = None,
                   bias: str | None = None) -> list[WeightTensor]:
    """A router ``[experts, hidden]`` of ``count`` layers (GateLinear / ReplicatedLinear:
    replicated on every rank and never quantized), at ``dtype`` (None: the model dtype), and,
    when ``bias`` names it, its fp32 per-expert bias ``[experts]`` (``e_score_correction_bias``,
    ``expert_bias``, ...)."""
    out = [WeightTensor(name, "router", experts, hidden, count, False, dtype=dtype)]
    if bias:
        out.append(WeightTensor(bias, "router", experts, 1, count, dtype="float32"))
    return out


def shared_expert_tensors(prefix: str, *, shared: int, moe_inter: int, hidden: int, num_layers: int,
                          ctx: GraphContext) -> list[WeightTensor]:
    """The always-on shared experts of ``num_layers`` MoE layers: one gated MLP of width
    ``shared × moe_intermediate_size``, column/row-parallel over TP (DeepseekV2MLP in
    deepseek_v2.py, 0.33.0).  Empty when the model has none."""
    if not shared:
        return []
    return gated_mlp_tensors(prefix, moe_inter * shared, hidden, num_layers, ctx.tensor_parallel_size)


def moe_expert_tensors(
    prefix: str,
    *,
    num_experts: int,
    hidden: int,
    inter: int,
    num_layers: int,
    ctx: GraphContext,
) -> list[WeightTensor]:
    """The fused ``w13`` (gate+up) and ``w2`` (down) expert weights of ``num_layers`` MoE
    layers on one rank.  Without EP each rank holds ``inter / tp`` of every expert; with EP
    whole experts (``inter`` unsplit).  Mirrors FusedMoE.__init__ /
    UnquantizedFusedMoEMethod.create_weights (0.33.0)."""
    local, ways = moe_shard(ctx, num_experts)
    inter_local = inter // ways
    return [
        WeightTensor(f"{prefix}.w13_weight", "expert", 2 * inter_local, hidden, local * num_layers, True,
                     in_features_full=hidden),
        WeightTensor(f"{prefix}.w2_weight", "expert", hidden, inter_local, local * num_layers, True,
                     in_features_full=inter),
    ]


def mxfp4_expert_tensors(prefix: str, *, num_experts: int, hidden: int, inter: int, num_layers: int,
                         ctx: GraphContext) -> list[WeightTensor]:
    """MXFP4 routed experts of ``num_layers`` MoE layers on one rank, as loaded: packed e2m1
    values (two a byte) and one e8m0 scale byte per 32 along K, with the intermediate size per
    partition padded to 128 and the hidden size to 256 -- the padding of every backend
    select_deepseek_v4_mxfp4_moe_backend picks on CUDA (FlashInfer TRT-LLM MXFP4xMXFP8 on SM100,
    DeepGEMM MXFP4 or Marlin otherwise; vllm/model_executor/layers/fused_moe/oracle/mxfp4.py::
    mxfp4_round_up_hidden_size_and_intermediate_size) :

    * ``w13_weight`` ``[E, 2 I_pad, H_pad / 2]`` uint8 and ``w13_weight_scale`` ``[E, 2 I_pad, H_pad / 32]``;
    * ``w2_weight`` ``[E, H_pad, I_pad / 2]`` uint8 and ``w2_weight_scale`` ``[E, H_pad, I_pad / 32]``.

    Mirrors vllm/model_executor/layers/quantization/mxfp4.py::Mxfp4MoEMethod.create_weights (0.33.0).
    """
    local, ways = moe_shard(ctx, num_experts)
    i_pad = -(-(inter // ways) // 128) * 128
    h_pad = -(-hidden // 256) * 256
    n = local * num_layers

    def t(name: str, rows: int, cols: int) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "expert", rows, cols, n, False, "uint8", allocations=num_layers)

    return [
        t("w13_weight", 2 * i_pad, h_pad // 2), t("w13_weight_scale", 2 * i_pad, -(-h_pad // 32)),
        t("w2_weight", h_pad, i_pad // 2), t("w2_weight_scale", h_pad, -(-i_pad // 32)),
    ]


def moe_experts(*, shared: int, shared_inter: int, experts: int, inter: int, hidden: int, num_layers: int,
                ctx: GraphContext, prefix: str = "mlp") -> list[WeightTensor]:
    """DeepseekV2MoE's experts behind its router (deepseek_v2.py, 0.33.0): ``shared`` shared
    experts of ``shared_inter`` each as one TP-split ``{prefix}.shared_experts`` MLP, then the
    ``experts`` routed experts of ``inter`` (``{prefix}.experts``)."""
    return (shared_expert_tensors(f"{prefix}.shared_experts", shared=shared, moe_inter=shared_inter, hidden=hidden,
                                  num_layers=num_layers, ctx=ctx)
            + moe_expert_tensors(f"{prefix}.experts", num_experts=experts, hidden=hidden, inter=inter,
                                 num_layers=num_layers, ctx=ctx))


def stage_embedding(span: RankSpan, *, tied: bool = False) -> list[WeightTensor]:
    """``model.embed_tokens`` (vocab-parallel) on the first pipeline stage, and on the last
    when the LM head is tied to it."""
    if span.first or (tied and span.last):
        return [WeightTensor("model.embed_tokens", "embedding", span.vocab_rows, span.hidden)]
    return []


def stage_head(span: RankSpan, *, head: bool = True) -> list[WeightTensor]:
    """The last stage's final ``model.norm`` and, unless ``head`` is False (tied to the
    embedding), its own ``lm_head``."""
    if not span.last:
        return []
    norm = WeightTensor("model.norm", "norm", span.hidden, 1)
    return [norm, WeightTensor("lm_head", "lm_head", span.vocab_rows, span.hidden)] if head else [norm]


def windowed_stage_attention(adapter: _WindowedBase, ctx: GraphContext, *, name: str, qkv_bias: bool,
                             o_bias: bool) -> list[WeightTensor]:
    """The embedding, final norm and LM head of ``ctx``'s stage (tied as the config says) and
    the config's attention on each of its layers: ``qkv_proj`` / ``o_proj`` of
    ``num_attention_heads`` and ``num_key_value_heads`` heads of ``head_dim``
    (:meth:`_WindowedBase._attn_tensors`), as gpt-oss and Llama-4 build them."""
    cfg = adapter.config
    out = adapter._embedding_and_head(ctx, tied=cfg.tie_word_embeddings)
    return out + adapter._attn_tensors(ctx, name=name, num_heads=cfg.num_attention_heads,
                                       num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim,
                                       count=adapter.rank_span(ctx).layers, qkv_bias=qkv_bias, o_bias=o_bias)


class LinearBiasFlags:
    """Mixin: a bias on every linear (qkv, output, MLP) when the config sets
    ``linear_bias_key``, and on the fused qkv also when it sets ``qkv_bias_key``."""

    config: ModelConfig
    linear_bias_key = ""
    qkv_bias_key = ""

    def _linear_bias(self) -> bool:
        return bool(self.config.text.get(self.linear_bias_key, False))

    def qkv_bias(self) -> bool:
        return self._linear_bias() or bool(self.config.text.get(self.qkv_bias_key, False))

    def o_bias(self) -> bool:
        return self._linear_bias()

    def mlp_bias(self) -> bool:
        return self._linear_bias()


class SandwichNormLlama(LlamaLike):
    """A Llama graph with two RMSNorms a layer, four when the config sets ``sandwich_key``
    (the decoder layer then adds a pre/post-MLP pair).  Not registered: the families set the key."""

    architectures = ()
    sandwich_key = ""

    @property  # type: ignore[override]
    def norms_per_layer(self) -> int:
        return 4 if self.config.text.get(self.sandwich_key) else 2
