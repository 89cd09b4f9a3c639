"""The sweep evaluator: the budget tail must equal a full plan at every point."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.api import plan_from_flags
from vmemplan.registry import load_registry
from vmemplan.sources import load_model_source
from vmemplan.sweep import SweepEvaluator, Target, parse_vary, run_sweep, solve

REG = load_registry()
MODELS = {m: load_model_source(m, bundled_dir=REG.models_dir)
          for m in ("meta-llama/Llama-3.1-8B", "google/gemma-3-27b-it", "openai/gpt-oss-20b")}


def _check(model: str, gpu: str, point: dict, base: dict) -> None:
    ev = SweepEvaluator({"model": model, "gpu": gpu, **base}, registry=REG, source=MODELS[model],
                        request_tokens=3000)
    ev.evaluate({**point, "gpu_memory_utilization": 0.9})  # warm the shape at another budget
    p = ev.evaluate(point)
    flags = {**base, **point}
    kv_mem = flags.pop("kv_cache_memory_bytes", None)
    plan = plan_from_flags(model=model, gpu=gpu, kv_cache_memory=kv_mem, **flags)
    assert p.error is None
    assert p.weights_bytes == plan.per_rank.weights_bytes
    assert p.available_kv_cache_bytes == plan.per_rank.available_kv_cache_bytes
    assert p.num_blocks == plan.kv_cache.num_blocks
    assert p.kv_cache_tokens == plan.kv_cache.tokens
    assert p.max_concurrency == plan.kv_cache.max_concurrency
    assert p.starts == plan.verdict.starts


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(sorted(MODELS)), gpu=st.sampled_from(["h100", "l40s", "a100-80g", "h200"]),  # `a100` alone is ambiguous since issue 13,
       util=st.floats(0.05, 1.0), mml=st.sampled_from([2048, 8192, 32768]))
def test_tail_equals_full_plan(model, gpu, util, mml):
    _check(model, gpu, {"gpu_memory_utilization": util}, {"max_model_len": mml})


@pytest.mark.parametrize("kv_gib", [1, 8, 40])
def test_tail_with_kv_cache_memory(kv_gib):
    _check("meta-llama/Llama-3.1-8B", "h100", {"kv_cache_memory_bytes": kv_gib << 30}, {"max_model_len": 32768})


def test_shapes_are_planned_once_per_non_budget_point():
    ev = SweepEvaluator({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100"}, registry=REG,
                        source=MODELS["meta-llama/Llama-3.1-8B"])
    pts = run_sweep(ev, [parse_vary("max-model-len=8192,16384"), parse_vary("util=0.5:0.95:0.05")])
    # the second context length reuses the first one's graph (a Llama graph does not read it)
    assert len(pts) == 20 and ev.full_plans == 1 and ev.length_reuses == 1


def test_refused_points_carry_the_error():
    ev = SweepEvaluator({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100"}, registry=REG,
                        source=MODELS["meta-llama/Llama-3.1-8B"])
    pts = run_sweep(ev, [parse_vary("tp=1,3")])  # 8 KV heads do not split over 3 ranks
    assert pts[0].error is None and pts[0].starts
    assert pts[1].error and not pts[1].starts and pts[1].kv_cache_tokens is None


def test_solve_prefers_order_and_ranks_levers():
    ev = SweepEvaluator({"model": "meta-llama/Llama-3.1-8B", "max_model_len": 32768}, registry=REG,
                        source=MODELS["meta-llama/Llama-3.1-8B"])
    varies = [parse_vary("gpu=l40s,h100"), parse_vary("util=0.6:0.95:0.05")]
    pts = run_sweep(ev, varies)
    target = Target(min_kv_tokens=300_000)
    res = solve(pts, varies, target)
    assert res.answer is not None
    # every meeting point on the first GPU of the list is preferred
    l40s_meets = [p for p in pts if p.values["gpu"] == "l40s" and target.met(p)]
    assert res.answer.values["gpu"] == ("l40s" if l40s_meets else "h100")
    same_gpu = [p for p in pts if p.values["gpu"] == res.answer.values["gpu"] and target.met(p)]
    assert res.answer.values["gpu_memory_utilization"] == min(p.values["gpu_memory_utilization"] for p in same_gpu)
    assert res.levers and res.levers[0].gain >= res.levers[-1].gain
