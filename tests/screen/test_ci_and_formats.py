"""CI-friendly behaviour and one output-format enum per command (issue 14, items 3 and 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vmemplan.cli import app

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("command", "choices"), [
    (["gpus"], "table, json"), (["models"], "table, json"),
    (["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"], "table, log, json, tree"),
    (["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100"], "table, json"),
    (["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", "util=0.8,0.9"], "table, csv, json"),
    (["explain-log", "-"], "table, json"),
])
def test_bad_format_is_a_usage_error_that_reads_well(command, choices, capsys):
    from vmemplan.cli import main

    with pytest.raises(SystemExit) as stop:
        main([*command, "--format", "yaml"])
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert err.splitlines()[0] == f"error: --format: 'yaml' is not one of {choices}"
    assert err.splitlines()[1].startswith("hint: see `vmemplan ")
    assert "Value error" not in err


@pytest.mark.parametrize("command", ["size", "concurrency", "sweep", "explain-log", "gpus", "models"])
def test_help_metavars_are_words(command, runner):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "<" not in result.stdout.replace("<=", ""), [line for line in result.stdout.splitlines() if "<" in line]


def test_dispatch_is_exhaustive():
    # every member of every command's enum has a branch: assert_never would be reached otherwise
    for name in ("size", "concurrency", "sweep", "registry_cmds"):
        source = (ROOT / "vmemplan" / "cli" / f"{name}.py").read_text(encoding="utf-8")
        assert "assert_never(output_format)" in source, name


def test_sweep_refuses_a_huge_range_with_its_count(runner):
    result = runner.invoke(app, ["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100",
                                 "--vary", "max-model-len=1:1000000:1"])
    assert result.exit_code == 2
    assert "1,000,000 values, more than --max-points 100,000" in result.stderr
    assert "--max-points 1000000" in result.stderr


def test_sweep_refuses_a_huge_grid_unless_max_points_allows_it(runner):
    args = ["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", "util=0.80,0.85,0.9",
            "--vary", "max-num-seqs=64,128", "--format", "csv"]
    refused = runner.invoke(app, [*args, "--max-points", "5"])
    assert refused.exit_code == 2
    assert "the grid has 6 points, more than --max-points 5" in refused.stderr
    allowed = runner.invoke(app, [*args, "--max-points", "6"])
    assert allowed.exit_code == 0
    assert len(allowed.stdout.splitlines()) == 7


_RSS = """
import contextlib, os, resource, sys
from vmemplan.cli import main
n = int(sys.argv[1])
with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
    try:
        main(["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", f"max-model-len=1000:{999 + n}:1",
              "--format", "csv"])
    except SystemExit as stop:
        assert not stop.code, stop.code
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak_rss_kib(points: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _RSS, str(points)], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def test_csv_sweep_streams_in_flat_memory():
    # ten times the points (each a new shape: max_model_len changes the graph's context) must not
    # grow the peak: rows are written as they are planned and the shape cache is bounded
    small, large = _peak_rss_kib(150), _peak_rss_kib(1500)
    assert large - small < 20 * 1024, (small, large)


def test_arrival_rate_is_in_requests_per_second():
    from vmemplan.sim.traffic import AllAtOnce, PerSecond, Rate, parse_arrival_rate

    assert parse_arrival_rate("2") == PerSecond(2.0, "poisson")
    assert parse_arrival_rate("uniform:0.5/s") == PerSecond(0.5, "uniform")
    assert parse_arrival_rate("poisson:0.05/step") == Rate(0.05, "poisson")
    assert parse_arrival_rate("all-at-once") == AllAtOnce()
    assert PerSecond(4.0).per_step(0.025) == Rate(0.1, "poisson")


def test_per_second_rate_converts_with_the_simulations_step_time():
    from vmemplan.api import plan_with_request, speed_setup
    from vmemplan.concurrency import sim_config_from_plan, simulate_arrivals
    from vmemplan.sim import Traffic, attach_timing
    from vmemplan.sim.traffic import PerSecond

    req, p = plan_with_request(model="meta-llama/Llama-3.1-8B", gpu="h100", max_model_len=8192)
    setup = speed_setup(req, p)
    cfg, _ = sim_config_from_plan(p)

    def specs(arrival):
        return Traffic(num_requests=40, prompt_tokens="1000", output_tokens="100", arrival=arrival,
                       seed=1).generate()

    run = simulate_arrivals(cfg, PerSecond(5.0), specs, lambda s: attach_timing(s, setup.model, setup.gpu,
                                                                                 setup.constants))
    busy = [t for t in run.timed.step_times_s if t > 0]
    mean = sum(busy) / len(busy)
    assert run.arrival.requests_per_step == pytest.approx(5.0 * run.step_s)
    assert run.step_s == pytest.approx(mean, rel=0.05) or run.rounds == 8  # converged on its own step time


def test_concurrency_cli_says_how_the_rate_was_converted(runner):
    result = runner.invoke(app, ["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--simulate",
                                 "--requests", "30", "--prompt-tokens", "1000", "--output-tokens", "100",
                                 "--arrival-rate", "5", "--max-model-len", "8192", "--format", "json"])
    assert result.exit_code == 0, result.output
    import json

    sim = json.loads(result.stdout)["simulation"]
    assert "poisson:5/s" in sim["traffic"]
    assert any("requests per scheduler step, at the simulation's mean step time" in n for n in sim["notes"])
