"""The laws a what-if moves, applied to one setting of a logged startup.

A :class:`Setting` is the flags one side of a what-if stands on (the log's own, or the log's with
the changes applied); :class:`Steps` runs, lazily and once, the pipeline steps ``size`` would run for
that setting of a linked model (weights, activation peak, non-torch memory, CUDA-graph estimate, the
KV pool).  Without a linked model, :func:`model_free_non_torch` and :func:`model_free_cuda_graph`
give the cost model's flat figures.  :func:`model_check_inputs` serves ``explain``'s model checks from
the same steps, so the checks and ``size`` agree to the byte.

Used by :mod:`vmemplan.explain.whatif`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vmemplan import pipeline
from vmemplan.core.errors import VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.explain.baseline import Baseline
from vmemplan.explain.parse import Startup

if TYPE_CHECKING:
    from vmemplan.explain.model_link import ModelLink
    from vmemplan.registry import Gpu, Registry
    from vmemplan.rules import RulesPack

__all__ = ["Setting", "Steps", "model_check_inputs", "model_free_cuda_graph", "model_free_non_torch", "setting_of"]


@frozen
class Setting:
    version: str
    rules: RulesPack
    util: float
    tp: int
    pp: int
    kv_cache_dtype: str
    block_size: int
    max_model_len: int | None
    mnbt: int
    seqs: int
    eager: bool
    dtype: str

    @property
    def engine(self) -> str:
        return self.rules.engine

    @property
    def profile_tokens(self) -> int:
        if self.rules.budget.profile_tokens == "max_model_len" and self.max_model_len:
            return max(self.max_model_len, self.mnbt)
        return self.mnbt

    @property
    def subtracts_cuda_graph(self) -> bool:
        return pipeline.cuda_graph_subtracted(self.rules, "NONE" if self.eager else self.rules.cuda_graphs.default_mode)


class Steps:
    """The pipeline's steps for one setting of a linked model (what ``size`` computes for the same
    flags), built lazily and once: every law a what-if moves comes from here."""

    def __init__(self, link: ModelLink, s: Setting, registry: Registry, gpu: Gpu | None) -> None:
        self.link, self.s, self.registry, self.gpu = link, s, registry, gpu
        self._req: Any = None
        self._graph: Any = None
        self._over: Any = None

    @property
    def req(self) -> Any:
        if self._req is None:
            self._req = _request(self.link, self.s, self.registry, self.gpu)
        return self._req

    @property
    def graph(self) -> Any:
        if self._graph is None:
            self._graph = pipeline.model_graph(self.req)
        return self._graph

    @property
    def over(self) -> Any:
        if self._over is None:
            self._over = pipeline.overheads(self.req, self.graph)
        return self._over

    def weights(self) -> int:
        return int(self.graph.weights_bytes)

    def activation(self) -> int:
        return int(self.over.activation.peak_bytes)

    def non_torch(self) -> int:
        return int(self.over.non_torch_bytes)

    def cuda_graph(self) -> int:
        return int(self.over.cuda_graph.total_bytes)

    def pool(self, available: int) -> Any:
        req = pipeline.with_budget_flags(self.req, kv_cache_memory_bytes=max(int(available), 0))
        return pipeline.tail(req, self.graph, self.over).pool


def _request(link: ModelLink, s: Setting, registry: Registry, gpu: Gpu | None) -> Any:
    """The resolved request ``size`` would build for this setting (so the same refusals apply)."""
    from vmemplan.resolve import PlanInputs, resolve_with

    g = gpu.id if gpu is not None else _FALLBACK_GPU
    inputs = PlanInputs.from_flags(dict(
        model=link.model_id, gpu=g, gpu_memory_utilization=s.util, max_model_len=s.max_model_len,
        max_num_seqs=s.seqs, max_num_batched_tokens=s.mnbt, block_size=s.block_size,
        kv_cache_dtype=s.kv_cache_dtype, dtype=s.dtype, tensor_parallel_size=s.tp,
        pipeline_parallel_size=s.pp, enforce_eager=s.eager, vllm_version=s.version), prefix="--what-if ")
    return resolve_with(inputs, registry=registry, source=link.source)


#: the GPU whose backend choices stand in when a log names none (its total is not used: the
#: what-if prices the budget from the log's own total)
_FALLBACK_GPU = "h100"


def model_check_inputs(startup: Startup, link: ModelLink, base: Baseline, *, registry: Registry,
                       gpu: Gpu | None = None) -> tuple[int | None, int | None, str, int]:
    """(bytes per token, weights per rank, note, weights slack) for :func:`vmemplan.explain.explain`'s
    model checks,
    at the log's tp / kv_cache_dtype / block size, from the same pipeline steps ``size`` runs (so the
    check and ``size`` agree to the byte).  Weights are left out (``None``) when the log quantized an
    unquantized checkpoint online, a packing the config does not describe."""
    s = setting_of(base, base.vllm_version or base.rules.min_version)
    steps = Steps(link, s, registry, gpu)
    try:
        bpt = steps.pool(1 << 40).bytes_per_token
    except VmemplanError:
        bpt = None
    weights: int | None = None
    note = (f"model checks use the {link.how}, at tp={s.tp}, kv_cache_dtype={s.kv_cache_dtype}, block size"
            f" {s.block_size}, {s.dtype}")
    quant = startup.figures.quantization
    if not link.quantized and quant and quant.lower() not in ("none", "null"):
        note += f"; the weights check is skipped: the log quantizes the checkpoint online ({quant})"
    elif link.sibling:
        note += ("; the weights check is skipped: a sibling's config may hold another rotary cache"
                 " (max_position_embeddings), which vLLM counts with the weights")
    else:
        try:
            weights = steps.weights()
        except VmemplanError:
            weights = None
    if bpt is None:
        note += "; no single bytes-per-token figure (sliding-window, linear-attention or mamba layers)"
    return bpt, weights, note, _scalar_slack(steps) if weights is not None else 0


def _scalar_slack(steps: Steps) -> int:
    from vmemplan.explain.checks import SCALAR_SLACK_PER_LAYER

    try:
        return max(len(stage.kv_specs) for stage in steps.graph.stages) * SCALAR_SLACK_PER_LAYER
    except (VmemplanError, ValueError, AttributeError):
        return 0


def model_free_non_torch(s: Setting, cost: Any) -> int:
    """Non-torch growth when no model is linked: the cost model's era figure at the log's world
    size (vmemplan/laws/overhead.py::non_torch_bytes), the same law the pipeline applies."""
    from vmemplan.laws import overhead as oh_law

    return oh_law.non_torch_bytes(world_size=s.tp * s.pp, nccl_inside_budget=s.rules.budget.nccl_inside_budget,
                                  constants=cost.non_torch_constants(s.version, engine=s.engine))


def model_free_cuda_graph(s: Setting, cost: Any) -> int:
    """The CUDA-graph estimate when no model is linked: the mode's flat figure."""
    from vmemplan.laws import overhead as oh_law

    if s.eager:
        return 0
    cg = s.rules.cuda_graphs
    sizes = cg.capture_sizes(max_num_seqs=s.seqs, max_num_batched_tokens=s.mnbt)
    return oh_law.cuda_graph_bytes(mode=cg.default_mode, capture_sizes=sizes, max_num_seqs=s.seqs,
                                   constants=cost.cuda_graph_constants(), tensor_parallel_size=s.tp).total_bytes


def setting_of(base: Baseline, version: str) -> Setting:
    return Setting(version=version, rules=base.rules, util=base.gpu_memory_utilization,
                    tp=base.tensor_parallel_size, pp=base.pipeline_parallel_size, kv_cache_dtype=base.kv_cache_dtype,
                    block_size=base.block_size, max_model_len=base.max_model_len, mnbt=base.max_num_batched_tokens,
                    seqs=base.max_num_seqs, eager=base.enforce_eager, dtype=base.model_dtype)
