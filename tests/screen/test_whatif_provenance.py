"""A what-if says which of its inputs were measured (read from the log) and which estimated; no
figure is both (issue 14 item 4: `kv_cache_tokens` was listed under both)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import cli

ROOT = Path(__file__).resolve().parents[2]
LOG = str(ROOT / "bench/examples/vllm-0.11.0-llama31-8b-a100-40gb.log")


@pytest.mark.parametrize("what_if", ["util=0.95", "max-model-len=8192", "max-num-seqs=64",
                                     "kv-cache-dtype=fp8", "tensor-parallel-size=2"])
def test_measured_and_estimated_are_disjoint(what_if):
    run = cli("explain-log", LOG, "--what-if", what_if, "--gpu", "a100-40g", "--format", "json")
    assert run.code == 0, run.stderr
    for startup in json.loads(run.stdout)["startups"]:
        for w in startup["what_if"]:
            measured, estimated = set(w["measured"]), set(w["estimated"])
            assert measured and not measured & estimated, (what_if, measured & estimated)
