"""DeepSeek-V4 and DeepSeek-V4.1: compressed sparse attention with window rings.

Mirrors vllm/models/deepseek_v4/attention.py + compressor.py (V4) and
vllm/models/deepseek_v41/attention.py + compressor.py + nvidia/model.py +
nvidia/flash_mla_mega_attn.py (V4.1), and vllm/v1/attention/backends/mla/sparse_swa.py::
DeepseekV4SWACache (0.33.0).

Caches per layer (``compress_ratios[i]``; 0 = window only):

* every layer: a sliding-window ring (``SlidingWindowMLASpec``) of packed records;
* V4: layers with ratio > 1 own a compressed cache (``MLAAttentionSpec`` with
  ``tokens_per_state = ratio``) and a compressor-state ring; ratio-4 layers also an
  indexer K cache and the indexer compressor's state ring;
* V4.1: only ``kv_source_layer_ids`` own the compressed cache, the indexer K cache
  and (ratio 2) a compressor-state circular buffer; other layers read those sources;
* the drafter's layers (DSpark for V4.1, MTP for V4) add window rings only while
  speculating.

Records by chip and cache dtype: V4 and V4.1 off SM100 store 584-byte records in pages
aligned to 576 bytes; V4.1 on SM100 528-byte MXFP8 records (512-byte alignment), and
with ``nvfp4_ds_mla`` (the mega-attention default) 288-byte compressed records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vmemplan.laws.kv_groups import LayoutChoice

import dataclasses
import math
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import CircularBufferSpec, MLAAttentionSpec, SlidingWindowMLASpec
from vmemplan.laws.kv_specs import compressor_state_block_size, deepseek_v4_page_alignment, deepseek_v4_record_bytes
from vmemplan.laws.quant import Fp8Scheme
from vmemplan.models.base import Adapter, pad_vocab, register
from vmemplan.models.deepseek_v4_buffers import biased_gate_layers, padded_sink_heads, v4_extra_tensors
from vmemplan.models.deepseek_v4_profile import prefill_workspace_bytes, profile_buffers
from vmemplan.models.deepseek_v4_vision import DeepseekV41Vision
from vmemplan.models.deepseek_v41_weights import v41_post_loading
from vmemplan.models.moe_blocks import (
    moe_expert_tensors,
    mxfp4_expert_tensors,
    shared_expert_tensors,
    stage_embedding,
    stage_head,
)

__all__ = ["DeepseekV4", "DeepseekV41", "compress_ratios", "mega_attention_serves", "mxfp4_expert_tensors",
           "prefill_workspace_bytes"]

WV_GROUP_SIZE = 8  # vllm/models/deepseek_v41/common/ops/fused_layout.py


def compress_ratios(text: Any) -> list[int]:
    """Per-layer compress ratios, drafter layers included (0 = window only).

    Mirrors vllm/transformers_utils/deepseek_v4_utils.py::get_compress_ratios (0.33.0):
    the legacy ``compress_ratios`` list, else ``compress_rates[layer_type]`` per layer
    plus zeros for the next-n layers."""
    ratios = text.get("compress_ratios")
    if isinstance(ratios, list):
        return [int(r) for r in ratios]
    rates = text.get("compress_rates")
    types = text.get("layer_types")
    if isinstance(rates, dict) and isinstance(types, list):
        return [int(rates.get(t, 0)) for t in types] + [0] * int(text.get("num_nextn_predict_layers", 0) or 0)
    return []


def mega_attention_serves(num_heads: int, o_groups: int, tp: int) -> bool:
    """Whether FlashMLA mega attention takes a V4.1 layer: SM100 only (checked by the
    caller), and TP must leave exactly ``WV_GROUP_SIZE`` (8) heads per ``wo_a`` group.
    Mirrors DeepseekV4MegaAttnAttention.is_available_for (0.33.0)."""
    if num_heads % tp or o_groups % tp:
        return False
    local_heads, local_groups = num_heads // tp, o_groups // tp
    if not local_groups or local_heads % WV_GROUP_SIZE:
        return False
    return local_heads // local_groups == WV_GROUP_SIZE


@register
class DeepseekV4(Adapter):
    """DeepSeek-V4 (``DeepseekV4ForCausalLM``): Flash and Pro."""

    architectures = ("DeepseekV4ForCausalLM",)
    family = "moe"
    is_v41 = False

    # -- config ---------------------------------------------------------------------
    def _t(self, key: str, default: Any = None) -> Any:
        value = self.config.text.get(key, default)
        if value is None:
            raise UsageError(f"config.json lacks {key!r}, which the DeepSeek-V4 graph needs")
        return value

    @property
    def head_dim(self) -> int:
        return int(self._t("head_dim", 512))

    @property
    def window(self) -> int:
        return int(self._t("sliding_window", 128))

    @property
    def ratios(self) -> list[int]:
        return compress_ratios(self.config.text)

    def ratio(self, layer: int) -> int:
        """The stored ratio of ``layer`` as vLLM's attention reads it: V4 takes
        ``max(1, rate)`` on the backbone and 1 on MTP layers; V4.1 the raw list (0 past
        its end)."""
        ratios = self.ratios
        raw = ratios[layer] if layer < len(ratios) else 0
        if self.is_v41:
            return raw
        return max(1, raw) if layer < self.config.num_hidden_layers else 1

    def num_draft_layers(self, ctx: GraphContext) -> int:
        method = (ctx.speculative_method or "").lower()
        if ctx.num_speculative_tokens <= 0:
            return 0
        wanted = ("dspark",) if self.is_v41 else ("mtp", "deepseek_mtp", "eagle")
        if method not in wanted:
            return 0
        return int(self.config.text.get("num_nextn_predict_layers", 0) or 0)

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        groups = int(self._t("o_groups", 1))
        if heads % tp or groups % tp:
            raise UsageError(
                f"--tensor-parallel-size {tp} must divide the {heads} attention heads and the {groups} output groups",
                hint=f"use a divisor of {math.gcd(heads, groups)}",
            )

    @property
    def intermediate_size(self) -> int:
        return int(self.config.text.get("moe_intermediate_size") or self.config.intermediate_size)

    def derived_max_model_len(self) -> int:
        # The YaRN factor already spans max_position_embeddings (16 × 65,536 = 1,048,576).
        return self.config.max_position_embeddings

    # -- backend facts ----------------------------------------------------------------
    def sm100(self, ctx: GraphContext) -> bool:
        return ctx.sm_major == 10

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        """V4's FlashMLA path stores every fp8 (and ``auto``) cache as ``fp8_ds_mla``
        (vllm/models/deepseek_v4/attention.py::_resolve_dsv4_kv_cache_dtype, 0.33.0)."""
        if cache_dtype == "auto" or cache_dtype.startswith("fp8"):
            return "fp8_ds_mla"
        raise UsageError(
            f"DeepSeek-V4's FlashMLA layout only takes an fp8 cache, not {cache_dtype}",
            hint="use --kv-cache-dtype fp8 (or auto)",
        )

    def kernel_block_size(self, ctx: GraphContext) -> int:
        """Kernel block of the compressed caches: 256 (DeepseekV4SparseMLABackend and
        DeepseekV4IndexerBackend, 0.33.0)."""
        return 256

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        """The smallest size every backend takes (Platform._preferred_block_size_for_backends):
        the sparse MLA and indexer kernel block; the window rings keep their own block."""
        kernel = self.kernel_block_size(ctx)
        if user_block_size is None:
            return kernel
        if user_block_size % kernel:
            raise UsageError(
                f"--block-size {user_block_size} is not a multiple of {kernel}, which "
                f"{self.config.architecture}'s sparse attention kernels need",
                hint=f"use {kernel} or a multiple of it",
            )
        return user_block_size

    def kv_cache_layout(self, ctx: GraphContext) -> LayoutChoice:
        """The DeepSeek-V4 indexer backend declares only BLHNC / BLNHC (block outermost):
        vllm/v1/attention/backends/mla/indexer.py::DeepseekV4IndexerBackend (0.33.0)."""
        return "block_outermost"

    def _resolved(self, ctx: GraphContext) -> str:
        dtype = ctx.cache_dtype
        if dtype in ("fp8_ds_mla", "nvfp4_ds_mla"):
            return self.resolve_cache_dtype(ctx, dtype) if self.is_v41 else dtype
        return self.resolve_cache_dtype(ctx, dtype)

    def _stage_layers(self, ctx: GraphContext) -> list[int]:
        layers = list(range(*self.layer_range(ctx)))
        if ctx.pipeline_rank == ctx.pipeline_parallel_size - 1:
            base = self.config.num_hidden_layers
            layers += [base + j for j in range(self.num_draft_layers(ctx))]
        return layers

    # -- KV cache -------------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """V4: per layer, in vLLM's registration order, the indexer K cache and its
        compressor ring (ratio 4), the 64-token window ring, the compressed cache and the
        compressor ring (ratio > 1).  Mirrors DeepseekV4Attention / DeepseekV4IndexerCache /
        CompressorStateCache.get_kv_cache_spec and DeepseekV4SWACache (0.33.0)."""
        dtype = self._resolved(ctx)
        block = ctx.block_size
        index_dim = int(self._t("index_head_dim", 128))
        record = 584
        specs: dict[str, Any] = {}
        for i in self._stage_layers(ctx):
            r = self.ratio(i)
            p = f"model.layers.{i}.attn"
            if r == 4:
                specs[f"{p}.indexer.k_cache"] = MLAAttentionSpec(
                    block_size=block, head_size=index_dim + index_dim // 128 * 4, cache_dtype="uint8",
                    dtype_bytes=1, compress_ratio=4, alignment=576, cache_role="indexer",
                )
                specs[f"{p}.indexer.compressor.state_cache"] = SlidingWindowMLASpec(
                    block_size=4, head_size=2 * 2 * index_dim, cache_dtype="float32", dtype_bytes=4,
                    sliding_window=8, alignment=576,
                )
            specs[f"{p}.swa_cache"] = SlidingWindowMLASpec(
                block_size=64, head_size=self.head_dim, cache_dtype=dtype, dtype_bytes=1,
                sliding_window=self.window, model_version="deepseek_v4", alignment=576,
                state_content_bytes=record,
            )
            if r > 1:
                specs[p] = MLAAttentionSpec(
                    block_size=block, head_size=self.head_dim, cache_dtype=dtype, dtype_bytes=1,
                    compress_ratio=r, model_version="deepseek_v4", alignment=576, state_content_bytes=record,
                )
                coff = 2 if r == 4 else 1
                specs[f"{p}.compressor.state_cache"] = SlidingWindowMLASpec(
                    block_size=4 if r == 4 else 8, head_size=2 * coff * self.head_dim, cache_dtype="float32",
                    dtype_bytes=4, sliding_window=coff * r, alignment=576,
                )
        return specs

    # -- profile-time buffers --------------------------------------------------------------
    def _index_source_ratios(self, layers: list[int]) -> list[int]:
        return [self.ratio(i) for i in layers if self.ratio(i) == 4]

    def _has_candidates(self) -> bool:
        return False

    def extra_activation_bytes(self, ctx: GraphContext, *, max_num_batched_tokens: int,
                               max_num_seqs: int) -> tuple[int, str]:
        """Buffers the model's own code holds at the profile peak (vLLM's profiler counts
        them before the KV cache is sized): :func:`vmemplan.models.deepseek_v4_profile.profile_buffers`,
        less the buffers the weights already hold (registered at model init, so in vLLM's
        "Model loading took", not in the profile peak above it)."""
        return profile_buffers(self, ctx, max_num_batched_tokens=max_num_batched_tokens, exclude_weight_held=True)

    # -- weights (approximate) --------------------------------------------------------
    def _owns_compressor(self, layer: int) -> bool:
        return self.ratio(layer) > 1

    def _indexer_layers(self, layers: list[int]) -> list[int]:
        return [i for i in layers if self.ratio(i) == 4]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """Per-rank tensors of the backbone (and drafter layers while speculating).

        Attention (DeepseekV4Attention): replicated ``fused_wqa_wkv`` (``hidden ->
        q_lora_rank + head_dim``), ``q_norm``, ``kv_norm``, column-parallel ``wq_b`` and
        grouped ``wo_a``, row-parallel ``wo_b``, fp32 attention sinks.  Compressors
        (replicated, unquantized ``fused_wkv_wgate`` and a norm), indexers (replicated
        ``wq_b`` quantized, ``weights_proj`` unquantized), MoE on every layer with one
        shared expert, and the hyper-connection mixers (fp32).  V4.1 turns this list into
        its loaded form and adds its Engram layers and tower (:meth:`DeepseekV41.weight_tensors`).
        """
        span = self.rank_span(ctx)  # first / last stage and vocab rows; the layers with the drafter's
        layers = self._stage_layers(ctx)
        n = len(layers)
        out = stage_embedding(span)
        if n:
            h = span.hidden
            out += self._attention_tensors(layers, ctx) + self._ffn_tensors(layers, ctx)
            hc = int(self.config.text.get("hc_mult", 1) or 1)
            if hc > 1:
                mix = (2 + hc) * hc
                out.append(WeightTensor("hc_attn_fn+hc_ffn_fn", "norm", mix, hc * h, 2 * n, dtype="float32"))
            out.append(WeightTensor("attn_norm+ffn_norm", "norm", h, 1, 2 * n))
            if not self.is_v41:
                out += v4_extra_tensors(self, ctx, layers)
        out += stage_head(span)
        if span.last:
            out += self.drafter_head_tensors(ctx)
        return out

    def _attention_tensors(self, layers: list[int], ctx: GraphContext) -> list[WeightTensor]:
        """DeepseekV4Attention's projections, norms and sinks, the compressors and the indexers
        of ``layers``."""
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        heads = self.config.num_attention_heads
        hd = self.head_dim
        n = len(layers)
        q_lora = int(self._t("q_lora_rank"))
        o_lora = int(self._t("o_lora_rank"))
        groups = int(self._t("o_groups"))
        out = [
            WeightTensor("attn.fused_wqa_wkv", "linear", q_lora + hd, h, n, True, in_features_full=h),
            WeightTensor("attn.q_norm", "norm", q_lora, 1, n),
            WeightTensor("attn.kv_norm", "norm", hd, 1, n),
            WeightTensor("attn.wq_b", "linear", heads // tp * hd, q_lora, n, True, in_features_full=q_lora),
            WeightTensor("attn.wo_a", "linear", groups * o_lora // tp, heads * hd // groups, n, True,
                         in_features_full=heads * hd // groups),
            WeightTensor("attn.wo_b", "linear", h, groups * o_lora // tp, n, True, in_features_full=groups * o_lora),
            WeightTensor("attn.attn_sink", "norm", padded_sink_heads(heads // tp, ctx.sm_major), 1, n, dtype="float32"),
        ]
        for i in (i for i in layers if self._owns_compressor(i)):
            gate = 2 if (self.ratio(i) > 1) else 1
            coff = 2 if self.ratio(i) == 4 else 1
            out.append(WeightTensor("attn.compressor.fused_wkv_wgate", "linear", gate * coff * hd, h, 1, False))
            out.append(WeightTensor("attn.compressor.norm", "norm", hd, 1, 1))
        idx = self._indexer_layers(layers)
        if idx:
            ih, idim = int(self._t("index_n_heads", 64)), int(self._t("index_head_dim", 128))
            out += [
                WeightTensor("attn.indexer.wq_b", "linear", ih * idim, q_lora, len(idx), True,
                             in_features_full=q_lora),
                WeightTensor("attn.indexer.weights_proj", "linear", ih, h, len(idx), False),
            ]
        return out

    def _ffn_tensors(self, layers: list[int], ctx: GraphContext) -> list[WeightTensor]:
        """The MoE block of every layer: a router (and its fp32 bias) and the routed experts per
        distinct expert count, and one shared expert."""
        h = self.config.hidden_size
        moe_inter = int(self._t("moe_intermediate_size"))
        by_experts: dict[int, int] = {}
        for i in layers:
            e = self.routed_experts(i)
            by_experts[e] = by_experts.get(e, 0) + 1
        out: list[WeightTensor] = []
        for experts, count in by_experts.items():
            tag = "" if len(by_experts) == 1 else f"[{experts} experts]"
            out.append(WeightTensor(f"ffn.gate{tag}", "router", experts, h, count))
            biased = count if self.is_v41 else biased_gate_layers(self, layers, experts)
            if biased:
                out.append(WeightTensor(f"ffn.gate.bias{tag}", "router", experts, 1, biased, dtype="float32"))
            expert_tensors = mxfp4_expert_tensors if self.mxfp4_experts() else moe_expert_tensors
            out += expert_tensors(f"ffn.experts{tag}", num_experts=experts, hidden=h, inter=moe_inter,
                                  num_layers=count, ctx=ctx)
        out += shared_expert_tensors("ffn.shared_experts", shared=int(self.config.text.get("n_shared_experts") or 0),
                                     moe_inter=moe_inter, hidden=h, num_layers=len(layers), ctx=ctx)
        return out

    def routed_experts(self, layer: int) -> int:
        """Routed experts of ``layer``'s MoE block (the backbone's count)."""
        return int(self._t("n_routed_experts"))

    def adapt_quant_scheme(self, scheme: Any) -> Any:
        """fp4-expert checkpoints keep FP8 linear scales in e8m0 (1 B): DeepseekV4FP8Config.
        is_scale_e8m0 -> Fp8LinearMethod.create_weights' scale_dtype (quant_config.py, 0.33.0)."""
        if not self.is_v41 and self.mxfp4_experts() and isinstance(scheme, Fp8Scheme):
            return dataclasses.replace(scheme, scale_bytes=1)
        return scheme

    def mxfp4_experts(self) -> bool:
        """Whether the routed experts load as MXFP4: an fp8 checkpoint whose ``expert_dtype`` (read
        from the top-level config, default "fp4") is "fp4" routes them to Mxfp4MoEMethod
        (vllm/models/deepseek_v41/quant_config.py::DeepseekV4FP8Config.expert_dtype /
        get_quant_method, 0.33.0); "fp8" (Flash-Base) keeps block-fp8 experts."""
        qc = self.config.quantization_config or {}
        if str(qc.get("quant_method", "")).lower() != "fp8":
            return False
        if str(qc.get("moe_quant_algo") or "").upper() == "NVFP4":
            return False  # ModelOpt NVFP4 experts: priced by the checkpoint's scheme
        return str(self.config.raw.get("expert_dtype") or "fp4") == "fp4"

    def drafter_head_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """Drafter tensors besides its decoder layers (none for MTP here)."""
        return []

    def builds_drafter(self, method: str) -> bool:
        """V4.1 builds its DSpark drafter from its own config (see DeepseekV41)."""
        return method in (("dspark",) if self.is_v41 else ("mtp",))

    def notes(self) -> tuple[str, ...]:
        return (
            "DeepSeek-V4 weights are approximate: hyper-connection mixers and compressor details "
            "are sized from the config, not checked against a load log",
        )


@register
class DeepseekV41(DeepseekV41Vision, DeepseekV4):
    """DeepSeek-V4.1 (``DeepseekV41ForCausalLM``): Flash, with its vision tower
    (:mod:`vmemplan.models.deepseek_v4_vision`)."""

    architectures = ("DeepseekV41ForCausalLM",)
    is_v41 = True

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """The backbone as loaded (:func:`vmemplan.models.deepseek_v41_weights.v41_post_loading`) and
        the vision tower."""
        return v41_post_loading(self, super().weight_tensors(ctx), ctx) + self.tower_tensors(self.config, ctx)

    def kv_sources(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.config.text.get("kv_source_layer_ids") or ())

    def index_sources(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.config.text.get("index_source_layer_ids") or ())

    def uses_mega_attention(self, ctx: GraphContext) -> bool:
        """The SM100 default when TP leaves eight heads per output group
        (vllm/models/deepseek_v41/nvidia/model.py::_select_dsv4_attn_cls, 0.33.0)."""
        return self.sm100(ctx) and mega_attention_serves(
            self.config.num_attention_heads, int(self._t("o_groups")), ctx.tensor_parallel_size
        )

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        """``auto`` / ``fp8`` become the packed record the layer's kernel prefers:
        ``nvfp4_ds_mla`` under mega attention, else ``fp8_ds_mla``.  Explicit packed
        names are kept; ``nvfp4_ds_mla`` needs SM100.  16-bit caches need the FlashInfer
        backend, which vmemplan does not select.  Mirrors
        vllm/models/deepseek_v41/attention.py::_resolve_dsv4_kv_cache_dtype (0.33.0)."""
        if cache_dtype in ("auto", "fp8"):
            return "nvfp4_ds_mla" if self.uses_mega_attention(ctx) else "fp8_ds_mla"
        if cache_dtype == "fp8_ds_mla":
            return cache_dtype
        if cache_dtype == "nvfp4_ds_mla":
            if not self.sm100(ctx):
                raise UsageError("nvfp4_ds_mla needs the V4.1 records, which FlashMLA decodes only on SM100",
                                 hint="use --kv-cache-dtype fp8")
            return cache_dtype
        raise UsageError(
            f"DeepSeek-V4.1's packed KV layouts only take an fp8 cache, not {cache_dtype}",
            hint="use --kv-cache-dtype fp8 (or auto)",
        )

    def kernel_block_size(self, ctx: GraphContext) -> int:
        """64 on Hopper, 128 elsewhere (DeepseekV41 FlashMLA sparse and indexer backends,
        vllm/models/deepseek_v41/sparse_mla.py, 0.33.0); the window backend's
        ``MultipleOf(32)`` divides both."""
        return 64 if (ctx.sm_major or 9) == 9 else 128

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Per layer, in registration order: the compressed cache and indexer K cache on kv
        sources, the 32-token window ring on every layer, and the ratio-2 kv sources'
        compressor-state circular buffer.  Mirrors DeepseekV4Attention.get_kv_cache_spec,
        DeepseekV4IndexerCache.get_kv_cache_spec (vllm/models/deepseek_v41/attention.py),
        DeepseekV4SWACache.get_kv_cache_spec and CompressorStateCache.get_kv_cache_spec
        (vllm/models/deepseek_v41/compressor.py) (0.33.0)."""

        dtype = self._resolved(ctx)
        sm100 = self.sm100(ctx)
        swa_bytes = deepseek_v4_record_bytes(dtype, sm100=sm100, role="window")
        comp_bytes = deepseek_v4_record_bytes(dtype, sm100=sm100, role="compressed")
        align = deepseek_v4_page_alignment(sm100=sm100)
        swa_stride = math.lcm(swa_bytes, comp_bytes) if sm100 else None
        index_dim = int(self._t("index_head_dim", 128))
        kv_src, idx_src = set(self.kv_sources()), set(self.index_sources())
        n = self.config.num_hidden_layers
        ring_block = compressor_state_block_size(ctx.num_speculative_tokens)
        specs: dict[str, Any] = {}
        for i in self._stage_layers(ctx):
            r = self.ratio(i)
            p = f"model.layers.{i}.attn"
            owner = i < n and i in kv_src
            if owner:
                specs[p] = MLAAttentionSpec(
                    block_size=ctx.block_size, head_size=self.head_dim, cache_dtype=dtype, dtype_bytes=1,
                    compress_ratio=r, model_version="deepseek_v4", alignment=align, state_content_bytes=comp_bytes,
                )
                if i in idx_src:
                    specs[f"{p}.indexer.k_cache"] = MLAAttentionSpec(
                        block_size=ctx.block_size, head_size=index_dim + index_dim // 128 * 4, cache_dtype="uint8",
                        dtype_bytes=1, compress_ratio=r, alignment=align, cache_role="indexer",
                    )
            specs[f"{p}.swa_cache"] = SlidingWindowMLASpec(
                block_size=32, head_size=self.head_dim, cache_dtype=dtype, dtype_bytes=1,
                sliding_window=self.window, model_version="deepseek_v4", alignment=align,
                state_content_bytes=swa_bytes, block_stride_alignment=swa_stride,
            )
            if owner and r > 1:
                specs[f"{p}.compressor.state_cache"] = CircularBufferSpec(
                    block_size=ring_block, num_kv_heads=1, head_size=2 * self.head_dim, cache_dtype="float32",
                    dtype_bytes=4, head_size_v=0,
                )
        return specs

    # -- the DSpark drafter -----------------------------------------------------------------
    def routed_experts(self, layer: int) -> int:
        """DSpark's draft layers (indices past the backbone) route over
        ``dspark_n_routed_experts`` (vllm/models/deepseek_v41/nvidia/model.py::
        DeepseekV4MoE.__init__, 0.33.0)."""
        if layer >= self.config.num_hidden_layers:
            return int(self.config.text.get("dspark_n_routed_experts") or 0) or super().routed_experts(layer)
        return super().routed_experts(layer)

    def drafter_head_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """The DSpark drafter's tensors besides its ``num_nextn_predict_layers`` decoder layers
        (which :meth:`weight_tensors` lists with the backbone's, at ``dspark_n_routed_experts``),
        on the last stage while speculating.  Mirrors
        vllm/models/deepseek_v41/nvidia/dspark.py::DSparkDeepseekV4Model.__init__ and
        vllm/model_executor/models/qwen3_dspark.py::DSparkMarkovHead / DSparkConfidenceHead
        (0.33.0):

        * ``main_proj``: ReplicatedLinear(hidden x len(dspark_target_layer_ids) -> hidden),
          under the checkpoint's quantization; ``main_norm`` and ``norm`` (RMSNorm, hidden);
        * ``markov_head.markov_w1``: nn.Embedding(vocab, dspark_markov_rank), whole on every
          rank; ``markov_w2``: ParallelLMHead(draft_vocab, rank, disable_tp) (rows padded to 64,
          unquantized);
        * ``confidence_head.proj``: ReplicatedLinear(hidden + rank -> 1) in float32;
        * the embedding and LM head are the target's (aliased at load: ``has_own_embed_tokens``
          and ``has_own_lm_head`` are False), and the extra top-k index buffer is a profile-time
          buffer (:meth:`extra_activation_bytes`), so neither counts here.
        """
        if not self.num_draft_layers(ctx):
            return []
        text = self.config.text
        h = self.config.hidden_size
        targets = text.get("dspark_target_layer_ids")
        rank = text.get("dspark_markov_rank")
        if not isinstance(targets, list) or not targets or not isinstance(rank, int) or rank <= 0:
            raise UsageError("config.json lacks dspark_target_layer_ids / dspark_markov_rank, which the DSpark "
                             "drafter needs", hint="speculate with a method the checkpoint ships (or none)")
        vocab = self.config.vocab_size
        draft_vocab = int(text.get("draft_vocab_size") or vocab)
        fan_in = h * len(targets)
        out = [
            WeightTensor("dspark.main_proj", "linear", h, fan_in, 1, True, in_features_full=fan_in),
            WeightTensor("dspark.main_norm+norm", "norm", h, 1, 2),
            WeightTensor("dspark.markov_head.markov_w1", "embedding", vocab, rank),
            WeightTensor("dspark.markov_head.markov_w2", "lm_head", pad_vocab(draft_vocab), rank),
        ]
        if text.get("enable_confidence_head", True):
            out.append(WeightTensor("dspark.confidence_head.proj", "linear", 1, h + rank, 1, False, dtype="float32"))
        return out

    def _index_source_ratios(self, layers: list[int]) -> list[int]:
        idx = set(self.index_sources())
        return [self.ratio(i) for i in layers if i in idx and self.ratio(i) > 0]

    def _has_candidates(self) -> bool:
        text = self.config.text
        return int(text.get("candidate_source_layer_id", -1)) >= 0 and int(text.get("candidate_topk_blocks", 0)) > 0

    def _owns_compressor(self, layer: int) -> bool:
        return layer < self.config.num_hidden_layers and layer in set(self.kv_sources())

    def _indexer_layers(self, layers: list[int]) -> list[int]:
        idx = set(self.index_sources())
        return [i for i in layers if i in idx]

    def notes(self) -> tuple[str, ...]:
        return (
            "DeepSeek-V4.1 Engram n-gram tables live in pinned host memory (EngramConfig cpu_offload, the "
            "default) and are not counted in the GPU weights",
            "DeepSeek-V4.1 MXFP8 linears and MXFP4 experts are priced in Marlin's layout on SM 9.0 (what vLLM "
            "picks without the humming kernels package; with it Humming ranks first on Hopper)",
        )
