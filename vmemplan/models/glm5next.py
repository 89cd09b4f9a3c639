"""GLM-5.3-Flash (``Glm5NextForCausalLM``): Kimi delta attention (KDA) layers next to NoPE MLA
layers with a kpool sparse indexer, MoE, and mHC residual streams.

Mirrors vllm/models/glm5next/ (0.33.0): common/model.py (Glm5NextModel, Glm5NextDecoderLayer,
Glm5NextMoE, Glm5NextMLP), common/kda.py (Glm5NextLinearAttention), common/attention.py
(Glm5NextMLAAttention, Indexer, Glm5NextIndexerCache, Glm5NextTailCache) and
vllm/v1/attention/backends/mla/indexer.py (Glm5NextIndexerBackend, KpoolTailBackend).

Everything outside the MoE and dense MLPs is unquantized whatever the checkpoint says: the KDA
layer builds its projections with ``quant_config=None`` and the decoder passes ``None`` to the
MLA attention (and so to its indexer).

KV cache per rank: one KDA ``MambaSpec`` per linear layer (registered under ``self_attn``), and
per MLA layer the sparse latent cache (``kv_lora_rank + qk_rope_head_dim`` = 512 elements a
token), the indexer's kpool-compressed K cache (``MLAAttentionSpec`` of 132 uint8 bytes, one
state per ``index_kpool`` tokens) and the kpool tail ring (``CircularBufferSpec``: ``ring``
tokens of two bf16 ``index_head_dim`` rows, one block a request).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import CircularBufferSpec, MLAAttentionSpec, kv_dtype_bytes, mla_record_bytes
from vmemplan.core.units import dtype_bytes, round_up
from vmemplan.models.base import register
from vmemplan.models.deepseek import MlaBackendChoice, select_sparse_mla_backend
from vmemplan.models.hybrid import (
    HybridAlignment,
    LayerKind,
    StateTensor,
    align_hybrid_block_size,
    kda_state,
    kda_state_dtypes,
)
from vmemplan.models.mixer_blocks import LinearMlaHybrid, embedding_tensors, head_tensors
from vmemplan.models.mla_backends import sparse_block_stride_alignment
from vmemplan.models.mla_copies import mla_decode_copies
from vmemplan.models.moe_blocks import gated_mlp_tensors, moe_experts, router_tensors

if TYPE_CHECKING:  # pragma: no cover
    from vmemplan.laws.kv_groups import LayoutChoice

__all__ = ["Glm5Next", "flashkda_workspace_bytes", "sparse_topk_width", "tail_ring_tokens"]

#: the smallest kernel block of the sparse MLA backends (``MultipleOf(64)``,
#: vllm/v1/attention/backends/mla/flashattn_mla_sparse.py / flashmla_sparse.py, 0.33.0)
SPARSE_MLA_KERNEL_BLOCK = 64
#: prefill checkpoint alignment of FlashKDA layers (vllm/model_executor/layers/mamba/
#: kda_checkpoint.py::kda_prefill_checkpoint_alignment, 0.33.0)
FLASHKDA_CHECKPOINT_ALIGNMENT = 16


def sparse_topk_width(index_topk: int, index_kpool: int) -> int:
    """Columns of the top-k index buffer: ``round_up(topk + kpool - 1, 128)`` (the incomplete
    pool tail reserved, sparse-MLA tiles aligned).  Mirrors common/model.py::
    get_sparse_topk_buffer_width (0.33.0)."""
    return round_up(index_topk + index_kpool - 1, 128)


def tail_ring_tokens(index_kpool: int, num_speculative_tokens: int) -> int:
    """Tokens of the kpool tail ring: ``kpool × next_pow2(cdiv(kpool + spec, kpool))``.
    Mirrors common/attention.py::Glm5NextTailCache.get_kv_cache_spec (0.33.0)."""
    pools = -(-(index_kpool + num_speculative_tokens) // index_kpool)
    return index_kpool * (1 << (pools - 1).bit_length())


def flashkda_workspace_bytes(max_num_batched_tokens: int, local_heads: int, max_num_seqs: int) -> int:
    """``torch.ops._flashkda_C.get_workspace_size(T, H, N)`` of the vLLM 0.33.0 wheel:
    ``(cdiv(T, 16) + N) × H × 27 × 512`` bytes (the compiled op's integer arithmetic, read from
    its x86-64 body in ``vllm/_flashkda_C.abi3.so``; see bench/oracle/shims_glm5next.py)."""
    return (-(-max_num_batched_tokens // 16) + max_num_seqs) * local_heads * 27 * 512


@register
class Glm5Next(LinearMlaHybrid):
    """vllm/models/glm5next/common/model.py::Glm5NextForCausalLM (0.33.0).

    Per decoder layer: ``input_layernorm`` and ``post_attention_layernorm``; with ``mhc`` the
    fp32 hyper-connection mixers ``hc_attn_fn``/``hc_ffn_fn [(2+n)·n, n·hidden]``,
    ``hc_*_base [(2+n)·n]`` and ``hc_*_scale [3]`` (n = ``hc_mult``).

    * KDA layers (Glm5NextLinearAttention, P = ``linear_num_heads × linear_head_dim``): the merged
      ``in_proj_qkvbfg_a`` ([q, k, v (P/tp each), beta (heads/tp), f_a and g_a (head_dim each,
      replicated)]), ``f_b_proj``/``g_b_proj [P/tp, head_dim]``, fp32 ``dt_bias [P/tp]``, fp32
      ``q/k/v_conv1d [P/tp, 1, K]``, fp32 ``A_log [heads/tp]``, ``o_norm [head_dim]`` and
      ``o_proj [hidden, P/tp]``.
    * MLA layers (Glm5NextMLAAttention): ``fused_qkv_a_proj``, ``q_a_layernorm``, ``q_b_proj``,
      ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj`` (W_UK_T/W_UV views of the unquantized
      ``kv_b_proj``), the four fp32 scales, and the indexer: replicated ``wq_b``, replicated
      ``wk_weights_proj [index_head_dim + index_n_heads, hidden]``, fp32 LayerNorm ``k_norm``,
      bf16 ``index_kpool_compress_gate [index_head_dim, hidden]`` and fp32
      ``index_kpool_compress_ape [index_kpool, index_head_dim]``.  No rotary cache holds bytes
      (NoPE: ``qk_rope_head_dim`` 0).
    * MLP: a dense gated MLP where ``mlp_layer_types`` says ``dense``, else Glm5NextMoE (router
      in the model dtype, fp32 ``e_score_correction_bias`` under ``noaux_tc``, a TP-split shared
      expert, fused routed experts).
    * Model buffers: the shared int32 top-k index buffer ``[max_num_batched_tokens,
      round_up(topk + kpool - 1, 128)]``; per MLA layer its sparse-MLA index group
      (``physical_topk_indices [T + 1, width]``, ``valid_topk_counts [T + 1]`` int32; the
      builder is opened by the layer itself, so its rows are the buffer's, T) and, on
      FLASH_ATTN_MLA_SPARSE, ``cu_seqlens_q_buffer [T + 1]`` int32
      (vllm/model_executor/layers/attention/sparse_mla_attention.py, vllm/v1/attention/
      backends/mla/index_group.py, flashattn_mla_sparse.py::FlashAttnMLASparseImpl, 0.33.0).
    """

    architectures = ("Glm5NextForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    weights_read_batch_tokens = True  # the top-k index buffers

    # -- config ---------------------------------------------------------------------------
    def _int(self, key: str, default: int | None = None) -> int:
        v = self.config.text.get(key, default)
        if v is None or isinstance(v, bool):
            raise ModelConfigError(f"config.json lacks {key!r}, which GLM-5.3-Flash needs")
        return int(v)

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        """``layer_types`` (``linear_attention`` → KDA); the config class's default when absent:
        every layer but each fourth is KDA (transformers Glm5NextTextConfig.__post_init__)."""
        n = self.config.num_hidden_layers
        types = self.config.text.get("layer_types")
        if types is None:
            types = ["linear_attention" if i % 4 != 3 else "indexed_attention" for i in range(n)]
        if not isinstance(types, list) or len(types) < n:
            raise ModelConfigError("config.json's layer_types does not list every layer")
        return tuple("mamba" if t == "linear_attention" else "mla" for t in types[:n])

    def mlp_is_moe(self, i: int) -> bool:
        """Glm5NextDecoderLayer: MoE when the config has routed experts and ``mlp_layer_types``
        says ``sparse`` (default: three dense layers, then sparse)."""
        if not self.config.text.get("n_routed_experts"):
            return False
        types = self.config.text.get("mlp_layer_types")
        if types is None:
            return i >= 3
        return (types[i] if i < len(types) else (types[-1] if types else "sparse")) == "sparse"

    def _kda(self) -> tuple[int, int, int]:
        """(linear_num_heads, linear_head_dim, linear_conv_kernel_dim), with the nested
        ``linear_attn_config`` spelling taking precedence as the config class reads it."""
        text = self.config.text
        heads, dim, kernel = (int(text.get("linear_num_heads", 64)), int(text.get("linear_head_dim", 128)),
                              int(text.get("linear_conv_kernel_dim", 4)))
        nested = text.get("linear_attn_config")
        if isinstance(nested, dict):
            heads = int(nested.get("num_heads", heads))
            dim = int(nested.get("head_dim", dim))
            kernel = int(nested.get("short_conv_kernel_size", kernel))
        return heads, dim, kernel

    def _lower_bound(self) -> float | None:
        """``linear_lower_bound`` as Glm5NextTextConfig.__post_init__ resolves it: the nested
        ``gate_lower_bound`` when given, -5.0 when that is null under ``safe_gate`` (default)."""
        text = self.config.text
        v = text.get("linear_lower_bound", -5.0)
        nested = text.get("linear_attn_config")
        if isinstance(nested, dict):
            v = nested.get("gate_lower_bound", v)
            if nested.get("safe_gate", True) and v is None:
                v = -5.0
        return None if v is None else float(v)

    def _indexer(self) -> tuple[int, int, int, int]:
        """(index_topk, index_n_heads, index_head_dim, index_kpool); topk 0 without an indexer."""
        text = self.config.text
        if text.get("index_topk") is None:
            return 0, 0, 0, 1
        return self._int("index_topk"), self._int("index_n_heads", 32), self._int("index_head_dim", 128), \
            self._int("index_kpool", 16)

    @property
    def mla_head_size(self) -> int:
        return self._int("kv_lora_rank") + self._int("qk_rope_head_dim", 0)

    # -- validation -------------------------------------------------------------------------
    def validate_parallel(self, ctx: GraphContext) -> None:
        self.check_heads(ctx)
        heads, _, _ = self._kda()
        if heads % ctx.tensor_parallel_size:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} does not divide the "
                             f"{heads} KDA heads")
        if ctx.pipeline_parallel_size > 1:
            raise UsageError("GLM-5.3-Flash needs --pipeline-parallel-size 1 (vLLM 0.33.0 has no PP path for "
                             "its mHC state)", hint="use tensor parallelism")
        if ctx.num_speculative_tokens and (ctx.speculative_method or "").lower() == "mtp":
            raise UsageError("GLM-5.3-Flash's MTP drafter (Glm5NextMTP) is not modelled by vmemplan",
                             hint="plan without --speculative-config")
        topk, _, dim, kpool = self._indexer()
        if topk and not self.config.text.get("index_kpool_always_select_tail", True):
            raise ModelConfigError("vLLM 0.33.0 refuses index_kpool_always_select_tail=false (GLM-5.3)")
        if topk and (dim != 128 or kpool < 2):
            raise ModelConfigError("vLLM 0.33.0's GLM-5.3 indexer needs index_head_dim 128 and index_kpool > 1")

    def uses_flashkda(self, ctx: GraphContext) -> bool:
        """Whether the KDA layers run FlashKDA prefill (kda_prefill_backend "auto"): CUDA SM
        9.x/10.x/12.x, a bf16 model, ``linear_head_dim`` 128 and a bounded gate.  Mirrors
        common/kda.py::_resolve_kda_prefill_backend (0.33.0)."""
        _, dim, _ = self._kda()
        return (ctx.sm_major in (9, 10, 12) and ctx.model_dtype in ("bfloat16", "bf16") and dim == 128
                and self._lower_bound() is not None)

    def prefill_checkpoint_alignment(self, ctx: GraphContext, mode: str) -> int | None:
        """16 under FlashKDA (Glm5NextLinearAttention.get_kv_cache_spec), else none."""
        return FLASHKDA_CHECKPOINT_ALIGNMENT if self.uses_flashkda(ctx) else None

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Glm5NextLinearAttention.get_state_shape / get_state_dtype → kda_state_shape /
        kda_state_dtype (0.33.0)."""
        heads, dim, kernel = self._kda()
        conv, rec = kda_state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return kda_state(tp=ctx.tensor_parallel_size, num_heads=heads, head_dim=dim, conv_kernel=kernel,
                         num_spec=ctx.num_speculative_tokens, conv_dtype=conv, rec_dtype=rec)

    # -- weights -----------------------------------------------------------------------------
    def _kda_tensors(self, tp: int, h: int, n: int) -> list[WeightTensor]:
        heads, dim, kernel = self._kda()
        p = heads * dim
        lin, vec = self.linear, self.vector
        return [
            lin("self_attn.in_proj_qkvbfg_a", 3 * p // tp + heads // tp + 2 * dim, h, n, quantizable=False),
            lin("self_attn.f_b_proj+g_b_proj", p // tp, dim, 2 * n, quantizable=False),
            vec("self_attn.dt_bias", p // tp, n, kind="bias", dtype="float32"),
            lin("self_attn.q/k/v_conv1d", p // tp, kernel, 3 * n, quantizable=False, dtype="float32"),
            vec("self_attn.A_log", heads // tp, n, kind="bias", dtype="float32"),
            vec("self_attn.o_norm", dim, n),
            lin("self_attn.o_proj", h, p // tp, n, quantizable=False),
        ]

    def _mla_tensors(self, tp: int, h: int, n: int) -> list[WeightTensor]:
        heads = self.config.num_attention_heads
        nope, rope = self._int("qk_nope_head_dim"), self._int("qk_rope_head_dim", 0)
        v, lora = self._int("v_head_dim"), self._int("kv_lora_rank")
        q_lora = self.config.text.get("q_lora_rank")
        if not q_lora:
            raise ModelConfigError("GLM-5.3-Flash's MLA layers need q_lora_rank")
        q_lora = int(q_lora)
        lin, vec = self.linear, self.vector
        out = [
            lin("self_attn.fused_qkv_a_proj", q_lora + lora + rope, h, n, quantizable=False),
            vec("self_attn.q_a_layernorm", q_lora, n),
            lin("self_attn.q_b_proj", heads // tp * (nope + rope), q_lora, n, quantizable=False),
            vec("self_attn.kv_a_layernorm", lora, n),
            lin("self_attn.kv_b_proj", heads // tp * (nope + v), lora, n, quantizable=False),
            lin("self_attn.o_proj", h, heads // tp * v, n, quantizable=False),
            *mla_decode_copies(n, heads_local=heads // tp, kv_lora_rank=lora, qk_nope_head_dim=nope, v_head_dim=v),
        ]
        topk, ih, idim, kpool = self._indexer()
        if topk:
            out += [
                lin("self_attn.indexer.wq_b", ih * idim, q_lora, n, quantizable=False),
                lin("self_attn.indexer.wk_weights_proj", idim + ih, h, n, quantizable=False),
                WeightTensor("self_attn.indexer.k_norm", "norm", idim, 2, n, dtype="float32"),
                lin("self_attn.indexer.index_kpool_compress_gate", idim, h, n, quantizable=False, dtype="bfloat16"),
                WeightTensor("self_attn.indexer.index_kpool_compress_ape", "buffer", kpool, idim, n, dtype="float32"),
            ]
        return out

    def _mlp_tensors(self, ctx: GraphContext, layers: range) -> list[WeightTensor]:
        h, tp = self.config.hidden_size, ctx.tensor_parallel_size
        moe = sum(1 for i in layers if self.mlp_is_moe(i))
        out = gated_mlp_tensors("mlp", self.config.intermediate_size, h, len(layers) - moe, tp)
        if moe:
            e = self._int("n_routed_experts")
            bias = "mlp.gate.e_score_correction_bias" if self.config.text.get("topk_method") == "noaux_tc" else None
            out += router_tensors("mlp.gate", e, h, moe, bias=bias)
            out += moe_experts(shared=int(self.config.text.get("n_shared_experts") or 0),
                               shared_inter=self._int("moe_intermediate_size"), experts=e,
                               inter=self._int("moe_intermediate_size"), hidden=h, num_layers=moe, ctx=ctx)
        return out

    def _index_buffers(self, ctx: GraphContext, n_mla: int) -> list[WeightTensor]:
        topk, _, _, kpool = self._indexer()
        if not topk or not n_mla:
            return []
        width, t = sparse_topk_width(topk, kpool), ctx.max_num_batched_tokens
        out = [
            WeightTensor("model.topk_indices_buffer", "buffer", t, width, dtype="int32"),
            WeightTensor("mla_attn.impl.index_group.physical_topk_indices", "buffer", t + 1, width, n_mla,
                         dtype="int32"),
            WeightTensor("mla_attn.impl.index_group.valid_topk_counts", "buffer", t + 1, 1, n_mla, dtype="int32"),
        ]
        if self._sparse_backend(ctx).name == "FLASH_ATTN_MLA_SPARSE":
            out.append(WeightTensor("mla_attn.impl.cu_seqlens_q_buffer", "buffer", t + 1, 1, n_mla, dtype="int32"))
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        self.validate_parallel(ctx)
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        layers = range(span.start, span.end)
        kinds = self.stage_kinds(span)
        n_kda, n_mla, n = kinds["mamba"], kinds["mla"], span.layers
        out = embedding_tensors(span)
        if n_kda:
            out += self._kda_tensors(tp, h, n_kda)
        if n_mla:
            out += self._mla_tensors(tp, h, n_mla)
        out += self._mlp_tensors(ctx, layers)
        if n:
            out.append(self.vector("input_layernorm+post_attention_layernorm", h, 2 * n))
            if self.config.text.get("mhc"):
                hc = self._int("hc_mult", 4)
                mix = (2 + hc) * hc
                out += [
                    WeightTensor("hc_attn_fn+hc_ffn_fn", "linear", mix, hc * h, 2 * n, dtype="float32"),
                    WeightTensor("hc_attn_base+hc_ffn_base", "norm", mix, 1, 2 * n, dtype="float32"),
                    WeightTensor("hc_attn_scale+hc_ffn_scale", "norm", 3, 1, 2 * n, dtype="float32"),
                ]
        out += self._index_buffers(ctx, n_mla)
        return out + head_tensors(span, tied=self.config.tie_word_embeddings)

    # -- attention backend, block size and cache dtype ---------------------------------------
    def _sparse_backend(self, ctx: GraphContext, user_block_size: int | None = None) -> MlaBackendChoice:
        return select_sparse_mla_backend(sm_major=ctx.sm_major, cache_dtype=ctx.cache_dtype,
                                         user_block_size=user_block_size,
                                         num_local_heads=self.config.num_attention_heads // ctx.tensor_parallel_size,
                                         head_size=self.mla_head_size)

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        """``auto`` becomes ``fp8`` on SM10x when the config has an indexer
        (vllm/model_executor/models/config.py::Glm5NextModelConfig, 0.33.0); then the sparse
        backend's own canonical dtype (as DeepSeek-V3.2)."""
        from dataclasses import replace

        if cache_dtype == "auto" and ctx.sm_major == 10 and self._indexer()[0]:
            cache_dtype = "fp8"
        return str(self._sparse_backend(replace(ctx, cache_dtype=cache_dtype)).cache_dtype)

    def indexer_kernel_block(self, ctx: GraphContext) -> int:
        """The indexer backend's smallest kernel block: ``index_kpool ×`` DeepGEMM's smallest
        paged-MQA page (32, or 64 on SM12x).  Mirrors Glm5NextIndexerBackend.
        get_supported_kernel_block_sizes and vllm/utils/deep_gemm.py::get_paged_mqa_page_sizes."""
        return self._indexer()[3] * (64 if ctx.sm_major == 12 else 32)

    def hybrid_alignment(self, ctx: GraphContext, block_size: int) -> HybridAlignment:
        """Platform._align_hybrid_block_size (0.33.0) with this model's backends: the kernel
        alignment ``max(64, block_size)`` (sparse MLA's ``MultipleOf(64)``), at least 128 for
        MLA, lcm'd with FlashKDA's 16 in "align" mode; the block then rounded up to the lcm of
        every attention backend's smallest kernel block (sparse MLA 64, the indexer
        ``kpool × 32``, the tail ring 1)."""
        mode = self.mamba_cache_mode(ctx)
        align = max(SPARSE_MLA_KERNEL_BLOCK, block_size, 128)
        if mode == "align":
            align = math.lcm(align, self.prefill_checkpoint_alignment(ctx, mode) or 1)
        backend = SPARSE_MLA_KERNEL_BLOCK
        if self._indexer()[0]:
            backend = math.lcm(backend, self.indexer_kernel_block(ctx))
        return align_hybrid_block_size(block_size=block_size, mamba_page_bytes=self.mamba_page_bytes(ctx),
                                       attention_page_per_token_bytes=self.attention_page_per_token_bytes(ctx),
                                       kernel_block_alignment=align, backend_block_alignment=backend,
                                       mamba_cache_mode=mode)

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        """The sparse MLA backend's block (64 unless the user gives a multiple of 64) raised by
        :meth:`hybrid_alignment`."""
        start = self._sparse_backend(ctx, user_block_size).block_size
        return self.hybrid_alignment(ctx, start).block_size

    def _attention_spec(self, ctx: GraphContext, block_size: int) -> MLAAttentionSpec:
        choice = self._sparse_backend(ctx)
        width = kv_dtype_bytes(choice.cache_dtype, dtype_bytes(ctx.model_dtype))
        record = mla_record_bytes(choice.cache_dtype, self.mla_head_size, width)
        align = sparse_block_stride_alignment(choice, record, ctx.sm_major)  # the backend's customize_spec
        return MLAAttentionSpec(block_size=block_size, head_size=self.mla_head_size,
                                cache_dtype=ctx.model_dtype if choice.cache_dtype == "auto" else choice.cache_dtype,
                                dtype_bytes=width, block_stride_alignment=align)

    def attention_page_per_token_bytes(self, ctx: GraphContext) -> int:
        """One token of the latent cache as the platform alignment sizes it (no block-stride
        alignment)."""
        choice = self._sparse_backend(ctx)
        width = kv_dtype_bytes(choice.cache_dtype, dtype_bytes(ctx.model_dtype))
        return mla_record_bytes(choice.cache_dtype, self.mla_head_size, width)

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """The hybrid specs (KDA MambaSpecs, sparse MLA specs) plus, per MLA layer, the indexer's
        kpool K cache and tail ring.  Mirrors Glm5NextIndexerCache / Glm5NextTailCache.
        get_kv_cache_spec (common/attention.py, 0.33.0)."""
        specs = super().kv_cache_specs(ctx)
        topk, _, idim, kpool = self._indexer()
        if not topk:
            return specs
        start, end = self.layer_range(ctx)
        kinds = self.layer_kinds()
        mla_names = [i for i in range(start, end) if kinds[i] == "mla"]
        if not mla_names:
            return specs
        block = specs[self.attention_layer_name.format(i=mla_names[0])].block_size
        ring = tail_ring_tokens(kpool, ctx.num_speculative_tokens)
        if block % ring:
            raise UsageError(f"the attention block size {block} is not a multiple of GLM-5.3's kpool tail ring "
                             f"({ring} tokens)")
        record = idim + idim // 128 * 4
        # block_stride_alignment MultipleOf(kpool × 64) (the indexer's largest kernel block:
        # blocks split into kernel blocks of up to that many tokens), resolved as
        # KVCacheSpec.get_block_stride_alignment does: the page at gcd(that, block) tokens
        kernel = math.gcd(kpool * 64, block)
        stride_align = None if kernel == block else kernel // kpool * record
        index = MLAAttentionSpec(block_size=block, head_size=record, cache_dtype="uint8", dtype_bytes=1,
                                 cache_role="indexer", compress_ratio=kpool, block_stride_alignment=stride_align)
        tail = CircularBufferSpec(block_size=ring, num_kv_heads=2, head_size=idim, cache_dtype="bfloat16",
                                  dtype_bytes=2, head_size_v=0, dcp_sharded=False)
        for i in mla_names:
            specs[f"model.layers.{i}.self_attn.indexer.k_cache"] = index
            specs[f"model.layers.{i}.self_attn.indexer.tail_cache"] = tail
        return specs

    def kv_cache_layout(self, ctx: GraphContext) -> LayoutChoice:
        """KpoolTailBackend declares only BLHNC (block outermost): vllm/v1/attention/backends/
        mla/indexer.py (0.33.0)."""
        return "block_outermost" if self._indexer()[0] else "layer_outermost"

    # -- buffers outside the KV budget -------------------------------------------------------
    def flashkda_buffer_bytes(self, ctx: GraphContext) -> int:
        """FlashKDA's prefill buffers from vLLM's shared workspace manager: the final and
        checkpoint states ``[max_num_seqs, heads/tp, head_dim, head_dim]`` (SSM state dtype)
        each, the byte workspace (:func:`flashkda_workspace_bytes`) and the output ``[1,
        max_num_batched_tokens, heads/tp, head_dim]`` (model dtype), each rounded up to 256 B
        (WorkspaceManager.get_simultaneous).  Mirrors Glm5NextLinearAttention.__init__ /
        _flashkda_prefill (common/kda.py, 0.33.0); 0 without FlashKDA.

        Not an activation of the profile run, so not priced against the KV budget: the layer
        returns before any kernel when the forward context has no attention metadata
        (Glm5NextLinearAttention._forward), which is how vLLM's profile run and piecewise
        capture call it; the buffers are first requested by a prefill with metadata.  From
        vLLM's code, not checked on a GPU."""
        if not self.uses_flashkda(ctx) or not self.num_recurrent_layers():
            return 0
        heads, dim, _ = self._kda()
        local = heads // ctx.tensor_parallel_size
        _, rec = kda_state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        t, n = ctx.max_num_batched_tokens, ctx.max_num_seqs
        parts = (n * local * dim * dim * dtype_bytes(rec), n * local * dim * dim * dtype_bytes(rec),
                 flashkda_workspace_bytes(t, local, n), t * local * dim * dtype_bytes(ctx.model_dtype))
        return sum(round_up(x, 256) for x in parts)

    def notes(self) -> tuple[str, ...]:
        return ("GLM-5.3-Flash: KDA state per linear layer; per MLA layer a 512-element NoPE latent cache, a "
                "132-byte kpool-compressed indexer K cache (one entry per index_kpool tokens) and a tail ring",
                "FlashKDA prefill buffers (two [max_num_seqs, KDA heads/TP, 128, 128] fp32 states, a workspace and "
                "an output buffer; about 10 GB at TP 1 with 1024 sequences) come from vLLM's workspace manager at the "
                "first prefill, outside the profile run, so they are not in the KV budget; leave headroom for them")
