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

from dataclasses import dataclass
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import MLAAttentionSpec, kv_dtype_bytes, mla_record_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.laws.moe import moe_shard
from vmemplan.models.base import Adapter, register
from vmemplan.models.dense import pad_vocab, pp_layer_range
from vmemplan.models.mla_copies import mla_decode_copies

__all__ = [
    "DeepseekMLA",
    "DeepseekV32",
    "MlaBackendChoice",
    "select_mla_backend",
    "select_sparse_mla_backend",
    "experts_per_rank",
    "moe_expert_tensors",
]

# --------------------------------------------------------------------------------------
# Attention backend selection (block size and cache record)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MlaBackendChoice:
    """The MLA backend vLLM picks, the block size it leads to and the cache dtype it runs.

    The record size and any block-stride alignment follow from ``name`` and
    ``cache_dtype`` (see :meth:`DeepseekV32.kv_cache_specs`)."""

    name: str
    block_size: int
    cache_dtype: str


# (name, sm majors, kv cache dtypes accepted, kernel sizes, sizes are MultipleOf bases)
_DENSE_MLA_BACKENDS: dict[str, tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...], bool]] = {
    # vllm/v1/attention/backends/mla/flashinfer_mla.py::FlashInferMLABackend
    "FLASHINFER_MLA": ((10,), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (32, 64), False),
    # tokenspeed_mla.py::TokenspeedMLABackend (R1 dims, fp8 only)
    "TOKENSPEED_MLA": ((10,), ("fp8", "fp8_e4m3"), (32, 64), False),
    # cutlass_mla.py::CutlassMLABackend
    "CUTLASS_MLA": ((10,), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (128,), False),
    # flashattn_mla.py::FlashAttnMLABackend (Hopper only, 16-bit caches)
    "FLASH_ATTN_MLA": ((9,), ("auto", "float16", "bfloat16"), (16,), True),
    # flashmla.py::FlashMLABackend
    "FLASHMLA": ((9, 10), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (64,), False),
    # triton_mla.py::TritonMLABackend
    "TRITON_MLA": ((), ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"), (16,), True),
}


def _supports_block(sizes: tuple[int, ...], block_size: int | None) -> bool:
    """``AttentionBackend.supports_block_size`` (0.33.0): any multiple of a kernel size."""
    if block_size is None:
        return True
    return any(block_size % s == 0 for s in sizes)


def _preferred_block(sizes: tuple[int, ...], default: int = 16) -> int:
    """``AttentionBackend.get_preferred_block_size`` (0.33.0): the default when the backend
    accepts it, else the smallest kernel size."""
    return default if _supports_block(sizes, default) else min(sizes)


def select_mla_backend(
    *,
    sm_major: int | None,
    cache_dtype: str,
    user_block_size: int | None,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
) -> MlaBackendChoice:
    """The dense MLA backend vLLM 0.33.0 selects, and the block size it ends with.

    Mirrors vllm/platforms/cuda.py::_get_backend_priorities and
    CudaPlatformBase.get_attn_backend_cls (first valid backend in priority order; a
    user block size rules out backends whose kernel sizes do not divide it), then
    Platform.update_block_size_for_backend (the user's size, else the backend's
    preferred size from 16).  SM100: FLASHINFER_MLA, TOKENSPEED_MLA, CUTLASS_MLA,
    FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA.  Other chips: FLASH_ATTN_MLA, FLASHMLA,
    FLASHINFER_MLA, TRITON_MLA.
    """
    major = 9 if sm_major is None else sm_major
    if major == 10:
        order = ["FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA"]
    elif major == 12:
        order = ["TRITON_MLA"]
    else:
        order = ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA"]
    for name in order:
        majors, dtypes, sizes, _multiple = _DENSE_MLA_BACKENDS[name]
        if majors and major not in majors:
            continue
        if cache_dtype not in dtypes:
            continue
        if not _supports_block(sizes, user_block_size):
            continue
        if name == "FLASHINFER_MLA" and qk_nope_head_dim not in (64, 128, 192):
            continue
        if name == "TOKENSPEED_MLA" and (qk_nope_head_dim, qk_rope_head_dim, v_head_dim) != (128, 64, 128):
            continue
        block = user_block_size if user_block_size is not None else _preferred_block(sizes)
        return MlaBackendChoice(name, block, cache_dtype)
    raise UsageError(
        f"no MLA attention backend accepts --kv-cache-dtype {cache_dtype}"
        + (f" with --block-size {user_block_size}" if user_block_size is not None else ""),
        hint="vLLM's MLA backends take auto/bfloat16/fp8 caches and block sizes of 16, 32, 64 or 128",
    )


_FP8_NAMES = ("fp8", "fp8_e4m3", "fp8_e5m2")


def select_sparse_mla_backend(
    *,
    sm_major: int | None,
    cache_dtype: str,
    user_block_size: int | None,
    num_local_heads: int,
    head_size: int = 576,
) -> MlaBackendChoice:
    """The sparse MLA backend DeepSeek-V3.2 runs on, its cache dtype and the block size.

    Mirrors vllm/platforms/cuda.py::_get_backend_priorities (sparse tails, 0.33.0) and
    vllm/model_executor/layers/attention/mla_attention.py::
    _canonicalize_sparse_mla_kv_cache_dtype:

    * Hopper, 16-bit cache: FLASH_ATTN_MLA_SPARSE (block ``MultipleOf(64)``, blocks
      aligned to whole 1,152-byte rows); fp8: FLASHMLA_SPARSE, which serves every fp8
      dtype as the packed 656-byte ``fp8_ds_mla`` record.
    * Blackwell, quantized cache: FLASHINFER_MLA_SPARSE keeps plain ``fp8`` (576-byte
      records, blocks aligned to 32 rows); it refuses ``fp8_ds_mla`` / ``nvfp4_ds_mla``,
      which fall to FLASHMLA_SPARSE.  16-bit cache: FLASHMLA_SPARSE (or the FA4 sparse
      backend at 16 local heads or fewer; same block size).

    The block size is the smallest every attention backend accepts: the sparse MLA
    backend's and the indexer's ``[64]`` (vllm/v1/attention/backends/mla/indexer.py::
    DeepseekV32IndexerBackend), so 64 unless the user gives a multiple of 64.
    """
    major = 9 if sm_major is None else sm_major
    dtype = "auto" if cache_dtype in ("auto", "bfloat16") else cache_dtype
    if dtype == "float16":
        raise UsageError("DeepSeek-V3.2's sparse MLA backends do not take a float16 cache")
    if user_block_size is not None and user_block_size % 64:
        raise UsageError(
            f"--block-size {user_block_size} is not a multiple of 64, which the DeepSeek-V3.2 "
            "indexer and sparse MLA kernels need",
            hint="use 64 or a multiple of it",
        )
    block = user_block_size if user_block_size is not None else 64
    if major == 10:
        if dtype in _FP8_NAMES and dtype != "fp8_e5m2":
            return MlaBackendChoice("FLASHINFER_MLA_SPARSE", block, dtype)
        if dtype in ("fp8_ds_mla", "fp8_e5m2"):
            return MlaBackendChoice("FLASHMLA_SPARSE", block, "fp8_ds_mla")
        if dtype == "nvfp4_ds_mla":
            return MlaBackendChoice("FLASHMLA_SPARSE", block, "nvfp4_ds_mla")
        if dtype == "auto":
            name = "FLASH_ATTN_MLA_SPARSE_FA4" if num_local_heads <= 16 else "FLASHMLA_SPARSE"
            return MlaBackendChoice(name, block, "auto")
    else:
        if dtype == "auto":
            return MlaBackendChoice("FLASH_ATTN_MLA_SPARSE", block, "auto")
        if dtype in _FP8_NAMES or dtype == "fp8_ds_mla":
            return MlaBackendChoice("FLASHMLA_SPARSE", block, "fp8_ds_mla")
        if dtype == "nvfp4_ds_mla":
            raise UsageError("nvfp4_ds_mla needs FlashMLA's SM100 kernels", hint="use --kv-cache-dtype fp8")
    raise UsageError(
        f"DeepSeek-V3.2's sparse MLA backends do not take --kv-cache-dtype {cache_dtype}",
        hint="use auto (bf16) or fp8",
    )


# --------------------------------------------------------------------------------------
# Mixture of experts
# --------------------------------------------------------------------------------------


def experts_per_rank(num_experts: int, ctx: GraphContext) -> int:
    """Routed experts the fullest rank holds (vmemplan.laws.moe.moe_shard: without expert
    parallelism every expert, a slice of each; with it whole experts over tp × dp ranks, the
    fuller rank holding one more where they do not divide)."""
    return moe_shard(ctx, num_experts)[0]


def shared_expert_tensors(prefix: str, *, shared: int, moe_inter: int, hidden: int, num_layers: int,
                          ctx: GraphContext) -> list[WeightTensor]:
    """The always-on shared experts of ``num_layers`` MoE layers: one gated MLP of width
    ``shared × moe_intermediate_size``, column/row-parallel over TP (DeepseekV2MLP in
    deepseek_v2.py, 0.33.0).  Empty when the model has none."""
    if not shared:
        return []
    si = moe_inter * shared
    tp = ctx.tensor_parallel_size
    return [
        WeightTensor(f"{prefix}.gate_up_proj", "linear", 2 * si // tp, hidden, num_layers, True,
                     in_features_full=hidden),
        WeightTensor(f"{prefix}.down_proj", "linear", hidden, si // tp, num_layers, True, in_features_full=si),
    ]


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


def _text_int(text: Any, key: str, default: int | None = None) -> int:
    value = text.get(key, default)
    if value is None:
        raise UsageError(f"config.json lacks {key!r}, which the DeepSeek graph needs")
    return int(value)


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

    architectures = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekForCausalLM")
    family = "moe"

    # -- config ---------------------------------------------------------------------
    def _t(self, key: str, default: int | None = None) -> int:
        return _text_int(self.config.text, key, default)

    @property
    def kv_lora_rank(self) -> int:
        return self._t("kv_lora_rank")

    @property
    def qk_rope_head_dim(self) -> int:
        return self._t("qk_rope_head_dim", 64)

    @property
    def qk_nope_head_dim(self) -> int:
        return self._t("qk_nope_head_dim", 128)

    @property
    def v_head_dim(self) -> int:
        return self._t("v_head_dim", 128)

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
        return index >= int(text.get("first_k_dense_replace", 0) or 0) and index % freq == 0

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

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        """Dense MLPs of ``dense`` layers and the MoE blocks of ``moe`` layers on one rank."""
        text = self.config.text
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        out: list[WeightTensor] = []
        if dense:
            inter = self.config.intermediate_size
            out += [
                WeightTensor("mlp.gate_up_proj", "linear", 2 * inter // tp, h, dense, True, in_features_full=h),
                WeightTensor("mlp.down_proj", "linear", h, inter // tp, dense, True, in_features_full=inter),
            ]
        if moe:
            experts = int(text["n_routed_experts"])
            moe_inter = self._t("moe_intermediate_size")
            out.append(WeightTensor("mlp.gate", "router", experts, h, moe))
            if text.get("topk_method") == "noaux_tc":
                out.append(WeightTensor("mlp.gate.e_score_correction_bias", "router", experts, 1, moe, dtype="float32"))
            out += shared_expert_tensors("mlp.shared_experts", shared=int(text.get("n_shared_experts") or 0),
                                         moe_inter=moe_inter, hidden=h, num_layers=moe, ctx=ctx)
            out += moe_expert_tensors("mlp.experts", num_experts=experts, hidden=h, inter=moe_inter,
                                      num_layers=moe, ctx=ctx)
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

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        start, end = pp_layer_range(cfg.num_hidden_layers, ctx.pipeline_parallel_size, ctx.pipeline_rank)
        n = end - start
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n:
            moe = sum(1 for i in range(start, end) if self.is_moe_layer(i))
            out += self.attention_tensors(n, ctx)
            out += self.extra_layer_tensors(n, ctx)
            out += self.mlp_tensors(n - moe, moe, ctx)
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            out.append(self.rope_cache(ctx))
        if last:
            out.append(WeightTensor("model.norm", "norm", h, 1))
            out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
            mtp = self.num_mtp_layers(ctx)
            if mtp:
                # DeepSeekMultiTokenPredictorLayer: enorm, hnorm, eh_proj (2h -> h, replicated),
                # a full MoE decoder layer and shared_head.norm; embedding and head shared.
                out += [
                    WeightTensor("mtp.enorm+hnorm+shared_head.norm", "norm", h, 1, 3 * mtp),
                    WeightTensor("mtp.eh_proj", "linear", h, 2 * h, mtp, True, in_features_full=2 * h),
                    WeightTensor("mtp.layernorms", "norm", h, 1, 2 * mtp),
                ]
                out += self.attention_tensors(mtp, ctx)
                out += self.extra_layer_tensors(mtp, ctx)
                out += self.mlp_tensors(0, mtp, ctx)
        return out

    # -- KV cache -------------------------------------------------------------------
    def backend(self, ctx: GraphContext, user_block_size: int | None = None) -> MlaBackendChoice:
        return select_mla_backend(
            sm_major=ctx.sm_major,
            cache_dtype=ctx.cache_dtype,
            user_block_size=user_block_size,
            qk_nope_head_dim=self.qk_nope_head_dim,
            qk_rope_head_dim=self.qk_rope_head_dim,
            v_head_dim=self.v_head_dim,
        )

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
        start, end = pp_layer_range(self.config.num_hidden_layers, ctx.pipeline_parallel_size, ctx.pipeline_rank)
        return range(start, end)

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

    def kv_cache_layout(self, ctx: GraphContext) -> str:
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

    @property
    def index_head_dim(self) -> int:
        return self._t("index_head_dim", 128)

    @property
    def index_n_heads(self) -> int:
        return self._t("index_n_heads", 64)

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

        start, end = pp_layer_range(self.config.num_hidden_layers, ctx.pipeline_parallel_size, ctx.pipeline_rank)
        return super().weight_tensors(ctx) + dsa_index_buffers(self, ctx, range(start, end), self.rope_cache(ctx))

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
        # customize_spec of each backend (0.33.0): FLASH_ATTN_MLA_SPARSE and FLASHMLA_SPARSE
        # (16-bit, or quantized on SM100) align blocks to whole rows; FLASHMLA_SPARSE
        # quantized off SM100 asks for whole 64-token kernel pages (a no-op at a multiple
        # of 64); FLASHINFER_MLA_SPARSE aligns to rows of its 32-token pages.
        if choice.name == "FLASHINFER_MLA_SPARSE":
            align: int | None = 32 * record
        elif choice.name == "FLASHMLA_SPARSE" and choice.cache_dtype != "auto" and (ctx.sm_major or 9) != 10:
            align = None
        else:
            align = record
        mla = self._mla_spec(ctx, choice.cache_dtype, align)
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

    def kv_cache_layout(self, ctx: GraphContext) -> str:
        """Neither FLASH_ATTN_MLA_SPARSE / FLASHMLA_SPARSE nor the V3.2 indexer declare a
        layout, so vLLM takes its default LBNHC (layer outermost), block compact as mixed
        pages need (vllm/v1/attention/backends/utils.py::resolve_kv_cache_layout, 0.33.0)."""
        return "layer_outermost"

    def notes(self) -> tuple[str, ...]:
        return (
            "DeepSeek-V3.2: sparse MLA latent cache plus a 132-byte indexer K cache per layer; "
            "--kv-cache-dtype auto keeps a bf16 latent cache in vLLM 0.33.0",
        )
