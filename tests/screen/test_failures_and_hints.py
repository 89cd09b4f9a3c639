"""What vLLM would print, including its failures, and hints that can always be followed."""

from __future__ import annotations

import shlex

import pytest

from vmemplan.cli import app

LOAD_OOM = ("Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory "
            "for weights, increasing --tensor-parallel-size, or using --quantization.")


def _log(runner, *args):
    result = runner.invoke(app, ["size", *args, "--format", "log"])
    return result, result.stdout.splitlines()


def test_weights_larger_than_the_gpu_fail_in_the_load(runner):
    # 70B bf16 = 131.45 GiB on one 79.2 GiB H100: vLLM's loader runs out of memory; it never
    # logs "Model loading took" nor a KV cache figure (vllm/v1/worker/gpu_model_runner.py::load_model).
    result, lines = _log(runner, "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "8192")
    assert result.exit_code == 3
    assert len(lines) == 1 and lines[0].startswith(LOAD_OOM)
    assert "runs out of memory loading them" in result.stderr


def test_budget_over_free_memory_fails_before_loading(runner):
    # util 0.999 of 79.2 GiB = 79.13 GiB > 79.2 - 0.44 GiB free: vllm/v1/worker/utils.py::request_memory
    result, lines = _log(runner, "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.999")
    assert result.exit_code == 3
    assert lines == ["Free memory on device cuda:0 (78.76/79.2 GiB) on startup is less than desired GPU memory "
                     "utilization (0.999, 79.13 GiB). Decrease GPU memory utilization or reduce GPU memory used by "
                     "other processes."]
    assert "hint: --gpu-memory-utilization 0.99 would start it" in result.stderr


def test_no_cache_memory_ends_with_vllms_message(runner):
    result, lines = _log(runner, "meta-llama/Llama-3.1-70B", "--gpu", "h100", "-tp", "2", "--util", "0.5",
                         "--max-model-len", "8192")
    assert result.exit_code == 3
    assert lines[0] == "Model loading took 65.74 GiB memory"
    assert lines[-2].startswith("CUDA graph memory profiling is enabled")  # printed after "Available KV cache"
    assert lines[-3].startswith("Available KV cache memory: -")  # vLLM logs the negative figure, then raises
    assert lines[-1].startswith("No available memory for the cache blocks.")
    assert not any(line.startswith("GPU KV cache size") for line in lines)


def test_max_model_len_failure_ends_with_vllms_message(runner):
    result, lines = _log(runner, "meta-llama/Llama-3.1-70B", "--gpu", "h100", "-tp", "2")
    assert result.exit_code == 3
    assert lines[-1].startswith("To serve at least one request with the model's max seq len (131072)")
    assert "the estimated maximum model length is 25200." in lines[-1]
    assert "hint: --max-model-len 25200 would fit" in result.stderr


def test_kv_cache_memory_zero_is_unset_as_in_vllm(runner):
    # vllm/v1/worker/gpu_worker.py::determine_available_memory: `if kv_cache_memory_bytes := ...`
    # is false for 0, so the budget decides; it never reads "exceeds the budget by 0.0 GiB"
    args = ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"]
    zero = runner.invoke(app, [*args, "--kv-cache-memory", "0", "--format", "json"])
    unset = runner.invoke(app, [*args, "--format", "json"])
    assert zero.exit_code == 0 and "0.0 GiB" not in zero.output
    import json

    z, u = json.loads(zero.stdout), json.loads(unset.stdout)
    assert z["kv_cache"]["tokens"] == u["kv_cache"]["tokens"]
    assert z["engine"]["kv_cache_memory_bytes"] is None
    assert any("--kv-cache-memory 0 is treated as unset" in w for w in z["warnings"])


@pytest.mark.parametrize("args", [
    ["meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "8192"],
    ["meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "8192", "--util", "1.0"],
    ["meta-llama/Llama-3.1-70B", "--gpu", "l40s", "--max-model-len", "8192", "-tp", "2", "--util", "0.99"],
])
def test_hints_name_flags_that_start_it_and_never_util_past_its_limit(args, runner):
    from vmemplan.api import plan

    result = runner.invoke(app, ["size", *args])
    assert result.exit_code == 3
    hint = [line for line in result.stderr.splitlines() if line.startswith("hint:")][0]
    assert "raise --gpu-memory-utilization" not in hint
    for util in (float(w) for w in hint.replace(",", " ").split()[1:] if w.replace(".", "").isdigit() and "." in w):
        assert util <= 1.0
    # every suggested flag, applied on its own to the user's flags (with the lowered util where the
    # hint says so), starts
    names = {"--max-model-len": "max_model_len", "--util": "gpu_memory_utilization", "-tp": "tensor_parallel_size"}
    given = {names[k]: float(v) if k == "--util" else int(v) for k, v in zip(args[3::2], args[4::2])}
    if " with --gpu-memory-utilization" in hint:
        given["gpu_memory_utilization"] = float(hint.split("with --gpu-memory-utilization ")[1].split()[0])
    checked = 0
    for flag, name in (("-tp", "tensor_parallel_size"), ("-pp", "pipeline_parallel_size"),
                       ("--quantization", "quantization")):
        if flag + " " in hint:
            value = hint.split(flag + " ")[1].split()[0].rstrip(",")
            change = {name: value if name == "quantization" else int(value)}
            assert plan(args[0], gpu=args[2], **{**given, **change}).verdict.starts, (hint, change)
            checked += 1
    assert checked


def test_smallest_tp_and_pp_named_for_weights_that_do_not_fit(runner):
    result = runner.invoke(app, ["size", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "8192"])
    assert "hint: each of these would start it: -tp 2, -pp 2" in result.stderr


def test_gates_in_json(runner):
    import json

    result = runner.invoke(app, ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92",
                                 "--format", "json", "--min-kv-tokens", "400000", "--min-concurrency", "4",
                                 "--request-tokens", "32768"])
    data = json.loads(result.stdout)
    assert data["gates"] == [
        # 28,322 usable blocks // 2,048 blocks per 32,768-token request = 13
        {"name": "min_concurrency", "target": 4, "value": 13, "ok": True, "request_tokens": 32768},
        {"name": "min_kv_tokens", "target": 400000, "value": 453168, "ok": True},
    ]
    assert result.exit_code == 0
    plain = json.loads(runner.invoke(app, ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format",
                                           "json"]).stdout)
    assert plain["gates"] == []


def test_failed_gate_is_in_the_json_exits_3_and_hints_a_pasteable_command(runner):
    import json

    args = ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--min-concurrency", "100",
            "--request-tokens", "32768"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 3
    assert json.loads(result.stdout)["gates"][0]["ok"] is False
    hint = [line for line in result.stderr.splitlines() if line.startswith("hint:")][0]
    assert "…" not in hint
    command = shlex.split(hint.split(": ", 2)[2])
    assert command[:3] == ["vmemplan", "sweep", "meta-llama/Llama-3.1-8B"]
    solved = runner.invoke(app, command[1:])
    assert solved.exit_code in (0, 3), solved.output
    assert "target: at least 100 requests of 32,768 tokens at once" in solved.stdout


def test_explain_log_check_exit_codes(runner):
    logs = "/work/shared/corpus/logs/"
    import os

    if not os.path.isdir(logs):
        from pathlib import Path

        logs = str(Path(__file__).resolve().parents[2] / "tests" / "fixtures") + "/"
    failed = runner.invoke(app, ["explain-log", logs + "012-gpt-oss-120b-h100-gmu095-fail.log", "--check"])
    if failed.exit_code == 4 and "no such file" in failed.stderr:
        pytest.skip("corpus logs not available")
    assert failed.exit_code == 3
    assert "the log shows a failed startup" in failed.stderr
    ok = runner.invoke(app, ["explain-log", logs + "001-qwen2-7b-a100-80gb-gmu025.log", "--check"])
    assert ok.exit_code == 0, ok.stderr
    plain = runner.invoke(app, ["explain-log", logs + "012-gpt-oss-120b-h100-gmu095-fail.log"])
    assert plain.exit_code == 0  # without --check the explanation is the product, not a verdict


CASES = [(m, g, mml) for m in ("meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B")
         for g in ("l4", "l40s", "h100") for mml in (8192, None)]


@pytest.mark.parametrize(("model", "gpu", "max_model_len"), CASES)
def test_every_fix_the_advice_names_starts(model, gpu, max_model_len):
    """Property over a grid of deployments: a plan that starts gets no advice; one that does not
    gets fixes, each of which (applied alone to the same flags) starts when re-planned, and a
    util never above 1.0 nor above what the GPU has free."""
    from vmemplan.advice import find_fixes, highest_util
    from vmemplan.api import plan

    flags = {"model": model, "gpu": gpu, **({"max_model_len": max_model_len} if max_model_len else {})}
    p = plan(model, gpu=gpu, **({"max_model_len": max_model_len} if max_model_len else {}))
    fixes = find_fixes(flags, p)
    if p.verdict.starts:
        assert not fixes.any
        return
    base = dict(flags)
    base.pop("model"), base.pop("gpu")
    if fixes.gpu_memory_utilization is not None:
        assert fixes.gpu_memory_utilization <= min(1.0, highest_util(p))
        if fixes.util_lowered:
            base["gpu_memory_utilization"] = fixes.gpu_memory_utilization
        else:
            assert plan(model, gpu=gpu, **base, gpu_memory_utilization=fixes.gpu_memory_utilization).verdict.starts
    if fixes.max_model_len:
        assert plan(model, gpu=gpu, **{**base, "max_model_len": fixes.max_model_len}).verdict.starts
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "quantization"):
        value = getattr(fixes, name)
        if value is not None:
            assert plan(model, gpu=gpu, **{**base, name: value}).verdict.starts, (name, value)
        if name != "quantization" and value is not None and value > 2:  # the smallest that starts
            assert not plan(model, gpu=gpu, **{**base, name: value // 2}).verdict.starts, (name, value)
