"""Security: code from a model repository is never run, and an access token never printed.

* A local model directory whose config.json has an ``auto_map`` pointing at Python files that
  would create a marker file when imported: vmemplan reads the JSON and nothing else.
* A sentinel ``HF_TOKEN`` never appears in stdout, stderr or JSON of any command, on success
  and on every error path (including VMEMPLAN_DEBUG=1 tracebacks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SENTINEL = "hf_SENTINELsecret123"
LOG = ROOT / "tests" / "fixtures" / "logs" / "047-qwen25-7b-h100-mnbt4096.log"
LLAMA = json.loads((ROOT / "registry" / "models" / "meta-llama--Llama-3.1-8B.json").read_text(encoding="utf-8"))


def _has_command(name: str) -> bool:
    from typer.main import get_command

    from vmemplan.cli import app

    return name in get_command(app).commands  # type: ignore[attr-defined]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from vmemplan.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(args)
    out = capsys.readouterr()
    return int(exited.value.code or 0), out.out, out.err


# --------------------------------------------------------------------------------------------
# auto_map: read, never executed


def _evil_model_dir(tmp_path: Path, architectures: list[str]) -> tuple[Path, Path]:
    marker = tmp_path / "PWNED"
    model = tmp_path / "evil-model"
    model.mkdir()
    payload = f"open({str(marker)!r}, 'w').write('imported')\n"
    for name in ("configuration_evil.py", "modeling_evil.py", "__init__.py", "tokenization_evil.py"):
        (model / name).write_text(payload, encoding="utf-8")
    config = dict(LLAMA, architectures=architectures, model_type="evil", auto_map={
        "AutoConfig": "configuration_evil.EvilConfig",
        "AutoModel": "modeling_evil.EvilModel",
        "AutoModelForCausalLM": "modeling_evil.EvilForCausalLM",
        "AutoTokenizer": ["tokenization_evil.EvilTokenizer", None],
    })
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return model, marker


@pytest.mark.parametrize(("architectures", "codes"), [
    (["LlamaForCausalLM"], {0, 3}),  # a known architecture: planned from the JSON alone
    (["EvilForCausalLM"], {0, 3, 4}),  # unknown: planned as a generic decoder, or refused -- never imported
], ids=["known-arch", "custom-arch"])
def test_auto_map_code_is_never_imported(architectures: list[str], codes: set[int], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    model, marker = _evil_model_dir(tmp_path, architectures)
    for fmt in ("json", "table"):
        code, out, err = _run(["size", str(model), "--gpu", "h100", "--format", fmt], capsys)
        assert code in codes, err
        assert "Traceback" not in err
    assert not marker.exists(), "a .py file of the model directory was executed"
    assert not any("evil" in name for name in sys.modules)


def test_auto_map_not_imported_through_other_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, marker = _evil_model_dir(tmp_path, ["LlamaForCausalLM"])
    runs = [["size", str(model / "config.json"), "--gpu", "h100", "--format", "log"]]
    if _has_command("concurrency"):
        runs.append(["concurrency", str(model), "--gpu", "h100"])
    if _has_command("sweep"):
        runs.append(["sweep", str(model), "--gpu", "h100", "--vary", "max-model-len=4096,8192"])
    for args in runs:
        _run(args, capsys)
    assert not marker.exists()


def test_auto_map_not_imported_in_a_fresh_process(tmp_path: Path) -> None:
    # a subprocess with the model directory as the working directory: nothing on sys.path helps
    model, marker = _evil_model_dir(tmp_path, ["LlamaForCausalLM"])
    env = {k: v for k, v in os.environ.items() if k != "VMEMPLAN_DEBUG"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-m", "vmemplan", "size", ".", "--gpu", "h100", "--format", "json"],
                            cwd=model, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 3), result.stderr
    assert not marker.exists()


def test_no_trust_remote_code_anywhere() -> None:
    # the option that would make transformers run a repository's code does not exist in vmemplan
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "vmemplan").rglob("*.py")]
    assert not any("trust_remote_code=True" in text for text in sources)


# --------------------------------------------------------------------------------------------
# the token


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HF_TOKEN", SENTINEL)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", SENTINEL)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return SENTINEL


def _assert_no_token(*texts: str) -> None:
    for text in texts:
        assert SENTINEL not in text
        assert "SENTINELsecret" not in text


def _bad_config(tmp_path: Path) -> str:
    path = tmp_path / "config.json"
    path.write_text('{"architectures": [', encoding="utf-8")
    return str(path)


COMMANDS: list[tuple[str, list[str]]] = [
    ("size-json", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json"]),
    ("size-table", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"]),
    ("size-log", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "log"]),
    ("size-tree", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "tree"]),
    ("size-not-met", ["size", "meta-llama/Llama-3.1-70B", "--gpu", "l4", "--format", "json"]),
    ("gpus", ["gpus", "--format", "json"]),
    ("models", ["models"]),
    ("version", ["--version"]),
    ("err-unknown-gpu", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "nope"]),
    ("err-hub-offline", ["size", "acme-nonexistent/Model-7B", "--gpu", "h100"]),
    ("err-token-in-id", ["size", f"{SENTINEL}/model", "--gpu", "h100"]),
    ("err-token-in-path", ["size", f"./{SENTINEL}/config.json", "--gpu", "h100"]),
    ("err-token-as-gpu", ["size", "meta-llama/Llama-3.1-8B", "--gpu", SENTINEL]),
    ("err-token-as-flag-value", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-model-len", SENTINEL]),
    ("err-revision", ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--revision", SENTINEL]),
    ("explain-log", ["explain-log", str(LOG), "--format", "json"]),
    ("explain-log-missing", ["explain-log", f"/no/{SENTINEL}.log"]),
    ("concurrency", ["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100"]),
    ("sweep", ["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", "max-model-len=4096,8192"]),
]


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_token_never_printed(name: str, args: list[str], debug: bool, token: str, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    if args[0] in ("explain-log", "concurrency", "sweep") and not _has_command(args[0]):
        pytest.skip(f"TODO: `vmemplan {args[0]}` does not exist yet")
    if debug:
        monkeypatch.setenv("VMEMPLAN_DEBUG", "1")
    code, out, err = _run(args, capsys)
    _assert_no_token(out, err)
    if name.startswith("err-"):
        assert code != 0


def test_token_never_printed_by_a_bug(token: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def boom(**_flags: object) -> None:
        raise RuntimeError(f"request failed with Authorization: Bearer {token}")

    monkeypatch.setattr("vmemplan.api.plan_from_flags", boom)
    for debug in ("", "1"):
        monkeypatch.setenv("VMEMPLAN_DEBUG", debug)
        code, out, err = _run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"], capsys)
        assert code == 1
        _assert_no_token(out, err)
        assert "***" in err  # the message is kept, the token replaced


def test_token_never_in_a_malformed_config_error(token: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["size", _bad_config(tmp_path), "--gpu", "h100"], capsys)
    assert code == 4
    _assert_no_token(out, err)


def test_token_never_in_api_results(token: str) -> None:
    from vmemplan import plan

    result = plan("meta-llama/Llama-3.1-8B", gpu="h100")
    _assert_no_token(json.dumps(result.to_json()), repr(result))
