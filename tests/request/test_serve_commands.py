"""Every serve command of the corpus logs parses as vLLM parses it, each flag classified.

The fixture is tests/request/fixtures/serve_commands.yaml (extracted from the corpus logs'
headers and their "non-default args" lines by bench/vllm_args/extract_corpus_commands.py).
A command is read against the argument table of the release its log names (older releases use
the newest table plus the flags removed since, registry/vllm/args/removed.yaml).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vmemplan.request.vllm_args import load_arg_table, parse_non_default_args, parse_vllm_command

FIXTURE = Path(__file__).parent / "fixtures" / "serve_commands.yaml"
COMMANDS = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))


def test_the_corpus_has_at_least_forty_commands():
    assert len(COMMANDS) >= 40


@pytest.mark.parametrize("entry", COMMANDS, ids=[f"{e['log'][:3]}-{e['kind']}-{i}" for i, e in enumerate(COMMANDS)])
def test_every_corpus_command_parses_and_every_flag_is_classified(entry):
    version = entry["vllm_version"]
    if entry["kind"] == "command":
        parsed = parse_vllm_command(entry["command"], vllm_version=version)
    else:
        parsed = parse_non_default_args(entry["command"], vllm_version=version)
    assert parsed.model, "every corpus command names its model"
    table = load_arg_table(version)
    classified = set(parsed.modelled) | set(parsed.no_memory_effect) | set(parsed.not_modelled)
    for dest in parsed.args:
        if dest in ("model", "model_tag"):
            continue
        assert table.by_dest[dest].name in classified
    # the three classes never overlap
    assert len(classified) == len(parsed.modelled) + len(parsed.no_memory_effect) + len(parsed.not_modelled)


def test_a_header_command_and_its_logged_args_agree():
    """Log 003: the command in the header and vLLM's own "non-default args" line give the same
    engine arguments (vLLM logs model_tag and model both)."""
    entries = [e for e in COMMANDS if e["log"].startswith("003-")]
    command = next(e for e in entries if e["kind"] == "command")
    logged = next(e for e in entries if e["kind"] == "non_default_args")
    a = parse_vllm_command(command["command"], vllm_version=command["vllm_version"])
    b = parse_non_default_args(logged["command"], vllm_version=logged["vllm_version"])
    assert a.model == b.model == "Qwen2-7B-Instruct"
    for dest in ("port", "max_model_len", "tensor_parallel_size", "gpu_memory_utilization"):
        assert a.args[dest] == b.args[dest]


def test_a_logged_command_replans_a_priori():
    """Log 003's "non-default args" (Qwen2-7B-Instruct is not bundled, so the line is re-pointed
    at a bundled model): the plan takes the logged flags, and the port is listed as no effect."""
    from vmemplan.request.engine import plan_from_logged_args

    line = ("non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B', 'port': 8081, "
            "'model': 'meta-llama/Llama-3.1-8B', 'max_model_len': 16384, 'tensor_parallel_size': 2, "
            "'gpu_memory_utilization': 0.25}")
    plan, parsed = plan_from_logged_args(line, gpu="a100-40g", vllm_version="0.10.1.1")
    assert plan.engine.max_model_len == 16384 and plan.engine.tensor_parallel_size == 2
    assert plan.engine.gpu_memory_utilization == 0.25
    assert parsed.no_memory_effect == ("--port",)


def _readme_commands() -> list[list[str]]:
    """Every vmemplan command line in the README (its `$ vmemplan …` examples), as argv lists."""
    import shlex

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    out = []
    for line in readme.splitlines():
        if line.startswith("$ vmemplan "):
            out.append(shlex.split(line[len("$ vmemplan "):].split(" | ")[0]))
    return out


def test_the_readme_pastes_real_commands():
    assert any("--" in argv and "serve" in argv for argv in _readme_commands())


@pytest.mark.parametrize("argv", _readme_commands(), ids=lambda a: " ".join(a)[:60])
def test_every_readme_command_parses(argv, capsys):
    """The README's commands (the pasted `vllm serve` line included) are taken as vLLM takes
    them: none is a usage error unless the README shows it as one (the removed --swap-space and
    vLLM's batched-tokens refusal, both exit 2 on purpose)."""
    from tests.request._cli import run

    r = run(argv, capsys)
    shows_refusal = "--swap-space" in argv or ("--max-num-batched-tokens" in argv and "100" in argv)
    assert (r.code == 2) == shows_refusal, (argv, r.stderr)
