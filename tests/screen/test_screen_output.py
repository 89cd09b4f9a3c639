"""The operator's screen (issue 14): the verdict where the eye lands, nothing cut off, and the
same text in a pipe at a fixed 100 columns.

Golden files hold the text at 80 columns (a terminal) and in a pipe (no COLUMNS: 100).
"""

from __future__ import annotations

import json
import re

import pytest
from rich.cells import cell_len

from vmemplan.cli import app

SIZE_8B = ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92"]
SIZE_70B_L4 = ["size", "meta-llama/Llama-3.1-70B", "--gpu", "l4", "--max-model-len", "8192"]


@pytest.fixture(params=["80", "pipe"])
def width(request, monkeypatch):
    """80: a terminal of 80 columns (COLUMNS=80); pipe: no COLUMNS, stdout not a terminal."""
    if request.param == "pipe":
        monkeypatch.delenv("COLUMNS", raising=False)
        return request.param, 100
    monkeypatch.setenv("COLUMNS", "80")
    return request.param, 80


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def _assert_fits(text: str, columns: int) -> None:
    for line in _lines(text):
        assert cell_len(line) <= columns, f"wider than {columns}: {line!r}"


@pytest.mark.parametrize(("name", "args"), [("size_8b_h100", SIZE_8B), ("size_70b_l4", SIZE_70B_L4)])
@pytest.mark.parametrize("fmt", ["table", "tree"])
def test_size_verdict_first_and_last_and_fits(name, args, fmt, width, runner, golden):
    label, columns = width
    result = runner.invoke(app, [*args, "--format", fmt])
    assert result.exit_code in (0, 3), result.output
    verdict = runner.invoke(app, [*args, "--quiet"]).stdout.strip()
    assert verdict.startswith(("✔ vLLM starts", "✘ vLLM would not start"))
    words = " ".join(result.stdout.split())
    assert words.startswith(verdict) and words.endswith(verdict)  # first and last (wrapped at words)
    _assert_fits(result.stdout, columns)
    golden(result.stdout, f"screen/{name}.{fmt}.{label}.txt")


def test_verdict_names_tokens_concurrency_and_binding_limit(runner):
    result = runner.invoke(app, [*SIZE_8B, "--quiet"])
    assert result.exit_code == 0
    assert result.stdout == ("✔ vLLM starts: 453,168 KV tokens; 3 × 131,072-token requests fit; "
                             "KV cache binds\n")
    # 453,168 tokens = 28,323 blocks × 16; 131,072 tokens = 8,192 blocks: 28,322 usable // 8,192 = 3
    result = runner.invoke(app, [*SIZE_8B, "--max-model-len", "4096", "--max-num-seqs", "64", "--quiet"])
    assert result.stdout.endswith("64 × 4,096-token requests fit; --max-num-seqs 64 binds\n")


def test_quiet_prints_only_the_verdict_line(runner):
    result = runner.invoke(app, [*SIZE_70B_L4, "--quiet"])
    assert result.exit_code == 3
    assert result.stdout.count("\n") == 1
    assert result.stdout.startswith("✘ vLLM would not start: the weights (131.45 GiB per rank)")
    assert result.stderr == ""


def test_quiet_still_reports_a_failed_gate(runner):
    result = runner.invoke(app, [*SIZE_8B, "--quiet", "--min-kv-tokens", "500000"])
    assert result.exit_code == 3
    assert result.stdout.count("\n") == 1
    assert "--min-kv-tokens 500,000" in result.stderr


def test_gpus_table_keeps_every_id_whole(width, runner, golden):
    from vmemplan.registry import load_registry

    label, columns = width
    result = runner.invoke(app, ["gpus"])
    assert result.exit_code == 0
    _assert_fits(result.stdout, columns)
    first_cells = [line.split("│")[1].strip() for line in _lines(result.stdout) if line.startswith("│")]
    ids = [g.id for g in load_registry().gpus]
    assert [c for c in first_cells if c] == ids  # the id column first, each id whole, in order
    golden(result.stdout, f"screen/gpus.{label}.txt")


def test_sweep_table_never_cuts_a_figure(width, runner, golden):
    label, columns = width
    args = ["sweep", "meta-llama/Llama-3.1-70B", "--vary", "gpu=l40s,a100-80g,h100", "--vary", "tp=1,2,4,8",
            "--solve", "--min-concurrency", "64", "--request-tokens", "4000"]
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    _assert_fits(table.stdout, columns)
    data = json.loads(runner.invoke(app, [*args, "--format", "json"]).stdout)
    for p in data["points"]:
        assert f"{p['kv_cache_tokens']:,}" in table.stdout
        assert f"{p['concurrency_at_request_tokens']:,}" in table.stdout
    assert "…" not in table.stdout
    golden(table.stdout, f"screen/sweep_solve.{label}.txt")


def test_models_lists_aliases_and_family_and_hides_internal_entries(runner):
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0
    out = result.stdout
    rows = "\n".join(line for line in out.splitlines() if line.startswith("│"))
    for internal in ("aiconfigurator-trimmed", "unknown/", "GGUF", "mlx-community/"):
        assert internal not in rows
    assert "= meta-llama/Meta-Llama-3.1-8B-Instruct" in out  # an alias, under its model
    assert re.search(r"meta-llama/Llama-3\.1-8B\s+│ dense", out)  # the family module that plans it
    assert "microsoft/phi-4" in out  # a GGUF entry stands under its alias
    # bundled configs whose architecture `size` refuses are not offered as models to type
    for unplanned in ("MiniMaxAI/MiniMax-M1", "tiiuae/Falcon-H1-0.5B"):
        assert unplanned not in rows
    assert "does not plan yet left out" in out
    everything = runner.invoke(app, ["models", "--all"]).stdout
    for internal in ("aiconfigurator-trimmed", "unknown/", "GGUF", "mlx-community/", "MiniMaxAI/MiniMax-M1"):
        assert internal in everything
    assert "not planned yet" in everything


def test_no_color_chart_legend_has_distinct_glyphs(runner):
    result = runner.invoke(app, ["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92",
                                 "--max-num-seqs", "16"])
    assert result.exit_code == 0, result.output
    legend = [line for line in result.stdout.splitlines() if "capped by --max-num-seqs" in line][0]
    seqs_glyph = legend.split("capped by --max-num-seqs")[0].strip()[-1]
    pool_glyph = legend.split("capped by the KV pool")[0].strip()[-1]
    assert seqs_glyph != pool_glyph
    # and the bars use the legend's glyphs
    assert seqs_glyph in result.stdout and pool_glyph * 3 in result.stdout
