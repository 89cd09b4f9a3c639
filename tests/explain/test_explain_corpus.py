"""Every corpus log parses with every figure it contains, and every cross-check holds within the
log's rounding or its detail says why not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explain_expected_corpus import EXPECTED, EXPECTED_FAILED_CHECKS
from vmemplan.explain import explain, parse_log, read_log_bytes, report_to_json, split_corpus_header
from vmemplan.explain.parse import FIGURE_JSON_KEYS
from vmemplan.render.explain import render_text

LOG_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
LOGS = sorted(LOG_DIR.glob("*.log"))
GIB = 2**30


def _by_prefix(prefix: str) -> Path:
    return next(p for p in LOGS if p.name.startswith(prefix + "-"))


def _expected_value(name: str, value):
    # memory figures are written as the GiB text the log prints
    if isinstance(value, str) and name.endswith("_bytes"):
        return round(float(value) * GIB)
    return value


def _assert_figures(figs, expected: dict, where: str) -> None:
    for name, value in expected.items():
        got = getattr(figs, name)
        want = _expected_value(name, value)
        if isinstance(want, float):
            assert got == pytest.approx(want), f"{where}: {name}"
        else:
            assert got == want, f"{where}: {name}"


def test_every_corpus_log_has_an_expectation():
    prefixes = {p.name.split("-", 1)[0] for p in LOGS}
    assert len(LOGS) == 41
    assert prefixes == set(EXPECTED)


@pytest.mark.parametrize("prefix", sorted(EXPECTED))
def test_corpus_log_figures(prefix: str):
    exp = EXPECTED[prefix]
    startups = parse_log(read_log_bytes(_by_prefix(prefix).read_bytes()))
    assert len(startups) == 1
    s = startups[0]
    assert s.vllm_version == exp["version"]
    assert s.format == exp["format"]
    assert s.outcome == exp["outcome"]
    assert list(s.ranks) == exp["ranks"]
    if "model" in exp:
        assert s.model == exp["model"]
    _assert_figures(s.figures, exp["figures"], prefix)
    # a contract figure the log does not contain must be None
    for key in FIGURE_JSON_KEYS:
        if key not in exp["figures"]:
            assert getattr(s.figures, key) is None, f"{prefix}: {key} should be absent"
    for rank, figs in exp.get("per_rank", {}).items():
        _assert_figures(s.per_rank[rank], figs, f"{prefix} rank {rank}")


@pytest.mark.parametrize("prefix", sorted(EXPECTED))
def test_corpus_checks_hold_or_say_why(prefix: str):
    s = parse_log(read_log_bytes(_by_prefix(prefix).read_bytes()))[0]
    report = explain(s)
    failing = {c.name: c.detail for c in report.checks if not c.ok}
    expected_fail = EXPECTED_FAILED_CHECKS.get(prefix, {})
    assert set(failing) == set(expected_fail), failing
    for name, why in expected_fail.items():
        assert why in failing[name]
    for c in report.checks:
        assert c.detail and ("=" in c.detail or "x" in c.detail)


@pytest.mark.parametrize("path", LOGS, ids=[p.name[:3] for p in LOGS])
def test_corpus_json_contract_and_text(path: Path):
    startups = parse_log(read_log_bytes(path.read_bytes()))
    reports = [explain(s) for s in startups]
    doc = report_to_json(reports)
    json.dumps(doc)  # serialisable
    assert doc["schema_version"] == 1
    entry = doc["startups"][0]
    for key in ("vllm_version", "format", "model", "outcome", "error", "ranks", "figures", "checks", "lines",
                "what_if"):
        assert key in entry
    assert list(entry["figures"])[: len(FIGURE_JSON_KEYS)] == list(FIGURE_JSON_KEYS)
    assert entry["what_if"] == []
    assert entry["outcome"] in ("started", "failed")
    for ln in entry["lines"]:
        assert set(("number", "text", "explanation")) <= set(ln)
        assert ln["explanation"]
    for c in entry["checks"]:
        assert set(c) >= {"name", "ok", "detail"}
    if len(entry["ranks"]) > 1:
        assert set(entry["per_rank"]) == {str(r) for r in entry["ranks"]}
    text = render_text(reports)
    assert "Checks:" in text and "Suggestions:" in text


def test_corpus_header_split():
    header, body = split_corpus_header(_by_prefix("029").read_text())
    assert header["vllm_version"] == "0.10.2"
    assert header["flags"]["max_num_seqs"] == 1 if isinstance(header["flags"], dict) else True
    assert body.lstrip().startswith("(APIServer")
    # the parser skips the header but keeps file line numbers
    s = parse_log(_by_prefix("029").read_text())[0]
    text_lines = _by_prefix("029").read_text().split("\n")
    for ln in s.lines:
        assert text_lines[ln.number - 1].startswith(ln.text[:40])


def test_line_numbers_of_wrapped_records():
    # 001 keeps a terminal's line wrapping: the engine-config record spans 13 physical lines
    path = _by_prefix("001")
    s = parse_log(read_log_bytes(path.read_bytes()))[0]
    cfg = next(ln for ln in s.lines if ln.kind == "engine_config")
    raw = path.read_text().split("\n")
    assert raw[cfg.number - 1].startswith("(EngineCore_0 pid=1812)")
    assert "compilation_config" in cfg.text  # joined
    blocks = next(ln for ln in s.lines if ln.kind == "blocks")
    assert blocks.text.endswith("num_gpu_blocks is: 5867")


def test_failure_explanations():
    s8 = parse_log(_by_prefix("008").read_text())[0]
    assert "29000" in s8.error and "23648" in s8.error
    rep = explain(s8)
    sg = {x.name: x.detail for x in rep.suggestions}
    # 23,648 tokens is already a multiple of 16: 23648 / 16 = 1478 blocks
    assert "--max-model-len 23648" in sg["pool_smaller_than_one_request"]
    s13 = parse_log(_by_prefix("013").read_text())[0]
    assert s13.outcome == "failed" and "-2.14" in s13.error
    s12 = parse_log(_by_prefix("012").read_text())[0]
    assert s12.error.startswith("EngineCore failed to start")
    s56 = parse_log(_by_prefix("056").read_text())[0]
    assert s56.outcome == "failed" and "-1.05" in s56.error
