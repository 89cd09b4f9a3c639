"""A sweep over max_model_len reuses the first length's graph, groups and pool context: the
reused pool context must be the one ``size`` builds for that length, field for field."""

from __future__ import annotations

import pytest

from vmemplan import pipeline
from vmemplan.registry import load_registry
from vmemplan.sources import load_model_source
from vmemplan.sweep import SweepEvaluator


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B-FP8",
                                   "meta-llama/Llama-3.1-405B-Instruct-FP8"])
def test_reused_pool_context_is_the_planned_one(model: str) -> None:
    reg = load_registry()
    src = load_model_source(model, bundled_dir=reg.models_dir)
    ev = SweepEvaluator({"model": model, "gpu": "h100"}, registry=reg, source=src)
    lengths = (2048, 4096, 8192)
    for length in lengths:
        ev.evaluate({"max_model_len": length})
    assert ev.length_reuses == len(lengths) - 1  # the reuse path ran
    for length in lengths:
        shape = ev._shape(ev._inputs({"max_model_len": length}))
        assert shape.ctx == pipeline.pool_context(shape.req)
        assert shape.ctx.max_model_len == length
