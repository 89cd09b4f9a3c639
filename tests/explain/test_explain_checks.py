"""The arithmetic of the checks and suggestions, with numbers worked by hand."""

from __future__ import annotations

from pathlib import Path

from vmemplan.explain import explain, parse_log, read_log_bytes

LOG_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
GIB = 2**30


def _startup(prefix: str):
    path = next(p for p in LOG_DIR.glob("*.log") if p.name.startswith(prefix + "-"))
    return parse_log(read_log_bytes(path.read_bytes()))[0]


def _check(report, name):
    return next(c for c in report.checks if c.name == name and c.rank is None)


def test_tokens_vs_bytes_per_token_llama31_8b():
    # Llama-3.1-8B bf16: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes = 131,072 B/token.
    # 19.24 GiB +- 0.005 -> [19.235, 19.245] GiB x 8192 tokens/GiB = [157,573, 157,655] tokens
    # -> whole 16-token blocks [9,848, 9,853] -> [157,568, 157,648] tokens; the log says 157,584.
    rep = explain(_startup("040"), bytes_per_token=131_072)
    c = _check(rep, "tokens_vs_available_bytes")
    assert c.ok, c.detail
    assert "157,568..157,648" in c.detail
    # twice the bytes per token gives half the tokens: far outside rounding
    bad = _check(explain(_startup("040"), bytes_per_token=262_144), "tokens_vs_available_bytes")
    assert not bad.ok and "differs" in bad.detail


def test_blocks_vs_bytes_v0():
    # 034, Mistral-7B v0.3 bf16 (32 layers x 8 KV heads x 128 x 2 x 2 = 131,072 B/token): the log has no
    # GiB figure for the pool, so there is nothing to compare bytes with.
    rep = explain(_startup("034"), bytes_per_token=131_072)
    assert not [c for c in rep.checks if "available_bytes" in c.name]


def test_weights_check():
    s = _startup("040")
    exact = round(14.9889 * GIB)
    assert _check(explain(s, model_weights_bytes=exact), "weights_vs_model").ok
    # 8,030,261,248 params x 2 bytes = 16,060,522,496 B = 14.95747 GiB: the log is 0.03143 GiB above it
    c = _check(explain(s, model_weights_bytes=16_060_522_496), "weights_vs_model")
    assert not c.ok and "expected 14.9575 GiB" in c.detail and "+0.0314 GiB" in c.detail


def test_budget_breakdown_v0_and_v1():
    # 010: 71.29 - 19.86 - 0.16 - 36.63 = 14.64 vs 14.65: within 5 x 0.005 GiB
    c = _check(explain(_startup("010")), "kv_vs_budget_breakdown")
    assert c.ok and "14.640" in c.detail
    # 029: 21.28 - 5.7916 - 0.02 - 0.17 = 15.2984 vs 15.31: within 0.005+0.00005+0.005+0.005+0.005
    c = _check(explain(_startup("029")), "kv_vs_budget_breakdown")
    assert c.ok and "15.298" in c.detail


def test_budget_check_can_fail():
    text = ("INFO 01-16 09:40:00 worker.py:238] the current vLLM instance can use total_gpu_memory (79.22GiB) x"
            " gpu_memory_utilization (0.90) = 71.29GiB\n"
            "INFO 01-16 09:40:00 worker.py:238] model weights take 19.86GiB; non_torch_memory takes 0.16GiB;"
            " PyTorch activation peak memory takes 36.63GiB; the rest of the memory reserved for KV Cache is"
            " 15.65GiB.")
    # 71.29 - 19.86 - 0.16 - 36.63 = 14.64, one GiB away from 15.65
    c = _check(explain(parse_log(text)[0]), "kv_vs_budget_breakdown")
    assert not c.ok and "differs" in c.detail


def test_concurrency_whole_blocks_when_len_not_multiple_of_block():
    # 030: max_model_len 8196 is not a multiple of 16: 129,504 / 16 = 8,094 blocks; ceil(8196 / 16) = 513;
    # 8,094 / 513 = 15.778 -> 15.78 (tokens / len = 15.80 would not match)
    c = _check(explain(_startup("030")), "concurrency_vs_tokens")
    assert c.ok and "8,094 / 513" in c.detail


def test_suggestions():
    hi = parse_log("INFO 01-01 00:00:00 worker.py:1] the current vLLM instance can use total_gpu_memory (79.19GiB)"
                   " x gpu_memory_utilization (0.97) = 76.81GiB")[0]
    sg = {x.name: x.detail for x in explain(hi).suggestions}
    # (1 - 0.97) x 79.19 = 2.38 GiB of headroom
    assert "2.38 GiB" in sg["high_utilization"]
    # 038: 4.08 GiB of CUDA graphs > 2 GiB
    assert "large_cuda_graphs" in {x.name for x in explain(_startup("038")).suggestions}
    # 049: 0.20 GiB of graphs is small
    assert "large_cuda_graphs" not in {x.name for x in explain(_startup("049")).suggestions}
    # 013: negative pool
    assert "no_kv_memory" in {x.name for x in explain(_startup("013")).suggestions}
    # 011 (hybrid): 75,840 tokens < 120,000 but concurrency 2.48 >= 1, so one request fits
    assert "pool_smaller_than_one_request" not in {x.name for x in explain(_startup("011")).suggestions}


def test_explanations_give_util_step():
    # 029: 0.01 x 23.65 GiB = 0.24 GiB per 0.01 of utilization
    rep = explain(_startup("029"))
    ln = next(x for x in rep.lines if x.kind == "available_kv")
    assert "0.01 x 23.65 GiB = 0.24 GiB" in ln.explanation
    ln = next(x for x in explain(_startup("034")).lines if x.kind == "weights")
    assert "GiB" in ln.explanation and "2^30" in ln.explanation
