"""Synthetic traffic for the scheduler simulation: token-length distributions and arrivals.

Everything here is pure and deterministic: a :class:`Traffic` with the same seed always yields the
same requests.  Randomness comes from :class:`random.Random` (no numpy), so results do not depend
on an optional numerical library.

Text forms accepted by :func:`parse_dist` (all token counts are integers >= 1)::

    1000                     constant
    500:3000                 uniform, both ends included
    normal:MEAN:STD          normal, rounded, clipped to [1, MEAN + 6*STD]
    lognormal:MEAN:SIGMA     lognormal whose arithmetic mean is MEAN; SIGMA is the shape
                             (the sigma of the underlying normal); rounded, clipped to >= 1
    exponential:MEAN         exponential with that mean, rounded, clipped to >= 1

Any of the three random forms takes an optional ``:MAX`` suffix that clips the top.

Arrival forms accepted by :func:`parse_arrival` (the Python API; RATE per scheduler step)::

    all-at-once              every request arrives at step 0
    poisson:RATE             Poisson process, RATE requests per scheduler step on average
    uniform:RATE             evenly spaced, RATE requests per scheduler step

``--arrival-rate`` (:func:`parse_arrival_rate`) takes RATE in requests per **second**: ``2``,
``2/s``, ``poisson:2`` or ``uniform:2``; a ``/step`` suffix (``poisson:0.05/step``) keeps the
per-step unit.  A per-second rate becomes a per-step one with the simulation's own step time
(:class:`PerSecond`, :func:`vmemplan.concurrency.simulate_arrivals`).
"""

from __future__ import annotations

import math
import random
from typing import Literal, Union

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = [
    "Constant",
    "Uniform",
    "Normal",
    "LogNormal",
    "Exponential",
    "Dist",
    "AllAtOnce",
    "Rate",
    "Arrival",
    "RequestSpec",
    "Traffic",
    "parse_dist",
    "parse_arrival",
    "parse_arrival_rate",
    "PerSecond",
]

_DIST_HINT = (
    "use N, LO:HI, normal:MEAN:STD, lognormal:MEAN:SIGMA or exponential:MEAN "
    "(random forms take an optional :MAX), e.g. 500:3000 or lognormal:1200:0.8"
)
_ARRIVAL_HINT = "use all-at-once, poisson:RATE or uniform:RATE (RATE in requests per scheduler step)"


def _clip(value: float, lo: int, hi: int | None) -> int:
    n = int(round(value))
    if n < lo:
        n = lo
    if hi is not None and n > hi:
        n = hi
    return n



def _with_cap(text: str, cap: int | None) -> str:
    """A distribution's spec text, ``:CAP`` appended when it has a cap."""
    return f"{text}:{cap}" if cap is not None else text


@frozen
class Constant:
    """Every request gets ``tokens``."""

    tokens: int

    def sample(self, rng: random.Random) -> int:
        return self.tokens

    @property
    def max_tokens(self) -> int:
        return self.tokens

    def __str__(self) -> str:
        return str(self.tokens)


@frozen
class Uniform:
    """Uniform over the integers ``lo_tokens .. hi_tokens`` (both included)."""

    lo_tokens: int
    hi_tokens: int

    def sample(self, rng: random.Random) -> int:
        return rng.randint(self.lo_tokens, self.hi_tokens)

    @property
    def max_tokens(self) -> int:
        return self.hi_tokens

    def __str__(self) -> str:
        return f"{self.lo_tokens}:{self.hi_tokens}"


@frozen
class Normal:
    """Normal(mean, std), rounded, clipped to ``[1, max_tokens]``.

    Without an explicit cap the top is clipped at mean + 6 std so the largest possible request is
    known before sampling (the simulator checks every request fits the pool).
    """

    mean_tokens: float
    std_tokens: float
    cap_tokens: int | None = None

    def sample(self, rng: random.Random) -> int:
        return _clip(rng.gauss(self.mean_tokens, self.std_tokens), 1, self.max_tokens)

    @property
    def max_tokens(self) -> int:
        if self.cap_tokens is not None:
            return self.cap_tokens
        return max(1, int(math.ceil(self.mean_tokens + 6 * self.std_tokens)))

    def __str__(self) -> str:
        return _with_cap(f"normal:{self.mean_tokens:g}:{self.std_tokens:g}", self.cap_tokens)


@frozen
class LogNormal:
    """Lognormal with arithmetic mean ``mean_tokens`` and shape ``sigma``, rounded, >= 1.

    The underlying normal has mu = ln(mean) - sigma**2 / 2, so that E[X] = mean.
    """

    mean_tokens: float
    sigma: float
    cap_tokens: int | None = None

    def sample(self, rng: random.Random) -> int:
        mu = math.log(self.mean_tokens) - self.sigma * self.sigma / 2
        return _clip(rng.lognormvariate(mu, self.sigma), 1, self.cap_tokens)

    @property
    def max_tokens(self) -> int | None:
        return self.cap_tokens

    def __str__(self) -> str:
        return _with_cap(f"lognormal:{self.mean_tokens:g}:{self.sigma:g}", self.cap_tokens)


@frozen
class Exponential:
    """Exponential with mean ``mean_tokens``, rounded, >= 1."""

    mean_tokens: float
    cap_tokens: int | None = None

    def sample(self, rng: random.Random) -> int:
        return _clip(rng.expovariate(1.0 / self.mean_tokens), 1, self.cap_tokens)

    @property
    def max_tokens(self) -> int | None:
        return self.cap_tokens

    def __str__(self) -> str:
        return _with_cap(f"exponential:{self.mean_tokens:g}", self.cap_tokens)


Dist = Union[Constant, Uniform, Normal, LogNormal, Exponential]


def _num(text: str, what: str, whole: str, *, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise UsageError(f"bad token distribution {whole!r}: {what} {text!r} is not a number", hint=_DIST_HINT) from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"bad token distribution {whole!r}: {what} must be positive", hint=_DIST_HINT)
    return value


def parse_dist(text: str) -> Dist:
    """Parse a token-count distribution from its text form (see the module docstring).

    Raises :class:`~vmemplan.core.errors.UsageError` with a hint on anything it cannot read.
    """
    whole = str(text)
    s = whole.strip().lower()
    if not s:
        raise UsageError("empty token distribution", hint=_DIST_HINT)
    parts = s.split(":")
    kind = parts[0]
    if kind in ("normal", "lognormal", "exponential"):
        needed = 2 if kind == "exponential" else 3
        if len(parts) not in (needed, needed + 1):
            raise UsageError(f"bad token distribution {whole!r}: wrong number of fields for {kind}", hint=_DIST_HINT)
        cap = int(_num(parts[needed], "MAX", whole, integer=True)) if len(parts) == needed + 1 else None
        mean = _num(parts[1], "MEAN", whole)
        if kind == "exponential":
            return Exponential(mean, cap)
        spread = _num(parts[2], "STD" if kind == "normal" else "SIGMA", whole)
        if kind == "lognormal" and spread > 5:
            raise UsageError(f"bad token distribution {whole!r}: SIGMA {spread:g} is far too wide", hint=_DIST_HINT)
        return Normal(mean, spread, cap) if kind == "normal" else LogNormal(mean, spread, cap)
    if len(parts) == 1:
        return Constant(int(_num(parts[0], "token count", whole, integer=True)))
    if len(parts) == 2:
        lo = int(_num(parts[0], "LO", whole, integer=True))
        hi = int(_num(parts[1], "HI", whole, integer=True))
        if lo > hi:
            raise UsageError(f"bad token distribution {whole!r}: LO {lo} is above HI {hi}", hint=_DIST_HINT)
        return Uniform(lo, hi)
    raise UsageError(f"bad token distribution {whole!r}", hint=_DIST_HINT)


@frozen
class AllAtOnce:
    """Every request arrives at step 0."""

    def __str__(self) -> str:
        return "all-at-once"


@frozen
class Rate:
    """``requests_per_step`` arrivals per scheduler step, as a Poisson process or evenly spaced."""

    requests_per_step: float
    process: Literal["poisson", "uniform"] = "poisson"

    def __str__(self) -> str:
        return f"{self.process}:{self.requests_per_step:g}"


Arrival = Union[AllAtOnce, Rate]


@frozen
class PerSecond:
    """``requests_per_s`` arrivals per second: the simulation runs in steps, so it becomes a
    :class:`Rate` through a step time (:meth:`per_step`)."""

    requests_per_s: float
    process: Literal["poisson", "uniform"] = "poisson"

    def per_step(self, step_s: float) -> Rate:
        """The same arrivals per scheduler step of ``step_s`` seconds."""
        return Rate(self.requests_per_s * step_s, self.process)

    def __str__(self) -> str:
        return f"{self.process}:{self.requests_per_s:g}/s"


_RATE_HINT = ("use all-at-once, a rate in requests per second (2, 2/s, poisson:2, uniform:2), "
              "or per scheduler step with /step (poisson:0.05/step)")


def parse_arrival_rate(text: str) -> AllAtOnce | Rate | PerSecond:
    """``--arrival-rate``: all-at-once, ``RATE[/s]``, ``poisson:RATE[/s]``, ``uniform:RATE[/s]``
    (requests per second), or any of them with ``/step`` (requests per scheduler step)."""
    whole = str(text)
    s = whole.strip().lower().replace(" ", "")
    if s in ("all-at-once", "all", "burst", "at-once"):
        return AllAtOnce()
    process, _, rest = s.rpartition(":")
    if process not in ("", "poisson", "uniform"):
        raise UsageError(f"--arrival-rate {whole!r}: unknown process {process!r}", hint=_RATE_HINT)
    unit = "s"
    for suffix, u in (("/step", "step"), ("/s", "s"), ("/sec", "s")):
        if rest.endswith(suffix):
            rest, unit = rest[: -len(suffix)], u
            break
    try:
        rate = float(rest)
    except ValueError:
        raise UsageError(f"--arrival-rate {whole!r}: {rest!r} is not a number", hint=_RATE_HINT) from None
    if not math.isfinite(rate) or rate <= 0:
        raise UsageError(f"--arrival-rate {whole!r}: the rate must be positive", hint=_RATE_HINT)
    kind: Literal["poisson", "uniform"] = "uniform" if process == "uniform" else "poisson"
    return Rate(rate, kind) if unit == "step" else PerSecond(rate, kind)


def parse_arrival(text: str) -> Arrival:
    """Parse ``all-at-once``, ``poisson:RATE`` or ``uniform:RATE`` (RATE > 0, per step)."""
    whole = str(text)
    s = whole.strip().lower()
    if s in ("all-at-once", "all", "burst", "at-once"):
        return AllAtOnce()
    parts = s.split(":")
    if len(parts) == 2 and parts[0] in ("poisson", "uniform"):
        try:
            rate = float(parts[1])
        except ValueError:
            raise UsageError(f"bad arrival {whole!r}: RATE {parts[1]!r} is not a number", hint=_ARRIVAL_HINT) from None
        if not math.isfinite(rate) or rate <= 0:
            raise UsageError(f"bad arrival {whole!r}: RATE must be positive", hint=_ARRIVAL_HINT)
        return Rate(rate, parts[0])  # type: ignore[arg-type]
    raise UsageError(f"bad arrival {whole!r}", hint=_ARRIVAL_HINT)


@frozen
class RequestSpec:
    """One request: the step it arrives at, its prompt length and how many tokens it will generate."""

    arrival_step: int
    prompt_tokens: int
    output_tokens: int


@frozen
class Traffic:
    """A reproducible batch of requests.

    ``arrival`` is an :class:`AllAtOnce`, a :class:`Rate`, its text form (see :func:`parse_arrival`),
    or a bare number meaning a Poisson rate in requests per step;
    ``prompt_tokens`` / ``output_tokens`` are :data:`Dist` values or their text forms.
    """

    num_requests: int
    prompt_tokens: Dist
    output_tokens: Dist
    arrival: Arrival = AllAtOnce()
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.prompt_tokens, str):
            object.__setattr__(self, "prompt_tokens", parse_dist(self.prompt_tokens))
        if isinstance(self.output_tokens, str):
            object.__setattr__(self, "output_tokens", parse_dist(self.output_tokens))
        if isinstance(self.arrival, str):
            object.__setattr__(self, "arrival", parse_arrival(self.arrival))
        elif isinstance(self.arrival, (int, float)) and not isinstance(self.arrival, bool):
            rate = float(self.arrival)
            if not math.isfinite(rate) or rate <= 0:
                raise UsageError(f"arrival rate must be positive, not {self.arrival!r}", hint=_ARRIVAL_HINT)
            object.__setattr__(self, "arrival", Rate(rate, "poisson"))
        if not isinstance(self.arrival, (AllAtOnce, Rate)):
            raise UsageError(f"bad arrival {self.arrival!r}", hint=_ARRIVAL_HINT)
        if not isinstance(self.prompt_tokens, (Constant, Uniform, Normal, LogNormal, Exponential)) or not isinstance(
            self.output_tokens, (Constant, Uniform, Normal, LogNormal, Exponential)
        ):
            raise UsageError("token lengths must be distributions or their text forms", hint=_DIST_HINT)
        if isinstance(self.num_requests, bool) or not isinstance(self.num_requests, int) or self.num_requests < 1:
            raise UsageError(f"number of requests must be a positive integer, not {self.num_requests!r}")

    def generate(self) -> tuple[RequestSpec, ...]:
        """The requests, in arrival order (ties keep generation order).

        One ``random.Random(seed)`` draws, per request, the prompt length then the output length;
        arrivals are drawn afterwards, so changing the arrival process does not change the lengths.
        Poisson arrivals: exponential gaps of mean 1/RATE steps, arrival step = floor(cumulative time).
        Uniform arrivals: request i arrives at step floor(i / RATE).
        """
        rng = random.Random(self.seed)
        lengths = [(self.prompt_tokens.sample(rng), self.output_tokens.sample(rng)) for _ in range(self.num_requests)]
        arrival = self.arrival
        if isinstance(arrival, AllAtOnce):
            steps = [0] * self.num_requests
        elif arrival.process == "uniform":
            steps = [int(math.floor(i / arrival.requests_per_step)) for i in range(self.num_requests)]
        else:
            clock = 0.0
            steps = []
            for _ in range(self.num_requests):
                steps.append(int(math.floor(clock)))
                clock += rng.expovariate(arrival.requests_per_step)
        return tuple(RequestSpec(s, p, o) for s, (p, o) in zip(steps, lengths))
