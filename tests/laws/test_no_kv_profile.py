"""A V1 model without a KV cache (an encoder-only pooling model) is not memory-profiled:
vLLM gives its workers 0 bytes and checks and logs nothing of the budget or the pool
(vllm/v1/engine/core.py::EngineCore._initialize_kv_caches, 0.33.0)."""

from __future__ import annotations

from pathlib import Path

from vmemplan.api import plan_from_flags
from vmemplan.laws.budget import profiles_memory
from vmemplan.render.vllm_log import log_lines

BERT = str(Path(__file__).parents[1] / "fixtures" / "oracle" / "configs" / "sentence-transformers--all-MiniLM-L6-v2.json")


def test_the_rule() -> None:
    assert profiles_memory("v1", has_kv_cache=True)
    assert not profiles_memory("v1", has_kv_cache=False)
    assert profiles_memory("v0", has_kv_cache=False)  # V0 profiled every model


def test_an_encoder_only_model_gets_no_kv_bytes_and_logs_only_its_weights() -> None:
    plan = plan_from_flags(model=BERT, gpu="h100")
    assert plan.per_rank.available_kv_cache_bytes == 0
    assert plan.band is None  # 0 is what vLLM passes: exact, no band
    lines = log_lines(plan)
    assert len(lines) == 1 and lines[0].startswith("Model loading took")
    assert plan.verdict.starts


def test_no_budget_check_without_a_profile_run() -> None:
    # util 0.0001 of an H100 is about 8 MB, below the weights (45 MB): a profiled model would be
    # refused ("the weights do not fit the budget"); vLLM never compares them here
    plan = plan_from_flags(model=BERT, gpu="h100", gpu_memory_utilization=0.0001)
    assert plan.per_rank.weights_bytes > plan.per_rank.requested_memory_bytes
    assert plan.verdict.starts


def test_a_decoder_is_still_profiled() -> None:
    plan = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100")
    assert plan.per_rank.available_kv_cache_bytes > 0
    assert any(line.startswith("Available KV cache memory") for line in log_lines(plan))


def test_no_kv_cache_bounds_the_requests_of_an_encoder_only_model() -> None:
    # vLLM computes no concurrency without KV cache groups (EngineCore._initialize_kv_caches calls
    # update_kv_cache_capacity only when there are groups): None, not 0.00x, and the same in a sweep
    plan = plan_from_flags(model=BERT, gpu="h100")
    assert plan.kv_cache.groups == () and plan.kv_cache.max_concurrency is None
    assert plan.to_json()["kv_cache"]["max_concurrency"] is None
    from vmemplan.registry import load_registry
    from vmemplan.sources import load_model_source
    from vmemplan.sweep import SweepEvaluator

    reg = load_registry()
    ev = SweepEvaluator({"model": BERT, "gpu": "h100"}, registry=reg,
                        source=load_model_source(BERT, bundled_dir=reg.models_dir))
    point = ev.evaluate({"gpu_memory_utilization": 0.5})
    assert point.max_concurrency is None and point.kv_cache_tokens == plan.kv_cache.tokens == 0
    # a decoder keeps vLLM's num_blocks / blocks_per_request
    llama = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100")
    assert llama.kv_cache.max_concurrency == llama.kv_cache.num_blocks / sum(
        g.blocks_per_request for g in llama.kv_cache.groups)
