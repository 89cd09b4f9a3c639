"""Issue 15 items whose fix belongs to code other helpers are rewriting (flag parsing in the new
vmemplan/request/ package, sweep.py, explain/whatif.py, explain/model_link.py, the registry
listing, architecture support).  All of them are fixed now, and each finishes without a hang under
the memory limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import check_contract, cli, model_json, write_config

LOG = Path(__file__).resolve().parent / "fixtures" / "qwen2-7b-no-header.log"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("vary", ["gpu-memory-utilization=nan:0.9:0.1", "max-model-len=1:inf:1000",
                                  "gpu-memory-utilization=0.8,nan", "max-model-len=1:" + "9" * 5000 + ":1000",
                                  "kv-cache-memory=1G,nan", "max-model-len=1e400,3"])
def test_sweep_vary_with_nan_or_infinity(vary):
    run = cli("sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", vary)
    check_contract(run, 2)
    assert len(run.stderr.splitlines()[0]) < 400, run.stderr  # the 5,000 digits are not echoed back


@pytest.mark.parametrize("args", [
    ["size", "Qwen/Qwen3-30B-A3B", "--gpu", "h100", "-dp", "1000000000", "--enable-expert-parallel"],
    ["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--simulate", "--requests", "1000000000"],
    ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--speculative-config",
     json.dumps({"method": "ngram", "num_speculative_tokens": 1}).replace("1}", "9" * 5000 + "}")],
    ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vllm-version", "0." + "9" * 5000],
    ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--speculative-config",
     '{"method": "ngram", "x": ' + "[" * 20000 + "]" * 20000 + "}"],
    ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--hf-overrides",
     '{"x": ' + "[" * 20000 + "]" * 20000 + "}"],
    ["size", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "h100", "--limit-mm-per-prompt", '{"smell": 2}'],
])
def test_absurd_flag_values_are_usage_errors(args):
    run = cli(*args)
    check_contract(run, 2)
    assert all(len(line) < 600 for line in run.stderr.splitlines()), run.stderr  # echoes are capped


def test_explain_log_model_path_that_exists_is_a_path(tmp_path):
    write_config(tmp_path, "{not json")
    check_contract(cli("explain-log", str(LOG), "--model", str(tmp_path)), 4)
    check_contract(cli("explain-log", str(LOG), "--model", "/etc/passwd"), 4)


def test_what_if_tensor_parallel_that_size_refuses(tmp_path):
    # the heads are known (--model, or the log names a bundled model): size's refusal, exit 2
    run = cli("explain-log", str(LOG), "--model", "Qwen/Qwen2.5-7B", "--what-if", "tensor-parallel-size=3")
    check_contract(run, 2)
    assert "must be divisible by tensor parallel size (3)" in run.stderr
    named = tmp_path / "named.log"
    named.write_text(LOG.read_text().replace("Qwen2-7B-Instruct", "Qwen/Qwen2.5-7B"))
    check_contract(cli("explain-log", str(named), "--what-if", "tp=3"), 2)
    assert cli("explain-log", str(named), "--what-if", "tp=2").code == 0


@pytest.mark.parametrize("change", ["tensor-parallel-size=1000000000", "tp=1025", "max-model-len=" + "9" * 5000])
def test_what_if_absurd_values_are_refused_without_a_model(change):
    check_contract(cli("explain-log", str(LOG), "--what-if", change), 2)


def test_whisper_is_not_planned_as_a_llama_decoder(tmp_path):
    """A Whisper config is planned as the encoder-decoder it is (a self- and a cross-attention KV
    group per decoder layer, max_target_positions as the context), never as a Llama; one that lacks
    Whisper's own keys (a Llama config relabelled) is refused as a bad config, not sized."""
    config = model_json("meta-llama--Llama-3.1-8B.json")
    config["architectures"] = ["WhisperForConditionalGeneration"]
    config["model_type"] = "whisper"
    check_contract(cli("size", str(write_config(tmp_path, config)), "--gpu", "h100"), 3)
    real = ROOT / "tests" / "fixtures" / "oracle" / "configs" / "openai--whisper-large-v3.transcribed.json"
    run = cli("size", str(real), "--gpu", "h100", "--format", "json")
    assert run.code == 0, run.stderr
    plan = json.loads(run.stdout)
    assert [g["kind"] for g in plan["kv_cache"]["groups"]] == ["full_attention", "cross_attention"]
    assert plan["engine"]["max_model_len"] == 448


def test_models_lists_only_models_that_plan():
    run = cli("models", "--format", "json")
    listed = set(json.loads(run.stdout)) if run.code == 0 else set()
    assert not listed & {"MiniMaxAI/MiniMax-M1", "tiiuae/Falcon-H1-0.5B"}
