"""`vmemplan concurrency` and the size gates, against `size`'s own pool (offline, bundled models)."""

from __future__ import annotations

import json

import pytest

from vmemplan.cli import app
from vmemplan.core.units import cdiv

LLAMA = ["meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--max-model-len", "32768",
         "--max-num-seqs", "256"]


@pytest.fixture(scope="module")
def size_kv():
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["size", *LLAMA, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["kv_cache"]


def run_json(runner, *args):
    res = runner.invoke(app, ["concurrency", *LLAMA, *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_seed_example_binding_and_crossover(runner, size_kv):
    data = run_json(runner)
    usable = size_kv["num_blocks"] - 1  # one block is vLLM's null block
    assert data["schema_version"] == 1
    assert data["limits"]["max_num_seqs"] == 256
    # vLLM's own figure, unchanged: num_blocks / blocks per 32,768-token request
    assert data["limits"]["kv_cache_requests_at_max_model_len"] == pytest.approx(size_kv["max_concurrency"])
    assert data["limits"]["kv_cache_requests_at_max_model_len"] == pytest.approx(size_kv["num_blocks"] / 2048)
    rows = {r["request_tokens"]: r for r in data["rows"]}
    for length, row in rows.items():
        # one full-attention group of 16-token blocks: ceil(L / 16) blocks per request
        assert row["by_kv_cache"] == usable // cdiv(length, 16)
        assert row["by_max_num_seqs"] == 256
        assert row["effective"] == min(256, usable // cdiv(length, 16))
    assert rows[64]["binding"] == "max_num_seqs" and rows[1024]["binding"] == "max_num_seqs"
    assert rows[32768]["binding"] == "kv_cache" and rows[4096]["binding"] == "kv_cache"
    # the crossover: the longest L with 256 * ceil(L/16) <= usable, i.e. 16 * (usable // 256)
    assert data["crossover_tokens"] == 16 * (usable // 256)
    assert data["binding"] == "kv_cache"  # at max_model_len
    assert data["simulation"] is None
    # consistent with size's tokens: 460,928 = int(num_blocks / 2048 * 32768) = num_blocks * 16
    assert size_kv["tokens"] == size_kv["num_blocks"] * 16


def test_lengths_and_prompt_output_pair(runner, size_kv):
    usable = size_kv["num_blocks"] - 1
    data = run_json(runner, "--lengths", "1000,4000,32768")
    assert [r["request_tokens"] for r in data["rows"]] == [1000, 4000, 32768]
    data = run_json(runner, "--prompt-tokens", "1000", "--output-tokens", "300")
    row = next(r for r in data["rows"] if r["request_tokens"] == 1300)
    # 1,300 tokens: ceil(1300/16) = 82 blocks
    assert row["by_kv_cache"] == usable // 82 and row["effective"] == 256
    assert data["reference_tokens"] == 1300 and data["binding"] == "max_num_seqs"


def test_gates_exit_three(runner, size_kv):
    usable = size_kv["num_blocks"] - 1
    at_2048 = usable // 128  # ceil(2048/16) = 128 blocks
    ok = runner.invoke(app, ["concurrency", *LLAMA, "--request-tokens", "2048", "--min-concurrency", str(at_2048)])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["concurrency", *LLAMA, "--request-tokens", "2048",
                              "--min-concurrency", str(at_2048 + 1)])
    assert bad.exit_code == 3 and "target not met" in bad.output
    for args, code in ((["--min-kv-tokens", str(size_kv["tokens"])], 0),
                       (["--min-kv-tokens", str(size_kv["tokens"] + 1)], 3),
                       (["--request-tokens", "2048", "--min-concurrency", str(at_2048)], 0),
                       (["--request-tokens", "2048", "--min-concurrency", str(at_2048 + 1)], 3)):
        res = runner.invoke(app, ["size", *LLAMA, *args, "--format", "log"])
        assert res.exit_code == code, (args, res.output)


def test_simulation_json(runner, size_kv):
    data = run_json(runner, "--simulate", "--requests", "60", "--prompt-tokens", "500:3000",
                    "--output-tokens", "150:400", "--seed", "1")
    sim = data["simulation"]
    for key in ("steps", "preemptions", "peak_running", "peak_pool_fraction", "ttft_ms", "itl_ms"):
        assert key in sim
    assert set(sim["ttft_ms"]) >= {"p50", "p99"} and set(sim["itl_ms"]) >= {"p50", "p99"}
    assert sim["completed"] == 60 and sim["peak_running"] <= 60
    assert 0 < sim["peak_pool_fraction"] <= 1
    assert sim["pool"]["num_blocks"] == size_kv["num_blocks"]
    assert sim["pool"]["block_size"] == 16 and sim["pool"]["fixed_blocks_per_request"] == 0
    assert sim["timing_is_estimate"] is True
    assert sim["ttft_ms"]["p50"] <= sim["ttft_ms"]["p99"]


def test_one_request_ttft_by_hand(runner):
    data = run_json(runner, "--simulate", "--requests", "1", "--prompt-tokens", "1000", "--output-tokens", "3")
    sim = data["simulation"]
    assert sim["ttft_steps"]["p50"] == 1 and sim["itl_steps"]["p50"] == 1
    # prefill step: compute 2 x 8,030,261,248 x 1,000 FLOP / (989.4e12 x 0.6) = 27.055 ms, above the
    # memory time (16.09e9 weight bytes + 1,000 x 131,072 KV bytes) / (3.35e12 x 0.6) ~ 8.07 ms
    assert sim["ttft_ms"]["p50"] == pytest.approx(2 * 8_030_261_248 * 1000 / (989.4e12 * 0.6) * 1e3, rel=1e-6)
    # the speed table's batch-1 TTFT is the same prefill
    assert data["speed"][0]["batch"] == 1
    assert data["speed"][0]["ttft_ms"] == pytest.approx(sim["ttft_ms"]["p50"], rel=1e-6)


def test_table_output_marks_estimates_and_crossover(runner):
    res = runner.invoke(app, ["concurrency", *LLAMA, "--simulate", "--requests", "20"])
    assert res.exit_code == 0, res.output
    assert "Crossover at 1,792 tokens" in res.output
    assert "estimate" in res.output and "efficiencies" in res.output
    assert "timeline" in res.output and "pool %" in res.output


def test_images_on_vision_and_text_models(runner):
    res = runner.invoke(app, ["concurrency", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "h100", "--max-model-len",
                              "32768", "--images-per-request", "2", "--image-size", "1280x720",
                              "--lengths", "1000", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    # 2 images x 1,196 tokens each (see test_qwen_image_tokens_by_hand) on top of 1,000 text tokens
    assert data["rows"][0]["request_tokens"] == 1000 + 2 * 1196
    assert data["multimodal"]["tokens_per_image"] == 1196
    res = runner.invoke(app, ["concurrency", *LLAMA, "--images-per-request", "1"])
    assert res.exit_code == 2 and "no vision_config" in res.output


def test_bad_flags(runner):
    assert runner.invoke(app, ["concurrency", *LLAMA, "--lengths", "abc"]).exit_code == 2
    assert runner.invoke(app, ["concurrency", *LLAMA, "--simulate", "--prompt-tokens", "normal:x:1"]).exit_code == 2
    assert runner.invoke(app, ["concurrency", *LLAMA, "--format", "csv"]).exit_code == 2


def test_hybrid_model_counts_every_group_and_the_fixed_blocks(runner):
    """gemma-3-27b-it: one full-attention group grows with the request, sliding-window groups
    hold a fixed ring each; a request's blocks are the sum over groups (the pool law's own
    per-group figures), and the pool holds (num_blocks - 1) // that many requests."""
    from vmemplan.api import plan_from_flags

    plan = plan_from_flags(model="google/gemma-3-27b-it", gpu="h100", max_model_len=32768)
    pool = plan.pool
    fixed = pool.sequence_fixed_blocks()
    assert fixed > 0 and len(pool.groups) > 1
    res = runner.invoke(app, ["concurrency", "google/gemma-3-27b-it", "--gpu", "h100", "--max-model-len", "32768",
                              "--lengths", "1000,32768", "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["limits"]["fixed_blocks_per_request"] == fixed
    for row in data["rows"]:
        blocks = pool.sequence_variable_blocks(row["request_tokens"]) + fixed
        assert row["blocks_per_request"] == blocks
        assert row["by_kv_cache"] == (plan.kv_cache.num_blocks - 1) // blocks
    # the full-attention group alone: ceil(32768 / 16) = 2,048 growing blocks at max_model_len
    assert pool.sequence_variable_blocks(32768) == 2048
