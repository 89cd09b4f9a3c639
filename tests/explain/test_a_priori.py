"""explain-log re-plans the command a log records ("non-default args") and shows the a-priori plan
beside the log's figures: the same figures `vmemplan size` prints for that command."""

from __future__ import annotations

from vmemplan.api import plan_from_flags
from vmemplan.explain import parse_log
from vmemplan.explain.runner import explain_startups
from vmemplan.registry import load_registry

LOG = "\n".join([
    "INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.33.0",
    "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': 'meta-llama/Llama-3.1-8B', "
    "'max_model_len': 8192, 'gpu_memory_utilization': 0.9}",
    "INFO 01-01 00:00:05 [gpu_model_runner.py:1] Model loading took 14.99 GiB memory",
    "INFO 01-01 00:00:09 [gpu_worker.py:1] Available KV cache memory: 55.00 GiB",
])


def test_the_a_priori_plan_is_what_size_prints_for_the_logged_command():
    registry = load_registry()
    report, = explain_startups(parse_log(LOG), registry=registry, gpu=registry.gpu("h100"))
    a = report.a_priori
    assert a is not None and a["gpu"] == "h100" and not a["gpu_assumed"]
    size = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", max_model_len=8192,
                           gpu_memory_utilization=0.9, vllm_version="0.33.0")
    rows = {r["figure"]: r for r in a["rows"]}
    assert rows["weights"]["plan"] == size.per_rank.weights_bytes
    assert rows["available KV cache"]["plan"] == size.per_rank.available_kv_cache_bytes
    assert rows["KV cache tokens"]["plan"] == size.kv_cache.tokens
    logged = round(55.00 * 2**30)
    assert rows["available KV cache"]["log"] == logged
    assert rows["available KV cache"]["difference"] == size.per_rank.available_kv_cache_bytes - logged
    assert report.to_json()["a_priori"]["model"] == "meta-llama/Llama-3.1-8B"


def test_no_gpu_is_said_and_no_command_gives_no_block():
    registry = load_registry()
    report, = explain_startups(parse_log(LOG), registry=registry)
    assert report.a_priori["gpu_assumed"] is True
    bare = "\n".join(LOG.splitlines()[:1] + LOG.splitlines()[2:])
    report, = explain_startups(parse_log(bare), registry=registry)
    assert report.a_priori is None


def test_a_logged_model_that_is_not_offline_is_named_not_missing():
    """Log 038's args line names casperhansen/deepseek-r1-distill-qwen-14b-awq (kept apart from the
    args by the parser): the a-priori plan says it is not available offline, not that the line
    names no model, and never reaches for the network."""
    from pathlib import Path

    from vmemplan.explain.apriori import a_priori_plan
    from vmemplan.explain.parse import parse_log, read_log_bytes

    log = Path(__file__).resolve().parents[1] / "fixtures/logs/038-r1-distill-qwen-14b-awq-rx9070xt-rocm.log"
    startup = parse_log(read_log_bytes(log.read_bytes()))[0]
    prior = a_priori_plan(startup, link=None, gpu=None, vllm_version=None)
    assert "casperhansen/deepseek-r1-distill-qwen-14b-awq is not available offline" in prior["reason"]
