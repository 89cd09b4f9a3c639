"""CUDA-graph memory, memory held before the budget, non-torch growth, and the cost-model registry.

Three of the figures between ``requested`` and the KV pool are measured on a GPU by vLLM; vmemplan
estimates them from constants kept in ``registry/cost_model.yaml`` (each with its source, how it was
obtained and the vLLM version it was calibrated against; COST_MODEL.md has the calibration):

* :func:`cuda_graph_bytes` mirrors the *shape* of vLLM's own estimate
  (vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.profile_cudagraph_memory, 0.33.0);
* :func:`pre_budget_bytes` is what is taken before ``MemorySnapshot`` is read in
  vllm/v1/worker/gpu_worker.py::Worker.init_device (CUDA context, collective communicators);
* :func:`non_torch_bytes` is the non-torch growth measured inside the budget
  (vllm/utils/mem_utils.py::memory_profiling).

:func:`parse_cost_model` validates a mapping (the parsed YAML) into a frozen :class:`CostModel`;
reading the file is the registry loader's job, so this module never imports yaml.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from vmemplan.core.errors import RegistryInvalid, UsageError
from vmemplan.core.frozen import frozen

__all__ = [
    "CUDA_GRAPH_MODES",
    "CommunicatorConstants",
    "CudaGraphConstants",
    "CudaGraphEstimate",
    "CudaGraphFamily",
    "NonTorchConstants",
    "PreBudget",
    "PreBudgetConstants",
    "cuda_graph_bytes",
    "non_torch_bytes",
    "pre_budget_bytes",
]

CUDA_GRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
_MIB = 1 << 20


def _lookup_by_key_at_most(table: Mapping[int, float], key: int) -> float:
    """The value of the largest key not above ``key`` (the smallest key when all are above)."""
    keys = sorted(k for k in table if k <= key)
    if not keys:
        keys = sorted(table)
    return table[keys[-1]]


# --------------------------------------------------------------------------- resolved constants


@frozen(kw_only=True)
class CudaGraphFamily:
    """Cost of one capture family: the first (largest) capture and each later one."""

    floor_bytes: int
    per_token_hidden_layer_bytes: float
    per_graph_bytes: int


@frozen(kw_only=True)
class CudaGraphConstants:
    """Flat figures per mode, and optional per-family costs (keys ``piecewise`` and ``full``)."""

    vllm_version: str
    flat_bytes_by_mode: dict[str, int]
    families: dict[str, CudaGraphFamily] | None = None


@frozen(kw_only=True)
class CommunicatorConstants:
    """The NCCL communicator and custom all-reduce buffers by world size, as one release holds
    them: the part the pre-budget and the non-torch figures share."""

    vllm_version: str
    communicator_bytes_by_world_size: dict[int, int]

    def communicator_bytes(self, world_size: int) -> int:
        """``table[largest world size listed <= world_size]``; 0 at world size 1."""
        if world_size <= 1:
            return 0
        return int(_lookup_by_key_at_most(self.communicator_bytes_by_world_size, world_size))


@frozen(kw_only=True)
class PreBudgetConstants(CommunicatorConstants):
    """What is held before vLLM reads its memory snapshot: the communicators, the CUDA context
    and the workspace."""

    cuda_context_bytes: int
    workspace_bytes: int


@frozen(kw_only=True)
class NonTorchConstants(CommunicatorConstants):
    """Non-torch growth inside the budget for one era: ``base_bytes``, plus the communicators
    where the release initialises them after the snapshot."""

    era: str
    base_bytes: int


# --------------------------------------------------------------------------- results


@frozen(kw_only=True)
class CudaGraphEstimate:
    """The CUDA-graph figure and how it was reached."""

    mode: str
    total_bytes: int
    first_capture_bytes: dict[str, int]
    per_graph_total_bytes: dict[str, int]
    num_graphs: dict[str, int]
    largest_graph_tokens: dict[str, int]
    method: Literal["none", "per_family", "flat"]


@frozen(kw_only=True)
class PreBudget:
    """Memory taken before the utilization budget is measured (outside it)."""

    communicator_bytes: int
    cuda_context_bytes: int
    workspace_bytes: int
    total_bytes: int


# --------------------------------------------------------------------------- laws


def _capture_families(
    mode: str, capture_sizes: list[int], max_num_seqs: int, decode_query_len: int
) -> list[tuple[str, list[int]]]:
    """Which graphs vLLM captures for a mode, per family, as (family, sizes).

    Mirrors vllm/v1/cudagraph_dispatcher.py::CudagraphDispatcher.initialize_cudagraph_keys
    (0.33.0): the mixed mode captures every capture size; a separate FULL decode routine
    (FULL_AND_PIECEWISE, FULL_DECODE_ONLY) captures the sizes ``x`` with
    ``decode_query_len <= x <= decode_query_len * max_num_seqs``.
    """
    sizes = sorted(set(int(s) for s in capture_sizes if s > 0))
    decode_sizes = [x for x in sizes if decode_query_len <= x <= decode_query_len * max_num_seqs]
    if mode == "PIECEWISE":
        fams = [("piecewise", sizes)]
    elif mode == "FULL":
        fams = [("full", sizes)]
    elif mode == "FULL_DECODE_ONLY":
        fams = [("full", decode_sizes)]
    elif mode == "FULL_AND_PIECEWISE":
        fams = [("piecewise", sizes), ("full", decode_sizes)]
    else:
        fams = []
    return [(name, s) for name, s in fams if s]


def cuda_graph_bytes(
    *,
    mode: str,
    capture_sizes: list[int],
    max_num_seqs: int,
    decode_query_len: int = 1,
    constants: CudaGraphConstants,
    hidden_size: int | None = None,
    num_layers: int | None = None,
    tensor_parallel_size: int = 1,
) -> CudaGraphEstimate:
    """Estimated memory of the captured CUDA graphs, shaped like vLLM's own estimate.

    Per family ``f`` with ``n_f`` graphs whose largest holds ``N_f`` tokens::

        first_f = floor_f + ceil(c_f × N_f × hidden × num_layers / tp)
        total   = max_f first_f + Σ_f per_graph_f × (n_f − 1)

    FULL and PIECEWISE graphs share one memory pool, so vLLM counts only the largest first capture
    (vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.profile_cudagraph_memory, 0.33.0).  When
    the registry has no per-family costs, or the model's hidden size and depth are not given, the
    mode's flat figure is returned.  Mode ``NONE`` (``--enforce-eager``) captures nothing: 0.
    """
    mode_key = mode.strip().upper()
    if mode_key not in CUDA_GRAPH_MODES:
        raise UsageError(
            f"unknown CUDA graph mode {mode!r}",
            hint="use one of " + ", ".join(CUDA_GRAPH_MODES),
        )
    if decode_query_len < 1 or max_num_seqs < 1:
        raise UsageError("decode_query_len and max_num_seqs must be >= 1")
    tp = max(1, tensor_parallel_size)
    families = _capture_families(mode_key, capture_sizes, max_num_seqs, decode_query_len)
    if mode_key == "NONE" or not families:
        return CudaGraphEstimate(
            mode=mode_key, total_bytes=0, first_capture_bytes={}, per_graph_total_bytes={},
            num_graphs={}, largest_graph_tokens={}, method="none",
        )
    num_graphs = {name: len(sizes) for name, sizes in families}
    largest = {name: sizes[-1] for name, sizes in families}
    per_family = constants.families
    if (
        per_family is None
        or hidden_size is None
        or num_layers is None
        or any(name not in per_family for name, _ in families)
    ):
        flat = constants.flat_bytes_by_mode.get(mode_key)
        if flat is None:
            raise RegistryInvalid(f"cost model has no flat CUDA graph figure for mode {mode_key}")
        return CudaGraphEstimate(
            mode=mode_key, total_bytes=int(flat), first_capture_bytes={}, per_graph_total_bytes={},
            num_graphs=num_graphs, largest_graph_tokens=largest, method="flat",
        )
    first: dict[str, int] = {}
    per_graph_total: dict[str, int] = {}
    for name, sizes in families:
        fam = per_family[name]
        first[name] = fam.floor_bytes + math.ceil(
            fam.per_token_hidden_layer_bytes * sizes[-1] * hidden_size * num_layers / tp
        )
        per_graph_total[name] = fam.per_graph_bytes * (len(sizes) - 1)
    total = max(first.values()) + sum(per_graph_total.values())
    return CudaGraphEstimate(
        mode=mode_key, total_bytes=total, first_capture_bytes=first,
        per_graph_total_bytes=per_graph_total, num_graphs=num_graphs,
        largest_graph_tokens=largest, method="per_family",
    )


def pre_budget_bytes(
    *,
    world_size: int,
    tensor_parallel_size: int,
    pipeline_parallel_size: int,
    constants: PreBudgetConstants,
) -> PreBudget:
    """Memory held before vLLM measures the budget it draws ``gpu_memory_utilization`` from.

    ::

        communicator = table[largest world size listed <= world_size]   (0 at world size 1)
        total        = communicator + cuda_context + workspace

    vLLM creates the CUDA context and, since PR #25359 (0.11.0), the NCCL communicators and
    custom all-reduce buffers before ``MemorySnapshot`` is taken
    (vllm/v1/worker/gpu_worker.py::Worker.init_device, 0.33.0), so these bytes sit outside
    ``requested`` and only matter for whether ``free >= requested`` at startup.
    """
    if world_size < 1 or tensor_parallel_size < 1 or pipeline_parallel_size < 1:
        raise UsageError("world, tensor- and pipeline-parallel sizes must be >= 1")
    comm = constants.communicator_bytes(world_size)
    ctx = constants.cuda_context_bytes
    ws = constants.workspace_bytes
    return PreBudget(
        communicator_bytes=comm, cuda_context_bytes=ctx, workspace_bytes=ws,
        total_bytes=comm + ctx + ws,
    )


def non_torch_bytes(*, world_size: int, nccl_inside_budget: bool, constants: NonTorchConstants) -> int:
    """Non-torch memory growth that vLLM counts inside the budget.

    ::

        non_torch = base + (communicator(world_size) if nccl_inside_budget and world_size > 1)

    ``base`` is the era's calibrated growth (cuBLAS/attention workspaces, allocator state; in the
    0.28+ formula also the runner's persistent buffers).  Before PR #25359 (≈0.11.0) the
    communicators were initialised after the snapshot, so their buffers landed in
    ``non_torch_increase`` (vllm/utils/mem_utils.py::memory_profiling; gpu_worker.py::init_device
    of 0.10.2 vs 0.11.0).
    """
    if world_size < 1:
        raise UsageError("world size must be >= 1")
    comm = constants.communicator_bytes(world_size)
    return constants.base_bytes + (comm if nccl_inside_budget else 0)
