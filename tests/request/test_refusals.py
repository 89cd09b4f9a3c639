"""vLLM's own refusals, each quoting vLLM 0.33.0's message: exit 2 for a flag combination vLLM
rejects while building its config, exit 3 for a startup it would not finish."""

from __future__ import annotations

import pytest

from tests.request._cli import error_lines, run
from vmemplan.core.errors import UsageError
from vmemplan.request import refusals

MODEL = "meta-llama/Llama-3.1-8B"  # 32 attention heads, 8 KV heads, max_position_embeddings 131072


def _refused(args, capsys, code):
    r = run(["size", MODEL, *args], capsys)
    assert r.code == code, (r.code, r.stderr)
    return error_lines(r.stderr)


def test_batched_tokens_below_max_num_seqs(capsys):
    """vllm/config/scheduler.py::SchedulerConfig.verify_max_model_len."""
    error, hint = _refused(["--gpu", "h100", "--max-num-batched-tokens", "100", "--max-num-seqs", "256"], capsys, 2)
    assert error == "error: max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256)."
    assert "--max-num-batched-tokens 256 or more" in hint


def test_batched_tokens_below_max_model_len_without_chunked_prefill(capsys):
    error, hint = _refused(["--gpu", "h100", "--no-enable-chunked-prefill", "--max-model-len", "16384",
                            "--max-num-batched-tokens", "8192"], capsys, 2)
    assert error.startswith("error: max_num_batched_tokens (8192) is smaller than max_model_len (16384). "
                            "This effectively limits the maximum sequence length to max_num_batched_tokens")
    assert "--max-num-batched-tokens 16384 or more" in hint


def test_max_num_active_seqs_above_max_num_seqs(capsys):
    error, _ = _refused(["--gpu", "h100", "--max-num-seqs", "64", "--max-num-active-seqs", "128"], capsys, 2)
    assert error == "error: max_num_active_seqs (128) cannot be greater than max_num_seqs (64)."


def test_long_prefill_threshold_above_max_model_len(capsys):
    error, _ = _refused(["--gpu", "h100", "--max-model-len", "4096", "--long-prefill-token-threshold", "8192"],
                        capsys, 2)
    assert error == "error: long_prefill_token_threshold (8192) cannot be greater than the max_model_len (4096)."


def test_max_model_len_longer_than_the_model(capsys, monkeypatch):
    """vllm/config/model.py::_get_and_verify_max_len."""
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    error, hint = _refused(["--gpu", "h100", "--max-model-len", "200k"], capsys, 2)
    assert error.startswith(
        "error: User-specified max_model_len (200000) is greater than the derived max_model_len "
        "(max_position_embeddings=131072 or model_max_length=None in model's config.json). To allow overriding "
        "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.")
    assert "--max-model-len 131072 or less" in hint


def test_tensor_parallel_size_not_dividing_the_heads(capsys):
    """vllm/config/model.py::ModelConfig.verify_with_parallel_config."""
    error, hint = _refused(["--gpu", "h100", "-tp", "3"], capsys, 2)
    assert error == "error: Total number of attention heads (32) must be divisible by tensor parallel size (3)."
    assert "-tp must divide 32" in hint


def test_free_memory_at_startup(capsys):
    """vllm/v1/worker/utils.py::request_memory.  By hand: H100 total 85,045,477,376 B; other processes
    hold 10 GiB; vmemplan's CUDA context before the snapshot 472,446,402 B -> free 73,835,612,734 B
    = 68.76 GiB < ceil(0.92 x total) = 78,241,839,186 B = 72.87 GiB."""
    error, hint = _refused(["--gpu", "NVIDIA H100 80GB HBM3", "--gpu-memory-in-use", "10G"], capsys, 3)
    assert error == ("error: vLLM would not start: Free memory on device cuda:0 (68.76/79.2 GiB) on startup is less "
                     "than desired GPU memory utilization (0.92, 72.87 GiB). Decrease GPU memory utilization or "
                     "reduce GPU memory used by other processes.")
    # 73,835,612,734 / 85,045,477,376 = 0.868 -> 0.86
    assert hint == "hint: --gpu-memory-utilization 0.86 or lower (other processes hold 10.0 GiB)"
    assert run(["size", MODEL, "--gpu", "h100", "--gpu-memory-in-use", "10G", "--util", "0.86"], capsys).code == 0


def test_kv_cache_memory_bytes_larger_than_the_device(capsys):
    """vllm/v1/worker/gpu_worker.py::determine_available_memory skips the budget with
    kv_cache_memory_bytes; 100 GiB of KV cache cannot be allocated on an 80 GB H100."""
    error, hint = _refused(["--gpu", "h100", "--kv-cache-memory-bytes", "100G"], capsys, 3)
    assert "kv_cache_memory_bytes (100.0 GiB)" in error and "CUDA out of memory" in error
    assert hint == "hint: --kv-cache-memory-bytes 61G or less"
    _refused(["--gpu", "l4", "--kv-cache-memory", "100G"], capsys, 3)
    assert run(["size", MODEL, "--gpu", "h100", "--kv-cache-memory-bytes", "60G"], capsys).code == 0


def test_no_available_memory_for_the_cache_blocks(capsys):
    """vllm/v1/core/kv_cache_planning.py: "No available memory for the cache blocks"."""
    error, hint = _refused(["--gpu", "l4", "--util", "0.70", "--max-model-len", "4096"], capsys, 3)
    assert error.startswith("error: vLLM would not start: No available memory for the cache blocks")
    assert hint.startswith("hint: --gpu-memory-utilization 0.7") and hint.endswith("or more")


def test_the_estimated_maximum_model_length_message(capsys):
    """vllm/v1/core/kv_cache_utils.py: one request at max_model_len does not fit the pool."""
    r = run(["size", MODEL, "--gpu", "l4", "--format", "log"], capsys)
    assert r.code == 3
    assert "Based on the available memory, the estimated maximum model length is" in r.stdout
    _, hint = error_lines(r.stderr)
    assert hint.startswith("hint: --max-model-len ") and hint.endswith(" would fit")


def test_refusal_functions_are_pure():
    with pytest.raises(UsageError):
        refusals.check_scheduler(max_num_batched_tokens=1, max_num_seqs=2, max_model_len=1)
    assert refusals.check_free_memory(total_bytes=100, in_use_bytes=0, before_budget_bytes=0, util=0.5) is None
    assert refusals.check_free_memory(total_bytes=100, in_use_bytes=60, before_budget_bytes=0, util=0.5) is not None


def test_the_pasted_commands_environment_allows_a_long_context(capsys, monkeypatch):
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 before `vllm serve` lifts the check (vllm/envs.py), with a
    warning; the variable is only set while planning."""
    import json
    import os

    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    r = run(["size", "--gpu", "h100", "-f", "json", "--", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "vllm", "serve", MODEL,
             "--max-model-len", "200000"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["engine"]["max_model_len"] == 200_000
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in w for w in d["warnings"])
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in os.environ
