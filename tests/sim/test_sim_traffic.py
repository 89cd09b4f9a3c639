from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.sim.traffic import (
    AllAtOnce,
    Constant,
    Exponential,
    LogNormal,
    Normal,
    Rate,
    RequestSpec,
    Traffic,
    Uniform,
    parse_arrival,
    parse_dist,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1000", Constant(1000)),
        (" 500:3000 ", Uniform(500, 3000)),
        ("7:7", Uniform(7, 7)),
        ("normal:1000:200", Normal(1000.0, 200.0)),
        ("normal:1000:200:1500", Normal(1000.0, 200.0, 1500)),
        ("lognormal:1200:0.8", LogNormal(1200.0, 0.8)),
        ("LogNormal:1200:0.8:9000", LogNormal(1200.0, 0.8, 9000)),
        ("exponential:300", Exponential(300.0)),
        ("exponential:300:2000", Exponential(300.0, 2000)),
    ],
)
def test_parse_dist_forms(text, expected):
    assert parse_dist(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "abc", "0", "-5", "3000:500", "1:2:3", "normal:100", "lognormal:1:2:3:4", "exponential", "1.5",
     "lognormal:100:x", "normal:-1:5", "uniform:1:2", "lognormal:100:50", "nan:5"],
)
def test_parse_dist_rejects_with_hint(text):
    with pytest.raises(UsageError) as info:
        parse_dist(text)
    assert info.value.hint and "LO:HI" in info.value.hint


def test_dist_str_round_trips():
    for text in ["1000", "500:3000", "normal:1000:200", "lognormal:1200:0.8:9000", "exponential:300"]:
        assert str(parse_dist(text)) == text
        assert parse_dist(str(parse_dist(text))) == parse_dist(text)


def test_parse_arrival():
    assert parse_arrival("all-at-once") == AllAtOnce()
    assert parse_arrival("poisson:0.5") == Rate(0.5, "poisson")
    assert parse_arrival("uniform:2") == Rate(2.0, "uniform")
    for bad in ["", "poisson", "poisson:0", "poisson:-1", "poisson:x", "gamma:1", "uniform:inf"]:
        with pytest.raises(UsageError) as info:
            parse_arrival(bad)
        assert info.value.hint


def test_traffic_is_reproducible_and_in_range():
    t = Traffic(500, "500:3000", "150:400", seed=7)
    a = t.generate()
    assert a == t.generate()
    assert a != Traffic(500, "500:3000", "150:400", seed=8).generate()
    assert len(a) == 500
    assert all(500 <= r.prompt_tokens <= 3000 and 150 <= r.output_tokens <= 400 for r in a)
    assert all(r.arrival_step == 0 for r in a)
    # both ends of the inclusive range are reachable
    small = Traffic(400, "1:3", "1:2", seed=1).generate()
    assert {r.prompt_tokens for r in small} == {1, 2, 3}
    assert {r.output_tokens for r in small} == {1, 2}


def test_arrival_process_does_not_change_lengths():
    burst = Traffic(50, "100:900", "10:90", "all-at-once", seed=3).generate()
    paced = Traffic(50, "100:900", "10:90", "poisson:0.25", seed=3).generate()
    assert [(r.prompt_tokens, r.output_tokens) for r in burst] == [(r.prompt_tokens, r.output_tokens) for r in paced]


def test_uniform_arrivals_are_evenly_spaced():
    # rate 0.5 per step: request i arrives at floor(i / 0.5) = 2 i
    reqs = Traffic(5, "10", "5", "uniform:0.5").generate()
    assert [r.arrival_step for r in reqs] == [0, 2, 4, 6, 8]
    # rate 3 per step: floor(i / 3) -> 0,0,0,1,1,1,2
    reqs = Traffic(7, "10", "5", "uniform:3").generate()
    assert [r.arrival_step for r in reqs] == [0, 0, 0, 1, 1, 1, 2]


def test_poisson_arrivals_have_the_requested_rate():
    reqs = Traffic(4000, "10", "5", Rate(0.5, "poisson"), seed=11).generate()
    steps = [r.arrival_step for r in reqs]
    assert steps == sorted(steps) and steps[0] == 0
    # 4000 arrivals at 0.5 per step span about 8000 steps (mean gap 2 steps; sd of the sum ~ 2*sqrt(4000) = 126)
    assert 7500 < steps[-1] < 8500


def test_random_distributions_have_their_means():
    import random

    rng = random.Random(5)
    ln = [LogNormal(1200.0, 0.8).sample(rng) for _ in range(20000)]
    assert abs(statistics.fmean(ln) - 1200) < 40  # sd of the mean ~ 1200*sqrt(e^0.64-1)/sqrt(20000) = 7.9
    ex = [Exponential(300.0).sample(rng) for _ in range(20000)]
    assert abs(statistics.fmean(ex) - 300) < 10
    no = [Normal(1000.0, 100.0).sample(rng) for _ in range(20000)]
    assert abs(statistics.fmean(no) - 1000) < 5
    assert min(Normal(5.0, 100.0).sample(rng) for _ in range(2000)) == 1  # clipped at 1 token


@given(st.sampled_from(["1000", "500:3000", "normal:300:200", "lognormal:800:1.2:5000", "exponential:50:400"]),
       st.integers(0, 10_000))
@settings(max_examples=60, deadline=None)
def test_samples_are_positive_and_respect_max(text, seed):
    import random

    d = parse_dist(text)
    rng = random.Random(seed)
    for _ in range(50):
        v = d.sample(rng)
        assert isinstance(v, int) and v >= 1
        if d.max_tokens is not None:
            assert v <= d.max_tokens


def test_traffic_rejects_bad_count():
    with pytest.raises(UsageError):
        Traffic(0, "10", "10")
    with pytest.raises(UsageError):
        Traffic(5, "10", "oops")
    assert isinstance(Traffic(1, "10", "10").generate()[0], RequestSpec)
    assert Traffic(3, "10", "10", 0.5).arrival == Rate(0.5, "poisson")
    with pytest.raises(UsageError):
        Traffic(3, "10", "10", -1.0)
    with pytest.raises(UsageError):
        Traffic(3, "10", "10", None)  # type: ignore[arg-type]
    assert math.isfinite(Rate(1.0).requests_per_step)
