"""vmemplan against vLLM 0.33.0's own planning code, one case per committed fixture.

Each fixture in tests/fixtures/oracle/ is what vLLM 0.33.0 itself planned for one rank
(built on the meta device by ../shared/tools/vllm-oracle; how: bench/oracle/README.md).
This test needs only the JSON: never vLLM or the oracle's venv.

Two exact comparisons per fixture:

* ``test_weights``: the per-rank weight bytes before the CUDA allocator's rounding (the
  oracle's ``weights.total_bytes`` = parameters + buffers + other device tensors, after
  vLLM's ``process_weights_after_loading``, less ``aliased_views_bytes``, the views the
  meta-device oracle counts twice; vmemplan's ``WeightBreakdown.unrounded_bytes``).
* ``test_kv_pool``: for the fixture's available bytes, the pool's ``num_blocks``, the
  "GPU KV cache size" tokens and the maximum concurrency (to the 2 decimals vLLM prints).

A case that does not match today is listed in ``KNOWN_WEIGHT_GAPS`` / ``KNOWN_KV_GAPS``
with its cause (see bench/oracle/REPORT.md) and runs as ``xfail(strict=True)``: a fix
makes it pass, the strict xfail then fails, and the entry must be removed.  A fixture
where vLLM itself refused the case is skipped with vLLM's message.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

import vmemplan_side as side
from oracle_known_gaps import KNOWN_KV_GAPS, KNOWN_WEIGHT_GAPS


@lru_cache(maxsize=None)
def _vmemplan(path: Path) -> dict:
    return side.vmemplan_figures(side.load(path))


def _params(gaps: dict[str, str]) -> list:
    out = []
    for path in side.fixture_paths():
        marks = []
        if path.stem in gaps:
            marks.append(pytest.mark.xfail(strict=True, reason=gaps[path.stem]))
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


def _check(path: Path, keys: tuple[str, ...]) -> None:
    fx = side.load(path)
    if "error" in fx:
        pytest.skip(f"vLLM 0.33.0 itself refused this case: {fx['error'].splitlines()[0][:200]}")
    problems = side.mismatches(fx, _vmemplan(path), keys)
    assert not problems, "; ".join(problems)


def test_known_gaps_name_existing_fixtures() -> None:
    names = {p.stem for p in side.fixture_paths()}
    for table in (KNOWN_WEIGHT_GAPS, KNOWN_KV_GAPS):
        stale = sorted(set(table) - names)
        assert not stale, f"known-gap entries with no fixture: {stale}"


def test_fixtures_record_how_they_were_made() -> None:
    paths = side.fixture_paths()
    assert paths, "no oracle fixtures committed"
    for path in paths:
        fx = side.load(path)
        assert fx["command"].startswith("python <vllm-oracle>/oracle.py "), path.name
        assert (side.ROOT / fx["config"]).is_file(), path.name
        assert fx["config_provenance"], path.name
        if "oracle" in fx:
            o = fx["oracle"]
            assert o["vllm_version"] == "0.33.0", path.name
            assert f"--tp {o['tp']} " in fx["command"], path.name
            assert f"--available-bytes {o['available_bytes']} " in fx["command"], path.name


@pytest.mark.parametrize("path", _params(KNOWN_WEIGHT_GAPS))
def test_weights(path: Path) -> None:
    _check(path, side.WEIGHT_KEYS)


@pytest.mark.parametrize("path", _params(KNOWN_KV_GAPS))
def test_kv_pool(path: Path) -> None:
    _check(path, side.KV_KEYS)
