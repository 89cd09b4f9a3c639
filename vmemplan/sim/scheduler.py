"""A step-by-step simulation of vLLM's continuous-batching scheduler over a paged KV block pool.

Mirrors vllm/v1/core/sched/scheduler.py::Scheduler.schedule, ::_preempt_request and
::update_from_output, vllm/v1/core/kv_cache_manager.py::KVCacheManager.allocate_slots and
vllm/v1/core/block_pool.py::BlockPool (0.33.0), for the default first-come-first-served policy.

One step, as the simulation runs it:

1. Arrivals of this step join the back of WAITING.
2. The token budget starts at ``max_num_batched_tokens``.  ``long_prefill_token_threshold`` only
   applies while more than one request is running or waiting (vLLM drops it for a lone request).
3. RUNNING requests, in admission order, while budget remains: each wants
   ``prompt + outputs - computed`` tokens (1 in decode, a chunk while prefilling), capped by the
   threshold and the budget.  It needs ``ceil((computed + n) / block_size)`` KV blocks in all.
   While the free blocks do not cover what it lacks, the LAST running request is preempted: it
   returns every block, its computed count drops to 0 and it goes to the FRONT of WAITING (its
   generated tokens are kept; on re-admission prompt and outputs are prefilled again).  If the
   request preempts itself the running pass stops.
4. If nothing was preempted this step, WAITING requests are admitted in order while budget
   remains and fewer than ``max_num_seqs`` run.  Admission needs the blocks of the request's WHOLE
   current sequence (prompt + outputs so far) plus its fixed blocks (and the watermark, once any
   request runs) to be free -- vLLM's ``scheduler_reserve_full_isl`` gate, on by default -- but
   only the first chunk's blocks are claimed.  The first request that does not fit stops admission.
5. One forward pass: every scheduled request advances ``computed``; a request whose computed count
   reaches the end of its sequence samples one token.  A request with all its output tokens
   finishes and returns all its blocks.

The pool has ``num_blocks`` blocks as vLLM counts them; one of them is the null block, which is
never handed out, so ``num_blocks - 1`` are usable and the pool fraction is
``used / (num_blocks - 1)`` (BlockPool.get_usage).

Simplifications (stated, deliberate):

* No prefix caching: no request shares blocks, and a preempted request recomputes everything (real
  vLLM may find some of its freed blocks still cached and skip them).
* No speculative decoding, async scheduling, pipeline parallelism, encoder inputs or KV
  connectors; priority scheduling is not modelled (FCFS only).
* Sliding-window or recurrent layers are represented only by ``fixed_blocks_per_request`` blocks
  a request claims at admission and holds while running, whatever its length (as the recurrent
  state manager in vllm/v1/core/single_type_kv_cache_manager.py asks for its block only when the
  request holds none).
* Preempting nobody in step 3 is the condition vLLM uses to admit in step 4; under FCFS the victim
  is at the front of WAITING and can never fit in the step that evicted it, so it changes nothing.
* A request never stops early (no end-of-text): it produces exactly its ``output_tokens``.

Fast path: the simulation tracks block COUNTS, not ids.  With ``check=True`` it also keeps real
block ids (a free list and an owner table) and asserts every invariant each step: no block owned
twice, the count view equals the id view, the pool is never exceeded, tokens are conserved.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Union

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.sim.outcome import (
    Percentiles,
    RequestTrace,
    SimResult,
    StepSeries,
    TimelineBucket,
    percentiles,
    weighted_percentiles,
)
from vmemplan.sim.traffic import RequestSpec, Traffic

__all__ = [
    "SimConfig",
    "Percentiles",
    "RequestTrace",
    "StepSeries",
    "TimelineBucket",
    "SimResult",
    "simulate",
    "percentiles",
    "weighted_percentiles",
]


@frozen
class SimConfig:
    """The scheduler limits and the pool size.

    ``num_blocks`` counts the null block, as vLLM's "GPU KV cache size" arithmetic does;
    ``fixed_blocks_per_request`` are blocks a running request holds regardless of its length
    (recurrent state, window rings); ``watermark_fraction`` is vLLM's ``--watermark``
    headroom (SchedulerConfig.watermark, default 0); ``max_steps`` stops a run that would
    not end.
    """

    num_blocks: int
    block_size: int
    max_num_batched_tokens: int
    max_num_seqs: int
    fixed_blocks_per_request: int = 0
    long_prefill_token_threshold: int | None = None
    watermark_fraction: float = 0.0
    max_steps: int = 2_000_000

    def __post_init__(self) -> None:
        for name in ("num_blocks", "block_size", "max_num_batched_tokens", "max_num_seqs", "max_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a positive integer, not {value!r}")
        if self.num_blocks < 2:
            raise UsageError(
                f"num_blocks must be at least 2 (one block is vLLM's null block), not {self.num_blocks}"
            )
        if (
            isinstance(self.fixed_blocks_per_request, bool)
            or not isinstance(self.fixed_blocks_per_request, int)
            or self.fixed_blocks_per_request < 0
        ):
            raise UsageError(f"fixed_blocks_per_request must be >= 0, not {self.fixed_blocks_per_request!r}")
        lpt = self.long_prefill_token_threshold
        if lpt is not None and (isinstance(lpt, bool) or not isinstance(lpt, int) or lpt < 0):
            raise UsageError(f"long_prefill_token_threshold must be >= 0, not {lpt!r}")
        if not (0.0 <= self.watermark_fraction < 1.0):
            raise UsageError(f"watermark_fraction must be in [0, 1), not {self.watermark_fraction!r}")

    @property
    def usable_blocks(self) -> int:
        """Blocks the scheduler can hand out: all but the null block."""
        return self.num_blocks - 1

    @property
    def watermark_blocks(self) -> int:
        """``int(watermark * num_blocks)`` (KVCacheManager.__init__)."""
        return int(self.watermark_fraction * self.num_blocks)


RequestsIn = Union[Traffic, Sequence[RequestSpec]]


def _requests_of(traffic: RequestsIn) -> tuple[RequestSpec, ...]:
    if isinstance(traffic, Traffic):
        return traffic.generate()
    reqs = tuple(traffic)
    for r in reqs:
        if not isinstance(r, RequestSpec):
            raise UsageError(f"expected RequestSpec entries, got {type(r).__name__}")
        if r.arrival_step < 0 or r.prompt_tokens < 1 or r.output_tokens < 1:
            raise UsageError(
                f"bad request {r}: arrival must be >= 0, prompt and output at least 1 token"
            )
    return reqs


class _BlockIds:
    """Check mode only: real block ids, so double ownership and leaks are visible."""

    def __init__(self, usable: int) -> None:
        # Block 0 is the null block; ids 1..usable can be handed out.
        self.free_ids: list[int] = list(range(usable, 0, -1))
        self.owner: dict[int, int] = {}
        self.owned: dict[int, list[int]] = {}

    def take(self, req: int, k: int) -> None:
        assert k <= len(self.free_ids), "allocation beyond the pool"
        mine = self.owned.setdefault(req, [])
        for _ in range(k):
            b = self.free_ids.pop()
            assert b != 0, "the null block was handed out"
            assert b not in self.owner, f"block {b} owned twice"
            self.owner[b] = req
            mine.append(b)

    def release(self, req: int) -> None:
        for b in self.owned.pop(req, []):
            assert self.owner.pop(b) == req
            self.free_ids.append(b)

    def count(self, req: int) -> int:
        return len(self.owned.get(req, ()))


def _check_fits(specs: Sequence[RequestSpec], config: SimConfig) -> None:
    """Refuse a request that could never run: its largest footprint exceeds the usable pool."""
    bs, fixed, usable = config.block_size, config.fixed_blocks_per_request, config.usable_blocks
    for i, s in enumerate(specs):
        largest = -(-(s.prompt_tokens + s.output_tokens - 1) // bs) + fixed
        if largest > usable:
            raise UsageError(
                f"request {i} ({s.prompt_tokens} prompt + {s.output_tokens} output tokens) needs {largest} blocks, "
                f"more than the {usable} usable blocks of the pool",
                hint="shorten the requests or enlarge the pool; vLLM would not start with a max-model-len that does not fit",
            )


class _Run:
    """The scheduler loop's state and its steps (see the module docstring for what each does).

    Per-request figures live in parallel lists indexed by request; ``running`` is an
    insertion-ordered set (admission order, ``popitem()`` = the newest)."""

    def __init__(self, config: SimConfig, specs: Sequence[RequestSpec], check: bool) -> None:
        n = len(specs)
        self.config = config
        self.n_req = n
        self.bs = config.block_size
        self.fixed = config.fixed_blocks_per_request
        self.usable = config.usable_blocks
        self.check = check
        self.prompt = [s.prompt_tokens for s in specs]
        self.out_max = [s.output_tokens for s in specs]
        self.arrive = [s.arrival_step for s in specs]
        self.comp = [0] * n  # tokens whose KV is computed (reset to 0 by preemption)
        self.gen = [0] * n  # output tokens sampled so far (kept across preemption)
        self.held = [0] * n  # KV blocks held, fixed blocks excluded
        self.last_emit = [-1] * n
        self.first_tok: list[int | None] = [None] * n
        self.finish: list[int | None] = [None] * n
        self.npre = [0] * n
        self.order = sorted(range(n), key=lambda i: (self.arrive[i], i))
        self.ai = 0
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}
        self.free = self.usable
        self.preemptions = 0
        self.completed = 0
        # the per-step series, in StepSeries order
        self.series: tuple[list[int], ...] = tuple([] for _ in range(8))
        self.long_gaps: list[tuple[int, int]] = []
        self.ttft_counts: dict[int, int] = {}
        self.ids = _BlockIds(self.usable) if check else None
        self.scheduled_total = [0] * n if check else None
        self.discarded_total = [0] * n if check else None

    # -- 1. arrivals ------------------------------------------------------------------------
    def arrivals(self, t: int) -> None:
        order, arrive = self.order, self.arrive
        while self.ai < self.n_req and arrive[order[self.ai]] <= t:
            self.waiting.append(order[self.ai])
            self.ai += 1

    def idle_until_next_arrival(self, t: int) -> int:
        """Record empty steps until the next arrival (or max_steps); the step to resume at."""
        nxt = min(self.arrive[self.order[self.ai]], self.config.max_steps)
        for lst in self.series:
            lst.extend([0] * (nxt - t))
        return nxt

    # -- 3. running requests ----------------------------------------------------------------
    def _preempt_newest(self) -> int:
        v, _ = self.running.popitem()
        self.free += self.held[v] + self.fixed
        if self.check:
            self.discarded_total[v] += self.comp[v]  # type: ignore[index]
            self.ids.release(v)  # type: ignore[union-attr]
        self.held[v] = 0
        self.comp[v] = 0
        self.waiting.appendleft(v)
        self.npre[v] += 1
        self.preemptions += 1
        return v

    def schedule_running(self, budget: int, thr: int, sched: list[tuple[int, int]]) -> tuple[int, int]:
        """RUNNING requests in admission order; returns (budget left, requests preempted)."""
        comp, gen, prompt, held, bs = self.comp, self.gen, self.prompt, self.held, self.bs
        preempted = 0
        pos = 0
        for r in list(self.running):
            if budget <= 0 or pos >= len(self.running):
                break
            c = comp[r]
            n = prompt[r] + gen[r] - c
            if 0 < thr < n:
                n = thr
            if n > budget:
                n = budget
            need = -(-(c + n) // bs) - held[r]
            if need > self.free:
                self_preempted = False
                while need > self.free:
                    v = self._preempt_newest()
                    preempted += 1
                    if v == r:
                        self_preempted = True
                        break
                if self_preempted:
                    break
            if need > 0:
                self.free -= need
                held[r] += need
                if self.check:
                    self.ids.take(r, need)  # type: ignore[union-attr]
            budget -= n
            sched.append((r, n))
            pos += 1
        return budget, preempted

    # -- 4. admissions ----------------------------------------------------------------------
    def schedule_waiting(self, budget: int, thr: int, sched: list[tuple[int, int]]) -> None:
        """WAITING requests in order while the budget, max_num_seqs and the full-sequence gate allow."""
        waiting, running, bs, fixed = self.waiting, self.running, self.bs, self.fixed
        wm_blocks, max_seqs = self.config.watermark_blocks, self.config.max_num_seqs
        while waiting and budget > 0 and len(running) < max_seqs:
            r = waiting[0]
            ntok = self.prompt[r] + self.gen[r]
            full = -(-ntok // bs) + fixed
            if full + (wm_blocks if running else 0) > self.free:
                break
            n = ntok
            if 0 < thr < n:
                n = thr
            if n > budget:
                n = budget
            kv_need = -(-n // bs)
            waiting.popleft()
            running[r] = None
            self.held[r] = kv_need
            self.free -= kv_need + fixed
            if self.check:
                self.ids.take(r, kv_need + fixed)  # type: ignore[union-attr]
            budget -= n
            sched.append((r, n))

    # -- 5. the forward pass and finishes -----------------------------------------------------
    def forward(self, t: int, sched: list[tuple[int, int]]) -> tuple[int, int, int, int]:
        """Advance every scheduled request; returns (prefill tokens, decode requests, KV tokens
        read, tokens emitted one step after the previous one)."""
        comp, gen, prompt = self.comp, self.gen, self.prompt
        pre_tok = dec_req = kv_read = ones = 0
        for r, n in sched:
            c = comp[r]
            g = gen[r]
            ntok = prompt[r] + g
            if g and c == ntok - 1:
                dec_req += 1
            else:
                pre_tok += n
            c += n
            kv_read += c
            comp[r] = c
            if self.check:
                self.scheduled_total[r] += n  # type: ignore[index]
            if c == ntok:
                ones += self._sample(r, t)
        return pre_tok, dec_req, kv_read, ones

    def _sample(self, r: int, t: int) -> int:
        """Request ``r`` samples a token at step ``t``; 1 when it follows the previous one at once."""
        g = self.gen[r] + 1
        self.gen[r] = g
        one = 0
        if g == 1:
            self.first_tok[r] = t
            d = t - self.arrive[r] + 1
            self.ttft_counts[d] = self.ttft_counts.get(d, 0) + 1
        elif t - self.last_emit[r] == 1:
            one = 1
        else:
            self.long_gaps.append((self.last_emit[r], t))
        self.last_emit[r] = t
        if g == self.out_max[r]:
            del self.running[r]
            self.free += self.held[r] + self.fixed
            self.held[r] = 0
            if self.check:
                self.ids.release(r)  # type: ignore[union-attr]
            self.finish[r] = t
            self.completed += 1
        return one

    def step(self, t: int) -> None:
        """One scheduler step (2–5) at step ``t``, recorded in the series."""
        budget = self.config.max_num_batched_tokens
        lpt = self.config.long_prefill_token_threshold or 0
        thr = lpt if (len(self.running) + len(self.waiting)) > 1 else 0
        sched: list[tuple[int, int]] = []
        budget, preempted = self.schedule_running(budget, thr, sched)
        if not preempted:
            self.schedule_waiting(budget, thr, sched)
        used = self.usable - self.free
        n_running = len(self.running)
        pre_tok, dec_req, kv_read, ones = self.forward(t, sched)
        for lst, value in zip(self.series, (pre_tok, dec_req, kv_read, n_running, len(self.waiting), used,
                                            preempted, ones)):
            lst.append(value)
        if self.check:
            self.check_step(sched)

    # -- invariants (check=True) --------------------------------------------------------------
    def check_step(self, sched: list[tuple[int, int]]) -> None:
        ids = self.ids
        assert ids is not None
        assert 0 <= self.free <= self.usable, "pool over-allocated"
        assert len(ids.free_ids) == self.free, "count view and id view disagree"
        assert len(self.running) <= self.config.max_num_seqs
        assert sum(n for _, n in sched) <= self.config.max_num_batched_tokens, "token budget exceeded"
        for r in self.running:
            assert ids.count(r) == self.held[r] + self.fixed
            assert self.held[r] == -(-self.comp[r] // self.bs), "blocks held do not match computed tokens"
        for r in self.waiting:
            assert ids.count(r) == 0 and self.comp[r] == 0

    def check_end(self) -> None:
        assert self.ids is not None and self.scheduled_total is not None and self.discarded_total is not None
        for r in range(self.n_req):
            assert self.gen[r] == self.out_max[r]
            # Every token but the last sampled one is computed once per admission that kept it.
            assert self.scheduled_total[r] == self.prompt[r] + self.out_max[r] - 1 + self.discarded_total[r], \
                "tokens not conserved"
        assert self.free == self.usable and not self.ids.owner, "blocks leaked"

    # -- the result ---------------------------------------------------------------------------
    def result(self) -> SimResult:
        s_pre, s_dec, s_kv, s_run, s_wait, s_used, s_preempt, s_ones = self.series
        n_req = self.n_req
        traces = tuple(
            RequestTrace(i, self.arrive[i], self.prompt[i], self.out_max[i], self.first_tok[i], self.finish[i],
                         self.npre[i]) for i in range(n_req)
        )
        gap_counts: dict[int, int] = {1: sum(s_ones)}
        for a, b in self.long_gaps:
            gap_counts[b - a] = gap_counts.get(b - a, 0) + 1
        peak_used = max(s_used) if s_used else 0
        return SimResult(
            config=self.config,
            num_requests=n_req,
            steps=len(s_pre),
            preemptions=self.preemptions,
            peak_running=max(s_run) if s_run else 0,
            peak_pool_blocks_used=peak_used,
            peak_pool_fraction=peak_used / self.usable,
            completed=self.completed,
            finished_all=self.completed == n_req,
            requests=traces,
            ttft_steps=weighted_percentiles(self.ttft_counts.items()),
            itl_steps=weighted_percentiles(gap_counts.items()),
            series=StepSeries(
                prefill_tokens=tuple(s_pre),
                decode_requests=tuple(s_dec),
                kv_tokens_read=tuple(s_kv),
                running=tuple(s_run),
                waiting=tuple(s_wait),
                pool_blocks_used=tuple(s_used),
                preemptions=tuple(s_preempt),
                single_step_tokens=tuple(s_ones),
            ),
            long_itl_gaps=tuple(self.long_gaps),
        )


def simulate(config: SimConfig, traffic: RequestsIn, *, check: bool = False) -> SimResult:
    """Run the scheduler loop until every request has finished (or ``config.max_steps``).

    ``traffic`` is a :class:`~vmemplan.sim.traffic.Traffic` or a sequence of
    :class:`~vmemplan.sim.traffic.RequestSpec`.  ``check=True`` tracks real block ids and asserts
    the invariants every step (slower; for tests).

    Raises :class:`~vmemplan.core.errors.UsageError` when a request could never run: its largest
    footprint, ``ceil((prompt + output - 1) / block_size) + fixed`` blocks (the last sampled token
    never needs a slot), exceeds the usable pool -- vLLM refuses to start in that case.
    """
    specs = _requests_of(traffic)
    _check_fits(specs, config)
    run = _Run(config, specs, check)
    t = 0
    while t < config.max_steps:
        run.arrivals(t)
        if not run.running and not run.waiting:
            if run.ai >= run.n_req:
                break
            t = run.idle_until_next_arrival(t)
            continue
        run.step(t)
        t += 1
        if run.completed == run.n_req:
            break
    if check and run.completed == run.n_req:
        run.check_end()
    return run.result()
