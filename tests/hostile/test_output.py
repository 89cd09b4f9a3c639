"""Issue 15: output that is always strict JSON, a bar that never overflows, a hint on every error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import check_contract, cli

#: corpus log 001 with its "Maximum concurrency … 5.73x" line changed to "1e400x"
LOG = Path(__file__).resolve().parent / "fixtures" / "infinite-concurrency.log"


def test_json_never_contains_infinity():
    assert "1e400x" in LOG.read_text()
    run = cli("explain-log", str(LOG), "--format", "json")
    assert "Infinity" not in run.stdout and "NaN" not in run.stdout
    check_contract(run, 4)


def test_json_dumps_refuses_non_finite_numbers():
    from vmemplan.core.errors import BadInput
    from vmemplan.render.json_out import dumps

    with pytest.raises(BadInput) as caught:
        dumps({"figures": [1, {"tokens": float("nan")}]})
    assert "$.figures[1].tokens" in caught.value.message and caught.value.hint
    assert "\\u009b" in dumps({"s": "a\x9b[2Jb"})


def test_table_bar_with_astronomical_activations():
    run = cli("size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-num-batched-tokens", str(10**30))
    assert run.code in (2, 3), run.stderr
    assert "Traceback" not in run.stderr and "bug" not in run.stderr


def test_memory_bar_integer_arithmetic():
    from vmemplan.render.table import _g

    assert _g(5 * 2**30) == "5.00"
    assert _g(10**950).endswith("e940")


def test_every_error_gets_a_hint(capsys):
    from vmemplan.cli._common import report

    for code in (2, 3, 4, 5, 6):
        report("something failed", None, code=code)
        err = capsys.readouterr().err
        assert err.count("error: ") == 1 and err.count("hint: ") == 1, err


def test_report_scrubs_and_sanitises(capsys, monkeypatch):
    from vmemplan.cli._common import report

    monkeypatch.setenv("HF_TOKEN", "hf_ENVtokenENVtoken")
    report("fetch http://bob:hf_PASSWORDpassword@hub.example/x failed \x1b]0;title\x07 with hf_ENVtokenENVtoken",
           "try \x1b[31mred\x1b[0m")
    err = capsys.readouterr().err
    assert "PASSWORD" not in err and "bob" not in err and "ENVtoken" not in err
    assert "\x1b" not in err and "\x07" not in err
