"""Step 3 of the pipeline (:mod:`vmemplan.pipeline`): the overheads besides weights and KV.

The profile run's activation peak, the CUDA-graph estimate and whether the release subtracts
it, the non-torch growth inside the budget, and what is held before the budget is measured,
each from the resolved request and its model graph (pure).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from vmemplan.core.frozen import frozen
from vmemplan.core.units import dtype_bytes
from vmemplan.result import Provenance

if TYPE_CHECKING:
    from vmemplan.laws.activation import ActivationEstimate
    from vmemplan.laws.overhead import CudaGraphEstimate, PreBudget
    from vmemplan.pipeline import ModelGraph
    from vmemplan.resolve import ResolvedRequest
    from vmemplan.rules import RulesPack

__all__ = ["Overheads", "cuda_graph_subtracted", "overheads"]


def _num_speculative_tokens(req: ResolvedRequest) -> int:
    return req.speculative.num_speculative_tokens if req.speculative is not None else 0

# --------------------------------------------------------------------------------------------
# Step 3: overheads (activation peak, CUDA graphs, non-torch, before the budget)
# --------------------------------------------------------------------------------------------


@frozen
class Overheads:
    """What the profile run, the graphs and the runtime take besides weights and KV."""

    activation: ActivationEstimate
    cuda_graph: CudaGraphEstimate
    cudagraph_mode: str
    capture_sizes: tuple[int, ...]
    cuda_graph_subtracted: bool
    non_torch_bytes: int
    pre_budget: PreBudget
    provenance: tuple[Provenance, ...]


def cuda_graph_subtracted(rules: RulesPack, mode: str, estimate_env: bool | None = None) -> bool:
    """Whether the release takes the CUDA-graph estimate out of the KV budget: only when it
    applies the estimate (by default, or as VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS says in a
    release that computes it: 0.18 and later) and graphs are captured at all (``--enforce-eager``
    captures none).  The one rule every command uses (vllm/v1/worker/gpu_worker.py::
    Worker.determine_available_memory: ``cudagraph_memory_estimate_applied``)."""
    cg = rules.cuda_graphs
    applied = cg.estimate_subtracted_by_default
    if estimate_env is not None and cg.estimate_computed:
        applied = estimate_env
    return bool(applied) and mode != "NONE"


def _profile_tokens(req: ResolvedRequest) -> int:
    """The dummy step's size: max_num_batched_tokens under chunked prefill; releases that
    profiled at the context length use the larger of the two."""
    if req.rules.budget.profile_tokens == "max_model_len":
        return max(req.max_model_len, req.max_num_batched_tokens)
    return req.max_num_batched_tokens


def _moe_shape(req: ResolvedRequest) -> Any:
    """The MoE shapes the fused-MoE workspaces are sized by (laws/activation.py::MoeShape).

    Expert widths are split over the tensor-parallel ranks, or kept whole under expert
    parallelism (vllm/model_executor/layers/fused_moe/config.py::FusedMoEParallelConfig.make)."""
    from vmemplan.laws.activation import has_dense_layers, moe_shape_from_config

    moe_tp = 1 if req.inputs.enable_expert_parallel else req.tensor_parallel_size
    return moe_shape_from_config(req.config.text, moe_tp_size=moe_tp, hidden_size=req.config.hidden_size,
                                 dense_layers=has_dense_layers(req.config.text))


def _activation(req: ResolvedRequest, graph: ModelGraph, prov: list[Provenance]) -> ActivationEstimate:
    from vmemplan.laws import activation as act_law

    cfg, adapter, cost = req.config, req.adapter, req.registry.cost_model
    version, engine = req.vllm_version, req.rules.engine
    width = dtype_bytes(req.dtype)
    profile_tokens = _profile_tokens(req)
    last_ctx = graph.stages[-1].ctx
    extra_act, extra_src = adapter.extra_activation_bytes(
        last_ctx, max_num_batched_tokens=req.max_num_batched_tokens, max_num_seqs=req.max_num_seqs)
    activation = act_law.activation_peak_bytes(
        family=adapter.family, hidden_size=cfg.hidden_size, num_attention_heads=cfg.num_attention_heads,
        head_dim=cfg.head_dim, intermediate_size=adapter.intermediate_size, vocab_size=cfg.vocab_size,
        tensor_parallel_size=req.tensor_parallel_size, max_num_batched_tokens=profile_tokens,
        max_num_seqs=req.max_num_seqs, dtype_bytes=width,
        constants=cost.activation_constants(version, engine=engine, sampler_path=req.inputs.sampler),
        extra_model_buffers_bytes=extra_act, moe=_moe_shape(req) if adapter.family == "moe" else None,
    )
    if req.runner == "pooling":
        # A pooling (embedding, scoring) model's profile run ends in the pooler, not the
        # sampler (vllm/v1/worker/gpu_model_runner.py::GPUModelRunner._dummy_pooler_run): no
        # logits over the vocabulary; the largest pooling output is a vector per token, held in
        # fp32 after normalisation.  Estimated as batched tokens x hidden x (dtype + 4) bytes.
        pooler = profile_tokens * cfg.hidden_size * (width + 4)
        activation = replace(
            activation, sampler_bytes=0,
            peak_bytes=max(activation.forward_bytes + activation.extra_model_bytes, pooler),
            source=activation.source + "; pooling runner: the pooler replaces the sampler pass "
            f"({profile_tokens:,} tokens x hidden {cfg.hidden_size} x {width + 4} B)")
    constants = cost.activation_constants(version, engine=engine)
    mm = adapter.multimodal_profile(last_ctx, hidden_buffers=float(constants.dense_hidden_buffers),
                                    intermediate_buffers=float(constants.dense_intermediate_buffers))
    if mm is not None:
        from vmemplan.laws.multimodal import profile_peak_bytes

        activation = replace(activation, peak_bytes=profile_peak_bytes(activation.peak_bytes, mm),
                             forward_bytes=profile_peak_bytes(activation.forward_bytes, mm))
        prov.append(Provenance("activation_peak_bytes.multimodal", mm.encoder_activation_bytes + mm.encoder_cache_bytes,
                               "estimated", mm.source if mm.profiled else f"no encoder profile: {mm.skipped}"))
        if mm.budget.log_line():
            prov.append(Provenance("encoder_cache.budget_tokens", mm.budget.budget_tokens, "exact",
                                   mm.budget.log_line() + " (vllm/multimodal/encoder_budget.py)"))
    prov.append(Provenance("activation_peak_bytes", activation.peak_bytes, "estimated",
                           activation.source + (f"; model buffers: {extra_src}" if extra_act else "")
                           + (f"; peak = max(encoder, encoder cache + language model) ({mm.source})"
                              if mm is not None and mm.profiled else "")))
    return activation


def overheads(req: ResolvedRequest, graph: ModelGraph) -> Overheads:
    """Activation peak, CUDA graphs, non-torch growth and what vLLM holds before the budget."""
    from vmemplan.laws import overhead as oh_law

    cost, rules = req.registry.cost_model, req.rules
    prov: list[Provenance] = []
    activation = _activation(req, graph, prov)
    cg_rules = rules.cuda_graphs
    if req.enforce_eager:
        capture_sizes: list[int] = []
        mode = "NONE"
    else:  # pooling models capture piecewise graphs only (vllm/config/vllm.py, 0.33.0)
        mode = req.cudagraph_mode or cg_rules.default_mode  # -O / -cc: vmemplan/request/compilation.py
        mode = "PIECEWISE" if req.runner == "pooling" and mode != "NONE" else mode
        capture_sizes = cg_rules.capture_sizes(max_num_seqs=req.max_num_seqs,
                                               max_num_batched_tokens=req.max_num_batched_tokens,
                                               num_speculative_tokens=_num_speculative_tokens(req))
        if mode == "NONE":  # -O0 / --compilation-config: no graph, no size
            capture_sizes = []
        elif req.cudagraph_capture_sizes is not None:  # the user's sizes (resolve: laws/cudagraph_sizes.py)
            capture_sizes = list(req.cudagraph_capture_sizes)
    cg = oh_law.cuda_graph_bytes(mode=mode, capture_sizes=capture_sizes, max_num_seqs=req.max_num_seqs,
                                 constants=cost.cuda_graph_constants(), hidden_size=req.config.hidden_size,
                                 num_layers=req.config.num_hidden_layers,
                                 tensor_parallel_size=req.tensor_parallel_size)
    subtract = cuda_graph_subtracted(rules, mode, req.cudagraph_estimate_env)
    where = "subtracted before the KV pool" if subtract else "captured after the pool is sized (outside the budget)"
    prov.append(Provenance("cuda_graph_bytes", cg.total_bytes, "estimated",
                           f"{cg.method} estimate for mode {cg.mode}: graphs {cg.num_graphs}, largest "
                           f"{cg.largest_graph_tokens} (registry cost_model.yaml cuda_graphs); {where} in vLLM {rules.id}"
                           + ("; capture sizes from --cudagraph-capture-sizes / --max-cudagraph-capture-size "
                              "(vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes)" if req.cudagraph_capture_sizes
                              is not None else "") + ("; mode from -O / --compilation-config" if req.cudagraph_mode else "")))
    pre = oh_law.pre_budget_bytes(world_size=req.world_size, tensor_parallel_size=req.tensor_parallel_size,
                                  pipeline_parallel_size=req.pipeline_parallel_size,
                                  constants=cost.pre_budget_constants())
    non_torch = oh_law.non_torch_bytes(world_size=req.world_size,
                                       nccl_inside_budget=rules.budget.nccl_inside_budget,
                                       constants=cost.non_torch_constants(req.vllm_version, engine=rules.engine))
    prov.append(Provenance("non_torch_bytes", non_torch, "estimated", "registry cost_model.yaml non_torch"))
    prov.append(Provenance("pre_budget_bytes", pre.total_bytes, "estimated",
                           "registry cost_model.yaml pre_budget (CUDA context, communicator, workspace)"))
    return Overheads(activation, cg, mode, tuple(capture_sizes), subtract, non_torch, pre, tuple(prov))
