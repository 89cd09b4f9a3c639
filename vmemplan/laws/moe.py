"""Where a mixture-of-experts layer's experts live, rank by rank.

vLLM flattens the tensor-, data- and prefill-context-parallel ranks into one group for the
fused MoE layers (vllm/model_executor/layers/fused_moe/config.py::
FusedMoEParallelConfig.make and flatten_tp_across_dp_and_pcp, 0.33.0):

* without ``--enable-expert-parallel`` every rank of that group holds every expert, each
  sliced on its intermediate dimension ``tp × dp × pcp`` ways;
* with it, the group becomes the expert-parallel group and each rank holds whole experts:
  ``global // ep`` of them, one more on the first ``global % ep`` ranks
  (vllm/model_executor/layers/fused_moe/expert_map_manager.py::determine_expert_map), where
  ``global`` = logical experts + ``--num-redundant-experts`` (EPLB replicas).

A rank's EPLB replicas are the experts it holds beyond its share of the logical ones
(``local_expert_counts(E + R) - local_expert_counts(E)``); they are reported apart from the
weights so the total counts every byte once.  The planner reports the fullest rank.
Pure integer arithmetic.
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = ["ExpertPlacement", "expert_placement", "local_expert_counts", "eplb_state_bytes", "moe_shard"]


@frozen
class ExpertPlacement:
    """The expert layout of one MoE layer across the MoE group, and the rank reported."""

    num_experts: int  # logical experts in the checkpoint
    num_redundant_experts: int
    moe_tp_size: int  # ways each expert's intermediate dimension is split
    ep_size: int  # ranks that split the experts whole (1 = no expert parallelism)
    per_rank_experts: tuple[int, ...]  # physical experts held by each EP rank
    per_rank_redundant: tuple[int, ...]  # of which redundant (EPLB) copies
    rank: int  # the EP rank reported (the fullest one unless asked)

    @property
    def global_experts(self) -> int:
        return self.num_experts + self.num_redundant_experts

    @property
    def local_experts(self) -> int:
        """Physical experts on the reported rank (logical + redundant)."""
        return self.per_rank_experts[self.rank]

    @property
    def local_redundant(self) -> int:
        return self.per_rank_redundant[self.rank]

    @property
    def local_logical(self) -> int:
        """Experts on the reported rank that count in the weights figure."""
        return self.local_experts - self.local_redundant

    @property
    def uneven(self) -> bool:
        return len(set(self.per_rank_experts)) > 1


#: The largest expert-parallel group vmemplan lays out (tp x dp x pcp ranks with
#: --enable-expert-parallel): the layout is per rank, and no deployment comes near this.
MAX_EP_RANKS = 65_536


def local_expert_counts(global_experts: int, ep_size: int) -> list[int]:
    """Physical experts per EP rank: ``global // ep``, plus one for ranks below
    ``global % ep``.  Mirrors vllm/model_executor/layers/fused_moe/expert_map_manager.py::
    determine_expert_map (linear placement, 0.33.0)."""
    if ep_size < 1 or global_experts < 1:
        raise UsageError("expert parallelism needs at least one rank and one expert")
    base, extra = divmod(global_experts, ep_size)
    return [base + (1 if r < extra else 0) for r in range(ep_size)]


def expert_placement(
    num_experts: int,
    *,
    tensor_parallel_size: int = 1,
    data_parallel_size: int = 1,
    prefill_context_parallel_size: int = 1,
    enable_expert_parallel: bool = False,
    enable_eplb: bool = False,
    num_redundant_experts: int = 0,
    rank: int | None = None,
) -> ExpertPlacement:
    """Lay out ``num_experts`` (+ redundant copies) over the MoE group.

    Without expert parallelism: one "EP rank" holding every expert, each split
    ``tp × dp × pcp`` ways.  With it: whole experts over ``tp × dp × pcp`` ranks.  ``rank``
    picks the EP rank to report; by default the fullest one (rank 0; the last rank when
    the counts are equal but redundant copies make no difference to the count).

    Redundant experts need EPLB and expert parallelism (vllm/config/parallel.py::
    ParallelConfig._validate_parallel_config); vLLM rejects them otherwise.
    """
    group = tensor_parallel_size * data_parallel_size * prefill_context_parallel_size
    if num_redundant_experts < 0:
        raise UsageError("--num-redundant-experts cannot be negative")
    if num_redundant_experts and not enable_eplb:
        raise UsageError(
            "--num-redundant-experts needs --enable-eplb",
            hint="vLLM places redundant experts only when expert-parallel load balancing is on",
        )
    if enable_eplb and not enable_expert_parallel:
        raise UsageError("--enable-eplb needs --enable-expert-parallel")
    use_ep = enable_expert_parallel and group > 1
    if use_ep and group > MAX_EP_RANKS:
        raise UsageError(
            f"expert parallelism over {group:,} ranks (tensor x data x prefill-context parallel) is more than "
            f"vmemplan lays out ({MAX_EP_RANKS:,})",
            hint="use a realistic --data-parallel-size / --tensor-parallel-size, or drop --enable-expert-parallel")
    if not use_ep:
        return ExpertPlacement(
            num_experts=num_experts, num_redundant_experts=num_redundant_experts,
            moe_tp_size=group, ep_size=1, per_rank_experts=(num_experts + num_redundant_experts,),
            per_rank_redundant=(num_redundant_experts,), rank=0,
        )
    counts = local_expert_counts(num_experts + num_redundant_experts, group)
    # EPLB moves replicas between ranks at run time, so which physical slot holds a copy is
    # not a fixed fact; what is fixed is how many more experts each rank holds than it would
    # without redundancy.  Those extra slots are the rank's EPLB replicas.
    base = local_expert_counts(num_experts, group) if num_experts >= group else [
        1 if r < num_experts else 0 for r in range(group)]
    redundant = [max(0, c - b) for c, b in zip(counts, base)]
    if rank is None:
        rank = max(range(group), key=lambda r: (counts[r], -r))
    if not 0 <= rank < group:
        raise UsageError(f"EP rank {rank} is outside 0..{group - 1}")
    return ExpertPlacement(
        num_experts=num_experts, num_redundant_experts=num_redundant_experts,
        moe_tp_size=1, ep_size=group, per_rank_experts=tuple(counts),
        per_rank_redundant=tuple(redundant), rank=rank,
    )


def moe_shard(ctx: object, num_experts: int) -> tuple[int, int]:
    """``(physical experts on the fullest rank, ways each expert's intermediate is split)`` for
    one FusedMoE layer, from a GraphContext's layout.  The one place adapters ask this; see
    :func:`expert_placement` for the rule."""
    placement = expert_placement(
        num_experts,
        tensor_parallel_size=getattr(ctx, "tensor_parallel_size", 1),
        data_parallel_size=getattr(ctx, "data_parallel_size", 1),
        prefill_context_parallel_size=getattr(ctx, "prefill_context_parallel_size", 1),
        enable_expert_parallel=getattr(ctx, "enable_expert_parallel", False),
        enable_eplb=getattr(ctx, "enable_eplb", False),
        num_redundant_experts=getattr(ctx, "num_redundant_experts", 0) if getattr(ctx, "enable_eplb", False) else 0,
    )
    return placement.local_experts, placement.moe_tp_size


def eplb_state_bytes(num_moe_layers: int, num_physical_experts: int, window_size: int = 1000) -> int:
    """Bytes of EPLB's load statistics, allocated while the model loads.

    Mirrors vllm/distributed/eplb/eplb_state.py::EplbState.add_model (0.33.0): an int32
    window ``[window_size, layers, physical experts]`` and an int32 pass buffer
    ``[layers, physical experts]`` (the per-layer expert staging buffer is priced with the
    expert tensors by the adapter).
    """
    return 4 * num_moe_layers * num_physical_experts * (window_size + 1)
