"""The sections of a vLLM rules pack (schema): defaults, batch tiers, CUDA-graph capture,
the budget formula, the KV token count and the log formats of one release line.

Split out of :mod:`vmemplan.rules` (which holds the pack itself, version ranges, loading and
selection, and re-exports every public name here).  Each section is a frozen dataclass
(:mod:`vmemplan.core.records`: pydantic validates it when a file is read);
every value carries where it was read from (a :class:`Sourced` value, or a ``sources`` map of
field name -> "vllm/file.py::function (version)").
"""

from __future__ import annotations

from dataclasses import field, fields
from typing import Annotated, Generic, Literal, TypeVar

from vmemplan.core import constraints as at
from vmemplan.core.frozen import frozen
from vmemplan.core.records import Record as _Record
from vmemplan.core.records import set_fields

T = TypeVar("T")


@frozen(kw_only=True)
class Sourced(_Record, Generic[T]):
    """A rule value plus the vLLM file::function (and release) it was read from."""

    value: T
    source: Annotated[str, at.MinLen(1)]


@frozen(kw_only=True)
class _WithSources(_Record):
    """A rules section whose ``sources`` map must cover every field that is set.

    ``sources`` maps a field name to "vllm/path.py::function (version)".  Every field the
    YAML sets to a value needs one; a field left out (its default: the rule does not exist
    in this release) or set to null / an empty list needs none.
    """

    sources: dict[str, str]

    def __post_init__(self) -> None:
        names = [f.name for f in fields(self) if f.name != "sources"]
        unknown = sorted(set(self.sources) - set(names))
        given = set(set_fields(self))
        if unknown:
            raise ValueError(f"sources names unknown field(s): {', '.join(unknown)}")
        missing = [
            n
            for n in names
            if n in given
            and getattr(self, n) not in (None, (), {})
            and not self.sources.get(n, "").strip()
        ]
        if missing:
            raise ValueError(f"no source given for: {', '.join(missing)}")


# --------------------------------------------------------------------------------------
# Defaults
# --------------------------------------------------------------------------------------


@frozen(kw_only=True)
class Defaults(_Record):
    """Engine defaults that the planner needs when a flag is not given.

    ``chunked_prefill_auto_above_max_model_len`` is the V0 rule that switched chunked
    prefill on for contexts longer than the threshold (None when no such rule exists).
    """

    gpu_memory_utilization: Sourced[float]
    block_size: Sourced[int]
    enable_prefix_caching: Sourced[bool]
    enable_chunked_prefill: Sourced[bool]
    kv_cache_dtype: Sourced[str]
    async_scheduling: Sourced[bool]
    max_num_seqs: Sourced[int]
    swap_space_bytes: Sourced[int] | None = None
    chunked_prefill_auto_above_max_model_len: Sourced[int] | None = None


# --------------------------------------------------------------------------------------
# Batch defaults
# --------------------------------------------------------------------------------------


@frozen(kw_only=True)
class BatchTier(_Record):
    """One device tier of the serve-mode (OpenAI API server) scheduler defaults.

    A device falls into the first tier whose ``min_total_bytes`` it reaches (NVML total,
    the figure nvidia-smi prints), whose name contains one of
    ``require_name_substrings_any`` (when given; the early V1 'h100'/'h200' rule) and whose
    exclusions do not match it.
    """

    min_total_bytes: Annotated[int, at.Ge(0)]
    max_num_batched_tokens: Annotated[int, at.Ge(1)]
    max_num_seqs: Annotated[int, at.Ge(1)]
    require_name_substrings_any: tuple[str, ...] = ()
    exclude_name_substrings: tuple[str, ...] = ()
    exclude_compute_capabilities: tuple[tuple[int, int], ...] = ()
    # Used only when the caller does not know the compute capability (e.g. GB10).
    exclude_name_substrings_if_capability_unknown: tuple[str, ...] = ()
    source: Annotated[str, at.MinLen(1)]

    def matches(
        self,
        *,
        device_name: str,
        nvml_total_bytes: int,
        compute_capability: tuple[int, int] | None,
    ) -> bool:
        """Whether a device belongs to this tier (name match is case-insensitive)."""
        name = device_name.lower()
        if nvml_total_bytes < self.min_total_bytes:
            return False
        if self.require_name_substrings_any and not any(
            s.lower() in name for s in self.require_name_substrings_any
        ):
            return False
        if any(s.lower() in name for s in self.exclude_name_substrings):
            return False
        if compute_capability is not None:
            if tuple(compute_capability) in {tuple(c) for c in self.exclude_compute_capabilities}:
                return False
        elif any(s.lower() in name for s in self.exclude_name_substrings_if_capability_unknown):
            return False
        return True


@frozen(kw_only=True)
class BatchDefaults(_WithSources):
    """Serve-mode defaults of ``max_num_batched_tokens`` and ``max_num_seqs``.

    ``mode``:
      * ``v0_scheduler`` - V0 ``SchedulerConfig``: one tier (no device tiering); with
        chunked prefill the tier's token value, otherwise ``max(max_model_len, floor)``.
      * ``v1_usage_context`` - V1 ``EngineArgs`` usage-context defaults by device tier,
        then the post-processing flags below.

    ``chunked_off_rule`` (what happens when chunked prefill is off):
      * ``max_with_floor``: ``max(max_model_len, unchunked_floor_tokens)`` (V0);
      * ``max_model_len``: ``max_model_len`` exactly (V1 0.9.2-0.11.0);
      * ``max_with_tier``: ``max(max_model_len, tier value)`` (V1 0.11.1+);
      * ``ignored``: the tier value is kept (V1 always chunked prefill then).
    """

    mode: Literal["v0_scheduler", "v1_usage_context"]
    tiers: Annotated[tuple[BatchTier, ...], at.MinLen(1)]
    chunked_off_rule: Literal["max_with_floor", "max_model_len", "max_with_tier", "ignored"]
    unchunked_floor_tokens: int | None = None
    cap_tokens_by_seqs_times_len: bool
    cap_seqs_by_tokens: bool

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunked_off_rule == "max_with_floor" and self.unchunked_floor_tokens is None:
            raise ValueError("chunked_off_rule max_with_floor needs unchunked_floor_tokens")
        last = self.tiers[-1]
        if last.min_total_bytes != 0 or last.require_name_substrings_any:
            raise ValueError("the last tier must be the catch-all (min_total_bytes: 0, no name requirement)")

    def tier_for(
        self,
        *,
        device_name: str,
        nvml_total_bytes: int,
        compute_capability: tuple[int, int] | None = None,
    ) -> BatchTier:
        """The first tier the device matches (the last tier is the catch-all)."""
        for tier in self.tiers:
            if tier.matches(
                device_name=device_name,
                nvml_total_bytes=nvml_total_bytes,
                compute_capability=compute_capability,
            ):
                return tier
        return self.tiers[-1]

    def for_device(
        self,
        *,
        device_name: str,
        nvml_total_bytes: int,
        max_model_len: int,
        chunked_prefill: bool,
        compute_capability: tuple[int, int] | None = None,
    ) -> tuple[int, int]:
        """Default ``(max_num_batched_tokens, max_num_seqs)`` for ``vllm serve``.

        Mirrors vllm/engine/arg_utils.py::EngineArgs.get_batch_defaults and
        ::_set_default_max_num_seqs_and_batched_tokens_args (0.11.1+), the older
        ::_set_default_args_v1 (0.8-0.11.0), and vllm/config.py::SchedulerConfig (V0).
        ``nvml_total_bytes`` is the NVML total (nvidia-smi's figure), which
        ``CudaPlatform.get_device_total_memory`` returns.
        """
        tier = self.tier_for(
            device_name=device_name,
            nvml_total_bytes=nvml_total_bytes,
            compute_capability=compute_capability,
        )
        tokens = tier.max_num_batched_tokens
        seqs = tier.max_num_seqs
        if not chunked_prefill:
            if self.chunked_off_rule == "max_with_floor":
                assert self.unchunked_floor_tokens is not None
                tokens = max(max_model_len, self.unchunked_floor_tokens)
            elif self.chunked_off_rule == "max_model_len":
                tokens = max_model_len
            elif self.chunked_off_rule == "max_with_tier":
                tokens = max(max_model_len, tokens)
        if self.cap_tokens_by_seqs_times_len:
            tokens = min(seqs * max_model_len, tokens)
        if self.cap_seqs_by_tokens:
            seqs = min(seqs, tokens)
        return tokens, seqs


# --------------------------------------------------------------------------------------
# CUDA graphs
# --------------------------------------------------------------------------------------


@frozen(kw_only=True)
class CudaGraphRules(_WithSources):
    """Default CUDA-graph mode and the default capture-size list.

    ``size_basis``:
      * ``max_num_seqs_padded`` (V0): candidates ``small_sizes + range(8, cap+1, 8)``, kept
        up to the smallest candidate >= ``max_num_seqs``; tokens are not a limit.
      * ``max_num_batched_tokens`` (V1): the largest size is ``min(cap, max_num_seqs *
        decode_query_len * seqs_multiplier)`` (or ``cap`` when ``seqs_multiplier`` is
        None), then ``min(that, max_num_batched_tokens)``; steps of ``step_below_256``
        below 256 and ``step_above_256`` from 256.
    """

    default_mode: Literal["NONE", "PIECEWISE", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY"]
    size_basis: Literal["max_num_seqs_padded", "max_num_batched_tokens"]
    max_capture_size_cap: Annotated[int, at.Ge(1)]
    max_capture_size_cap_sm100: int | None = None
    seqs_multiplier: int | None = None
    spec_decode_multiplier: bool
    small_sizes: tuple[int, ...]
    step_below_256: Annotated[int, at.Ge(1)]
    step_above_256: Annotated[int, at.Ge(1)]
    include_max_num_batched_tokens: bool = False
    uniform_decode_sizes: bool = False
    estimate_computed: bool
    estimate_subtracted_by_default: bool

    def max_capture_size(
        self,
        *,
        max_num_seqs: int,
        max_num_batched_tokens: int,
        num_speculative_tokens: int = 0,
        sm100: bool = False,
    ) -> int:
        """The largest default capture size (before any user override)."""
        return min(
            self._uncapped_by_tokens(max_num_seqs, num_speculative_tokens, sm100),
            max_num_batched_tokens,
        )

    def _platform_cap(self, sm100: bool) -> int:
        if sm100 and self.max_capture_size_cap_sm100 is not None:
            return self.max_capture_size_cap_sm100
        return self.max_capture_size_cap

    def _decode_query_len(self, num_speculative_tokens: int) -> int:
        return 1 + num_speculative_tokens if self.spec_decode_multiplier else 1

    def _uncapped_by_tokens(self, max_num_seqs: int, num_speculative_tokens: int, sm100: bool) -> int:
        cap = self._platform_cap(sm100)
        if self.seqs_multiplier is None:
            return cap
        query_len = self._decode_query_len(num_speculative_tokens)
        return min(max_num_seqs * query_len * self.seqs_multiplier, cap)

    def _ladder(self, largest: int) -> list[int]:
        sizes = [s for s in self.small_sizes if s <= largest]
        if largest >= 8:
            sizes += list(range(8, min(largest + 1, 256), self.step_below_256))
        if largest >= 256:
            sizes += list(range(256, largest + 1, self.step_above_256))
        return sizes

    def capture_sizes(
        self,
        *,
        max_num_seqs: int,
        max_num_batched_tokens: int,
        num_speculative_tokens: int = 0,
        sm100: bool = False,
    ) -> list[int]:
        """The default sorted capture sizes (batch sizes / token counts).

        Mirrors vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes (V1; 0.33.0 adds the
        max_num_batched_tokens entry and the uniform-decode sizes) and, for V0,
        vllm/worker/model_runner.py::_BATCH_SIZES_TO_CAPTURE with the padded
        ``max_num_seqs`` limit.  ``sm100`` selects the Blackwell (SM 10.x) cap where the
        release has one.  Returns [] when the default mode is NONE.
        """
        if self.default_mode == "NONE":
            return []
        if self.size_basis == "max_num_seqs_padded":
            candidates = self._ladder(self._platform_cap(sm100))
            bigger = [c for c in candidates if c >= max_num_seqs]
            limit = bigger[0] if bigger else candidates[-1]
            return [c for c in candidates if c <= limit]

        uncapped = self._uncapped_by_tokens(max_num_seqs, num_speculative_tokens, sm100)
        largest = min(uncapped, max_num_batched_tokens)
        sizes = self._ladder(largest)
        if self.include_max_num_batched_tokens and max_num_batched_tokens <= largest:
            sizes.append(max_num_batched_tokens)
        if self.uniform_decode_sizes:
            sizes += [
                s
                for s in self._uniform_decode(max_num_seqs, num_speculative_tokens, sm100, uncapped)
                if s <= max_num_batched_tokens
            ]
        return sorted(set(sizes))

    def _uniform_decode(
        self, max_num_seqs: int, num_speculative_tokens: int, sm100: bool, uncapped: int
    ) -> list[int]:
        """Uniform-decode sizes: ``n * query_len`` for the request-count ladder (0.31+).

        With no draft tokens only ``max_num_seqs`` itself is added (when it is within the
        cap).  Dynamic speculative-decoding schedules are not modelled.
        """
        query_len = self._decode_query_len(num_speculative_tokens)
        if query_len > 1:
            max_reqs = min(max_num_seqs, self._platform_cap(sm100))
            counts = [n for n in (1, 2, 4) if n <= max_reqs]
            counts += list(range(8, min(max_reqs + 1, 256), 8))
            counts += list(range(256, max_reqs + 1, 16))
            counts = sorted(set(counts + [max_reqs]))
            return sorted({n * query_len for n in counts if n * query_len <= uncapped})
        if max_num_seqs <= uncapped:
            return [max_num_seqs]
        return []


# --------------------------------------------------------------------------------------
# Budget and KV cache
# --------------------------------------------------------------------------------------


@frozen(kw_only=True)
class BudgetRules(_WithSources):
    """How the release turns device memory into KV-cache bytes.

    ``formula``:
      * ``v0_free_delta``: ``total*util - (free_at_init - free_after_profile)`` (V0 <= 0.6.3);
      * ``v0_peak``: ``total*util - (torch allocated peak + (used - torch allocated))``,
        which puts the CUDA context, NCCL and other processes inside (V0 0.6.4, V1 <= 0.9.0);
      * ``requested_minus_non_kv``: ``requested - (weights + activation peak increase +
        non-torch increase)`` via memory_profiling;
      * ``requested_minus_non_kv_minus_cudagraph``: the same minus the CUDA-graph estimate
        when it is applied.
    ``non_kv_measure`` says how the non-KV bytes are measured (0.27+ counts the free-memory
    drop since the snapshot plus the transient torch peak headroom).
    """

    formula: Literal[
        "v0_free_delta", "v0_peak", "requested_minus_non_kv", "requested_minus_non_kv_minus_cudagraph"
    ]
    requested_rounding: Literal["ceil", "float"]
    non_kv_measure: Literal[
        "free_delta", "torch_peak_plus_non_torch", "weights_plus_peak_increase_plus_non_torch_increase",
        "consumed_plus_transient_headroom",
    ]
    nccl_inside_budget: bool
    custom_all_reduce_inside_budget: bool
    cuda_context_inside_budget: bool
    other_processes_inside_budget: bool
    profile_tokens: Literal["max_num_batched_tokens", "max_model_len"]
    sampler_runs: Annotated[int, at.Ge(0)]
    suggestion_redundancy_buffer_bytes: int | None = None
    external_weight_memory_excluded: bool = False
    notes: tuple[str, ...] = ()


@frozen(kw_only=True)
class KvCacheRules(_WithSources):
    """How blocks, the logged token count and the logged concurrency are derived.

    ``tokens_formula``:
      * ``blocks_x_block_size``: ``num_blocks * block_size``;
      * ``blocks_div_groups_x_min_block``: ``num_blocks // num_groups * min group block size``
        (``* dcp*pcp`` where ``tokens_times_context_parallel``);
      * ``concurrency_x_max_model_len``: ``int(max_concurrency * max_model_len)``.
    ``concurrency_formula``:
      * ``tokens_div_max_model_len``: ``num_blocks * block_size / max_model_len``;
      * ``blocks_div_blocks_per_request``: ``num_blocks / cdiv(per-request bytes, block bytes)``.
    ``hybrid_group_threshold``: None = group size is always the smallest layer count;
    otherwise the largest count is used when ``max < min * threshold``.
    """

    tokens_formula: Literal["blocks_x_block_size", "blocks_div_groups_x_min_block", "concurrency_x_max_model_len"]
    concurrency_formula: Literal["tokens_div_max_model_len", "blocks_div_blocks_per_request"]
    hybrid_group_threshold: float | None = None
    hybrid_groups_supported: bool
    null_block: bool
    num_blocks_rule: Literal["budget_div_cache_block_bytes", "budget_div_page_div_group_size"]
    tokens_times_context_parallel: bool = False
    cpu_swap_blocks: bool = False
    # how many scheduled batches a window/chunked layer's admission reserve covers:
    # one batch of max_num_batched_tokens before 0.33, every batch in flight from 0.33
    window_in_flight: Literal["one_batch", "max_concurrent_batches"] = "one_batch"


# --------------------------------------------------------------------------------------
# Log formats
# --------------------------------------------------------------------------------------

ValueFormat = Literal["gib_float", "format_gib"]


@frozen(kw_only=True)
class LogFormats(_WithSources):
    """The exact printf-style format strings this release prints (``%`` formatting).

    Value conventions:
      * ``*_value`` ``gib_float`` - the argument is ``bytes / 2**30`` as a float (the
        format has ``%.4f``/``%.2f``); ``format_gib`` - the argument is
        :func:`format_gib` of the bytes (the format has ``%s``).
      * ``max_concurrency_len_arg``: ``int`` - the raw integer max_model_len (V0);
        ``thousands`` - ``f"{max_model_len:,}"`` (V1).
      * ``gpu_blocks_device_label`` / ``joined_kv_line_device_label``: the first
        argument when the format starts with a ``%s`` device label.
      * ``memory_profiling`` (V0 only) is stored in printf form; the original was an
        f-string.  Arguments are listed in ``memory_profiling_args``.
      * ``alternates`` maps a field to other spellings seen inside this pack's range.
    """

    model_loading: str
    model_loading_value: ValueFormat
    available_kv: str | None = None
    available_kv_value: ValueFormat | None = None
    kv_cache_size: str | None = None
    max_concurrency: str | None = None
    max_concurrency_len_arg: Literal["int", "thousands"] | None = None
    joined_kv_line: str | None = None
    joined_kv_line_device_label: str | None = None
    gpu_blocks: str | None = None
    gpu_blocks_device_label: str | None = None
    memory_profiling: str | None = None
    memory_profiling_args: tuple[str, ...] | None = None
    graph_capturing: str | None = None
    cudagraph_profiling: str | None = None
    cudagraph_estimate: str | None = None
    cudagraph_estimate_enabled: str | None = None
    cudagraph_estimate_disabled: str | None = None
    cudagraph_estimate_disabled_level: Literal["info", "warning"] | None = None
    cudagraph_pool: str | None = None
    kv_memory_suggestion: str | None = None
    kv_memory_suggestion_level: Literal["info", "debug"] | None = None
    chunked_prefill: str | None = None
    # startup failures, printf form of the release's f-strings (``%s`` = format_gib text)
    not_enough_kv: str | None = None
    not_enough_kv_estimate: str | None = None
    no_kv_memory: str | None = None
    # the free-memory check before loading (%s device, %s free GiB, %s total GiB, util, %s GiB)
    free_memory_short: str | None = None
    # the message logged when loading the weights runs out of memory (then torch's error is raised)
    load_oom: str | None = None
    # --num-gpu-blocks-override (%d the budget's blocks, %d the override)
    num_blocks_override: str | None = None
    alternates: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.available_kv is None) != (self.available_kv_value is None):
            raise ValueError("available_kv and available_kv_value must be set together")
        if (self.max_concurrency is None) != (self.max_concurrency_len_arg is None):
            raise ValueError("max_concurrency and max_concurrency_len_arg must be set together")
        if self.joined_kv_line is None and self.joined_kv_line_device_label is not None:
            raise ValueError("joined_kv_line_device_label without joined_kv_line")
        unknown = sorted(set(self.alternates) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(f"alternates names unknown field(s): {', '.join(unknown)}")
