"""Issue 15: flag values that are hostile are usage errors (exit 2) that do no unbounded work,
echo no more than a few hundred characters back, and whose default hint names the command."""

from __future__ import annotations

import itertools
import tracemalloc

import pytest

from tests.hostile.conftest import check_contract, cli
from vmemplan.sweep import Steps, iter_grid, parse_vary


def test_a_million_value_range_is_not_built_up_front():
    # a lazy range: parsing it and walking the grid's first points allocates a few KiB, not ~200 MB
    tracemalloc.start()
    try:
        vary = parse_vary("gpu-memory-utilization=0.000001:1:0.000001", max_points=10**6)
        other = parse_vary("max-model-len=1024:2048:1024")
        grid = iter_grid([vary, other], max_points=2 * 10**6)
        first = list(itertools.islice(grid, 1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(vary.values, Steps) and len(vary.values) == 10**6
    assert first[:3] == [{"gpu_memory_utilization": 0.000001, "max_model_len": 1024},
                         {"gpu_memory_utilization": 0.000001, "max_model_len": 2048},
                         {"gpu_memory_utilization": 0.000002, "max_model_len": 1024}]
    assert peak < 8 << 20, peak
    assert vary.values[-1] == 1.0 and vary.values[1:3] == (0.000002, 0.000003)


def test_a_range_step_too_small_to_tell_floats_apart():
    check_contract(cli("sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary",
                       "gpu-memory-utilization=0.9:0.9000000000000000000001:0.0000000000000000000001"), 2)


@pytest.mark.parametrize("args,command", [
    (["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", "util=0.9", "--vary", "util=0.8"], "sweep"),
    (["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--speculative-config", '{"method": "ngram"}'], "size"),
])
def test_the_default_hint_names_the_command(args, command):
    run = cli(*args)
    check_contract(run, 2)
    assert "COMMAND" not in run.stderr and f"vmemplan {command} --help" in run.stderr, run.stderr


def test_an_echoed_value_is_capped():
    run = cli("sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", "util=0.9", "--vary", "x" * 5000)
    check_contract(run, 2)
    assert "x" * 201 not in run.stderr and "…" in run.stderr, run.stderr
