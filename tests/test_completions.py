"""Shell completions: the shipped scripts match what the CLI generates, and TAB completes.

The files under ``completions/`` are generated, never hand-edited.  When typer changes its
templates this test fails; regenerate them with::

    python -c "from vmemplan.cli._common import write_completion_files as w; w()"
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vmemplan.cli._common import COMPLETION_SHELLS, completion_script, gpu_completion, model_completion

ROOT = Path(__file__).resolve().parents[1]
COMPLETIONS = ROOT / "completions"
REGEN = 'python -c "from vmemplan.cli._common import write_completion_files as w; w()"'


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("_TYPER") and not k.startswith("COMP_")}
    env.pop("_VMEMPLAN_COMPLETE", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vmemplan", *args], capture_output=True, text=True,
                          env=_env(**env), cwd=ROOT, timeout=60)


@pytest.mark.parametrize("shell", sorted(COMPLETION_SHELLS))
def test_shipped_script_is_the_generated_one(shell: str) -> None:
    shipped = COMPLETIONS / COMPLETION_SHELLS[shell]
    assert shipped.is_file(), f"missing {shipped}; run {REGEN}"
    assert shipped.read_text(encoding="utf-8") == completion_script(shell), f"stale {shipped}; run {REGEN}"


def test_typer_private_helper_still_exists_and_agrees() -> None:
    # completion_script wraps typer's private get_completion_script; if typer moves or
    # renames it, this says so directly instead of failing deep inside the helper.
    from typer._completion_shared import get_completion_script

    direct = get_completion_script(prog_name="vmemplan", complete_var="_VMEMPLAN_COMPLETE", shell="bash")
    assert completion_script("bash") == direct + "\n"


@pytest.mark.parametrize("shell", sorted(COMPLETION_SHELLS))
def test_scripts_call_back_into_vmemplan(shell: str) -> None:
    text = (COMPLETIONS / COMPLETION_SHELLS[shell]).read_text(encoding="utf-8")
    assert "_VMEMPLAN_COMPLETE=complete_" + shell in text
    assert "vmemplan" in text and "python" not in text  # the installed command, not `python -m`


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_the_shipped_script(shell: str) -> None:
    # With detection disabled typer's --show-completion takes the shell as its value.
    result = _run(["--show-completion", shell], _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == completion_script(shell)


def test_install_completion_writes_into_home(tmp_path: Path) -> None:
    result = _run(["--install-completion", "bash"], _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1",
                  HOME=str(tmp_path))
    assert result.returncode == 0, result.stderr
    installed = tmp_path / ".bash_completions" / "vmemplan.sh"
    assert installed.read_text(encoding="utf-8") + "\n" == completion_script("bash")
    assert f"source '{installed}'" in (tmp_path / ".bashrc").read_text(encoding="utf-8")


def _bash_complete(words: str) -> list[str]:
    """What bash would get for COMP_WORDS=words with the cursor on the last word."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    result = _run([], _VMEMPLAN_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword))
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_bash_completes_gpu_h1_through_python_dash_m() -> None:
    # `python -m vmemplan` must answer to _VMEMPLAN_COMPLETE too (main passes prog_name).
    offered = _bash_complete("vmemplan size --gpu h1")
    assert "h100" in offered and "h100-pcie" in offered
    assert all(o.lower().startswith("h1") for o in offered)
    assert "h200" not in offered  # does not start with h1


def test_bash_completes_gpu_h_offers_h100_and_h200() -> None:
    offered = _bash_complete("vmemplan size meta-llama/Llama-3.1-8B --gpu h")
    assert {"h100", "h200"} <= set(offered)
    assert "a100" not in offered


def test_bash_completes_bundled_model_ids() -> None:
    offered = _bash_complete("vmemplan size meta-llama/Llama-3.1-")
    assert "meta-llama/Llama-3.1-8B" in offered
    assert all(o.startswith("meta-llama/Llama-3.1-") for o in offered)


def test_bash_completes_command_names() -> None:
    offered = _bash_complete("vmemplan s")
    assert "size" in offered


def test_zsh_and_fish_complete_gpu() -> None:
    zsh = _run([], _VMEMPLAN_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="vmemplan size --gpu h1")
    assert zsh.returncode == 0 and '"h100"' in zsh.stdout and '"h200"' not in zsh.stdout
    fish = _run([], _VMEMPLAN_COMPLETE="complete_fish", _TYPER_COMPLETE_FISH_ACTION="get-args",
                _TYPER_COMPLETE_ARGS="vmemplan size --gpu h2")
    assert fish.returncode == 0
    assert "h200" in fish.stdout.split() and "h100" not in fish.stdout.split()


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
