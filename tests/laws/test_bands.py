"""Error bands (vmemplan/laws/bands.py): groups, leave-one-log-out, the tri-state verdict, and the
band a plan carries through the pipeline."""

from __future__ import annotations

import json

import pytest

from vmemplan.laws.bands import (
    BandData,
    BandResidual,
    band_width,
    kv_band,
    outcome_for,
    parse_band_data,
)

GIB = 1 << 30


def _data(min_logs: int = 3) -> BandData:
    rows = [
        BandResidual("a", "e1", "dense", "0.11.0", +0.010),
        BandResidual("b", "e1", "dense", "0.11.0", -0.004),
        BandResidual("c", "e1", "dense", "0.11.0", +0.002),
        BandResidual("d", "e2", "dense", "0.10.0", -0.020),
        BandResidual("m", "e1", "moe", "0.11.0", +0.006),
    ]
    return BandData(tuple(rows), min_logs, 0.001, "test", "largest |residual|")


def test_group_level_uses_its_own_logs():
    w = band_width(_data(), era="e1", family="dense")
    assert (w.level, w.group, w.half_width_fraction) == ("era_family", "e1/dense", 0.010)


def test_leave_one_out_never_uses_the_log_itself():
    # without "a" the e1/dense group has 2 logs (< 3): the dense family over every era decides
    w = band_width(_data(), era="e1", family="dense", exclude_log="a")
    assert w.level == "family" and "a" not in w.logs
    assert w.half_width_fraction == 0.020


def test_small_family_falls_back_to_all_logs():
    w = band_width(_data(), era="e1", family="moe")
    assert w.level == "all" and w.half_width_fraction == 0.020


def test_floor_applies():
    data = BandData((BandResidual("x", "e", "dense", "", 0.0),) * 3, 3, 0.001, "t", "t")
    assert band_width(data, era="e", family="dense").half_width_fraction == 0.001


@pytest.mark.parametrize("low,high,expected", [(True, True, "starts"), (False, True, "may_not_start"),
                                               (False, False, "does_not_start")])
def test_outcome_tri_state(low, high, expected):
    assert outcome_for(low, high) == expected


def test_kv_band_ends_by_hand():
    """requested 80 GiB, half-width 1 % -> 0.8 GiB either side of 40 GiB; a pool law of 2 MiB blocks."""
    w = band_width(_data(), era="e1", family="dense")  # 1 %
    block = 2 << 20

    def resize(avail):
        blocks = max(avail, 0) // block
        return blocks, blocks * 16, blocks / 100, blocks >= 100, None

    b = kv_band(available_kv_cache_bytes=40 * GIB, requested_bytes=80 * GIB, width=w, resize=resize,
                central_starts=True)
    half = round(0.01 * 80 * GIB)
    assert b.half_width_bytes == half
    assert b.available_kv_cache_bytes_range == (40 * GIB - half, 40 * GIB + half)
    assert b.num_blocks_range == ((40 * GIB - half) // block, (40 * GIB + half) // block)
    assert b.tokens_range == (b.num_blocks_range[0] * 16, b.num_blocks_range[1] * 16)
    assert b.outcome == "starts"


def test_kv_band_straddling_line_may_not_start():
    w = band_width(_data(), era="e1", family="dense")
    b = kv_band(available_kv_cache_bytes=GIB, requested_bytes=80 * GIB, width=w,
                resize=lambda a: (0, 0, 0.0, a >= GIB, None), central_starts=True)
    assert b.outcome == "may_not_start"


def test_parse_rejects_bad_files():
    from vmemplan.core.errors import RegistryInvalid

    with pytest.raises(RegistryInvalid):
        parse_band_data({"schema_version": 1, "residuals": []})
    with pytest.raises(RegistryInvalid):
        parse_band_data({"schema_version": 1, "source": "s", "statistic": "s",
                         "residuals": [{"log": "a", "era": "e", "family": "dense", "residual_fraction": "x"}]})


def test_bundled_band_data_parses():
    from vmemplan.registry import load_registry

    data = load_registry().bands
    assert data is not None and len(data.residuals) >= 10
    assert all(abs(r.residual_fraction) < 0.05 for r in data.residuals)


def _size_json(runner, *args):
    from vmemplan.cli import app

    res = runner.invoke(app, ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_estimated_plan_carries_ranges(runner):
    d = _size_json(runner)
    pr, kv = d["per_rank"], d["kv_cache"]
    lo, hi = pr["available_kv_cache_bytes_range"]
    central = pr["available_kv_cache_bytes"]
    half = d["band"]["half_width_bytes"]
    assert (lo, hi) == (central - half, central + half)
    assert half == round(d["band"]["half_width_fraction_of_budget"] * pr["requested_memory_bytes"])
    assert kv["tokens_range"][0] <= kv["tokens"] <= kv["tokens_range"][1]
    assert kv["max_concurrency_range"][0] <= kv["max_concurrency"] <= kv["max_concurrency_range"][1]
    assert d["verdict"]["starts"] is True and d["verdict"]["outcome"] == "starts"


def test_exact_plan_has_no_band(runner):
    d = _size_json(runner, "--kv-cache-memory", "20G")
    assert "band" not in d
    assert "available_kv_cache_bytes_range" not in d["per_rank"]
    assert "tokens_range" not in d["kv_cache"]
    assert d["verdict"]["outcome"] == "starts"


def test_gate_on_low_reads_the_low_end(runner):
    from vmemplan.cli import app

    d = _size_json(runner)
    lo_tokens, central = d["kv_cache"]["tokens_range"][0], d["kv_cache"]["tokens"]
    assert lo_tokens < central
    between = (lo_tokens + central) // 2
    base = ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--min-kv-tokens", str(between)]
    assert runner.invoke(app, base).exit_code == 0
    res = runner.invoke(app, [*base, "--gate-on", "low"])
    assert res.exit_code == 3 and f"{lo_tokens:,}" in res.output


def test_sweep_target_gates_on_low_end():
    from vmemplan.sweep import SweepPoint, Target

    p = SweepPoint(values={}, weights_bytes=1, available_kv_cache_bytes=1, kv_cache_tokens=1000,
                   max_concurrency=1.0, starts=True, kv_cache_tokens_low=900, outcome="starts")
    assert Target(min_kv_tokens=950).met(p)
    assert not Target(min_kv_tokens=950, gate_on="low").met(p)
    assert Target(min_kv_tokens=900, gate_on="low").met(p)
    straddles = SweepPoint(values={}, weights_bytes=1, available_kv_cache_bytes=1, kv_cache_tokens=1000,
                           max_concurrency=1.0, starts=True, kv_cache_tokens_low=0, outcome="may_not_start")
    assert not Target(min_kv_tokens=1, gate_on="low").met(straddles)


def test_table_says_may_not_start_when_the_band_straddles(runner):
    """Llama-3.1-8B on an L4: a 34,000-token request needs 2,125 blocks; the central estimate has
    2,044 but the band's high end more, so vLLM may or may not start."""
    from vmemplan.cli import app

    res = runner.invoke(app, ["size", "meta-llama/Llama-3.1-8B", "--gpu", "l4", "--max-model-len", "34000",
                              "--no-color", "--format", "json"])
    d = json.loads(res.output[:res.output.rindex("}") + 1])
    lo, hi = d["kv_cache"]["num_blocks_range"]
    assert lo < 2125 <= hi and d["verdict"]["outcome"] == "may_not_start" and d["verdict"]["starts"] is False
    res = runner.invoke(app, ["size", "meta-llama/Llama-3.1-8B", "--gpu", "l4", "--max-model-len", "34000",
                              "--no-color"])
    assert "? vLLM may not start" in res.output and res.exit_code == 3


def test_every_pipeline_stage_carries_the_half_width(runner):
    from vmemplan.cli import app

    res = runner.invoke(app, ["size", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "-pp", "2", "--max-model-len",
                              "8192", "--format", "json"])
    d = json.loads(res.output)
    half = d["band"]["half_width_bytes"]
    for r in d["ranks"]:
        assert r["available_kv_cache_bytes_range"] == [r["available_kv_cache_bytes"] - half,
                                                       r["available_kv_cache_bytes"] + half]
    assert d["per_rank"]["available_kv_cache_bytes_range"] == min(r["available_kv_cache_bytes_range"]
                                                                  for r in d["ranks"])


# -- each estimated term's own band ------------------------------------------------------------


def _term_data() -> BandData:
    rows = [
        BandResidual("a", "e1", "dense", "0.11.0", +0.010, {"cuda_graph_bytes": -0.030}),
        BandResidual("b", "e1", "dense", "0.11.0", -0.004, {"cuda_graph_bytes": +0.005, "non_torch_bytes": 0.002}),
        BandResidual("c", "e1", "dense", "0.11.0", +0.002),
        BandResidual("d", "e2", "dense", "0.10.0", -0.020, {"activation_peak_bytes": -0.001}),
    ]
    return BandData(tuple(rows), 3, 0.001, "test", "largest |residual|")


def test_term_width_comes_from_the_logs_that_print_the_term():
    from vmemplan.laws.bands import term_band_width

    data = _term_data()
    # only a and b print the CUDA-graph memory: fewer than 3 in any group, so all of them decide
    w = term_band_width(data, "cuda_graph_bytes", era="e1", family="dense")
    assert (w.level, w.half_width_fraction, w.logs) == ("all", 0.030, ("a", "b"))
    # leave-one-log-out: without a, b alone
    assert term_band_width(data, "cuda_graph_bytes", era="e1", family="dense", exclude_log="a").half_width_fraction == 0.005
    # a term only d prints; a term no log prints has no band
    assert term_band_width(data, "activation_peak_bytes", era="e1", family="dense").half_width_fraction == 0.001
    data_without = BandData(data.residuals[2:3], 3, 0.001, "t", "s")
    assert term_band_width(data_without, "non_torch_bytes", era="e1", family="dense") is None


def test_term_bands_floor_the_low_end_at_zero():
    from vmemplan.laws.bands import term_bands

    bands = term_bands(_term_data(), {"cuda_graph_bytes": 1 * GIB, "non_torch_bytes": 3 * GIB},
                       era="e1", family="dense", requested_bytes=100 * GIB)
    by = {b.term: b for b in bands}
    assert by["cuda_graph_bytes"].half_width_bytes == 3 * GIB  # 0.030 x 100 GiB
    assert by["cuda_graph_bytes"].range_bytes == (0, 4 * GIB)
    half = round(0.002 * 100 * GIB)  # b's 0.2 % of the budget, rounded to a byte
    assert by["non_torch_bytes"].range_bytes == (3 * GIB - half, 3 * GIB + half)


def test_terms_parse_and_unknown_terms_are_refused():
    from vmemplan.core.errors import RegistryInvalid

    base = {"schema_version": 1, "source": "s", "statistic": "t",
            "residuals": [{"log": "a", "era": "e", "family": "dense", "residual_fraction": 0.01,
                           "terms": {"cuda_graph_bytes": -0.02}}]}
    assert parse_band_data(base).residuals[0].terms == {"cuda_graph_bytes": -0.02}
    bad = json.loads(json.dumps(base))
    bad["residuals"][0]["terms"] = {"weights_bytes": 0.1}
    with pytest.raises(RegistryInvalid):
        parse_band_data(bad)


def test_plan_json_carries_each_terms_range(capsys):
    """The shipped bands.yaml: every estimated term some corpus log prints has a ``<term>_range``
    beside it, ``estimate ± largest residual × budget`` (low end at least 0)."""
    from tests.request._cli import run
    from vmemplan.laws.bands import term_band_width
    from vmemplan.registry import load_registry

    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json"], capsys)
    d = json.loads(r.stdout)
    reg = load_registry()
    era = reg.cost_model.era_for(d["vllm_version"]).id
    requested = d["per_rank"]["requested_memory_bytes"]
    for term in ("activation_peak_bytes", "non_torch_bytes", "cuda_graph_bytes"):
        w = term_band_width(reg.bands, term, era=era, family="dense")
        half = int(round(w.half_width_fraction * requested))
        est = d["per_rank"][term]
        assert d["per_rank"][f"{term}_range"] == [max(0, est - half), est + half]
        assert any(p["figure"] == f"{term}.band" for p in d["provenance"])
