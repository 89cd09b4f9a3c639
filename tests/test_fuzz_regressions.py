"""Every input the fuzzers (tests/fuzz, slow) ever broke vmemplan with, as a fast regular test.

The property is the fuzzers' one: an input either works or raises a
:class:`~vmemplan.core.errors.VmemplanError` -- never another exception, which would reach a user as
a traceback (exit 1).  Rows whose bug is not fixed yet are strict xfails naming the module that
must change; when it is fixed the row XPASSes, which fails: set ``fixed=True`` on the row in
``tests/fuzz/_harness.py`` (the fuzzers then stop tolerating it).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

from _harness import (  # noqa: E402
    BAD_VALUES, CONFIG_BUGS, KNOWN_BUGS, MODELS_DIR, OTHER_BUGS, Bug, explain_log_bytes, plan_config, plan_flags,
    raising_site,
)

from vmemplan.core.errors import UsageError, VmemplanError  # noqa: E402


def _mutated(bug: Bug) -> dict[str, Any]:
    config = json.loads((MODELS_DIR / bug.model_file).read_text(encoding="utf-8"))
    target = config if bug.where is None else config[bug.where]
    target[bug.key] = copy.deepcopy(BAD_VALUES[bug.bad])
    return config


def _plans_or_raises_vmemplan_error(call: Any) -> None:
    try:
        call()
    except VmemplanError:
        pass
    except Exception as error:  # noqa: BLE001 - the property under test
        raise AssertionError(f"{type(error).__name__} at {raising_site(error)}: {error}") from error


def _row(bug: Bug) -> Any:
    marks = [] if bug.fixed else [pytest.mark.xfail(strict=True, reason=f"{bug.exc} at {bug.site}: fix there")]
    ident = f"{bug.model_file.removesuffix('.json')}-{bug.where + '.' if bug.where else ''}{bug.key}={bug.bad}"
    return pytest.param(bug, marks=marks, id=ident)


@pytest.mark.parametrize("bug", [_row(b) for b in CONFIG_BUGS])
def test_config_bug_regression(bug: Bug) -> None:
    _plans_or_raises_vmemplan_error(lambda: plan_config(_mutated(bug)))


def test_config_bug_rows_still_reach_their_site() -> None:
    # a row whose input no longer fails at all, or fails elsewhere, is stale: say which
    stale = []
    for bug in CONFIG_BUGS:
        if bug.fixed:
            continue
        try:
            plan_config(_mutated(bug))
            stale.append(f"{bug}: now plans")
        except VmemplanError:
            stale.append(f"{bug}: now a VmemplanError (fixed: set fixed=True)")
        except Exception as error:  # noqa: BLE001
            if (type(error).__name__, raising_site(error)) != (bug.exc, bug.site):
                stale.append(f"{bug}: now {type(error).__name__} at {raising_site(error)}")
    if stale:
        pytest.xfail("stale rows (adapters changed under them):\n" + "\n".join(stale))


def test_every_tolerated_bug_has_a_regression_test() -> None:
    names = {name for name in globals() if name.startswith("test_")}
    assert set(KNOWN_BUGS.values()) <= names


@pytest.mark.parametrize("flags", [{"max_model_len": 0}, {"kv_cache_memory": -1}, {"dtype": 5},
                                   {"gpu_memory_utilisation": 0.9}])
def test_api_bad_flag_value_is_a_usage_error(flags: dict[str, Any]) -> None:
    # the CLI turns this into exit 2 (reports_errors); the API should raise UsageError itself
    with pytest.raises(UsageError):
        plan_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", **flags)


def test_negative_rope_factor_is_a_config_error() -> None:
    config = json.loads((MODELS_DIR / "meta-llama--Llama-3.1-8B.json").read_text(encoding="utf-8"))
    config["rope_scaling"] = {"rope_type": "yarn", "factor": -1}
    _plans_or_raises_vmemplan_error(lambda: plan_config(config))


def test_absurd_layer_count_is_rejected_before_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    config = json.loads((MODELS_DIR / "meta-llama--Llama-3.1-8B.json").read_text(encoding="utf-8"))
    # 10**6 layers would walk every layer; the config check must refuse it before any law runs
    # (bounded work, not a clock: nothing may price a tensor)
    config["num_hidden_layers"] = 10**6
    from vmemplan import pipeline

    def _must_not_run(*_a: object, **_k: object) -> None:
        raise AssertionError("the weights law ran on an absurd layer count")

    monkeypatch.setattr(pipeline, "weight_bytes_per_rank", _must_not_run)
    with pytest.raises(VmemplanError, match="num_hidden_layers"):
        plan_config(config)


@pytest.mark.parametrize("data", [
    b"", b"\x00" * 100, b"\xff\xfe" + "x".encode("utf-16-le"), bytes(range(256)) * 16,
    b"INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: 99999999999999999999999 tokens\n",
    b"INFO 01-01 00:00:00 [api_server.py:1] non-default args: {" + b"'a': [" * 5000 + b"\n",
], ids=["empty", "nuls", "utf16-bom", "all-bytes", "huge-number", "deep-args"])
def test_log_edge_cases(data: bytes) -> None:
    _plans_or_raises_vmemplan_error(lambda: explain_log_bytes(data))


def test_other_bugs_are_named() -> None:
    assert all(site.startswith("vmemplan/") for _exc, site in OTHER_BUGS)
