"""`vmemplan sweep`: formats, contracts, and --solve answers checked with `size`."""

from __future__ import annotations

import csv
import io
import json

from vmemplan.cli import app

LLAMA8 = ["meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-model-len", "32768", "--max-num-seqs", "256"]


def test_csv_header_and_rows_match_size(runner):
    res = runner.invoke(app, ["sweep", *LLAMA8, "--vary", "tp=1,2", "--vary", "kv-cache-dtype=auto,fp8",
                              "--format", "csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    header = res.stdout.splitlines()[0].split(",")
    assert header[:2] == ["tensor_parallel_size", "kv_cache_dtype"]
    assert header[2:7] == ["weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency", "starts"]
    assert len(rows) == 4
    fp8 = rows[1]
    size = json.loads(runner.invoke(app, ["size", *LLAMA8, "-tp", "1", "--kv-cache-dtype", "fp8", "-f", "json"]).stdout)
    assert int(fp8["kv_cache_tokens"]) == size["kv_cache"]["tokens"]
    assert int(fp8["weights_bytes"]) == size["per_rank"]["weights_bytes"]
    assert fp8["starts"] == "true"
    # fp8 halves the bytes per token: the same pool holds twice the blocks
    assert int(rows[1]["num_blocks"]) == 2 * int(rows[0]["num_blocks"]) + 1 or \
        int(rows[1]["num_blocks"]) == 2 * int(rows[0]["num_blocks"])


def test_json_contract(runner):
    res = runner.invoke(app, ["sweep", *LLAMA8, "--vary", "util=0.8:0.9:0.05", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["schema_version"] == 1 and data["varied"] == ["gpu_memory_utilization"]
    assert [p["gpu_memory_utilization"] for p in data["points"]] == [0.8, 0.85, 0.9]
    for p in data["points"]:
        assert {"weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency", "starts"} <= set(p)
    toks = [p["kv_cache_tokens"] for p in data["points"]]
    assert toks == sorted(toks) and toks[0] < toks[-1]


def test_table_and_chart(runner):
    res = runner.invoke(app, ["sweep", *LLAMA8, "--vary", "util=0.8,0.9", "--chart", "kv_cache_tokens"])
    assert res.exit_code == 0, res.output
    assert "kv_cache_tokens by gpu_memory_utilization" in res.output and "█" in res.output


def test_usage_errors(runner):
    assert runner.invoke(app, ["sweep", *LLAMA8]).exit_code == 2  # nothing varied
    assert runner.invoke(app, ["sweep", *LLAMA8, "--vary", "num-gpu-blocks-override=100"]).exit_code == 2
    assert runner.invoke(app, ["sweep", *LLAMA8, "--vary", "max-model-len=1024,2048"]).exit_code == 2  # given twice
    assert runner.invoke(app, ["sweep", "meta-llama/Llama-3.1-8B", "--vary", "util=0.9"]).exit_code == 2  # no GPU
    assert runner.invoke(app, ["sweep", *LLAMA8, "--vary", "util=0.9", "--solve"]).exit_code == 2  # no target
    assert runner.invoke(app, ["sweep", "meta-llama/Llama-3.1-8B", "--vary", "gpu=h100,nosuchgpu"]).exit_code == 4


def _size(runner, *args):
    return runner.invoke(app, ["size", *args, "--format", "log"]).exit_code


def _solve(runner, *args):
    res = runner.invoke(app, ["sweep", *args, "--solve", "--format", "json"])
    return res, json.loads(res.stdout)["solve"]


def test_solve_lowest_util_checked_with_size(runner):
    res, s = _solve(runner, *LLAMA8, "--vary", "util=0.50:0.95:0.01", "--min-kv-tokens", "300000")
    assert res.exit_code == 0 and s["met"]
    u = s["answer"]["gpu_memory_utilization"]
    assert _size(runner, *LLAMA8, "--util", str(u), "--min-kv-tokens", "300000") == 0
    assert _size(runner, *LLAMA8, "--util", f"{u - 0.01:.2f}", "--min-kv-tokens", "300000") == 3


def test_solve_smallest_tp_checked_with_size(runner):
    base = ["meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "32768"]
    res, s = _solve(runner, *base, "--vary", "tp=1,2,4,8", "--min-concurrency", "64", "--request-tokens", "4000")
    assert res.exit_code == 0 and s["met"]
    tp = s["answer"]["tensor_parallel_size"]
    assert tp == 4
    gate = ["--min-concurrency", "64", "--request-tokens", "4000"]
    assert _size(runner, *base, "-tp", str(tp), *gate) == 0
    assert _size(runner, *base, "-tp", "2", *gate) == 3
    assert s["levers"][0]["flag"] == "tensor_parallel_size"


def test_solve_largest_max_model_len_checked_with_size(runner):
    base = ["meta-llama/Llama-3.1-70B", "--gpu", "h100", "-tp", "2", "--util", "0.92"]
    res, s = _solve(runner, *base, "--vary", "max-model-len=8192:131072:8192", "--min-kv-tokens", "1")
    assert res.exit_code == 0 and s["met"]
    mml = s["answer"]["max_model_len"]
    assert 8192 <= mml < 131072
    assert _size(runner, *base, "--max-model-len", str(mml)) == 0
    assert _size(runner, *base, "--max-model-len", str(mml + 8192)) == 3  # vLLM would not start


def test_solve_cheapest_gpu_in_list_order(runner):
    base = ["meta-llama/Llama-3.1-8B", "--max-model-len", "32768"]
    res, s = _solve(runner, *base, "--vary", "gpu=l4,l40s,h100", "--min-kv-tokens", "400000")
    assert res.exit_code == 0
    gpu = s["answer"]["gpu"]
    order = ["l4", "l40s", "h100"]
    assert _size(runner, *base, "--gpu", gpu, "--min-kv-tokens", "400000") == 0
    for cheaper in order[: order.index(gpu)]:
        assert _size(runner, *base, "--gpu", cheaper, "--min-kv-tokens", "400000") == 3


def test_solve_not_met_exits_three(runner):
    res = runner.invoke(app, ["sweep", *LLAMA8, "--vary", "util=0.5,0.6", "--solve", "--min-kv-tokens", "10000000"])
    assert res.exit_code == 3 and "no point" in res.output


def test_quantization_and_expert_parallel_can_vary(runner):
    # every engine flag of `size` can vary; an online fp8 Llama-8B halves its linear weights
    result = runner.invoke(app, ["sweep", *LLAMA8, "--vary", "quantization=fp8", "-f", "csv"])
    assert result.exit_code == 0, result.output
    header, row = result.stdout.strip().splitlines()
    assert header.startswith("quantization,weights_bytes")
    fp8_weights = int(row.split(",")[1])
    plain = runner.invoke(app, ["size", *LLAMA8, "-f", "json"])
    import json

    assert fp8_weights < 0.6 * json.loads(plain.stdout)["per_rank"]["weights_bytes"]
