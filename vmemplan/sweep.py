"""Sweeps: plan many deployments that differ in a few flags, and solve for a target.

``--vary FLAG=v1,v2,…`` or ``--vary FLAG=start:stop:step`` (stop included) names the values of one
size flag; several ``--vary`` make the grid of every combination (the first ``--vary`` varies
slowest).  Each point is planned exactly as ``vmemplan size`` would plan it.

Speed: the model source and the registry are read once, and every point runs the same pipeline
steps as ``size`` (:mod:`vmemplan.pipeline`).  Points that differ only in the budget
(``gpu_memory_utilization``, ``kv_cache_memory``) share the steps before the budget — weights,
activation peak, CUDA graphs and the KV cache specs do not depend on it — and re-run only the
budget, pool and verdict steps.  tests/test_pipeline_agreement.py checks that every point equals
``size`` to the byte.

Solve: with a target (``min_concurrency`` requests at ``request_tokens``, or ``min_kv_tokens``)
the points that start and meet it are kept; the answer prefers the cheapest GPU (the order the
``gpu`` values were given in), then the smallest tensor- and pipeline-parallel sizes, then the
largest ``max_model_len``, then the lowest utilization (and least ``kv_cache_memory``); other
flags keep the order given.  The "lever" is the single-flag change from the first grid point
(every flag at its first value) that raises the target figure the most.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from vmemplan.core.errors import UsageError, VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.sweep_grid import Kind, Steps
from vmemplan.sweep_grid import product as _product

__all__ = [
    "FlagSpec",
    "Vary",
    "Steps",
    "VARY_FLAGS",
    "OUTPUTS",
    "MAX_POINTS",
    "flag_spec",
    "parse_vary",
    "build_grid",
    "SweepPoint",
    "SweepEvaluator",
    "Target",
    "SolveResult",
    "Lever",
    "run_sweep",
    "iter_sweep",
    "iter_grid",
    "grid_size",
    "DEFAULT_MAX_POINTS",
    "solve",
]

#: The largest grid a sweep plans without being asked (``--max-points``): a grid over it is
#: refused, with its count, before anything is planned or held in memory.
DEFAULT_MAX_POINTS = 100_000
MAX_POINTS = DEFAULT_MAX_POINTS  # the old name
#: Shapes (the steps before the budget) kept for reuse; bounded, so a long sweep runs in flat memory.
SHAPE_CACHE = 256

@frozen
class FlagSpec:
    """A flag a sweep can vary: its CLI name, the PlanInputs field (vLLM's name) and its type."""

    name: str
    field: str
    kind: Kind


_FLAGS = (
    FlagSpec("gpu", "gpu", "str"),
    FlagSpec("tensor-parallel-size", "tensor_parallel_size", "int"),
    FlagSpec("pipeline-parallel-size", "pipeline_parallel_size", "int"),
    FlagSpec("gpu-memory-utilization", "gpu_memory_utilization", "float"),
    FlagSpec("max-model-len", "max_model_len", "int"),
    FlagSpec("max-num-seqs", "max_num_seqs", "int"),
    FlagSpec("max-num-batched-tokens", "max_num_batched_tokens", "int"),
    FlagSpec("block-size", "block_size", "int"),
    FlagSpec("kv-cache-dtype", "kv_cache_dtype", "str"),
    FlagSpec("dtype", "dtype", "str"),
    FlagSpec("enforce-eager", "enforce_eager", "bool"),
    FlagSpec("enable-prefix-caching", "enable_prefix_caching", "bool"),
    FlagSpec("kv-cache-memory", "kv_cache_memory_bytes", "bytes"),
    FlagSpec("vllm-version", "vllm_version", "str"),
    FlagSpec("quantization", "quantization", "str"),
    FlagSpec("data-parallel-size", "data_parallel_size", "int"),
    FlagSpec("enable-expert-parallel", "enable_expert_parallel", "bool"),
    FlagSpec("decode-context-parallel-size", "decode_context_parallel_size", "int"),
    FlagSpec("num-redundant-experts", "num_redundant_experts", "int"),
    FlagSpec("sampler", "sampler", "str"),
    FlagSpec("speculative-config", "speculative_config", "str"),
    FlagSpec("limit-mm-per-prompt", "limit_mm_per_prompt", "str"),
)
VARY_FLAGS: dict[str, FlagSpec] = {f.name: f for f in _FLAGS}
_ALIASES = {"tp": "tensor-parallel-size", "pp": "pipeline-parallel-size", "util": "gpu-memory-utilization",
            "kv-cache-memory-bytes": "kv-cache-memory", "dp": "data-parallel-size", "ep": "enable-expert-parallel",
            "dcp": "decode-context-parallel-size", "q": "quantization"}
# flags vLLM has that this version's `size` does not take yet
_NOT_YET = {"num-gpu-blocks-override"}

OUTPUTS = ("weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency", "num_blocks",
           "concurrency_at_request_tokens")


def flag_spec(name: str) -> FlagSpec:
    """The :class:`FlagSpec` for a flag name (``--`` and ``_`` tolerated, short aliases accepted)."""
    key = name.strip().lstrip("-").replace("_", "-").lower()
    key = _ALIASES.get(key, key)
    if key in VARY_FLAGS:
        return VARY_FLAGS[key]
    if key in _NOT_YET:
        raise UsageError(f"--{key} cannot be varied: the size command does not take it yet",
                         hint="vary one of: " + ", ".join(VARY_FLAGS))
    raise UsageError(f"unknown flag to vary: {name!r}", hint="vary one of: " + ", ".join(VARY_FLAGS))


@frozen
class Vary:
    flag: FlagSpec
    values: Sequence[Any]  # a tuple, or a lazy :class:`Steps` range


#: The largest magnitude a numeric ``--vary`` value may have: every sweepable number is a count,
#: a size or a fraction, and vLLM's int64 fields stop here; anything larger is a typo or garbage.
MAX_MAGNITUDE = 2**63 - 1


def _clip(text: str, limit: int = 60) -> str:
    """``text`` as an error echoes it: at most ``limit`` characters, an ellipsis past them."""
    return text if len(text) <= limit else text[:limit] + "…"


def _number(spec: FlagSpec, text: str, whole: str) -> Decimal:
    """A finite decimal of bounded magnitude, or UsageError (NaN, infinity, 10^5000 are refused)."""
    try:
        d = Decimal(text)
    except (InvalidOperation, ValueError):
        raise UsageError(f"--vary {_clip(whole)!r}: {_clip(text)!r} is not a valid {spec.kind} for --{spec.name}",
                         hint=f"give finite numbers, e.g. --vary {spec.name}=a,b,c") from None
    if not d.is_finite() or abs(d) > MAX_MAGNITUDE:
        raise UsageError(f"--vary {_clip(whole)!r}: {_clip(text)!r} is not a finite number up to 2^63 "
                         f"for --{spec.name}", hint=f"give finite numbers, e.g. --vary {spec.name}=a,b,c")
    return d


def _scalar(spec: FlagSpec, text: str, whole: str) -> Any:
    t = text.strip()
    if not t:
        raise UsageError(f"--vary {_clip(whole)!r}: empty value", hint="separate the values by single commas")
    bad = UsageError(f"--vary {_clip(whole)!r}: {_clip(t)!r} is not a valid "
                     f"{spec.kind.replace('bytes', 'byte count')} for --{spec.name}",
                     hint=f"see `vmemplan sweep --help`; e.g. --vary {spec.name}=a,b,c")
    if spec.kind == "int":
        d = _number(spec, t, whole)
        if d != d.to_integral_value():
            raise bad
        return int(d)
    if spec.kind == "float":
        return float(_number(spec, t, whole))
    if spec.kind == "bytes":
        from vmemplan.core.units import parse_bytes

        if len(t) > 40:
            raise bad
        try:
            value = parse_bytes(t)
        except ValueError:
            raise bad from None
        if value > MAX_MAGNITUDE:
            raise bad
        return value
    if spec.kind == "bool":
        low = t.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"--vary {_clip(whole)!r}: {_clip(t)!r} is not true or false",
                         hint=f"e.g. --vary {spec.name}=true,false")
    return t


def _range(spec: FlagSpec, parts: list[str], whole: str, max_points: int = DEFAULT_MAX_POINTS) -> Sequence[Any]:
    if spec.kind not in ("int", "float", "bytes"):
        raise UsageError(f"--vary {_clip(whole)!r}: --{spec.name} takes a list of values, not a range",
                         hint=f"e.g. --vary {spec.name}=a,b,c")
    if spec.kind == "float":
        start, stop, step = (_number(spec, p.strip(), whole) for p in parts)
    else:
        start, stop, step = (Decimal(_scalar(spec, p, whole)) for p in parts)
    if step == 0:
        raise UsageError(f"--vary {_clip(whole)!r}: the step must not be 0", hint="e.g. --vary util=0.8:0.95:0.05")
    if (stop - start) * step < 0:
        raise UsageError(f"--vary {_clip(whole)!r}: the step goes away from stop",
                         hint="give start:stop:step with the step's sign pointing from start to stop")
    count = int((stop - start) / step) + 1
    if count > max_points:
        raise UsageError(f"--vary {_clip(whole)!r}: {count:,} values, more than --max-points {max_points:,}",
                         hint=f"take a larger step, or pass --max-points {count} if you mean it")
    values = Steps(start, step, count, "float" if spec.kind == "float" else "int")
    if count > 1 and (values[0] == values[1] or values[-1] == values[-2]):
        raise UsageError(f"--vary {_clip(whole)!r}: the step is too small to tell the values apart",
                         hint="take a larger step")
    return values


def parse_vary(text: str, max_points: int = DEFAULT_MAX_POINTS) -> Vary:
    """Parse ``FLAG=v1,v2,…`` or ``FLAG=start:stop:step`` (stop included when the steps land on it).

    Raises :class:`UsageError` on an unknown flag, a bad value or an empty list."""
    whole = str(text)
    if "=" not in whole:
        raise UsageError(f"--vary {_clip(whole)!r}: expected FLAG=v1,v2,… or FLAG=start:stop:step",
                         hint="e.g. --vary max-model-len=8192,16384,32768 or --vary util=0.8:0.95:0.05")
    name, _, rhs = whole.partition("=")
    spec = flag_spec(name)
    rhs = rhs.strip()
    parts = rhs.split(":")
    if len(parts) == 3 and "," not in rhs:
        return Vary(spec, _range(spec, parts, whole, max_points))  # a non-numeric flag raises: it takes a list
    values = tuple(_scalar(spec, v, whole) for v in rhs.split(","))
    if not values:
        raise UsageError(f"--vary {_clip(whole)!r}: no values", hint="e.g. --vary max-model-len=8192,16384")
    return Vary(spec, tuple(dict.fromkeys(values)))  # duplicates dropped, order kept


def grid_size(varies: Sequence[Vary]) -> int:
    """How many points the grid has (the product of the value counts)."""
    total = 1
    for v in varies:
        total *= len(v.values)
    return total


def iter_grid(varies: Sequence[Vary], max_points: int = DEFAULT_MAX_POINTS) -> Iterator[dict[str, Any]]:
    """Every combination, as ``{field: value}``, one at a time; the first vary changes slowest.
    A grid over ``max_points`` is refused with its count before the first point."""
    fields = [v.flag.field for v in varies]
    if len(set(fields)) != len(fields):
        raise UsageError("the same flag is varied twice")
    total = grid_size(varies)
    if total > max_points:
        raise UsageError(f"the grid has {total:,} points, more than --max-points {max_points:,}",
                         hint=f"vary fewer values, or pass --max-points {total} if you mean it")
    return (dict(zip(fields, combo)) for combo in _product([v.values for v in varies]))



def build_grid(varies: Sequence[Vary], max_points: int = DEFAULT_MAX_POINTS) -> list[dict[str, Any]]:
    """Every combination, as ``{field: value}``; the first vary changes slowest."""
    return list(iter_grid(varies, max_points))


# --------------------------------------------------------------------------------------
# Evaluating points
# --------------------------------------------------------------------------------------


@frozen
class SweepPoint:
    """One planned point.  ``error`` is set (and the figures are None) when the flags are refused."""

    values: Mapping[str, Any]
    weights_bytes: int | None
    available_kv_cache_bytes: int | None
    kv_cache_tokens: int | None
    max_concurrency: float | None
    starts: bool
    num_blocks: int | None = None
    concurrency_at_request_tokens: int | None = None
    error: str | None = None
    reason: str | None = None
    # the error band's low end (None for exact plans) and the verdict's tri-state (laws/bands.py)
    kv_cache_tokens_low: int | None = None
    concurrency_at_request_tokens_low: int | None = None
    outcome: str | None = None

    def output(self, name: str) -> Any:
        if name not in OUTPUTS:
            raise UsageError(f"unknown sweep output {name!r}", hint="one of: " + ", ".join(OUTPUTS))
        return getattr(self, name)

    def to_json(self, varied: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {f: self.values.get(f) for f in varied}
        out.update(weights_bytes=self.weights_bytes, available_kv_cache_bytes=self.available_kv_cache_bytes,
                   kv_cache_tokens=self.kv_cache_tokens, max_concurrency=self.max_concurrency, starts=self.starts,
                   num_blocks=self.num_blocks, concurrency_at_request_tokens=self.concurrency_at_request_tokens,
                   error=self.error, reason=self.reason, kv_cache_tokens_low=self.kv_cache_tokens_low,
                   concurrency_at_request_tokens_low=self.concurrency_at_request_tokens_low, outcome=self.outcome)
        return out


@dataclass
class _Shape:
    """What a point's non-budget flags fix: the resolved request and the pipeline's first steps
    (model graph, overheads, pool context).  Budget-only flags re-run the tail from here."""

    req: Any
    graph: Any
    over: Any
    ctx: Any
    grouped: Any
    blocks_for_request: int | None = None
    #: pipeline.budget per budget flags (util, KV bytes); shared by the shapes that differ only in
    #: the context length, which the budget does not read
    budgets: dict = field(default_factory=dict)


_BUDGET_FIELDS = ("gpu_memory_utilization", "kv_cache_memory_bytes")
#: ResolvedRequest fields a context length may change without touching the graph
_LENGTH_FIELDS = frozenset({"max_model_len", "inputs", "defaulted", "warnings"})


def _length_free(req: Any) -> bool:
    """Whether the steps before the pool do not read ``max_model_len`` for this request: an
    adapter whose graph does not (``Adapter.reads_max_model_len``), no drafter, and a release
    that profiles at max_num_batched_tokens (not at the context length)."""
    return (not req.adapter.reads_max_model_len and req.speculative is None
            and req.rules.budget.profile_tokens != "max_model_len")


def _same_but_length(a: Any, b: Any) -> bool:
    """Two resolved requests equal in every field but the context length's own (so every default
    derived from it, e.g. the batch sizes, came out the same)."""
    theirs = b.__dict__
    return all(mine is theirs[name] or mine == theirs[name]
               for name, mine in a.__dict__.items() if name not in _LENGTH_FIELDS)


class SweepEvaluator:
    """Plans points against one registry and one model source (read once, by the caller).

    Every point goes through the same pipeline steps as ``vmemplan size``
    (:mod:`vmemplan.pipeline`); points that differ only in the budget flags share the steps
    before the budget.  ``base`` holds the fixed flags as PlanInputs fields (``model`` and
    ``gpu`` included); ``request_tokens`` adds the effective concurrency at that length to
    every point."""

    def __init__(self, base: Mapping[str, Any], *, registry: Any, source: Any,
                 request_tokens: int | None = None) -> None:
        self.base = {k: v for k, v in base.items() if v is not None or k in ("model", "gpu")}
        self.registry = registry
        self.source = source
        self.request_tokens = request_tokens
        self._shapes: OrderedDict[tuple, _Shape | VmemplanError] = OrderedDict()
        self._parsed: tuple[Any, Any] | None = None  # the source's config and adapter, built once
        self._base_inputs: Any = None  # the fixed flags as PlanInputs, checked once
        self._weights: dict[Any, Any] = {}  # pipeline.model_graph's weights memo
        self._by_length: dict[tuple, _Shape] = {}  # a planned shape per flags less max_model_len
        self.full_plans = 0
        self.length_reuses = 0

    def _inputs(self, point: Mapping[str, Any]) -> Any:
        """The point's PlanInputs: the fixed flags, checked once, with the point's values."""
        from vmemplan.request.inputs import InputsError, PlanInputs

        try:
            if self._base_inputs is None:
                self._base_inputs = PlanInputs.from_flags(self.base, hint=None)
            return self._base_inputs.updated(**{k: v for k, v in point.items() if v is not None})
        except InputsError as exc:
            raise InputsError(exc.field, exc.reason, hint=None) from None

    def _shape(self, inputs: Any) -> _Shape:
        from vmemplan import pipeline
        from vmemplan.resolve import resolve_with

        # the flags given (base and point; unset ones are the same defaults for every point)
        key = tuple(sorted((k, getattr(inputs, k)) for k in inputs.given() if k not in _BUDGET_FIELDS))
        try:
            hash(key)
        except TypeError:  # a dict-valued flag (JSON given as a mapping): key by its text
            key = tuple((k, repr(v)) for k, v in key)
        cached = self._shapes.get(key)
        if cached is None:
            try:
                shape_inputs = inputs.updated(gpu_memory_utilization=None, kv_cache_memory_bytes=None)
                req = resolve_with(shape_inputs, registry=self.registry, source=self.source, parsed=self._parsed)
                self._parsed = (req.config, req.adapter)
                # another context length of a shape already planned: the graph, overheads and
                # groups do not read it (_length_free), only the pool's per-request figures do
                len_key = tuple(kv for kv in key if kv[0] != "max_model_len")
                near = self._by_length.get(len_key)
                if near is not None and _length_free(req) and _same_but_length(req, near.req):
                    # the pool context too: of the request it reads only the context length here
                    # (the layout and hybrid-manager choices are the groups', reused above)
                    ctx = near.ctx.with_max_model_len(req.max_model_len)
                    cached = _Shape(req, near.graph, near.over, ctx, near.grouped, budgets=near.budgets)
                    self.length_reuses += 1
                else:
                    graph = pipeline.model_graph(req, self._weights)
                    over = pipeline.overheads(req, graph)
                    ctx = pipeline.pool_context(req)
                    cached = _Shape(req, graph, over, ctx, pipeline.layout(req, graph, ctx))
                    self.full_plans += 1
                    if _length_free(req):
                        self._by_length[len_key] = cached
            except VmemplanError as exc:
                cached = exc
            self._shapes[key] = cached
            if len(self._shapes) > SHAPE_CACHE:
                self._shapes.popitem(last=False)
        else:
            self._shapes.move_to_end(key)
        if isinstance(cached, VmemplanError):
            raise cached
        return cached

    def _concurrency(self, e: Any, pool: Any, shape: _Shape) -> int | None:
        """Requests of ``request_tokens`` the pool holds at once, under the settings ``e`` (the
        resolved request: its max_model_len and max_num_seqs)."""
        if self.request_tokens is None:
            return None
        from vmemplan.concurrency import effective_concurrency, requests_by_kv

        if self.request_tokens > e.max_model_len:
            return 0
        if pool is None or not pool.groups:
            return int(e.max_num_seqs)
        if shape.blocks_for_request is None:
            shape.blocks_for_request = (pool.sequence_variable_blocks(self.request_tokens)
                                        + pool.sequence_fixed_blocks())
        return effective_concurrency(int(e.max_num_seqs), requests_by_kv(pool.num_blocks - 1, shape.blocks_for_request))

    def evaluate(self, point: Mapping[str, Any]) -> SweepPoint:
        """Plan one point; refused flags give a point with ``error`` set instead of raising."""
        try:
            return self._evaluate(point)
        except VmemplanError as exc:
            return SweepPoint(values=dict(point), weights_bytes=None, available_kv_cache_bytes=None,
                              kv_cache_tokens=None, max_concurrency=None, starts=False, error=exc.message)

    def plan(self, point: Mapping[str, Any]) -> Any:
        """The full :class:`~vmemplan.result.MemoryPlan` of one point (what ``size`` prints for it)."""
        return self._plan(self._inputs(point))[0]

    def _plan(self, inputs: Any) -> tuple[Any, _Shape]:
        from vmemplan import pipeline
        from vmemplan.model_config import config_value_guard

        req, shape = self._budgeted(inputs)
        with config_value_guard(req.source.model_id):
            plan = pipeline.tail(req, shape.graph, shape.over, ctx=shape.ctx, grouped=shape.grouped)
        return plan, shape

    def _budgeted(self, inputs: Any) -> tuple[Any, _Shape]:
        """The point's shape and its request with the point's budget flags."""
        from vmemplan import pipeline

        shape = self._shape(inputs)
        util = inputs.gpu_memory_utilization
        if util is not None and not 0 < util <= 1:
            raise UsageError(f"--gpu-memory-utilization {util} is outside (0, 1]",
                             hint="vLLM takes a fraction of the GPU, e.g. 0.92")
        req = pipeline.with_budget_flags(shape.req, gpu_memory_utilization=util,
                                         kv_cache_memory_bytes=inputs.kv_cache_memory_bytes)
        return req, shape

    def _evaluate(self, point: Mapping[str, Any]) -> SweepPoint:
        """The point's figures from the pipeline's steps (pipeline.figures), without putting a
        whole MemoryPlan together: the same figures ``size`` prints (tests/test_pipeline_agreement.py)."""
        from vmemplan import pipeline
        from vmemplan.model_config import config_value_guard
        from vmemplan.plan_result import outcome

        req, shape = self._budgeted(self._inputs(point))
        key = (req.gpu_memory_utilization, req.kv_cache_memory_bytes)
        with config_value_guard(req.source.model_id):
            f = pipeline.figures(req, shape.graph, shape.over, ctx=shape.ctx, grouped=shape.grouped,
                                 bud=shape.budgets.get(key))
        shape.budgets[key] = f.budget
        pool, band, fullest = f.pool, f.band, f.budget.fullest
        low_tokens = low_concurrency = None
        if band is not None:  # the band's low end, as bands.low_end_pool reads a plan's
            from vmemplan.laws.bands import band_low_end

            low_tokens, low_pool = band_low_end(band, pool)
            low_concurrency = self._concurrency(req, low_pool, shape)
        return SweepPoint(values=dict(point), weights_bytes=fullest.weights_bytes,
                          available_kv_cache_bytes=fullest.available_kv_cache_bytes,
                          kv_cache_tokens=pool.kv_cache_tokens,
                          max_concurrency=pool.max_concurrency if pool.groups else None,  # as size: no KV, no bound
                          starts=f.verdict.starts, num_blocks=pool.num_blocks,
                          concurrency_at_request_tokens=self._concurrency(req, pool, shape),
                          reason=f.verdict.reason, kv_cache_tokens_low=low_tokens,
                          concurrency_at_request_tokens_low=low_concurrency, outcome=outcome(band, f.verdict))


def iter_sweep(evaluator: SweepEvaluator, varies: Sequence[Vary],
               max_points: int = DEFAULT_MAX_POINTS) -> Iterator[SweepPoint]:
    """Evaluate every grid point, in grid order, one at a time (flat memory).  GPU names and the
    grid's size are checked up front, before the first point."""
    if evaluator.base.get("gpu") is not None:
        evaluator.registry.gpu(evaluator.base["gpu"])
    for v in varies:
        if v.flag.field == "gpu":
            for g in v.values:
                evaluator.registry.gpu(g)
    grid = iter_grid(varies, max_points)
    return (evaluator.evaluate(p) for p in grid)


def run_sweep(evaluator: SweepEvaluator, varies: Sequence[Vary],
              max_points: int = DEFAULT_MAX_POINTS) -> list[SweepPoint]:
    """Evaluate every grid point, in grid order.  GPU names are checked up front."""
    return list(iter_sweep(evaluator, varies, max_points))


# The solve step (targets, levers) lives in vmemplan.sweep_solve; its names are re-exported here.
from vmemplan.sweep_solve import Lever, SolveResult, Target, solve  # noqa: E402
