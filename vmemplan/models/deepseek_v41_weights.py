"""DeepSeek-V4.1 tensors as a GPU rank holds them after loading: the MXFP8 linears on Hopper's
kernels, the Engram layers' device tensors and the model's buffers (vLLM 0.33.0,
vllm/models/deepseek_v41/).

:class:`vmemplan.models.deepseek_v4.DeepseekV41` lists the backbone as
:meth:`~vmemplan.models.deepseek_v4.DeepseekV4.weight_tensors` builds it (quantizable linears at
their per-rank ``[N, K]``); :func:`v41_post_loading` turns that list into what
``process_weights_after_loading`` leaves and adds what it leaves out (:func:`v41_extra_tensors`).

**Linears.**  An fp8 checkpoint with ``weight_block_size`` [32, 32] and ``expert_dtype`` "fp4" sends
every linear to ModelOptLinearMethod with MXFP8 weights (deepseek_v41/quant_config.py::
DeepseekV4FP8Config.get_quant_method): e4m3 ``weight [N, K]`` and one e8m0 byte per 32 along K
(``weight_scale [N, K / 32]``).  On SM 9.0 the MXFP8 GEMM is Marlin's
(kernels/linear/mxfp8 MarlinMxfp8LinearKernel -> quantization/utils/marlin_utils_fp8.py::
prepare_mxfp8_layer_for_marlin): the weight is repacked at ``marlin_padded_nk(N, K, 32)`` (same
bytes, zero-padded to a thread tile: the TP 8 shared-expert ``down_proj`` goes from K 288 to 320)
and the scales become ``[K_pad / 32, N_pad]`` e8m0.  ``wo_a`` is a batched GEMM
(``is_bmm``, attention.py), which on Hopper only EmulationMxfp8LinearKernel takes
(kernels/linear/__init__.py::init_mxfp8_linear_kernel): it dequantizes the weight to bf16 once at
load and keeps the ``[N, K / 32]`` scale.  Off SM 9.0 (FlashInfer / DeepGEMM MXFP8 kernels) the
loaded ``[N, K]`` fp8 weight and its scale are kept unpadded (not checked against vLLM).

**Other tensors** (:func:`v41_extra_tensors`): see its docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws.quant import marlin_padded_nk
from vmemplan.models.deepseek_v4_buffers import rope_cache_keys

if TYPE_CHECKING:  # pragma: no cover
    from vmemplan.models.deepseek_v4 import DeepseekV41

__all__ = ["mxfp8_linears", "v41_extra_tensors", "v41_post_loading"]

MXFP8_BLOCK = 32  # the MX block along K (kernels/linear/mxfp8, MXFP8_BLOCK_SIZE)
BMM_LINEARS = ("attn.wo_a",)  # linears built with is_bmm (attention.py::DeepseekV4Attention.__init__)


def mxfp8_linears(model: DeepseekV41) -> bool:
    """Whether the linears load as MXFP8 (ModelOptLinearMethod): ``weight_block_size`` [32, 32]
    with ``expert_dtype`` "fp4" (DeepseekV4FP8Config.get_quant_method / is_scale_e8m0)."""
    qc = model.config.quantization_config or {}
    if str(qc.get("quant_method", "")).lower() not in ("fp8", "deepseek_v4_fp8"):
        return False
    block = qc.get("weight_block_size")
    return list(block or []) == [32, 32] and str(model.config.raw.get("expert_dtype") or
                                                 qc.get("expert_dtype") or "fp4") == "fp4"


def _mxfp8(t: WeightTensor, sm90: bool) -> list[WeightTensor]:
    """One quantizable linear ``[N, K]`` as its MXFP8 weight and e8m0 scale after loading."""
    n, k, c = t.rows, t.cols, t.count
    if sm90 and t.name in BMM_LINEARS:
        return [WeightTensor(t.name, t.kind, n, k, c, False, "bfloat16"),
                WeightTensor(f"{t.name}.weight_scale", t.kind, n, k // MXFP8_BLOCK, c, False, "uint8")]
    if sm90:
        n, k = marlin_padded_nk(n, k, MXFP8_BLOCK)
    return [WeightTensor(t.name, t.kind, n, k, c, False, "float8_e4m3fn"),
            WeightTensor(f"{t.name}.weight_scale", t.kind, n, k // MXFP8_BLOCK, c, False, "uint8")]


def v41_post_loading(model: DeepseekV41, tensors: list[WeightTensor], ctx: GraphContext) -> list[WeightTensor]:
    """``tensors`` (the backbone as built) with the MXFP8 linears as loaded, plus
    :func:`v41_extra_tensors`."""
    tensors = tensors + v41_extra_tensors(model, ctx)
    if not mxfp8_linears(model):
        return tensors
    sm90 = (ctx.sm_major or 9) == 9
    out: list[WeightTensor] = []
    for t in tensors:
        out += _mxfp8(t, sm90) if t.quantizable and t.kind == "linear" else [t]
    return out


def _sequence_parallel(ctx: GraphContext) -> bool:
    """nvidia/model.py::_use_sequence_parallel without a MegaMoE backend: PP 1, expert parallel,
    TP > 1 and DP > 1."""
    return (ctx.pipeline_parallel_size == 1 and ctx.enable_expert_parallel and ctx.tensor_parallel_size > 1
            and ctx.data_parallel_size > 1)


def _engram_tensors(model: DeepseekV41, ctx: GraphContext, text: dict[str, Any], local: list[int]) -> list[WeightTensor]:
    """Per local Engram layer (common/engram.py::Engram.__init__): ``wkv``, a ColumnParallelLinear
    ``n_hash_cols × head_dim -> hidden × (hc_mult + 1)`` under the checkpoint's quantization (whole
    under sequence parallelism), ``q_weight`` / ``k_weight`` ``[hc_mult, hidden]`` bf16, and the
    device staging rows ``[max_num_batched_tokens, cdiv(n_hash_cols, TP), head_dim]`` bf16; the
    n-gram table itself (``embed_tokens``) lives in pinned host memory under EngramConfig's default
    ``cpu_offload`` and is not GPU memory.  With a local Engram layer, NgramHashState's buffers:
    ``token_map [vocab]`` int32 (the tokenizer's ids; the config's vocab size here),
    ``primes [layers, max_ngram - 1, n_heads]``, ``offsets [layers, n_hash_cols]`` and
    ``multipliers [layers, max_ngram]`` int64 over every Engram layer of the model."""
    if not local:
        return []
    h = model.config.hidden_size
    n_layers = len(text.get("engram_layer_ids") or [])
    ngram, heads = int(text.get("engram_max_ngram_size") or 0), int(text.get("engram_n_heads") or 0)
    head_dim, hc = int(text.get("engram_head_dim") or 0), int(text.get("hc_mult") or 1)
    cols = (ngram - 1) * heads
    tp = 1 if _sequence_parallel(ctx) else ctx.tensor_parallel_size
    shards = ctx.tensor_parallel_size
    n = len(local)
    return [
        WeightTensor("engram.wkv", "linear", h * (hc + 1) // tp, cols * head_dim, n, True,
                     in_features_full=cols * head_dim),
        WeightTensor("engram.q_weight+k_weight", "norm", hc, h, 2 * n, dtype="bfloat16"),
        WeightTensor("engram.staged_rows", "buffer", ctx.max_num_batched_tokens * -(-cols // shards), head_dim, n,
                     dtype="bfloat16"),
        WeightTensor("model.engram_hash.token_map", "buffer", int(model.config.vocab_size), 1, dtype="int32"),
        WeightTensor("model.engram_hash.primes+offsets", "buffer", n_layers, 2 * cols, dtype="int64"),
        WeightTensor("model.engram_hash.multipliers", "buffer", n_layers, ngram, dtype="int64"),
    ]


def v41_extra_tensors(model: DeepseekV41, ctx: GraphContext) -> list[WeightTensor]:
    """The tensors of one rank's DeepSeek-V4.1 stage that the projection list leaves out
    (vllm/models/deepseek_v41/, 0.33.0):

    * the Engram layers of the stage and their hash state (:func:`_engram_tensors`);
    * per kv-source layer its indexer's ``wk`` (ReplicatedLinear ``head_dim -> index_head_dim``,
      bf16) and ``k_norm`` (attention.py::DeepseekV4Indexer.__init__ with ``owns_k``);
    * per layer the hyper-connection ``hc_{attn,ffn}_base`` ``[(2 + hc) hc]`` and
      ``hc_{attn,ffn}_scale`` ``[3]`` fp32, and on the first stage the ``hc_attn_fn_broadcast``
      ``[(2 + hc) hc, hidden]`` fp32 that finalize_mhc_broadcast_weights derives after loading;
    * with a vision tower (``vision_config.num_hidden_layers`` > 0) every MoE gate's
      ``bias_vl`` ``[n_routed_experts]`` fp32 (deepseek_v4/nvidia/model.py::DeepseekV4MoE);
    * the fp32 cos/sin caches: build_deepseek_v4_rope (common/rope.py) gives every compressed
      layer (ratio > 0) ``compress_rope_theta`` with YaRN and the window-only layers plain
      ``rope_theta`` (:func:`rope_cache_keys`);
    * the shared ``topk_indices_buffer [max_num_batched_tokens, index_topk]`` and
      ``candidate_block_buffer [max_num_batched_tokens, candidate_topk_blocks]`` int32
      (nvidia/model.py::DeepseekV4Model.__init__, allocated on the device with the model).
    """
    text = model.config.text
    start, end = model.layer_range(ctx)
    backbone = list(range(start, end))
    layers = model._stage_layers(ctx)
    if not layers:
        return []
    h = model.config.hidden_size
    engram_ids = {int(i) for i in text.get("engram_layer_ids") or ()}
    out = _engram_tensors(model, ctx, text, [i for i in backbone if i in engram_ids])
    owners = [i for i in backbone if i in set(model.kv_sources()) and i in set(model.index_sources())]
    if owners:
        idim = int(text.get("index_head_dim", 128))
        out += [WeightTensor("attn.indexer.wk", "linear", idim, model.head_dim, len(owners), False),
                WeightTensor("attn.indexer.k_norm", "norm", idim, 1, len(owners))]
    hc = int(text.get("hc_mult", 1) or 1)
    if hc > 1:
        mix = (2 + hc) * hc
        out += [WeightTensor("hc_attn_base+hc_ffn_base", "norm", mix, 1, 2 * len(layers), dtype="float32"),
                WeightTensor("hc_attn_scale+hc_ffn_scale", "norm", 3, 1, 2 * len(layers), dtype="float32")]
        if ctx.pipeline_rank == 0 and backbone:
            out.append(WeightTensor("hc_attn_fn_broadcast", "buffer", mix, h, dtype="float32"))
    vision = model.config.raw.get("vision_config") or {}
    if isinstance(vision, dict) and int(vision.get("num_hidden_layers") or 0) > 0:
        by_experts: dict[int, int] = {}
        for i in layers:
            by_experts[model.routed_experts(i)] = by_experts.get(model.routed_experts(i), 0) + 1
        out += [WeightTensor(f"ffn.gate.bias_vl[{e} experts]", "router", e, 1, n, dtype="float32")
                for e, n in by_experts.items()]
    rope_dim = int(text.get("qk_rope_head_dim", 64))
    kinds = [2 if model.ratio(i) > 0 else 1 for i in layers]  # rope_cache_keys reads ratio > 1 as compressed
    for theta, rows, _kind in rope_cache_keys(text, kinds):
        out.append(WeightTensor(f"attn.rotary_emb.cos_sin_cache[theta {theta:g}]", "buffer", rows, rope_dim,
                                dtype="float32"))
    t = ctx.max_num_batched_tokens
    if text.get("index_topk"):
        out.append(WeightTensor("model.topk_indices_buffer", "buffer", t, int(text["index_topk"]), dtype="int32"))
    if model._has_candidates():
        out.append(WeightTensor("model.candidate_block_buffer", "buffer", t, int(text["candidate_topk_blocks"]),
                                dtype="int32"))
    return out
