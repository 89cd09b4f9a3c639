"""How many requests run at once: the three limits, which one binds, and where they cross.

Three things cap the number of requests vLLM keeps in flight (vllm/v1/core/sched/scheduler.py::
Scheduler.schedule, 0.33.0):

* ``max_num_seqs``: the scheduler stops admitting once that many requests are RUNNING;
* the KV block pool: a request of ``L`` tokens holds, in steady decode, the blocks of every
  growing cache for ``L`` tokens (each KV cache group rounds up to whole blocks on its own) plus
  the blocks that do not grow with length (window rings, recurrent state); admission under
  ``scheduler_reserve_full_isl`` also reserves the admission-time bounded state
  (``SlidingWindowSpec.max_admission_blocks_per_request``).  One of the ``num_blocks`` is the null
  block (vllm/v1/core/block_pool.py::BlockPool), so ``num_blocks - 1`` are usable and
  ``by_kv_cache(L) = (num_blocks - 1) // blocks_per_request(L)``;
* ``max_num_batched_tokens``: the token budget of one step.  It never caps how many requests
  RUN; it caps how fast prompts enter: a prompt of ``P`` tokens needs ``ceil(P / budget)`` steps
  of prefill on its own, and ``n`` such prompts need ``ceil(n * P / budget)`` steps.

``effective(L) = min(max_num_seqs, by_kv_cache(L))``.  The crossover is the longest request for
which the pool still holds ``max_num_seqs`` requests: shorter requests are capped by
``max_num_seqs``, longer ones by the pool.

vLLM's own "Maximum concurrency for L tokens per request" figure
(vllm/v1/core/kv_cache_utils.py::get_max_concurrency_for_kv_cache_config, 0.33.0) is
``num_blocks / blocks_per_request(max_model_len)`` as a float, without the null block; it is
reported unchanged as ``kv_cache_requests_at_max_model_len``.

Images and videos: a multimodal prompt's image tokens cost KV exactly like text tokens, so a
request's length is its text plus its vision tokens (:func:`image_tokens`, :func:`video_tokens`).

Everything here is pure arithmetic on integers; no rich/typer/yaml at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any, Literal

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.graph import GraphContext
from vmemplan.core.units import cdiv
from vmemplan.laws.multimodal import fit_pixel_bounds

__all__ = [
    "Binding",
    "ConcurrencyLimits",
    "ConcurrencyRow",
    "ConcurrencyReport",
    "RequestShape",
    "requests_by_kv",
    "effective_concurrency",
    "binding_limit",
    "crossover_tokens",
    "default_lengths",
    "request_shapes",
    "concurrency_rows",
    "concurrency_report",
    "report_from_plan",
    "concurrency_at",
    "Headline",
    "headline",
    "ArrivalRun",
    "simulate_arrivals",
    "image_tokens",
    "video_tokens",
    "active_parameters",
]

Binding = Literal["max_num_seqs", "kv_cache"]
BlocksFor = Callable[[int], int]


# --------------------------------------------------------------------------------------
# The laws
# --------------------------------------------------------------------------------------


def requests_by_kv(usable_blocks: int, blocks_per_request: int) -> int | None:
    """Whole requests the pool holds at once: ``usable_blocks // blocks_per_request``.

    ``None`` when a request holds no block (an attention-free model: the pool never limits)."""
    if blocks_per_request <= 0:
        return None
    return max(usable_blocks, 0) // blocks_per_request


def effective_concurrency(max_num_seqs: int, by_kv_cache: int | None) -> int:
    """``min(max_num_seqs, by_kv_cache)``; the pool does not limit when ``by_kv_cache`` is None."""
    return max_num_seqs if by_kv_cache is None else min(max_num_seqs, by_kv_cache)


def binding_limit(max_num_seqs: int, by_kv_cache: int | None) -> Binding:
    """Which limit sets ``effective``: ``max_num_seqs`` when the pool holds at least that many."""
    if by_kv_cache is None or by_kv_cache >= max_num_seqs:
        return "max_num_seqs"
    return "kv_cache"


def crossover_tokens(usable_blocks: int, blocks_for: BlocksFor, max_num_seqs: int, max_model_len: int) -> int | None:
    """The longest request length in ``[1, max_model_len]`` at which the pool still holds
    ``max_num_seqs`` requests: ``max L with max_num_seqs * blocks_for(L) <= usable_blocks``.

    ``None`` if even ``max_model_len`` requests fit ``max_num_seqs`` times (the pool never binds);
    0 if not even one-token requests do (the pool binds at every length).  ``blocks_for`` must not
    decrease with ``L`` (binary search)."""
    if max_num_seqs * blocks_for(max_model_len) <= usable_blocks:
        return None
    if max_num_seqs * blocks_for(1) > usable_blocks:
        return 0
    lo, hi = 1, max_model_len  # fits(lo) holds, fits(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if max_num_seqs * blocks_for(mid) <= usable_blocks:
            lo = mid
        else:
            hi = mid
    return lo


def default_lengths(max_model_len: int, *, smallest: int = 64) -> tuple[int, ...]:
    """Powers of two from ``smallest`` up to ``max_model_len``, then ``max_model_len`` itself."""
    out = []
    n = smallest
    while n < max_model_len:
        out.append(n)
        n *= 2
    out.append(max_model_len)
    return tuple(out)


def request_shapes(lengths: Sequence[int] | None, max_model_len: int, mm_tokens: int = 0,
                   extra: RequestShape | None = None) -> list[RequestShape]:
    """The rows to tabulate: ``lengths`` (each plus ``mm_tokens`` vision tokens), else the default
    lengths with the vision tokens inside them; ``extra`` takes the place of the row of its length."""
    if lengths:
        shapes = [RequestShape(n, n, mm_tokens) for n in lengths]
    elif mm_tokens:
        shapes = [RequestShape(n - mm_tokens, n - mm_tokens, mm_tokens) for n in default_lengths(max_model_len)
                  if n - mm_tokens >= 1]
    else:
        shapes = [RequestShape(n, n) for n in default_lengths(max_model_len)]
    if extra is not None:
        shapes = sorted([s for s in shapes if s.request_tokens != extra.request_tokens] + [extra],
                        key=lambda s: s.request_tokens)
    return shapes


# --------------------------------------------------------------------------------------
# Rows and the report
# --------------------------------------------------------------------------------------


@frozen
class RequestShape:
    """One request length to tabulate.  ``text_tokens`` is prompt + output text;
    ``prompt_tokens`` is what prefill must chew (the whole request when only a length is known);
    ``mm_tokens`` are image/video tokens, part of the prompt."""

    text_tokens: int
    prompt_tokens: int
    mm_tokens: int = 0
    label: str = ""

    @property
    def request_tokens(self) -> int:
        return self.text_tokens + self.mm_tokens


@frozen
class ConcurrencyLimits:
    """The three limits and the pool they are read from."""

    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_requests_at_max_model_len: float
    max_model_len: int
    num_blocks: int
    usable_blocks: int
    fixed_blocks_per_request: int
    admission_blocks_per_request: int


@frozen
class ConcurrencyRow:
    """Concurrency at one request length.

    ``by_kv_cache`` counts requests in steady decode; ``by_kv_cache_admission`` what the
    admission gate allows (bounded state at its admission size).  ``prefill_steps``: steps one
    prompt needs alone; ``fill_steps``: steps until ``effective`` such prompts have all entered."""

    request_tokens: int
    prompt_tokens: int
    mm_tokens: int
    blocks_per_request: int
    by_kv_cache: int | None
    by_kv_cache_admission: int | None
    by_max_num_seqs: int
    effective: int
    binding: Binding
    prefill_steps: int
    fill_steps: int
    within_max_model_len: bool
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "request_tokens": self.request_tokens, "by_kv_cache": self.by_kv_cache,
            "by_max_num_seqs": self.by_max_num_seqs, "effective": self.effective,
            "binding": self.binding, "by_kv_cache_admission": self.by_kv_cache_admission,
            "blocks_per_request": self.blocks_per_request, "prompt_tokens": self.prompt_tokens,
            "mm_tokens": self.mm_tokens, "prefill_steps": self.prefill_steps, "fill_steps": self.fill_steps,
            "within_max_model_len": self.within_max_model_len, "label": self.label,
        }


@frozen
class ConcurrencyReport:
    limits: ConcurrencyLimits
    rows: tuple[ConcurrencyRow, ...]
    reference_tokens: int
    binding: Binding
    crossover_tokens: int | None
    notes: tuple[str, ...] = field(default=())

    def row_at(self, request_tokens: int) -> ConcurrencyRow | None:
        for r in self.rows:
            if r.request_tokens == request_tokens:
                return r
        return None


def concurrency_rows(
    shapes: Sequence[RequestShape],
    *,
    usable_blocks: int,
    blocks_for: BlocksFor,
    admission_blocks_for: BlocksFor,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    max_model_len: int,
) -> tuple[ConcurrencyRow, ...]:
    """One :class:`ConcurrencyRow` per shape (see the module docstring for the formulas).

    A request longer than ``max_model_len`` is refused by vLLM: its row has ``effective`` 0."""
    rows = []
    for s in shapes:
        length = s.request_tokens
        if length < 1:
            raise UsageError(f"a request has at least one token, not {length}")
        bpr = blocks_for(length)
        by_kv = requests_by_kv(usable_blocks, bpr)
        by_kv_adm = requests_by_kv(usable_blocks, admission_blocks_for(length))
        within = length <= max_model_len
        eff = effective_concurrency(max_num_seqs, by_kv) if within else 0
        prompt = max(s.prompt_tokens + s.mm_tokens, 1)
        rows.append(ConcurrencyRow(
            request_tokens=length, prompt_tokens=prompt, mm_tokens=s.mm_tokens, blocks_per_request=bpr,
            by_kv_cache=by_kv, by_kv_cache_admission=by_kv_adm, by_max_num_seqs=max_num_seqs,
            effective=eff, binding=binding_limit(max_num_seqs, by_kv),
            prefill_steps=cdiv(prompt, max_num_batched_tokens),
            fill_steps=cdiv(eff * prompt, max_num_batched_tokens) if eff else 0,
            within_max_model_len=within, label=s.label,
        ))
    return tuple(rows)


def concurrency_report(
    shapes: Sequence[RequestShape],
    *,
    num_blocks: int,
    blocks_for: BlocksFor,
    admission_blocks_for: BlocksFor,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    max_model_len: int,
    vllm_max_concurrency: float,
    fixed_blocks_per_request: int = 0,
    admission_blocks_per_request: int = 0,
    reference_tokens: int | None = None,
    notes: Sequence[str] = (),
) -> ConcurrencyReport:
    """The rows, the binding limit at ``reference_tokens`` (default ``max_model_len``) and the
    crossover length."""
    usable = max(num_blocks - 1, 0)
    rows = concurrency_rows(shapes, usable_blocks=usable, blocks_for=blocks_for,
                            admission_blocks_for=admission_blocks_for, max_num_seqs=max_num_seqs,
                            max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len)
    ref = reference_tokens or max_model_len
    ref_kv = requests_by_kv(usable, blocks_for(ref))
    cross = crossover_tokens(usable, blocks_for, max_num_seqs, max_model_len) if blocks_for(max_model_len) else None
    limits = ConcurrencyLimits(
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
        kv_cache_requests_at_max_model_len=vllm_max_concurrency, max_model_len=max_model_len,
        num_blocks=num_blocks, usable_blocks=usable, fixed_blocks_per_request=fixed_blocks_per_request,
        admission_blocks_per_request=admission_blocks_per_request,
    )
    return ConcurrencyReport(limits=limits, rows=rows, reference_tokens=ref,
                             binding=binding_limit(max_num_seqs, ref_kv), crossover_tokens=cross,
                             notes=tuple(notes))


def _pool_blocks(pool: Any) -> tuple[BlocksFor, BlocksFor, int, int]:
    fixed = pool.sequence_fixed_blocks()
    admission = pool.sequence_admission_blocks()

    def steady(tokens: int) -> int:
        return pool.sequence_variable_blocks(tokens) + fixed

    def admit(tokens: int) -> int:
        return pool.sequence_variable_blocks(tokens) + admission

    return steady, admit, fixed, admission


def report_from_plan(plan: Any, shapes: Sequence[RequestShape], *, reference_tokens: int | None = None,
                     notes: Sequence[str] = ()) -> ConcurrencyReport:
    """:func:`concurrency_report` for a :class:`~vmemplan.result.MemoryPlan` (uses ``plan.pool``)."""
    pool = plan.pool
    if pool is None:  # pragma: no cover - every plan from plan_memory carries its pool
        raise UsageError("this plan carries no KV pool")
    steady, admit, fixed, admission = _pool_blocks(pool)
    e = plan.engine
    extra = list(notes)
    if fixed:
        extra.append(f"each request also holds {fixed} block(s) that do not grow with its length "
                     "(window rings, recurrent state), counted at their steady-decode size even for short requests")
    if len(pool.groups) > 1:
        extra.append(f"{len(pool.groups)} KV cache groups share the pool: a request takes block ids from each "
                     "group separately (" + ", ".join(f"{g.kind}×{len(g.layer_names)}" for g in pool.groups) + ")")
    return concurrency_report(
        shapes, num_blocks=pool.num_blocks, blocks_for=steady, admission_blocks_for=admit,
        max_num_seqs=int(e.max_num_seqs), max_num_batched_tokens=int(e.max_num_batched_tokens),
        max_model_len=int(e.max_model_len), vllm_max_concurrency=float(pool.max_concurrency),
        fixed_blocks_per_request=fixed, admission_blocks_per_request=admission,
        reference_tokens=reference_tokens, notes=extra,
    )


def concurrency_at(plan: Any, request_tokens: int) -> int:
    """Effective concurrency of ``plan`` for requests of ``request_tokens`` (0 beyond max_model_len)."""
    rep = report_from_plan(plan, [RequestShape(request_tokens, request_tokens)], reference_tokens=request_tokens)
    return rep.rows[0].effective


@frozen
class Headline:
    """The answer of a plan in one line's worth of data: does vLLM start, how many KV tokens,
    how many requests of ``context_tokens`` run at once, and which limit binds there."""

    starts: bool
    kv_cache_tokens: int
    context_tokens: int
    concurrency: int
    binding: Binding | None
    max_num_seqs: int
    reason: str | None = None
    max_model_len_that_fits: int | None = None
    # the error band (vmemplan/laws/bands.py): the verdict's tri-state and the KV tokens' range
    outcome: str | None = None
    kv_cache_tokens_range: tuple[int, int] | None = None


def headline(plan: Any, context_tokens: int | None = None) -> Headline:
    """:class:`Headline` of ``plan`` at ``context_tokens`` (default: its ``max_model_len``)."""
    e = plan.engine
    tokens = int(context_tokens or e.max_model_len)
    v = plan.verdict
    band = getattr(plan, "band", None)
    rng = tuple(band.tokens_range) if band is not None else None
    if not v.starts:
        return Headline(False, plan.kv_cache.tokens, tokens, 0, None, int(e.max_num_seqs), v.reason,
                        v.max_model_len_that_fits, v.outcome, rng)
    rep = report_from_plan(plan, [RequestShape(tokens, tokens)], reference_tokens=tokens)
    row = rep.rows[0]
    return Headline(True, plan.kv_cache.tokens, tokens, row.effective, row.binding, int(e.max_num_seqs),
                    outcome=v.outcome, kv_cache_tokens_range=rng)


@frozen
class ArrivalRun:
    """A simulation run and how its arrivals were set: ``per_step`` is the rate the scheduler
    saw; ``step_s`` the mean step time that converted a per-second rate (None otherwise)."""

    sim: Any
    timed: Any
    arrival: Any
    step_s: float | None = None
    rounds: int = 1


def simulate_arrivals(config: Any, arrival: Any, specs_for: Callable[[Any], Any],
                      timing: Callable[[Any], Any] | None, *, rounds: int = 8,
                      tolerance: float = 0.02, first_step_s: float = 0.02) -> ArrivalRun:
    """Simulate ``arrival`` (all-at-once, a per-step :class:`~vmemplan.sim.traffic.Rate`, or a
    per-second :class:`~vmemplan.sim.traffic.PerSecond`).

    The scheduler runs in steps, so a per-second rate needs a step time, and the step time
    depends on the traffic: start from ``first_step_s``, simulate, take the run's mean time of a
    busy step (the speed model's time of each step that does work), convert again, and repeat
    until the step time moves by less than ``tolerance`` (or ``rounds`` runs).  ``specs_for``
    turns a per-step arrival into the requests; ``timing`` times a run (None: no speed model,
    and then a per-second rate is refused)."""
    from vmemplan.sim import simulate
    from vmemplan.sim.traffic import PerSecond

    if not isinstance(arrival, PerSecond):
        sim = simulate(config, specs_for(arrival))
        return ArrivalRun(sim, timing(sim) if timing else None, arrival)
    if timing is None:
        raise UsageError("--arrival-rate in requests per second needs the speed model, which this GPU or model lacks",
                         hint="give the rate per scheduler step instead, e.g. --arrival-rate poisson:0.05/step")
    step_s = first_step_s
    run = None
    for n in range(1, rounds + 1):
        per_step = arrival.per_step(step_s)
        sim = simulate(config, specs_for(per_step))
        timed = timing(sim)
        busy = [t for t in timed.step_times_s if t > 0]
        run = ArrivalRun(sim, timed, per_step, step_s, n)
        if not busy:
            break
        new = sum(busy) / len(busy)
        if abs(new - step_s) <= tolerance * step_s:
            break
        step_s = new
    assert run is not None
    return run


# --------------------------------------------------------------------------------------
# Vision tokens
# --------------------------------------------------------------------------------------

# Qwen2-VL / Qwen2.5-VL / Qwen3-VL image processors default to at most 16384 merged patches per
# image (max_pixels = 16384 * (patch * merge)^2, e.g. 12,845,056 for patch 14, merge 2) and at
# least 4 (min_pixels 3136 for patch 14).  config.json does not carry these; the processor does.
_QWEN_MAX_MERGED_PATCHES = 16384
_QWEN_MIN_MERGED_PATCHES = 4
_QWEN_MAX_ASPECT = 200


def _vision(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    v = config.get("vision_config")
    return v if isinstance(v, Mapping) else None


def _qwen_units(config: Mapping[str, Any]) -> tuple[int, int, int] | None:
    v = _vision(config)
    if not v:
        return None
    patch = v.get("patch_size") or v.get("spatial_patch_size")
    merge = v.get("spatial_merge_size")
    if not isinstance(patch, int) or not isinstance(merge, int) or patch < 1 or merge < 1:
        return None
    temporal = v.get("temporal_patch_size") if isinstance(v.get("temporal_patch_size"), int) else 1
    return patch, merge, temporal


def _smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """The Qwen2-VL processor's resize: both sides to multiples of ``factor`` (rounded), then
    scaled down or up to stay inside ``[min_pixels, max_pixels]`` (transformers
    ``qwen2_vl.image_processing_qwen2_vl.smart_resize``, used by vllm/model_executor/models/
    qwen2_vl.py::Qwen2VLProcessingInfo._get_vision_info, 0.33.0)."""
    if max(height, width) / min(height, width) > _QWEN_MAX_ASPECT:
        raise UsageError(f"image {width}x{height}: aspect ratio above {_QWEN_MAX_ASPECT} is refused by the processor")
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    return fit_pixel_bounds(height, width, h, w, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)


def image_tokens(config: Mapping[str, Any], size: tuple[int, int] | None = None) -> tuple[int, str]:
    """LLM tokens one image becomes, and how that was worked out.

    * Qwen-VL family (``vision_config.patch_size`` and ``spatial_merge_size``): the image is
      resized to multiples of ``patch * merge`` within the processor's pixel bounds, then
      ``(h / patch) * (w / patch) / merge^2`` tokens; with no ``size`` the largest image the
      processor allows (16384 merged patches, the processor default).
    * Gemma 3 (``mm_tokens_per_image``): that many tokens per image (pan-and-scan off, vLLM's
      default; vllm/model_executor/models/gemma3_mm.py::get_num_image_tokens, 0.33.0).

    Raises :class:`UsageError` for other vision models ("not supported yet") and text models."""
    v = _vision(config)
    if v is None:
        raise UsageError("this model has no vision_config: it takes no images")
    qwen = _qwen_units(config)
    if qwen is not None:
        patch, merge, _ = qwen
        unit = patch * merge
        if size is None:
            return _QWEN_MAX_MERGED_PATCHES, (f"largest image the processor allows: {_QWEN_MAX_MERGED_PATCHES} "
                                              f"merged {unit}x{unit}-pixel patches (processor default max_pixels)")
        width, height = size
        h, w = _smart_resize(height, width, unit, _QWEN_MIN_MERGED_PATCHES * unit * unit,
                             _QWEN_MAX_MERGED_PATCHES * unit * unit)
        n = (h // patch) * (w // patch) // (merge * merge)
        return n, f"{width}x{height} resized to {w}x{h}, ({w // unit})x({h // unit}) patches of {unit}x{unit} pixels"
    per_image = config.get("mm_tokens_per_image")
    if isinstance(per_image, int) and per_image > 0:
        return per_image, f"mm_tokens_per_image = {per_image} (one crop; pan-and-scan off)"
    kind = v.get("model_type") or "this vision tower"
    raise UsageError(f"images per request are not supported yet for {kind}",
                     hint="give the prompt's image tokens yourself with --lengths or --prompt-tokens")


def video_tokens(config: Mapping[str, Any], frames: int, size: tuple[int, int]) -> tuple[int, str]:
    """LLM tokens of one video (Qwen-VL family only): frames padded to a multiple of
    ``temporal_patch_size``, ``grid_t = frames / temporal``, each frame resized as an image,
    ``grid_t * (h / patch) * (w / patch) / merge^2`` (qwen2_vl.py::_get_vision_info, 0.33.0)."""
    if frames < 1:
        raise UsageError("a video has at least one frame")
    qwen = _qwen_units(config)
    if qwen is None:
        raise UsageError("videos per request are supported only for Qwen-VL style models (patch and merge sizes)")
    patch, merge, temporal = qwen
    unit = patch * merge
    width, height = size
    h, w = _smart_resize(height, width, unit, _QWEN_MIN_MERGED_PATCHES * unit * unit,
                         _QWEN_MAX_MERGED_PATCHES * unit * unit)
    padded = frames + (-frames % temporal)
    grid_t = max(padded // temporal, 1)
    n = grid_t * (h // patch) * (w // patch) // (merge * merge)
    return n, f"{frames} frames of {width}x{height} → {grid_t} × {(h // patch) * (w // patch) // (merge * merge)} tokens"


# --------------------------------------------------------------------------------------
# Active parameters (speed model)
# --------------------------------------------------------------------------------------

_EXPERT_COUNT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k", "moe_k")


def active_parameters(adapter: Any) -> tuple[int, str]:
    """Parameters one token passes through: every non-expert tensor plus ``top_k / num_experts``
    of the routed-expert tensors (tp 1).  Dense models: all parameters."""
    cfg = adapter.config
    tensors = [t for t in adapter.weight_tensors(GraphContext(model_dtype=cfg.torch_dtype)) if t.kind != "buffer"]
    total = sum(t.elements for t in tensors)
    expert = sum(t.elements for t in tensors if t.kind == "expert")
    if not expert:
        return total, "all parameters (dense)"
    text = cfg.text

    def first(keys: tuple[str, ...]) -> int | None:
        for k in keys:
            v = text.get(k, cfg.raw.get(k))
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return None

    n, k = first(_EXPERT_COUNT_KEYS), first(_TOP_K_KEYS)
    if not n or not k or k > n:
        return total, "all parameters (expert count or top-k not found in config.json: an upper bound)"
    active = total - expert + expert * k // n
    return active, f"non-expert parameters + {k}/{n} of the routed experts"


# --------------------------------------------------------------------------------------
# The simulator's pool
# --------------------------------------------------------------------------------------


def sim_config_from_plan(plan: Any, *, max_steps: int = 2_000_000) -> tuple[Any, tuple[str, ...]]:
    """A :class:`~vmemplan.sim.SimConfig` for the pool ``plan`` computed: its ``num_blocks``,
    block size, step budget, ``max_num_seqs`` and the blocks a request holds whatever its length.

    The simulator counts one block id per ``block_size`` tokens.  When several KV cache groups
    grow with the context (``g`` of them, smallest block ``b``), a token costs ``g`` block ids
    per ``b`` tokens; the pool is then shared out as ``(num_blocks - 1) // g + 1`` blocks and the
    fixed blocks as ``ceil(fixed / g)`` (an approximation, stated in the notes)."""
    pool = plan.pool
    e = plan.engine
    notes: list[str] = []
    growing = [g for g in pool.groups if g.spec.grows_with_context]
    fixed = pool.sequence_fixed_blocks()
    if growing:
        block = min(g.block_size for g in growing)
    else:
        block = plan.kv_cache.block_size
    n = max(len(growing), 1)
    num_blocks = pool.num_blocks
    if n > 1:
        num_blocks = (num_blocks - 1) // n + 1
        fixed = cdiv(fixed, n)
        notes.append(f"{n} growing KV cache groups share the pool: simulated as {num_blocks:,} blocks of "
                     f"{block} tokens (pool ÷ {n}), an approximation")
    if fixed:
        notes.append(f"each request holds {fixed} fixed block(s) while it runs (window rings, recurrent state)")
    from vmemplan.sim import SimConfig  # the simulator's import is paid by --simulate only

    cfg = SimConfig(num_blocks=max(num_blocks, 2), block_size=block,
                    max_num_batched_tokens=int(e.max_num_batched_tokens), max_num_seqs=int(e.max_num_seqs),
                    fixed_blocks_per_request=fixed, max_steps=max_steps)
    return cfg, tuple(notes)
