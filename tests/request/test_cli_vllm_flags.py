"""`vmemplan size` takes every vLLM flag and a whole pasted command."""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run

MODEL = "meta-llama/Llama-3.1-8B"


def _json(args, capsys):
    cut = args.index("--") if "--" in args else len(args)
    r = run([*args[:cut], "--format", "json", *args[cut:]], capsys)
    assert r.code == 0, r.stderr
    return json.loads(r.stdout)


def test_a_pasted_serve_command_plans_like_vmemplans_own_flags(capsys):
    pasted = _json(["size", "--gpu", "h100", "--", "vllm", "serve", MODEL, "--max-model-len", "32k",
                    "--host", "0.0.0.0", "--port", "8000", "-tp", "1"], capsys)
    own = _json(["size", MODEL, "--gpu", "h100", "--max-model-len", "32000"], capsys)
    assert pasted["engine"]["max_model_len"] == 32_000
    assert pasted["kv_cache"]["num_blocks"] == own["kv_cache"]["num_blocks"]
    assert pasted["per_rank"] == own["per_rank"]
    assert pasted["vllm_args"]["program"] == "serve"
    assert pasted["vllm_args"]["no_memory_effect"] == ["--host", "--port"]
    assert set(pasted["vllm_args"]["modelled"]) == {"--max-model-len", "--tensor-parallel-size"}


def test_vllm_flags_mixed_with_vmemplans(capsys):
    d = _json(["size", MODEL, "--gpu", "h100", "--host", "0.0.0.0", "--port", "8000", "--trust-remote-code",
               "--enable-chunked-prefill", "--max-model-len", "32K", "--max-num-batched-tokens", "8k",
               "--util", "0.9"], capsys)
    assert d["engine"]["max_model_len"] == 32_768 and d["engine"]["max_num_batched_tokens"] == 8_000
    assert d["engine"]["gpu_memory_utilization"] == 0.9
    assert d["vllm_args"]["no_memory_effect"] == ["--host", "--port", "--trust-remote-code"]
    assert d["vllm_args"]["not_modelled"] == ["--enable-chunked-prefill"]


def test_not_modelled_flags_are_named_and_their_figures_estimated(capsys):
    d = _json(["size", MODEL, "--gpu", "h100", "--cpu-offload-params", "experts", "--disable-custom-all-reduce"],
              capsys)
    assert d["vllm_args"]["not_modelled"] == ["--cpu-offload-params", "--disable-custom-all-reduce"]
    warning = next(w for w in d["warnings"] if w.startswith("not modelled:"))
    assert "--cpu-offload-params" in warning and "--disable-custom-all-reduce" in warning
    prov = {p["figure"]: p for p in d["provenance"]}
    assert prov["weights_bytes"]["kind"] == "estimated" and "--cpu-offload-params" in prov["weights_bytes"]["source"]
    assert prov["available_kv_cache_bytes"]["kind"] == "estimated"
    assert prov["kv_cache.bytes_per_token"]["kind"] == "exact"  # offloading does not touch the per-token KV bytes


def test_table_output_lists_flags_without_memory_effect(capsys):
    r = run(["size", MODEL, "--gpu", "h100", "--port", "8000", "--no-color"], capsys)
    assert r.code == 0
    assert "no memory effect (accepted, nothing to plan): --port" in " ".join(r.stdout.split())


def test_config_file_on_the_command_line(tmp_path, capsys):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"model: {MODEL}\nmax-model-len: 16384\nport: 8000\n", encoding="utf-8")
    d = _json(["size", "--gpu", "h100", "--config", str(cfg)], capsys)
    assert d["engine"]["max_model_len"] == 16384 and d["model"]["id"] == MODEL


def test_an_unknown_flag_is_exit_2_with_a_did_you_mean(capsys):
    r = run(["size", MODEL, "--gpu", "h100", "--max-modle-len", "4096"], capsys)
    assert r.code == 2
    error, hint = error_lines(r.stderr)
    assert "--max-modle-len" in error and "--max-model-len" in hint


def test_concurrency_and_sweep_take_vllm_flags(capsys):
    assert run(["concurrency", MODEL, "--gpu", "h100", "--port", "8000", "--max-model-len", "8k"], capsys).code == 0
    assert run(["sweep", MODEL, "--gpu", "h100", "--host", "::", "--vary", "max-model-len=4096,8192"],
               capsys).code == 0


def test_python_module_command_after_double_dash(capsys):
    d = _json(["size", "--gpu", "l40s", "--", "python", "-m", "vllm.entrypoints.openai.api_server",
               "--model", MODEL, "--max-model-len", "8192", "--gpu-memory-utilization", "0.85"], capsys)
    assert d["engine"]["max_model_len"] == 8192 and d["engine"]["gpu_memory_utilization"] == 0.85
    assert d["vllm_args"]["program"] == "api_server"


def test_vmemplan_options_after_the_pasted_command_are_pointed_before_it(capsys):
    r = run(["size", "--gpu", "h100", "--", "vllm", "serve", MODEL, "--format", "json"], capsys)
    assert r.code == 2
    _, hint = error_lines(r.stderr)
    assert "--format is vmemplan's option: write it before `--`" in hint
