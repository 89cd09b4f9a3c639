"""The exit-code contract: one row per :class:`~vmemplan.core.errors.ExitCode`, run through ``main()``.

Every failing run must leave exactly one ``error:`` line on stderr, optionally followed by one
``hint:`` line, and never a traceback; ``VMEMPLAN_DEBUG=1`` adds the traceback and keeps the code.

Most rows call :func:`vmemplan.cli.main` in-process (fast); a few run ``python -m vmemplan`` in a
subprocess so that the real entry point is covered too.  Rows for commands that other modules
add (``explain-log``, ``concurrency``, ``sweep``) skip only while that command does not exist.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vmemplan.core.errors import ExitCode

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
GOOD_LOG = LOGS / "047-qwen25-7b-h100-mnbt4096.log"
MODEL = "meta-llama/Llama-3.1-8B"


# --------------------------------------------------------------------------------------------
# helpers


def has_command(name: str) -> bool:
    """Whether the CLI has a command called ``name`` (explain-log, concurrency, sweep, ...)."""
    from typer.main import get_command

    from vmemplan.cli import app

    return name in get_command(app).commands  # type: ignore[attr-defined]


def assert_error_lines(stderr: str) -> None:
    """One ``error:`` line, at most one ``hint:`` line after it, nothing else, no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert 1 <= len(lines) <= 2, f"expected one error line (+ hint), got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: ") and len(lines[0]) > len("error: "), stderr
    if len(lines) == 2:
        assert lines[1].startswith("hint: ") and len(lines[1]) > len("hint: "), stderr


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> Run:
    from vmemplan.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(args)
    out = capsys.readouterr()
    code = exited.value.code
    return Run(0 if code is None else int(code), out.out, out.err)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def broken_registry(tmp_path: Path, file: str, text: str) -> Path:
    """A full copy of the shipped registry with one file replaced."""
    root = tmp_path / "registry"
    shutil.copytree(ROOT / "registry", root)
    write(root / file, text)
    return root


# A config whose architecture no adapter covers and which has an MoE marker, so that the
# generic-decoder fallback does not take it either.
UNKNOWN_ARCH = {
    "architectures": ["FrobnicatorForCausalLM"], "model_type": "frobnicator", "hidden_size": 1024,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000,
    "intermediate_size": 4096, "num_experts": 8, "torch_dtype": "bfloat16",
}


@dataclass
class Row:
    """One way to reach an exit code.  ``setup(tmp_path, monkeypatch)`` returns the args."""

    id: str
    code: ExitCode
    setup: Callable[[Path, pytest.MonkeyPatch], list[str]]
    needs: str | None = None  # a command added by another module
    stderr_may_be_empty: bool = False
    env: dict[str, str] = field(default_factory=dict)


def _args(*args: str) -> Callable[[Path, pytest.MonkeyPatch], list[str]]:
    return lambda _tmp, _mp: list(args)


def _bad_json(tmp: Path, _mp: pytest.MonkeyPatch) -> list[str]:
    return ["size", str(write(tmp / "m" / "config.json", '{"architectures": ["LlamaForCausalLM"], ')), "--gpu", "h100"]


def _json_array(tmp: Path, _mp: pytest.MonkeyPatch) -> list[str]:
    return ["size", str(write(tmp / "config.json", "[1, 2, 3]")), "--gpu", "h100"]


def _missing_key(tmp: Path, _mp: pytest.MonkeyPatch) -> list[str]:
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32}
    return ["size", str(write(tmp / "config.json", json.dumps(cfg))), "--gpu", "h100"]


def _unknown_arch(tmp: Path, _mp: pytest.MonkeyPatch) -> list[str]:
    return ["size", str(write(tmp / "config.json", json.dumps(UNKNOWN_ARCH))), "--gpu", "h100"]


def _garbage_log(tmp: Path, _mp: pytest.MonkeyPatch) -> list[str]:
    path = tmp / "garbage.log"
    path.write_bytes(bytes(range(256)) * 64)
    return ["explain-log", str(path)]


def _registry_bad_yaml(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    mp.setenv("VMEMPLAN_REGISTRY", str(broken_registry(tmp, "gpus.yaml", "gpus: [ {id: h100, \n  - :::\n")))
    return ["size", MODEL, "--gpu", "h100"]


def _registry_bad_schema(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    # valid YAML, but a GPU entry without the fields the schema requires
    mp.setenv("VMEMPLAN_REGISTRY", str(broken_registry(tmp, "gpus.yaml", "gpus:\n  - id: h100\n    name: x\n")))
    return ["size", MODEL, "--gpu", "h100"]


def _registry_bad_rules_pack(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    mp.setenv("VMEMPLAN_REGISTRY", str(broken_registry(tmp, "vllm/v0.33.yaml", "id: v0.33\nmin_version: [not, a, version]\n")))
    return ["size", MODEL, "--gpu", "h100"]


def _registry_missing_dir(tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    mp.setenv("VMEMPLAN_REGISTRY", str(tmp / "no-such-registry"))
    return ["size", MODEL, "--gpu", "h100"]


def _interrupt(_tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    def boom(**_flags: object) -> None:
        raise KeyboardInterrupt

    mp.setattr("vmemplan.api.plan_from_flags", boom)
    return ["size", MODEL, "--gpu", "h100"]


def _bug(_tmp: Path, mp: pytest.MonkeyPatch) -> list[str]:
    def boom(**_flags: object) -> None:
        raise RuntimeError("forced bug for the exit-code contract test")

    mp.setattr("vmemplan.api.plan_from_flags", boom)
    return ["size", MODEL, "--gpu", "h100"]


ROWS = [
    # 0 -- nothing on stderr (checked separately below)
    # 2 -- a bad flag or flag value
    Row("usage-not-an-int", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--max-model-len", "abc")),
    Row("usage-util-out-of-range", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--gpu-memory-utilization", "1.5")),
    Row("usage-util-zero", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--util", "0")),
    Row("usage-negative-len", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--max-model-len", "-3")),
    Row("usage-unknown-option", ExitCode.USAGE, _args("size", MODEL, "--gpux", "h100")),
    Row("usage-missing-gpu", ExitCode.USAGE, _args("size", MODEL)),
    Row("usage-bad-format", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--format", "yaml")),
    Row("usage-bad-kv-dtype", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--kv-cache-dtype", "int3")),
    Row("usage-bad-kv-memory", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--kv-cache-memory", "lots")),
    Row("usage-len-beyond-model", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "--max-model-len", "10000000")),
    Row("usage-tp-not-dividing-heads", ExitCode.USAGE, _args("size", MODEL, "--gpu", "h100", "-tp", "3")),
    Row("usage-unknown-command", ExitCode.USAGE, _args("frobnicate")),
    # 3 -- a plan was computed, but vLLM would not start
    Row("target-70b-on-one-l4", ExitCode.TARGET_NOT_MET,
        _args("size", "meta-llama/Llama-3.1-70B", "--gpu", "l4", "--format", "json"),
        stderr_may_be_empty=True),
    Row("target-405b-on-one-h100-table", ExitCode.TARGET_NOT_MET,
        _args("size", "meta-llama/Llama-3.1-405B", "--gpu", "h100"), stderr_may_be_empty=True),
    Row("target-concurrency-unreachable", ExitCode.TARGET_NOT_MET,
        _args("concurrency", MODEL, "--gpu", "h100", "--min-concurrency", "100000000"),
        needs="concurrency", stderr_may_be_empty=True),
    # 4 -- bad input
    Row("input-malformed-config", ExitCode.BAD_INPUT, _bad_json),
    Row("input-config-not-an-object", ExitCode.BAD_INPUT, _json_array),
    Row("input-config-missing-key", ExitCode.BAD_INPUT, _missing_key),
    Row("input-missing-local-path", ExitCode.BAD_INPUT, _args("size", "./no/such/dir/config.json", "--gpu", "h100")),
    Row("input-unknown-gpu", ExitCode.BAD_INPUT, _args("size", MODEL, "--gpu", "h9000")),
    Row("input-unknown-architecture", ExitCode.BAD_INPUT, _unknown_arch),
    Row("input-garbage-log", ExitCode.BAD_INPUT, _garbage_log, needs="explain-log"),
    Row("input-missing-log", ExitCode.BAD_INPUT, _args("explain-log", "/no/such/file.log"), needs="explain-log"),
    Row("input-concurrency-unknown-gpu", ExitCode.BAD_INPUT, _args("concurrency", MODEL, "--gpu", "h9000"),
        needs="concurrency"),
    Row("input-sweep-unknown-gpu", ExitCode.BAD_INPUT,
        _args("sweep", MODEL, "--gpu", "h9000", "--vary", "max_model_len=4096,8192"), needs="sweep"),
    # 5 -- the registry is invalid
    Row("registry-bad-yaml", ExitCode.BAD_REGISTRY, _registry_bad_yaml),
    Row("registry-bad-schema", ExitCode.BAD_REGISTRY, _registry_bad_schema),
    Row("registry-bad-rules-pack", ExitCode.BAD_REGISTRY, _registry_bad_rules_pack),
    Row("registry-missing-dir", ExitCode.BAD_REGISTRY, _registry_missing_dir),
    # 6 -- the Hub is unavailable (conftest sets HF_HUB_OFFLINE=1)
    Row("hub-offline-not-bundled", ExitCode.HUB_UNAVAILABLE, _args("size", "acme-nonexistent/Model-7B", "--gpu", "h100")),
    Row("hub-offline-revision", ExitCode.HUB_UNAVAILABLE, _args("size", MODEL, "--gpu", "h100", "--revision", "main")),
    # 130 -- interrupted
    Row("interrupted", ExitCode.INTERRUPTED, _interrupt),
    # 1 -- a bug
    Row("bug", ExitCode.BUG, _bug),
]


@pytest.fixture
def fresh_registry():
    """load_registry caches per process; rows that swap the registry must not leak."""
    from vmemplan.registry import load_registry

    load_registry.cache_clear()
    yield
    load_registry.cache_clear()


# --------------------------------------------------------------------------------------------
# the table


def test_every_exit_code_has_a_row() -> None:
    covered = {row.code for row in ROWS} | {ExitCode.OK}
    assert covered == set(ExitCode), set(ExitCode) - covered


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_exit_code_row(row: Row, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str], fresh_registry: None) -> None:
    if row.needs and not has_command(row.needs):
        pytest.skip(f"TODO: `vmemplan {row.needs}` does not exist yet")
    monkeypatch.delenv("VMEMPLAN_DEBUG", raising=False)
    args = row.setup(tmp_path, monkeypatch)
    result = run_main(args, capsys)
    assert result.code == int(row.code), f"{args}: exit {result.code}\nstderr:\n{result.stderr}"
    if row.stderr_may_be_empty and result.stderr == "":
        assert result.stdout, "exit 3 must still print the plan"
        return
    assert_error_lines(result.stderr)


def test_ok_prints_json_and_nothing_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_main(["size", MODEL, "--gpu", "h100", "--format", "json"], capsys)
    assert result.code == 0
    assert result.stderr == ""
    assert json.loads(result.stdout)["model"]["id"] == MODEL


@pytest.mark.parametrize("args", [["--version"], ["-V"], ["--help"], ["size", "--help"], ["gpus", "--format", "json"],
                                  ["models", "--format", "json"]])
def test_ok_rows(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    result = run_main(args, capsys)
    assert result.code == 0 and result.stdout and result.stderr == ""


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from vmemplan._version import __version__

    assert run_main(["--version"], capsys).stdout == f"vmemplan {__version__}\n"


def test_explain_log_ok(capsys: pytest.CaptureFixture[str]) -> None:
    if not has_command("explain-log"):
        pytest.skip("TODO: `vmemplan explain-log` does not exist yet")
    result = run_main(["explain-log", str(GOOD_LOG)], capsys)
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_target_not_met_plan_is_still_printed(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_main(["size", "meta-llama/Llama-3.1-70B", "--gpu", "l4", "--format", "json"], capsys)
    assert result.code == ExitCode.TARGET_NOT_MET
    assert json.loads(result.stdout)["verdict"]["starts"] is False
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------------------------
# VMEMPLAN_DEBUG


@pytest.mark.parametrize("row_id", ["input-unknown-gpu", "usage-negative-len", "bug", "registry-bad-yaml"])
def test_debug_shows_a_traceback_and_keeps_the_code(row_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str],
                                                     fresh_registry: None) -> None:
    row = next(r for r in ROWS if r.id == row_id)
    args = row.setup(tmp_path, monkeypatch)
    monkeypatch.setenv("VMEMPLAN_DEBUG", "1")
    result = run_main(args, capsys)
    assert result.code == int(row.code)
    assert "Traceback (most recent call last)" in result.stderr
    assert any(line.startswith("error: ") for line in result.stderr.splitlines())


# --------------------------------------------------------------------------------------------
# the real entry point, in a subprocess


def _subprocess(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("VMEMPLAN_DEBUG", "VMEMPLAN_REGISTRY")}
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    return subprocess.run([sys.executable, "-m", "vmemplan", *args], capture_output=True, text=True,
                          env=full_env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize(("args", "code"), [
    (["size", MODEL, "--gpu", "h100", "--format", "json"], ExitCode.OK),
    (["size", MODEL, "--gpu", "h100", "--max-model-len", "abc"], ExitCode.USAGE),
    (["size", MODEL, "--gpu", "h9000"], ExitCode.BAD_INPUT),
    (["size", "acme-nonexistent/Model-7B", "--gpu", "h100"], ExitCode.HUB_UNAVAILABLE),
], ids=["ok", "usage", "bad-input", "hub"])
def test_entry_point_subprocess(args: list[str], code: ExitCode) -> None:
    result = _subprocess(args, HF_HUB_OFFLINE="1")
    assert result.returncode == int(code), result.stderr
    if code == ExitCode.OK:
        assert result.stderr == ""
        json.loads(result.stdout)
    else:
        assert_error_lines(result.stderr)


def test_entry_point_registry_env(tmp_path: Path) -> None:
    root = broken_registry(tmp_path, "gpus.yaml", "gpus: [ {id: h100, \n  - :::\n")
    result = _subprocess(["size", MODEL, "--gpu", "h100"], VMEMPLAN_REGISTRY=str(root))
    assert result.returncode == ExitCode.BAD_REGISTRY
    assert_error_lines(result.stderr)


def test_entry_point_debug_traceback() -> None:
    result = _subprocess(["size", MODEL, "--gpu", "h9000"], VMEMPLAN_DEBUG="1")
    assert result.returncode == ExitCode.BAD_INPUT
    assert "Traceback (most recent call last)" in result.stderr
    assert "error: unknown GPU" in result.stderr


def test_root_no_color_flag_reaches_commands(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")  # would colour the table were it not for --no-color
    result = run_main(["--no-color", "size", MODEL, "--gpu", "h100"], capsys)
    assert result.code == 0
    assert "\x1b[" not in result.stdout
    assert os.environ.get("NO_COLOR") == "1"
