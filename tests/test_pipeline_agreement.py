"""One pipeline, one answer: ``size`` (the API), ``sweep`` and ``explain-log``'s what-ifs agree.

Random (model, GPU, flags) points are planned three ways and compared to the byte:

* the API (what ``vmemplan size`` prints) — :func:`vmemplan.api.plan_from_flags`;
* ``sweep``'s evaluator, which shares the steps before the budget between points;
* a what-if on a synthetic startup log whose "measured" figures are the plan's own: re-planned
  with a changed budget, tensor-parallel size or batch, it must land on ``size``'s figures for the
  changed flags.

Hypothesis draws the points; the work per example is bounded (one model, a few plans), never
timed.
"""

from __future__ import annotations

import math
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmemplan import pipeline
from vmemplan.api import plan_from_flags, resolve_request
from vmemplan.core.errors import UsageError, VmemplanError
from vmemplan.registry import load_registry
from vmemplan.sources import load_model_source
from vmemplan.sweep import SweepEvaluator

MODELS = (
    "meta-llama/Llama-3.1-8B",
    "Qwen/Qwen3-8B",
    "mistralai/Mistral-7B-v0.1",
    "google/gemma-2-9b",
    "Qwen/Qwen3-30B-A3B",
    "meta-llama/Llama-3.2-1B-Instruct",
)
GPUS = ("h100", "h200", "l40s", "a100-40gb", "rtx-4090", "b200")
VERSIONS = (None, "0.33.0", "0.26.0", "0.20.0", "0.11.0", "0.10.1.1")


@cache
def _registry():
    return load_registry()


@cache
def _source(model: str):
    return load_model_source(model, bundled_dir=_registry().models_dir)


points = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS),
    "gpu": st.sampled_from(GPUS),
    "gpu_memory_utilization": st.sampled_from((None, 0.5, 0.8, 0.9, 0.92, 0.95)),
    "max_model_len": st.sampled_from((None, 2048, 4096, 8192, 32768)),
    "max_num_seqs": st.sampled_from((None, 16, 128, 256)),
    "tensor_parallel_size": st.sampled_from((None, 1, 2, 4)),
    "kv_cache_dtype": st.sampled_from((None, "auto", "fp8")),
    "enforce_eager": st.sampled_from((None, True)),
    "vllm_version": st.sampled_from(VERSIONS),
})


def _clean(p: dict) -> dict:
    return {k: v for k, v in p.items() if v is not None}


def _plan_or_error(flags: dict):
    try:
        return plan_from_flags(**flags), None
    except VmemplanError as exc:
        return None, exc.message


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(points)
def test_size_sweep_and_api_agree_to_the_byte(point):
    flags = _clean(point)
    plan, error = _plan_or_error(flags)
    base = {"model": flags["model"], "gpu": flags["gpu"]}
    ev = SweepEvaluator(base, registry=_registry(), source=_source(flags["model"]))
    varied = {k: v for k, v in flags.items() if k not in ("model", "gpu")}
    got = ev.evaluate(varied)
    if plan is None:
        assert got.error == error
        return
    assert got.error is None, got.error
    assert got.weights_bytes == plan.per_rank.weights_bytes
    assert got.available_kv_cache_bytes == plan.per_rank.available_kv_cache_bytes
    assert got.num_blocks == plan.kv_cache.num_blocks
    assert got.kv_cache_tokens == plan.kv_cache.tokens
    assert got.max_concurrency == plan.kv_cache.max_concurrency
    assert got.starts == plan.verdict.starts
    _same_verdict_and_band(got, plan)
    # the evaluator's full plan is the same object size prints, field for field
    assert ev.plan(varied) == plan


def _same_verdict_and_band(got, plan):
    """The point's verdict, outcome and band low end are the plan's (sweep reads the pipeline's
    figures without putting a MemoryPlan together)."""
    from vmemplan.laws.bands import low_end_pool

    assert (got.reason, got.outcome) == (plan.verdict.reason, plan.verdict.outcome)
    assert got.kv_cache_tokens_low == (low_end_pool(plan)[0] if plan.band is not None else None)


def test_sweep_refuses_a_context_longer_than_the_model_as_size_does():
    flags = {"model": "meta-llama/Llama-3.2-1B-Instruct", "gpu": "h100", "max_model_len": 10_000_000}
    plan, error = _plan_or_error(flags)
    assert plan is None and "greater than the derived max_model_len" in error
    ev = SweepEvaluator({"model": flags["model"], "gpu": "h100"}, registry=_registry(),
                        source=_source(flags["model"]))
    assert ev.evaluate({"max_model_len": 10_000_000}).error == error


def test_budget_only_points_reuse_the_steps_before_the_budget():
    ev = SweepEvaluator({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100"}, registry=_registry(),
                        source=_source("meta-llama/Llama-3.1-8B"))
    for util in (0.5, 0.6, 0.7, 0.8, 0.9):
        ev.evaluate({"gpu_memory_utilization": util})
    assert ev.full_plans == 1


# --------------------------------------------------------------------------------------------
# what-ifs stand on the same steps
# --------------------------------------------------------------------------------------------


def _startup_from_plan(plan):
    """A startup log that measured exactly what the plan estimates."""
    from vmemplan.explain.parse import Figures, Startup

    r, e, kv = plan.per_rank, plan.engine, plan.kv_cache
    figures = Figures(
        total_memory_bytes=plan.gpu_total_memory_bytes, gpu_memory_utilization=e.gpu_memory_utilization,
        weights_bytes=r.weights_bytes, activation_peak_bytes=r.activation_peak_bytes,
        non_torch_bytes=r.non_torch_bytes,
        cuda_graph_estimate_bytes=r.cuda_graph_bytes if r.cuda_graph_subtracted else None,
        available_kv_cache_bytes=r.available_kv_cache_bytes, kv_cache_tokens=kv.tokens,
        num_gpu_blocks=kv.num_blocks, block_size=e.block_size, max_model_len=e.max_model_len,
        max_concurrency=kv.max_concurrency, tensor_parallel_size=e.tensor_parallel_size,
        kv_cache_dtype=e.kv_cache_dtype, dtype=e.dtype, max_num_batched_tokens=e.max_num_batched_tokens,
        max_num_seqs=e.max_num_seqs, enforce_eager=e.enforce_eager,
    )
    return Startup(vllm_version=plan.vllm_version, format="v1", model=plan.model_id, outcome="started",
                   error=None, ranks=(0,), figures=figures, per_rank={0: figures}, engine={}, lines=())


CHANGES = st.sampled_from((
    ("gpu-memory-utilization", "gpu_memory_utilization", "0.8"),
    ("gpu-memory-utilization", "gpu_memory_utilization", "0.95"),
    ("tensor-parallel-size", "tensor_parallel_size", "2"),
    ("max-num-seqs", "max_num_seqs", "64"),
    ("max-num-batched-tokens", "max_num_batched_tokens", "4096"),
    ("enforce-eager", "enforce_eager", "true"),
))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.sampled_from(MODELS[:4]), st.sampled_from(("h100", "h200", "l40s")), CHANGES)
def test_a_what_if_on_the_plans_own_figures_reproduces_size(model, gpu, change):
    from vmemplan.explain.model_link import link_model
    from vmemplan.explain.whatif import resolve_baseline, what_if

    flag, field, value = change
    base_flags = {"model": model, "gpu": gpu, "max_model_len": 8192, "max_num_seqs": 128,
                  "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.9, "vllm_version": "0.33.0"}
    plan = plan_from_flags(**base_flags)
    conv = {"true": True}.get(value, value)
    new_flags = {**base_flags, field: type(base_flags.get(field, 1))(conv) if field in base_flags else conv}
    try:
        new = plan_from_flags(**new_flags)
    except VmemplanError:
        pytest.skip("size refuses the changed flags")
    registry = _registry()
    startup = _startup_from_plan(plan)
    link, _ = link_model(model, registry=registry)
    gpu_obj = registry.gpu(gpu)
    base = resolve_baseline(startup, registry, gpu=gpu_obj, link=link)
    w = what_if(startup, {flag: value}, registry=registry, link=link, gpu=gpu_obj, base=base)
    assert w.reason is None, w.reason
    assert w.available_kv_cache_bytes == new.per_rank.available_kv_cache_bytes
    assert w.num_gpu_blocks == new.kv_cache.num_blocks
    assert w.kv_cache_tokens == new.kv_cache.tokens
    assert math.isclose(w.max_concurrency, round(new.kv_cache.max_concurrency, 2))


def test_a_what_if_refuses_what_size_refuses():
    """tensor-parallel-size=3 on a 32-head model: size refuses it, and so does the what-if."""
    from vmemplan.explain.model_link import link_model
    from vmemplan.explain.whatif import what_if

    model = "meta-llama/Llama-3.1-8B"
    with pytest.raises(VmemplanError):
        plan_from_flags(model=model, gpu="h100", tensor_parallel_size=3)
    plan = plan_from_flags(model=model, gpu="h100", max_model_len=8192)
    link, _ = link_model(model, registry=_registry())
    with pytest.raises(UsageError) as refused:  # a flag vLLM refuses: exit 2, with vLLM's message
        what_if(_startup_from_plan(plan), {"tensor-parallel-size": "3"}, registry=_registry(), link=link,
                gpu=_registry().gpu("h100"))
    assert "must be divisible by tensor parallel size (3)" in refused.value.message


def test_the_explain_weights_check_equals_size():
    """explain-log's model check prices the weights with size's own step (log 025's +0.63 % was the
    check skipping the allocator's rounding and the quantization scheme)."""
    from vmemplan.explain.model_link import link_model
    from vmemplan.explain.whatif import model_check_inputs, resolve_baseline

    plan = plan_from_flags(model="Qwen/Qwen3-32B", gpu="h100", tensor_parallel_size=8, kv_cache_dtype="fp8",
                           max_model_len=32768, vllm_version="0.33.0")
    registry = _registry()
    startup = _startup_from_plan(plan)
    link, _ = link_model("Qwen/Qwen3-32B", registry=registry)
    base = resolve_baseline(startup, registry, gpu=registry.gpu("h100"), link=link)
    bpt, weights, _, _ = model_check_inputs(startup, link, base, registry=registry, gpu=registry.gpu("h100"))
    assert weights == plan.per_rank.weights_bytes
    assert bpt == plan.kv_cache.bytes_per_token


def test_pipeline_steps_compose_to_the_plan():
    req = resolve_request(model="meta-llama/Llama-3.1-8B", gpu="h100")
    graph = pipeline.model_graph(req)
    over = pipeline.overheads(req, graph)
    bud = pipeline.budget(req, graph, over)
    kv_pool, _ = pipeline.pool(req, graph, bud)
    assert pipeline.plan_memory(req) == pipeline.assemble(req, graph, over, bud, kv_pool,
                                                          pipeline.verdict(req, over, bud, kv_pool))
    # a budget whose measured figures are the plan's own is the plan's budget
    r = bud.fullest
    same = pipeline.budget(req, graph, over, pipeline.Measured(
        total_memory_bytes=bud.total_bytes, weights_bytes=r.weights_bytes,
        activation_peak_bytes=r.activation_peak_bytes, non_torch_bytes=r.non_torch_bytes,
        cuda_graph_bytes=r.cuda_graph_bytes))
    assert same.ranks == bud.ranks


@pytest.mark.parametrize("model", ("meta-llama/Llama-3.1-8B", "google/gemma-2-9b", "Qwen/Qwen3-30B-A3B",
                                   "Qwen/Qwen3.5-27B", "deepseek-ai/DeepSeek-V3", "mistralai/Mistral-7B-v0.1",
                                   "Qwen/Qwen2.5-VL-7B-Instruct", "openai/gpt-oss-20b"))
def test_one_evaluator_across_context_lengths_agrees_with_size(model):
    """A sweep of max_model_len reuses one graph per shape when the family's graph does not read the
    length (Adapter.reads_max_model_len); every point must still equal `size` for that length."""
    gpu = "h200"
    ev = SweepEvaluator({"model": model, "gpu": gpu, "tensor_parallel_size": 8 if "DeepSeek" in model else None},
                        registry=_registry(), source=_source(model))
    lengths = (1024, 1536, 2048, 3000, 4096, 8192, 8193, 16384, 20000, 32768)
    for length in lengths:
        flags = {"model": model, "gpu": gpu, "max_model_len": length}
        if "DeepSeek" in model:
            flags["tensor_parallel_size"] = 8
        plan, error = _plan_or_error(flags)
        got = ev.evaluate({"max_model_len": length})
        if plan is None:
            assert got.error == error
            continue
        assert got.error is None, got.error
        assert (got.weights_bytes, got.available_kv_cache_bytes, got.num_blocks, got.kv_cache_tokens,
                got.max_concurrency, got.starts) == (
            plan.per_rank.weights_bytes, plan.per_rank.available_kv_cache_bytes, plan.kv_cache.num_blocks,
            plan.kv_cache.tokens, plan.kv_cache.max_concurrency, plan.verdict.starts), length
        _same_verdict_and_band(got, plan)
        assert ev.plan({"max_model_len": length}) == plan
    if model == "meta-llama/Llama-3.1-8B":
        assert ev.length_reuses >= len(lengths) - 2  # the graph was built once (or twice: batch defaults)


def test_lengths_and_budgets_interleaved_agree_with_size():
    """The budget kept per budget flags across context lengths (sweep._Shape.budgets) is the
    budget size computes, whichever order the points come in."""
    model, gpu = "Qwen/Qwen3-30B-A3B", "h100"
    ev = SweepEvaluator({"model": model, "gpu": gpu}, registry=_registry(), source=_source(model),
                        request_tokens=4096)
    for length, util in ((4096, 0.9), (8192, 0.8), (4096, 0.8), (16384, 0.9), (8192, 0.95), (2048, 0.8)):
        plan, error = _plan_or_error({"model": model, "gpu": gpu, "max_model_len": length,
                                      "gpu_memory_utilization": util})
        got = ev.evaluate({"max_model_len": length, "gpu_memory_utilization": util})
        assert error is None and got.error is None
        assert (got.available_kv_cache_bytes, got.num_blocks, got.kv_cache_tokens, got.max_concurrency) == (
            plan.per_rank.available_kv_cache_bytes, plan.kv_cache.num_blocks, plan.kv_cache.tokens,
            plan.kv_cache.max_concurrency), (length, util)
        _same_verdict_and_band(got, plan)
