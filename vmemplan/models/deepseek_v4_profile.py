"""DeepSeek-V4 buffers held at the profile peak: the prefill KV-gather and indexer workspaces,
the indexer logits stand-in, the top-k / candidate / drafter buffers and the rotary caches
(vLLM 0.33.0, vllm/models/deepseek_v41/nvidia/flashmla.py, vllm/model_executor/layers/
sparse_attn_indexer.py, vllm/models/deepseek_v4/).

Split out of :mod:`vmemplan.models.deepseek_v4` (whose ``extra_activation_bytes`` calls
:func:`profile_buffers`), as :mod:`vmemplan.models.deepseek_v4_buffers` holds its other tensors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vmemplan.core.graph import GraphContext
from vmemplan.core.units import dtype_bytes

if TYPE_CHECKING:  # pragma: no cover
    from vmemplan.models.deepseek_v4 import DeepseekV4

__all__ = ["indexer_workspace_bytes", "prefill_workspace_bytes", "profile_buffers"]

MIB = 1 << 20
SPARSE_INDEXER_MAX_LOGITS_BYTES = 512 * MIB  # envs.VLLM_SPARSE_INDEXER_MAX_LOGITS_MB
RADIX_TOPK_WORKSPACE_BYTES = 1 * MIB  # vllm/model_executor/layers/indexer_topk.py
PREFILL_CHUNK_SIZE = 4  # DeepseekV4Attention.PREFILL_CHUNK_SIZE
SPARSE_MLA_PREFILL_WORKSPACE_FACTOR = 5  # AttentionConfig.sparse_mla_prefill_workspace_factor


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def prefill_workspace_bytes(
    *, ratio: int, max_model_len: int, window: int, max_num_batched_tokens: int, head_dim: int, index_topk: int
) -> int:
    """The bf16 KV-gather workspace one attention layer reserves in the profile run, with
    its top-k index buffers: ``4 × (cdiv(L, r) + window + T) × head_dim`` bf16 values,
    ``T × round_up(topk + window, 128)`` int32 and ``T`` int32 (no compressed part and no
    top-k for window-only layers).  Mirrors DeepseekV4FlashMLAAttention.forward_mqa's
    dummy-run branch (vllm/models/deepseek_v41/nvidia/flashmla.py, 0.33.0)."""
    n = 0 if ratio == 0 else -(-max_model_len // ratio)
    m = n + window + max_num_batched_tokens
    topk = 0 if ratio == 0 else index_topk
    combined = _round_up(topk + window, 128)
    return (
        PREFILL_CHUNK_SIZE * m * head_dim * 2
        + max_num_batched_tokens * combined * 4
        + max_num_batched_tokens * 4
    )


def indexer_workspace_bytes(*, ratio: int, max_model_len: int, index_head_dim: int) -> int:
    """The indexer's K-gather workspace in the profile run: ``get_max_prefill_buffer_size
    // ratio`` entries (``L × (576·2 // 132) × factor`` = 40 L at factor 5) of fp8 values
    plus a 4-byte scale, and the radix top-k workspace.  Mirrors
    vllm/model_executor/layers/sparse_attn_indexer.py (profile branch) and
    vllm/v1/attention/backends/mla/indexer.py::get_max_prefill_buffer_size (0.33.0)."""
    total = max_model_len * (576 * 2 // 132) * SPARSE_MLA_PREFILL_WORKSPACE_FACTOR // ratio
    return total * index_head_dim + total * 4 + RADIX_TOPK_WORKSPACE_BYTES


def profile_buffers(model: DeepseekV4, ctx: GraphContext, *, max_num_batched_tokens: int,
                    exclude_weight_held: bool = False) -> tuple[int, str]:
    """Buffers the model's own code holds at the profile peak (vLLM's profiler counts
    them before the KV cache is sized):

    * the prefill workspaces, one per workspace lane at its largest request: the
      backbone's (the larger of an attention layer's gather workspace and an
      indexer's K-gather workspace) and, while speculating, the drafter's;
    * the indexer's 512 MiB logits stand-in;
    * the shared top-k index buffer ``T × index_topk`` int32 (one more for the
      drafter), the candidate-block buffer ``T × candidate_topk_blocks`` int32 (V4.1),
      and while speculating the drafter's hidden-state buffer ``T × hc_mult × hidden``
      in the model dtype;
    * the plain and YaRN rotary caches, ``max_position_embeddings × rope_dim`` fp32
      each, whatever the context bound.

    Mirrors DeepseekV4Model.__init__ (topk / candidate / _mtp_hidden_buffer),
    the FlashMLA dummy-run reservation and SparseAttnIndexer's profile branch (0.33.0).

    ``exclude_weight_held`` leaves out what the model registers on the device at init and
    vmemplan therefore counts in the weights (v4_extra_tensors, v41_extra_tensors): the rotary
    caches, the backbone's top-k buffer and the candidate-block buffer.  vLLM's
    "Model loading took" includes them, and its profile peak is measured above that baseline,
    so counting them again here would charge them twice.
    """
    text = model.config.text
    L, T, W = ctx.max_model_len, max_num_batched_tokens, model.window
    topk = int(model._t("index_topk", 512))
    index_dim = int(model._t("index_head_dim", 128))
    n = model.config.num_hidden_layers
    backbone = list(range(n))
    draft = [n + j for j in range(model.num_draft_layers(ctx))]
    parts: list[tuple[str, int]] = []

    def attn_ws(r: int) -> int:
        return prefill_workspace_bytes(ratio=r, max_model_len=L, window=W, max_num_batched_tokens=T,
                                       head_dim=model.head_dim, index_topk=topk)

    main = max(attn_ws(model.ratio(i)) for i in backbone)
    index_ratios = model._index_source_ratios(backbone)
    if index_ratios:
        main = max(main, max(indexer_workspace_bytes(ratio=r, max_model_len=L, index_head_dim=index_dim)
                             for r in index_ratios))
    parts.append(("prefill workspace", main))
    if draft:
        parts.append(("drafter prefill workspace", max(attn_ws(model.ratio(i)) for i in draft)))
    if index_ratios:
        parts.append(("indexer logits", SPARSE_INDEXER_MAX_LOGITS_BYTES))
    held = exclude_weight_held
    topk_buffers = (2 if draft else 1) - (1 if held and text.get("index_topk") else 0)
    if topk_buffers:
        parts.append(("top-k indices" + (" (drafter)" if held else ""), T * topk * 4 * topk_buffers))
    if model._has_candidates() and not held:
        parts.append(("candidate blocks", T * int(text.get("candidate_topk_blocks", 0)) * 4))
    if draft:
        hc = int(text.get("hc_mult", 1) or 1)
        parts.append(("drafter hidden states", T * hc * model.config.hidden_size * dtype_bytes(ctx.model_dtype)))
    if not held:
        rope_dim = int(model._t("qk_rope_head_dim", 64))
        parts.append(("rotary caches", 2 * model.config.max_position_embeddings * rope_dim * 4))
    total = sum(b for _, b in parts)
    prov = "DeepSeek-V4 model buffers: " + ", ".join(f"{k} {b / MIB:.0f} MiB" for k, b in parts)
    if held:
        prov += " (the rotary caches, top-k and candidate buffers are in the weights)"
    return total, prov
