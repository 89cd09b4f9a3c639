"""DeepSeek multi-head latent attention (MLA) families.

* :class:`DeepseekMLA`: DeepSeek-V2 / V2-Lite / Coder-V2, DeepSeek-V3, R1 and Kimi-K2
  (``DeepseekV2ForCausalLM`` / ``DeepseekV3ForCausalLM``).  Mirrors
  vllm/model_executor/models/deepseek_v2.py (0.33.0): DeepseekV2MLAAttention,
  DeepseekV2MoE, DeepseekV2MLP, DeepseekV2DecoderLayer, DeepseekV2Model.
* :class:`DeepseekV32`: DeepSeek-V3.2 (``DeepseekV32ForCausalLM``), the same graph plus a
  lightning indexer per layer with its own cache.  Mirrors vllm/models/deepseek_v32/
  attention.py (DeepseekV32Attention, DeepseekV32Indexer) (0.33.0).

The latent cache holds one vector of ``kv_lora_rank + qk_rope_head_dim`` elements per
token and layer, as a single head that tensor parallelism never divides.  The record, the
block size and the cache dtype follow the MLA attention backend vLLM selects for the chip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vmemplan.laws.kv_groups import LayoutChoice

from typing import Any, overload

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import MLAAttentionSpec, kv_dtype_bytes, mla_record_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import Adapter, register
from vmemplan.models.mla_backends import (
    MlaBackendChoice,
    select_mla_backend,
    select_sparse_mla_backend,
    sparse_block_stride_alignment,
)
from vmemplan.models.mla_copies import mla_decode_copies
from vmemplan.models.moe_blocks import (  # moe_expert_tensors, shared_expert_tensors: re-exported
    gated_mlp_tensors,
    moe_expert_tensors,
    moe_experts,
    router_tensors,
    shared_expert_tensors,
    stage_embedding,
    stage_head,
)

__all__ = [
    "DeepseekMLA",
    "DeepseekV32",
    "MlaBackendChoice",
    "select_mla_backend",
    "select_sparse_mla_backend",
    "moe_expert_tensors",
    "shared_expert_tensors",
]


def _text_int(text: Any, key: str, default: int | None = None) -> int:
    value = text.get(key, default)
    if value is None:
        raise UsageError(f"config.json lacks {key!r}, which the DeepSeek graph needs")
    return int(value)


class _ConfigInt:
    """A read-only whole number the adapter's config states: ``adapter._t(key, default)``,
    read on every access as a property would be."""

    def __init__(self, key: str, default: int | None = None) -> None:
        self.key, self.default = key, default

    @overload
    def __get__(self, adapter: None, owner: type) -> _ConfigInt: ...
    @overload
    def __get__(self, adapter: DeepseekMLA, owner: type | None = None) -> int: ...

    def __get__(self, adapter: DeepseekMLA | None, owner: type | None = None) -> int | _ConfigInt:
        return self if adapter is None else adapter._t(self.key, self.default)


# --------------------------------------------------------------------------------------
# DeepSeek-V2 / V3 / R1 / Kimi-K2
# --------------------------------------------------------------------------------------


@register
class DeepseekMLA(Adapter):
    """DeepSeek-V2/V3-shaped MLA + MoE decoder (also R1 and Kimi-K2).

    Per layer (DeepseekV2MLAAttention): with a ``q_lora_rank`` a replicated fused
    ``q_a_proj + kv_a_proj_with_mqa`` (DeepSeekV2FusedQkvAProjLinear, ``disable_tp``),
    ``q_a_layernorm`` and a column-parallel ``q_b_proj``; without it a column-parallel
    ``q_proj`` and a replicated ``kv_a_proj_with_mqa``.  Then ``kv_a_layernorm``, a
    column-parallel ``kv_b_proj`` and a row-parallel ``o_proj``.  The first
    ``first_k_dense_replace`` layers (and those off ``moe_layer_freq``) have a dense
    gated MLP; the others a replicated router (GateLinear, plus an fp32
    ``e_score_correction_bias`` under ``noaux_tc``), routed experts and a TP-split shared
    expert of ``moe_intermediate_size × n_shared_experts``.
    """

    # DeepseekForCausalLM (DeepSeek-MoE v1, plain attention): vmemplan/models/deepseek_mha.py
    architectures = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
    family = "moe"
    #: the dense layers in front when the config lacks ``first_k_dense_replace``
    first_dense_default = 0

    # -- config ---------------------------------------------------------------------
    def _t(self, key: str, default: int | None = None) -> int:
        return _text_int(self.config.text, key, default)

    kv_lora_rank = _ConfigInt("kv_lora_rank")
    qk_rope_head_dim = _ConfigInt("qk_rope_head_dim", 64)
    qk_nope_head_dim = _ConfigInt("qk_nope_head_dim", 128)
    v_head_dim = _ConfigInt("v_head_dim", 128)

    @property
    def q_lora_rank(self) -> int | None:
        value = self.config.text.get("q_lora_rank")
        return int(value) if value else None

    @property
    def latent_head_size(self) -> int:
        """``kv_lora_rank + qk_rope_head_dim`` (576 for DeepSeek-V2/V3/R1 and Kimi-K2)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def is_moe_layer(self, index: int) -> bool:
        """DeepseekV2DecoderLayer: MoE when routed experts exist, the layer is past
        ``first_k_dense_replace`` and on the ``moe_layer_freq`` stride."""
        text = self.config.text
        if not text.get("n_routed_experts"):
            return False
        freq = int(text.get("moe_layer_freq", 1) or 1)
        first = text.get("first_k_dense_replace")
        return index >= (self.first_dense_default if first is None else int(first)) and index % freq == 0

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        """MTP (next-n) layers vLLM loads: only when speculating with MTP."""
        method = (ctx.speculative_method or "").lower()
        if ctx.num_speculative_tokens <= 0 or method not in ("mtp", "deepseek_mtp", "eagle"):
            return 0
        return int(self.config.text.get("num_nextn_predict_layers", 0) or 0)

    # -- validation -----------------------------------------------------------------
    def validate_parallel(self, ctx: GraphContext) -> None:
        """DeepseekV2MLAAttention asserts ``num_heads % tp == 0``; the latent cache has a
        single head, so the KV-head rule of ordinary attention does not apply."""
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        if heads % tp:
            raise UsageError(
                f"--tensor-parallel-size {tp} does not divide the {heads} attention heads",
                hint=f"use a divisor of {heads}",
            )

    @property
    def intermediate_size(self) -> int:
        return self.config.intermediate_size

    # -- weights --------------------------------------------------------------------
    def attention_tensors(self, n: int, ctx: GraphContext, input_size: int | None = None) -> list[WeightTensor]:
        """The MLA projections of ``n`` layers on one rank."""
        tp = ctx.tensor_parallel_size
        h = input_size or self.config.hidden_size
        heads_local = self.config.num_attention_heads // tp
        heads = self.config.num_attention_heads
        qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
        kv_a = self.kv_lora_rank + self.qk_rope_head_dim
        out: list[WeightTensor] = []
        if self.q_lora_rank is not None:
            q = self.q_lora_rank
            out += [
                WeightTensor("self_attn.fused_qkv_a_proj", "linear", q + kv_a, h, n, True, in_features_full=h),
                WeightTensor("self_attn.q_a_layernorm", "norm", q, 1, n),
                WeightTensor("self_attn.q_b_proj", "linear", heads_local * qk_head, q, n, True, in_features_full=q),
            ]
        else:
            out += [
                WeightTensor("self_attn.q_proj", "linear", heads_local * qk_head, h, n, True, in_features_full=h),
                WeightTensor("self_attn.kv_a_proj_with_mqa", "linear", kv_a, h, n, True, in_features_full=h),
            ]
        out += [
            WeightTensor("self_attn.kv_a_layernorm", "norm", self.kv_lora_rank, 1, n),
            WeightTensor("self_attn.kv_b_proj", "linear", heads_local * (self.qk_nope_head_dim + self.v_head_dim),
                         self.kv_lora_rank, n, True, in_features_full=self.kv_lora_rank),
            WeightTensor("self_attn.o_proj", "linear", self.config.hidden_size, heads_local * self.v_head_dim, n, True,
                         in_features_full=heads * self.v_head_dim),
        ]
        return out + mla_decode_copies(n, heads_local=heads_local, kv_lora_rank=self.kv_lora_rank,
                                       qk_nope_head_dim=self.qk_nope_head_dim, v_head_dim=self.v_head_dim)

    def dense_intermediate(self) -> int:
        return self.config.intermediate_size

    def num_routed_experts(self) -> int:
        return int(self.config.text["n_routed_experts"])

    def shared_experts(self) -> tuple[int, int]:
        """(how many shared experts, the width of each)."""
        return int(self.config.text.get("n_shared_experts") or 0), self._t("moe_intermediate_size")

    def router_bias(self) -> bool:
        """Whether the router has an fp32 ``e_score_correction_bias`` (DeepseekV2MoE: under
        ``noaux_tc``)."""
        return self.config.text.get("topk_method") == "noaux_tc"

    def gate_tensors(self, experts: int, moe: int) -> list[WeightTensor]:
        """The replicated GateLinear router (model dtype) and its bias (:meth:`router_bias`)."""
        return router_tensors("mlp.gate", experts, self.config.hidden_size, moe,
                              bias="mlp.gate.e_score_correction_bias" if self.router_bias() else None)

    def mlp_widths(self, ctx: GraphContext) -> tuple[int, tuple[int, int]]:
        """(the dense MLP width, (shared experts, their width)) on ``ctx``'s rank layout; a model
        whose widths depend on TP (dots3-note's block padding) overrides this."""
        return self.dense_intermediate(), self.shared_experts()

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        """Dense MLPs of ``dense`` layers and the MoE blocks of ``moe`` layers on one rank:
        the router, the shared experts and the routed experts of ``moe_intermediate_size``."""
        h = self.config.hidden_size
        dense_width, (shared, width) = self.mlp_widths(ctx)
        out = gated_mlp_tensors("mlp", dense_width, h, dense, ctx.tensor_parallel_size)
        if moe:
            experts = self.num_routed_experts()
            out += self.gate_tensors(experts, moe)
            out += moe_experts(shared=shared, shared_inter=width, experts=experts, inter=self._t("moe_intermediate_size"),
                               hidden=h, num_layers=moe, ctx=ctx)
        return out

    def extra_layer_tensors(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        """Per-layer tensors a subclass adds (the V3.2 indexer)."""
        return []

    def rope_cache(self, ctx: GraphContext | None = None) -> WeightTensor:
        """The DeepSeek YaRN rotary cache: ``original_max_position × factor`` positions ×
        ``qk_rope_head_dim``, in the model dtype, or fp32 when vLLM's rotary custom op runs
        (``ctx.rotary_custom_op``: compilation mode NONE, i.e. --enforce-eager or -O0, turns every
        custom op on) on a host with FlashInfer (a dependency of the CUDA wheel), whose rope path
        takes the uncast cache.  Under the default compiled mode custom ops are off
        (``custom_ops: ["none"]``, vllm/config/vllm.py::VllmConfig.__post_init__) and the cache is
        cast.  Mirrors DeepseekScalingRotaryEmbedding.__init__ (``use_flashinfer = self.enabled()
        and ... has_flashinfer()``) and RotaryEmbedding.__init__ (0.33.0)."""
        cfg = self.config
        positions = cfg.max_position_embeddings
        rs = cfg.rope_scaling()
        if rs:
            factor = rs.get("factor")
            orig = rs.get("original_max_position_embeddings")
            if isinstance(factor, (int, float)) and isinstance(orig, int):
                positions = int(orig * factor)
        fp32 = ctx is not None and ctx.rotary_custom_op
        return WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, self.qk_rope_head_dim,
                            dtype="float32" if fp32 else None)

    def layer_tensors(self, n: int, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        """Attention, the subclass's extra tensors and the MLPs of ``n`` decoder layers."""
        return self.attention_tensors(n, ctx) + self.extra_layer_tensors(n, ctx) + self.mlp_tensors(dense, moe, ctx)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        h, n = span.hidden, span.layers
        out = stage_embedding(span)
        if n:
            moe = sum(1 for i in range(span.start, span.end) if self.is_moe_layer(i))
            out += self.layer_tensors(n, n - moe, moe, ctx)
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            out.append(self.rope_cache(ctx))
        out += stage_head(span)
        mtp = self.num_mtp_layers(ctx) if span.last else 0
        if mtp:
            # DeepSeekMultiTokenPredictorLayer: enorm, hnorm, eh_proj (2h -> h, replicated),
            # a full MoE decoder layer and shared_head.norm; embedding and head shared.
            out += [
                WeightTensor("mtp.enorm+hnorm+shared_head.norm", "norm", h, 1, 3 * mtp),
                WeightTensor("mtp.eh_proj", "linear", h, 2 * h, mtp, True, in_features_full=2 * h),
                WeightTensor("mtp.layernorms", "norm", h, 1, 2 * mtp),
            ]
            out += self.layer_tensors(mtp, 0, mtp, ctx)
        return out

    # -- KV cache -------------------------------------------------------------------
    def backend(self, ctx: GraphContext, user_block_size: int | None = None) -> MlaBackendChoice:
        return select_mla_backend(sm_major=ctx.sm_major, cache_dtype=ctx.cache_dtype, user_block_size=user_block_size,
                                  qk_nope_head_dim=self.qk_nope_head_dim, qk_rope_head_dim=self.qk_rope_head_dim,
                                  v_head_dim=self.v_head_dim)

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        """The block size the MLA backend leads to (see :func:`select_mla_backend`): on
        Hopper 16 with a 16-bit cache (FLASH_ATTN_MLA) and 64 with fp8 (FLASHMLA); on
        Blackwell 32 (FLASHINFER_MLA)."""
        return self.backend(ctx, user_block_size).block_size

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        """Dense MLA backends store the dtype as given (fp8 stays plain fp8: 576 bytes)."""
        from dataclasses import replace

        self.backend(replace(ctx, cache_dtype=cache_dtype))  # raises for a dtype no backend takes
        return cache_dtype

    def _layer_indices(self, ctx: GraphContext) -> range:
        return range(*self.layer_range(ctx))

    def _mla_spec(self, ctx: GraphContext, cache_dtype: str, alignment: int | None = None):

        nbytes = kv_dtype_bytes(cache_dtype, dtype_bytes(ctx.model_dtype))
        return MLAAttentionSpec(
            block_size=ctx.block_size,
            head_size=self.latent_head_size,
            cache_dtype=ctx.model_dtype if cache_dtype == "auto" else cache_dtype,
            dtype_bytes=nbytes,
            block_stride_alignment=alignment,
        )

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """One latent spec per layer on this stage (plus the MTP layers on the last stage
        while speculating with MTP): ``MLAAttentionSpec(num_kv_heads=1, head_size=576)``.
        Mirrors MLAAttention.get_kv_cache_spec (vllm/model_executor/layers/attention/
        mla_attention.py, 0.33.0)."""
        spec = self._mla_spec(ctx, ctx.cache_dtype)
        specs = {f"model.layers.{i}.self_attn.attn": spec for i in self._layer_indices(ctx)}
        if ctx.pipeline_rank == ctx.pipeline_parallel_size - 1:
            base = self.config.num_hidden_layers
            for j in range(self.num_mtp_layers(ctx)):
                specs[f"model.layers.{base + j}.self_attn.attn"] = spec
        return specs

    def kv_cache_layout(self, ctx: GraphContext) -> LayoutChoice:
        return "auto"

    def notes(self) -> tuple[str, ...]:
        return (
            "MLA latent cache: one 576-element head per token and layer, never divided by tensor parallelism",
        )


# --------------------------------------------------------------------------------------
# DeepSeek-V3.2
# --------------------------------------------------------------------------------------


@register
class DeepseekV32(DeepseekMLA):
    """DeepSeek-V3.2: the V3 graph with a lightning indexer on every layer.

    Each indexer (DeepseekV32Indexer) holds a replicated ``wq_b`` (``q_lora_rank ->
    index_n_heads × index_head_dim``, quantized), a replicated unquantized
    ``wk_weights_proj`` (``hidden -> index_head_dim + index_n_heads``), an fp32
    LayerNorm ``k_norm`` (weight and bias) and its own K cache of
    ``index_head_dim + index_head_dim // 128 × 4`` bytes per token (132).  With
    ``index_topk_freq`` > 1 (not in the released config) some layers skip it.
    """

    # GLM-5 / GLM-5.2 (``glm_moe_dsa``) is this class on CUDA and ROCm: vllm/models/deepseek_v32/
    # __init__.py imports ``DeepseekV32ForCausalLM as GlmMoeDsaForCausalLM`` (0.33.0)
    architectures = ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM")

    index_head_dim = _ConfigInt("index_head_dim", 128)
    index_n_heads = _ConfigInt("index_n_heads", 64)

    def has_indexer(self, layer_id: int) -> bool:
        """DeepseekV32Attention.__init__: skip_topk from index_topk_freq / pattern."""
        text = self.config.text
        freq = int(text.get("index_topk_freq", 1) or 1)
        pattern = text.get("index_topk_pattern")
        offset = int(text.get("index_skip_topk_offset", 2))
        if layer_id >= self.config.num_hidden_layers:
            return True
        if isinstance(pattern, (list, str)):
            skip = 0 <= layer_id < len(pattern) and pattern[layer_id] == "S"
        else:
            skip = max(layer_id - offset + 1, 0) % freq != 0
        return not skip

    weights_read_batch_tokens = True  # the DSA index buffers (models/dsa_buffers.py)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        from vmemplan.models.dsa_buffers import dsa_index_buffers

        return super().weight_tensors(ctx) + dsa_index_buffers(self, ctx, self._layer_indices(ctx), self.rope_cache(ctx))

    def extra_layer_tensors(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        q = self.q_lora_rank or self.config.hidden_size
        d, heads = self.index_head_dim, self.index_n_heads
        h = self.config.hidden_size
        return [
            WeightTensor("self_attn.indexer.wq_b", "linear", d * heads, q, n, True, in_features_full=q),
            WeightTensor("self_attn.indexer.wk_weights_proj", "linear", d + heads, h, n, False),
            WeightTensor("self_attn.indexer.k_norm", "norm", d, 2, n, dtype="float32"),
        ]

    def backend(self, ctx: GraphContext, user_block_size: int | None = None) -> MlaBackendChoice:
        return select_sparse_mla_backend(
            sm_major=ctx.sm_major,
            cache_dtype=ctx.cache_dtype,
            user_block_size=user_block_size,
            num_local_heads=self.config.num_attention_heads // ctx.tensor_parallel_size,
            head_size=self.latent_head_size,
        )

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        """``auto`` and ``bfloat16`` run a bf16 latent cache (DeepseekV32ForCausalLM.
        verify_and_update_config turns ``bfloat16`` into ``auto``; nothing in 0.33.0 makes
        ``auto`` fp8).  fp8 becomes ``fp8_ds_mla`` (656 bytes) on Hopper and stays plain
        fp8 (576 bytes) on Blackwell's FlashInfer sparse backend."""
        from dataclasses import replace

        return self.backend(replace(ctx, cache_dtype=cache_dtype)).cache_dtype

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Per layer the latent spec (with the backend's block-stride alignment) and, where
        the layer has an indexer, ``MLAAttentionSpec(head_size=132, uint8)``.
        Mirrors MLAAttention.get_kv_cache_spec plus the backend's customize_spec, and
        DeepseekV32IndexerCache.get_kv_cache_spec (0.33.0).  ``ctx.cache_dtype`` must be
        the resolved one (see :meth:`resolve_cache_dtype`)."""

        choice = self.backend(ctx)  # block validity is resolve_block_size's job
        width = kv_dtype_bytes(choice.cache_dtype, dtype_bytes(ctx.model_dtype))
        record = mla_record_bytes(choice.cache_dtype, self.latent_head_size, width)
        mla = self._mla_spec(ctx, choice.cache_dtype, sparse_block_stride_alignment(choice, record, ctx.sm_major))
        index = MLAAttentionSpec(
            block_size=ctx.block_size,
            head_size=self.index_head_dim + self.index_head_dim // 128 * 4,
            cache_dtype="uint8",
            dtype_bytes=1,
            cache_role="indexer",
        )
        names = list(self._layer_indices(ctx))
        if ctx.pipeline_rank == ctx.pipeline_parallel_size - 1:
            base = self.config.num_hidden_layers
            names += [base + j for j in range(self.num_mtp_layers(ctx))]
        specs: dict[str, Any] = {}
        for i in names:
            specs[f"model.layers.{i}.self_attn.attn"] = mla
            if self.has_indexer(i):
                specs[f"model.layers.{i}.self_attn.indexer.k_cache"] = index
        return specs

    def kv_cache_layout(self, ctx: GraphContext) -> LayoutChoice:
        """Neither FLASH_ATTN_MLA_SPARSE / FLASHMLA_SPARSE nor the V3.2 indexer declare a
        layout, so vLLM takes its default LBNHC (layer outermost), block compact as mixed
        pages need (vllm/v1/attention/backends/utils.py::resolve_kv_cache_layout, 0.33.0)."""
        return "layer_outermost"

    def notes(self) -> tuple[str, ...]:
        return (
            "DeepSeek-V3.2: sparse MLA latent cache plus a 132-byte indexer K cache per layer; "
            "--kv-cache-dtype auto keeps a bf16 latent cache in vLLM 0.33.0",
        )
