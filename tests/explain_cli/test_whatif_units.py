"""Unit tests of the what-if pieces: flag parsing, eager, KV dtype, and properties."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.explain import parse_log, read_log_bytes
from vmemplan.explain.whatif import parse_what_if, version_from_format, what_if
from vmemplan.registry import load_registry

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
GIB = 2**30
REG = load_registry()


def _startup(prefix: str):
    return parse_log(read_log_bytes(next(LOGS.glob(prefix + "-*.log")).read_bytes()))[0]


S007 = _startup("007")
S001 = _startup("001")


def test_parse_what_if_normalises_names():
    assert parse_what_if(["--gpu_memory_utilization=0.95", "tp=2", "enforce-eager=true"]) == {
        "gpu-memory-utilization": "0.95", "tensor-parallel-size": "2", "enforce-eager": "true"}
    for bad in ("x", "=1", "max-num-seqs=0", "enforce-eager=maybe", "vllm-version=abc"):
        with pytest.raises(UsageError):
            parse_what_if([bad])


def test_version_from_format():
    assert version_from_format("v0.6.4-oneline") == "0.6.4"
    assert version_from_format("v1") is None


def test_no_change_reproduces_the_log():
    # nothing changed: K' = K and blocks = 3.81 GiB // (3.81 GiB / 1952) = 1952 (007's own figure)
    w = what_if(S007, {}, registry=REG)
    assert w.available_kv_cache_bytes == round(3.81 * GIB)
    assert w.kv_cache_tokens == 1952 * 16


def test_enforce_eager_before_021_does_not_move_the_pool():
    # 0.10.1.1 captures CUDA graphs after sizing the pool: the KV bytes stay 5.01 GiB
    w = what_if(S001, {"enforce-eager": "true"}, registry=REG)
    assert w.available_kv_cache_bytes == round(5.01 * GIB)
    assert any("headroom" in s for s in w.steps)


def test_enforce_eager_from_021_gives_back_the_estimate():
    # 0.21+ subtracts the CUDA-graph estimate from the budget: eager adds it back (0.14 GiB in 023)
    s = _startup("023")
    w = what_if(s, {"enforce-eager": "true"}, registry=REG)
    est = s.figures.cuda_graph_estimate_bytes
    assert est is not None
    assert w.available_kv_cache_bytes == s.figures.available_kv_cache_bytes + est
    assert "cuda_graph_estimate_bytes" in w.measured


def test_fp8_doubles_tokens_on_same_bytes():
    # 007: bf16 -> fp8 halves a block (2 MiB -> 1 MiB): 3.81 GiB holds 2 x 1952 = 3904 blocks
    w = what_if(S007, {"kv-cache-dtype": "fp8"}, registry=REG)
    assert w.kv_cache_tokens == 3904 * 16
    assert "bytes_per_block" in w.estimated


@given(st.floats(min_value=0.5, max_value=0.99))
def test_more_utilization_never_shrinks_the_pool(util):
    # budget = total x util; with everything else fixed, K' - K = 23.58 GiB x (util - 0.9)
    lo = what_if(S007, {"gpu-memory-utilization": str(util)}, registry=REG)
    hi = what_if(S007, {"gpu-memory-utilization": str(min(util + 0.01, 1.0))}, registry=REG)
    assert hi.available_kv_cache_bytes >= lo.available_kv_cache_bytes
    assert lo.available_kv_cache_bytes - round(3.81 * GIB) == pytest.approx((util - 0.9) * 23.58 * GIB,
                                                                              abs=0.01 * GIB)


ALL_CHANGES = ["gpu-memory-utilization=0.95", "kv-cache-dtype=fp8", "max-model-len=65536", "max-num-seqs=512",
               "max-num-batched-tokens=16384", "tensor-parallel-size=2", "enforce-eager=true"]


@pytest.mark.parametrize("path", sorted(LOGS.glob("*.log")), ids=lambda p: p.name[:3])
def test_every_corpus_log_takes_every_what_if_without_error(runner, path):
    # one re-plan with all seven changes together, and each one alone: an answer or a reason, never a crash
    from vmemplan.cli import app

    args = ["explain-log", str(path), "--format", "json", "--gpu", "h100"]
    for item in ALL_CHANGES:
        args += ["--what-if", item]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    import json

    for startup in json.loads(r.stdout)["startups"]:
        (w,) = startup["what_if"]
        assert len(w["changes"]) == 7
        assert w["reason"] or w["available_kv_cache_bytes"] is not None
