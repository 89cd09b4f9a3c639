"""Shell completions: static scripts generated from the CLI and the registry, no Python per TAB.

The files under ``completions/`` are generated, never hand-edited.  When the registry or a
command's options change this test fails; regenerate them with::

    python -m vmemplan.cli.completions
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vmemplan.cli._common import gpu_completion, model_completion
from vmemplan.cli.completions import SHELLS as COMPLETION_SHELLS
from vmemplan.cli.completions import render as completion_script

ROOT = Path(__file__).resolve().parents[1]
COMPLETIONS = ROOT / "completions"
REGEN = "python -m vmemplan.cli.completions"


@pytest.mark.parametrize("shell", sorted(COMPLETION_SHELLS))
def test_shipped_script_is_the_generated_one(shell: str) -> None:
    shipped = COMPLETIONS / COMPLETION_SHELLS[shell]
    assert shipped.is_file(), f"missing {shipped}; run {REGEN}"
    assert shipped.read_text(encoding="utf-8") == completion_script(shell), f"stale {shipped}; run {REGEN}"


@pytest.mark.parametrize("shell", sorted(COMPLETION_SHELLS))
def test_scripts_start_no_python(shell: str) -> None:
    text = (COMPLETIONS / COMPLETION_SHELLS[shell]).read_text(encoding="utf-8")
    assert "python" not in text.replace("python -m vmemplan.cli.completions", "")
    assert "_VMEMPLAN_COMPLETE" not in text  # typer's call-back-into-Python protocol


@pytest.mark.parametrize("shell", sorted(COMPLETION_SHELLS))
def test_scripts_carry_the_values(shell: str) -> None:
    text = (COMPLETIONS / COMPLETION_SHELLS[shell]).read_text(encoding="utf-8")
    for value in ("h100", "fp8_e4m3", "bfloat16", "table log json tree", "table csv json",
                  "meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct", "max-model-len="):
        assert value in text, value
    for hidden in ("aiconfigurator-trimmed", "unknown/"):
        assert hidden not in text


def _bash(words: str) -> list[str]:
    """What bash offers for COMP_WORDS=(words) with the cursor on the last word."""
    script = (f"source {COMPLETIONS / 'vmemplan.bash'}; COMP_WORDS=({words}); "
              'COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _vmemplan; printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, check=True)
    return [w for w in out.stdout.splitlines() if w]


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


@needs_bash
def test_bash_gpu_completion_is_case_insensitive() -> None:
    offered = _bash("vmemplan size --gpu H1")
    assert "h100" in offered and "h100-pcie" in offered
    assert all(o.lower().startswith("h1") for o in offered)


@needs_bash
def test_bash_completes_values() -> None:
    assert "fp8_e5m2" in _bash("vmemplan size --kv-cache-dtype FP8")
    assert _bash('vmemplan size --dtype ""') == ["auto", "bfloat16", "float16", "half", "float32", "float"]
    assert _bash('vmemplan gpus --format ""') == ["table", "json"]
    assert _bash('vmemplan sweep x --format ""') == ["table", "csv", "json"]
    assert "size" in _bash("vmemplan s") and "sweep" in _bash("vmemplan s")
    assert "meta-llama/Llama-3.1-8B" in _bash("vmemplan size META-LLAMA/llama-3.1-")
    assert "max-model-len=" in _bash("vmemplan sweep x --vary max")
    assert "-tp" in _bash("vmemplan size x -t")


@needs_bash
def test_bash_tab_answers_without_starting_python() -> None:
    start = time.perf_counter()
    for _ in range(5):
        _bash("vmemplan size --gpu h")
    per_tab = (time.perf_counter() - start) / 5
    # a bash start plus a match; a Python start with typer alone is several times this
    assert per_tab < 0.5, per_tab


def test_show_and_install_completion(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env.pop("XDG_DATA_HOME", None)
    shown = subprocess.run([sys.executable, "-m", "vmemplan", "--show-completion", "bash"], capture_output=True,
                           text=True, env=env, cwd=ROOT, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == completion_script("bash")
    installed = subprocess.run([sys.executable, "-m", "vmemplan", "--install-completion", "fish"],
                               capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert installed.returncode == 0, installed.stderr
    path = tmp_path / ".config" / "fish" / "completions" / "vmemplan.fish"
    assert path.read_text(encoding="utf-8") == completion_script("fish")
    bad = subprocess.run([sys.executable, "-m", "vmemplan", "--show-completion", "tcsh"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: no completion for shell 'tcsh'")


def test_gpu_completion_function_is_case_insensitive_and_never_raises(monkeypatch, tmp_path) -> None:
    assert "h100" in gpu_completion("H1")
    assert gpu_completion("zzz-no-such") == []
    monkeypatch.setenv("VMEMPLAN_REGISTRY", str(tmp_path))  # no gpus.yaml there
    assert gpu_completion("h") == []


def test_gpu_completion_lists_no_alias_with_spaces() -> None:
    # aliases such as "H100 SXM5 80GB" would split into several shell words
    assert all(" " not in key for key in gpu_completion(""))


def test_model_completion_function() -> None:
    assert "meta-llama/Llama-3.1-8B" in model_completion("META-LLAMA/llama-3.1")
    assert model_completion("no-such-org/") == []
