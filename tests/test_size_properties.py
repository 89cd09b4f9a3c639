"""Property tests of the size pipeline (hypothesis): monotonic and conservative laws."""

from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.planner import plan_memory
from vmemplan.registry import load_registry
from vmemplan.resolve import PlanInputs, resolve_with
from vmemplan.sources import load_model_source


@functools.cache
def _source(model: str):
    return load_model_source(model, bundled_dir=load_registry().models_dir, allow_hub=False)


def _plan(model: str = "meta-llama/Llama-3.1-8B", **flags):
    reg = load_registry()
    inputs = PlanInputs(model=model, gpu=flags.pop("gpu", "h100"), **flags)
    return plan_memory(resolve_with(inputs, registry=reg, source=_source(model)))


utils = st.floats(min_value=0.3, max_value=0.98, allow_nan=False)
lens = st.integers(min_value=1024, max_value=131072)


@settings(max_examples=25, deadline=None)
@given(a=utils, b=utils, mml=lens)
def test_util_up_blocks_never_down(a, b, mml):
    lo, hi = sorted((a, b))
    assert _plan(gpu_memory_utilization=lo, max_model_len=mml).kv_cache.num_blocks <= \
        _plan(gpu_memory_utilization=hi, max_model_len=mml).kv_cache.num_blocks


@settings(max_examples=20, deadline=None)
@given(u=utils, mml=lens)
def test_fp8_cache_never_fewer_tokens(u, mml):
    auto = _plan(gpu_memory_utilization=u, max_model_len=mml)
    fp8 = _plan(gpu_memory_utilization=u, max_model_len=mml, kv_cache_dtype="fp8")
    assert fp8.kv_cache.tokens >= auto.kv_cache.tokens


@settings(max_examples=15, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]))
def test_tp_up_weights_never_up(tp):
    one = _plan("meta-llama/Llama-3.1-70B", gpu="h100", max_model_len=8192)
    many = _plan("meta-llama/Llama-3.1-70B", gpu="h100", max_model_len=8192, tensor_parallel_size=tp)
    assert many.per_rank.weights_bytes <= one.per_rank.weights_bytes


@settings(max_examples=25, deadline=None)
@given(a=lens, b=lens)
def test_longer_context_never_more_concurrency(a, b):
    lo, hi = sorted((a, b))
    assert _plan(max_model_len=hi).kv_cache.max_concurrency <= _plan(max_model_len=lo).kv_cache.max_concurrency


@settings(max_examples=25, deadline=None)
@given(u=utils, gpu=st.sampled_from(["h100", "a100-40g", "l40s", "rtx4090", "h200", "b200"]))
def test_blocks_times_page_within_available(u, gpu):
    p = _plan(gpu=gpu, gpu_memory_utilization=u, max_model_len=4096)
    assert p.kv_cache.num_blocks * p.kv_cache.page_size_bytes <= max(p.per_rank.available_kv_cache_bytes, 0)
    assert p.kv_cache.num_blocks >= 0
