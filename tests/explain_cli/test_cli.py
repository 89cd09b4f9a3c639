"""`vmemplan explain-log` end to end through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmemplan.cli import app

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
GIB = 2**30


def _log(prefix: str) -> Path:
    return next(LOGS.glob(prefix + "-*.log"))


def test_file_table_output(runner):
    r = runner.invoke(app, ["explain-log", str(_log("007"))])
    assert r.exit_code == 0, r.output
    assert "Loading model weights took 14.9888 GB" in r.output
    assert "Checks:" in r.output and "Suggestions:" in r.output
    # the corpus header names the model: the model checks say which config they used
    assert "meta-llama/Llama-3.1-8B-Instruct from the bundled registry" in r.output


def test_stdin_pipe_and_dash(runner):
    data = _log("001").read_bytes()
    for args in (["explain-log"], ["explain-log", "-"]):
        r = runner.invoke(app, args, input=data)
        assert r.exit_code == 0, r.output
        assert "Available KV cache memory: 5.01 GiB" in r.output


def test_tty_prompts_then_reads_until_eof(runner, monkeypatch):
    import sys

    mod = sys.modules["vmemplan.cli.explain_log"]

    monkeypatch.setattr(mod, "_stdin_is_tty", lambda: True)
    r = runner.invoke(app, ["explain-log"], input=_log("001").read_text())
    assert r.exit_code == 0
    assert "Ctrl-D" in r.stderr
    assert "GPU KV cache size: 93,872 tokens" in r.stdout


@pytest.mark.parametrize("data, why", [
    (b"", "is empty"),
    (b"   \n\n", "is empty"),
    (b"hello\nthis is not a vLLM log\n", "no vLLM startup found"),
    (bytes(range(256)) * 40, "binary file"),
])
def test_bad_input_is_badlog_exit_4(runner, data, why):
    r = runner.invoke(app, ["explain-log", "-"], input=data)
    assert r.exit_code == 4
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and why in lines[0]
    assert lines[1].startswith("hint: ")
    assert "Traceback" not in r.output


def test_missing_file_and_directory(runner, tmp_path):
    assert runner.invoke(app, ["explain-log", str(tmp_path / "nope.log")]).exit_code == 4
    assert runner.invoke(app, ["explain-log", str(tmp_path)]).exit_code == 4


def test_several_startups_are_each_explained(runner, tmp_path):
    both = tmp_path / "two.log"
    both.write_bytes(_log("001").read_bytes() + b"\n" + _log("003").read_bytes())
    r = runner.invoke(app, ["explain-log", str(both), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [s["figures"]["tensor_parallel_size"] for s in doc["startups"]] == [1, 2]
    r = runner.invoke(app, ["explain-log", str(both)])
    assert "Startup 1 of 2" in r.stdout and "Startup 2 of 2" in r.stdout


def test_json_what_if_contract(runner):
    # 001 -> tp 2, model unknown in the bundle: weights halve (14.2488 / 2), NCCL +0.334 GiB,
    # KV 5.01 + 7.1244 - 0.334 = 11.80 GiB (003 printed 12.02).
    r = runner.invoke(app, ["explain-log", str(_log("001")), "--format", "json",
                            "--what-if", "tensor-parallel-size=2"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    (w,) = doc["startups"][0]["what_if"]
    assert w["changes"] == {"tensor-parallel-size": "2"}
    for key in ("available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency", "starts", "measured",
                "estimated"):
        assert key in w
    assert abs(w["available_kv_cache_bytes"] / GIB - 11.80) < 0.01
    assert w["starts"] is True
    assert "available_kv_cache_bytes" in w["measured"] and "weights_bytes" in w["estimated"]


def test_all_changes_apply_together(runner):
    # 047 (0.11.0, H100, Qwen2.5-7B-Instruct, 56.25 GiB, 1,053,328 tokens; model not bundled):
    # fp8 halves the bytes per token, so the same 56.25 GiB holds ~2x the tokens;
    # max-model-len 32768 then sets the concurrency: blocks / ceil(32768 / 16).
    r = runner.invoke(app, ["explain-log", str(_log("047")), "--format", "json",
                            "--what-if", "kv-cache-dtype=fp8", "--what-if", "max-model-len=32768"])
    (w,) = json.loads(r.stdout)["startups"][0]["what_if"]
    assert w["changes"] == {"kv-cache-dtype": "fp8", "max-model-len": "32768"}
    assert abs(w["kv_cache_tokens"] / (2 * 1053328) - 1) < 0.001
    blocks = w["kv_cache_tokens"] // 16
    assert w["max_concurrency"] == pytest.approx(blocks / 2048, abs=0.01)


def test_util_what_if_with_gpu(runner):
    # 013: -2.14 GiB at the default 0.9 on an H100 (79.2048 GiB): util 0.95 adds 3.960 GiB -> 1.82 GiB
    r = runner.invoke(app, ["explain-log", str(_log("013")), "--gpu", "h100", "--format", "json",
                            "--what-if", "gpu-memory-utilization=0.95"])
    (w,) = json.loads(r.stdout)["startups"][0]["what_if"]
    assert abs(w["available_kv_cache_bytes"] / GIB - (-2.14 + 0.05 * 79.2048)) < 0.06


@pytest.mark.parametrize("bad", ["foo=1", "gpu-memory-utilization=1.5", "max-model-len=abc", "nonsense",
                                 "kv-cache-dtype=fp7"])
def test_bad_what_if_is_usage_error(runner, bad):
    r = runner.invoke(app, ["explain-log", str(_log("001")), "--what-if", bad])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --what-if")


def test_unknown_model_is_hub_unavailable_offline(runner):
    r = runner.invoke(app, ["explain-log", str(_log("001")), "--model", "nope/not-a-model"])
    assert r.exit_code == 6
    assert "Hub access is off" in r.stderr


def test_model_option_links_and_checks(runner):
    # Qwen/Qwen2.5-7B has Qwen2-7B's shapes: 2 x 4 x 128 x 28 x 2 B = 57,344 B per token;
    # 5.01 GiB / (57,344 x 16) = 5,862..5,868 blocks -> 93,792..93,888 tokens; the log says 93,872.
    r = runner.invoke(app, ["explain-log", str(_log("001")), "--model", "Qwen/Qwen2.5-7B", "--format", "json"])
    checks = {c["name"]: c for c in json.loads(r.stdout)["startups"][0]["checks"]}
    assert checks["tokens_vs_available_bytes"]["ok"]
    assert "Qwen/Qwen2.5-7B from the bundled registry" in checks["tokens_vs_available_bytes"]["detail"]


def test_local_path_in_log_maps_to_bundled_id(runner):
    text = (
        "INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "INFO 01-01 00:00:01 [utils.py:1] non-default args: {'model': '/model-cache/models/Qwen/Qwen3-8B',"
        " 'max_model_len': 8192}\n"
        "INFO 01-01 00:00:02 [gpu_model_runner.py:1] Model loading took 15.2683 GiB and 3.0 seconds\n"
        "INFO 01-01 00:00:03 [gpu_worker.py:1] Available KV cache memory: 10.00 GiB\n"
        "INFO 01-01 00:00:03 [kv_cache_utils.py:1] GPU KV cache size: 72,816 tokens\n"
        "INFO 01-01 00:00:03 [kv_cache_utils.py:1] Maximum concurrency for 8,192 tokens per request: 8.89x\n"
    )
    r = runner.invoke(app, ["explain-log", "-", "--format", "json"], input=text)
    assert r.exit_code == 0, r.output
    checks = {c["name"]: c for c in json.loads(r.stdout)["startups"][0]["checks"]}
    # Qwen3-8B: 36 layers x 8 kv heads x 128 x 2 (K, V) x 2 B = 147,456 B per token;
    # 10.00 GiB // (147,456 x 16) = 4,551 blocks = 72,816 tokens
    tok = checks["tokens_vs_available_bytes"]
    assert tok["ok"], tok["detail"]
    assert "last two components of the path" in tok["detail"]


def test_help_lists_what_if(runner):
    r = runner.invoke(app, ["explain-log", "--help"])
    assert r.exit_code == 0
    assert "--what-if" in r.output and "--model" in r.output


def test_explain_log_fits_the_width_and_cuts_nothing(monkeypatch):
    """Every line fits 80 columns; a long log line continues indented on the next lines, whole."""
    from pathlib import Path

    from typer.testing import CliRunner

    from vmemplan.cli import app as the_app

    log = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "025-qwen3-32b-tp8-fp8kv.log"
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(the_app, ["explain-log", str(log)]).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    joined = " ".join(line.strip() for line in out.splitlines())
    for raw in log.read_text().splitlines():
        if "GPU KV cache size:" in raw:  # a long line, present whole once its breaks are joined
            body = raw.split("] ", 1)[-1]
            assert " ".join(body.split()) in joined
