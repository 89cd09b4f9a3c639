"""Static shell completions, generated from the CLI and the registry at build time.

A TAB must answer at once, so the scripts in ``completions/`` start no Python: they carry the
commands, each command's options, and the values worth offering (GPU ids and aliases, bundled
models and their aliases, ``--kv-cache-dtype``, ``--dtype``, each command's ``--format``, the
flags ``--vary`` takes, the outputs ``--chart`` draws) as data, matched case-insensitively.
When the registry changes, regenerate them (a test fails until then)::

    python -m vmemplan.cli.completions          # rewrites completions/vmemplan.{bash,zsh,fish}

``vmemplan --show-completion SHELL`` prints the script for a shell and
``vmemplan --install-completion SHELL`` writes it where that shell looks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SHELLS", "CompletionData", "completion_data", "render", "write_files", "install_path", "shipped_script"]

from vmemplan.cli.completion_files import SHELLS, install_path, shipped_script  # noqa: F401 (re-exported)

_HEADER = ("vmemplan {shell} completion: generated from the CLI and the registry by "
           "`python -m vmemplan.cli.completions`; do not edit.")


@dataclass
class Command:
    name: str
    flags: list[str] = field(default_factory=list)  # options that take no value
    options: list[str] = field(default_factory=list)  # options that take a value
    choices: dict[str, list[str]] = field(default_factory=dict)  # option -> its fixed values
    takes_model: bool = False
    takes_file: bool = False


@dataclass
class CompletionData:
    commands: list[Command]
    root_flags: list[str]
    values: dict[str, list[str]]  # value lists shared by every command: --gpu, --kv-cache-dtype, ...
    models: list[str]


def completion_data() -> CompletionData:
    """Everything the scripts offer, read from the CLI's commands and the registry."""
    import typer.main

    from vmemplan.cli import app
    from vmemplan.registry import load_registry
    from vmemplan.render.registry import model_entries
    from vmemplan.resolve import DTYPES, KV_CACHE_DTYPES
    from vmemplan.sources import bundled_aliases, list_bundled_models
    from vmemplan.sweep import OUTPUTS, VARY_FLAGS

    group = typer.main.get_command(app)
    commands = []
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        c = Command(name)
        for p in cmd.params:
            if p.param_type_name == "argument":
                c.takes_model = p.name == "model"
                c.takes_file = p.name == "log"
                continue
            names = [*p.opts, *p.secondary_opts]
            if getattr(p, "is_flag", False):
                c.flags += names
                continue
            c.options += names
            desc = getattr(p, "type_descriptor", None)
            if desc is not None and desc.is_choice:
                for n in names:
                    c.choices[n] = [str(getattr(v, "value", v)) for v in desc.choices or ()]
        commands.append(c)
    root_flags = [o for p in group.params for o in (*p.opts, *p.secondary_opts)  # type: ignore[attr-defined]
                  if o not in ("--help", "-h")] + ["--help"]
    reg = load_registry()
    by_lower: dict[str, str] = {}
    for k in reg.gpu_keys():  # one spelling per id or alias (matching ignores case): lower case wins
        if " " not in k and (k.lower() not in by_lower or k == k.lower()):
            by_lower[k.lower()] = k
    gpus = sorted(by_lower.values())
    entries = model_entries(list_bundled_models(), {}, bundled_aliases())
    models = sorted({n for e in entries for n in (e.id, *e.aliases)}, key=str.lower)
    values = {
        "--gpu": gpus,
        "--kv-cache-dtype": list(KV_CACHE_DTYPES),
        "--dtype": list(DTYPES),
        "--vary": [f"{f}=" for f in VARY_FLAGS],
        "--chart": list(OUTPUTS),
    }
    return CompletionData(commands, root_flags, values, models)


def _words(items: list[str]) -> str:
    return " ".join(items)


def _bash(d: CompletionData) -> str:
    value_opts = sorted({o for c in d.commands for o in c.options})
    lines = [
        "# " + _HEADER.format(shell="bash"),
        "# Install: copy to ~/.local/share/bash-completion/completions/vmemplan, or `source` it from ~/.bashrc.",
        "",
        f"_vmemplan_commands='{_words([c.name for c in d.commands])}'",
        f"_vmemplan_root='{_words(d.root_flags)}'",
        f"_vmemplan_models='{_words(d.models)}'",
    ]
    for opt, vals in d.values.items():
        lines.append(f"_vmemplan_v_{opt.strip('-').replace('-', '_')}='{_words(vals)}'")
    lines += [
        "",
        "# case-insensitive prefix match of $2 against the words of $1, into COMPREPLY",
        "_vmemplan_match() {",
        '    local w low="${2,,}"',
        "    for w in $1; do",
        '        [[ "${w,,}" == "$low"* ]] && COMPREPLY+=("$w")',
        "    done",
        "}",
        "",
        "_vmemplan() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i',
        "    COMPREPLY=()",
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in -*) ;; *) cmd="${COMP_WORDS[i]}"; break ;; esac',
        "    done",
        '    if [[ -z "$cmd" ]]; then',
        '        if [[ "$prev" == --show-completion || "$prev" == --install-completion ]]; then',
        f'            _vmemplan_match "{_words(list(SHELLS))}" "$cur"; return',
        "        fi",
        '        _vmemplan_match "$_vmemplan_commands $_vmemplan_root" "$cur"; return',
        "    fi",
        '    case "$prev" in',
    ]
    for opt in d.values:
        var = "_vmemplan_v_" + opt.strip("-").replace("-", "_")
        extra = "; compopt -o nospace 2>/dev/null" if opt == "--vary" else ""
        lines.append(f'        {opt}) _vmemplan_match "${var}" "$cur"{extra}; return ;;')
    fmt_cases = [f'{c.name}) _vmemplan_match "{_words(c.choices["--format"])}" "$cur" ;;'
                 for c in d.commands if "--format" in c.choices]
    lines.append('        --format|-f) case "$cmd" in ' + " ".join(fmt_cases) + " esac; return ;;")
    lines.append("        " + "|".join(o for o in value_opts if o not in d.values and o not in ("--format", "-f"))
                 + ") return ;;  # a value with no fixed list: the user types it")
    lines += ["    esac", '    if [[ "$cur" == -* ]]; then', '        case "$cmd" in']
    for c in d.commands:
        lines.append(f'            {c.name}) _vmemplan_match "{_words(c.options + c.flags)}" "$cur" ;;')
    lines += ["        esac", "        return", "    fi", '    case "$cmd" in']
    model_cmds = "|".join(c.name for c in d.commands if c.takes_model)
    file_cmds = "|".join(c.name for c in d.commands if c.takes_file)
    lines.append(f'        {model_cmds}) _vmemplan_match "$_vmemplan_models" "$cur"; '
                 'COMPREPLY+=($(compgen -f -- "$cur")) ;;')
    if file_cmds:
        lines.append(f'        {file_cmds}) COMPREPLY=($(compgen -f -- "$cur")) ;;')
    lines += ["    esac", "}", "", "complete -F _vmemplan vmemplan", ""]
    return "\n".join(lines)


def _zsh(d: CompletionData) -> str:
    ci = "-M 'm:{a-zA-Z}={A-Za-z}'"
    lines = [
        "#compdef vmemplan",
        "# " + _HEADER.format(shell="zsh"),
        "# Install: copy to a directory on $fpath as _vmemplan (e.g. ~/.zfunc/_vmemplan with fpath+=(~/.zfunc)",
        "# before compinit in ~/.zshrc), or `source` it after compinit.",
        "",
        "_vmemplan() {",
        "    local -a commands root models",
        f"    commands=({_words([c.name for c in d.commands])})",
        f"    root=({_words(d.root_flags)})",
        f"    models=({_words(d.models)})",
        '    local cmd="" prev="${words[CURRENT-1]}" i',
        "    for ((i = 2; i < CURRENT; i++)); do",
        '        [[ "${words[i]}" != -* ]] && { cmd="${words[i]}"; break; }',
        "    done",
        '    if [[ -z "$cmd" ]]; then',
        f'        [[ "$prev" == --show-completion || "$prev" == --install-completion ]] && '
        f'{{ compadd -- {_words(list(SHELLS))}; return; }}',
        f"        compadd {ci} -- $commands $root; return",
        "    fi",
        '    case "$prev" in',
    ]
    for opt, vals in d.values.items():
        extra = " -S ''" if opt == "--vary" else ""
        lines.append(f"        {opt}) compadd {ci}{extra} -- {_words(vals)}; return ;;")
    fmt_cases = [f"{c.name}) compadd -- {_words(c.choices['--format'])} ;;" for c in d.commands
                 if "--format" in c.choices]
    lines.append('        --format|-f) case "$cmd" in ' + " ".join(fmt_cases) + " esac; return ;;")
    value_opts = sorted({o for c in d.commands for o in c.options if o not in d.values and o not in ("--format", "-f")})
    lines.append("        " + "|".join(value_opts) + ") return ;;")
    lines += ["    esac", '    if [[ "$PREFIX" == -* ]]; then', '        case "$cmd" in']
    for c in d.commands:
        lines.append(f"            {c.name}) compadd -- {_words(c.options + c.flags)} ;;")
    lines += ["        esac", "        return", "    fi", '    case "$cmd" in']
    lines.append("        " + "|".join(c.name for c in d.commands if c.takes_model)
                 + f") compadd {ci} -- $models; _files ;;")
    files = [c.name for c in d.commands if c.takes_file]
    if files:
        lines.append("        " + "|".join(files) + ") _files ;;")
    lines += [
        "    esac",
        "}",
        "",
        'if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then',
        '    _vmemplan "$@"',
        "else",
        "    compdef _vmemplan vmemplan",
        "fi",
        "",
    ]
    return "\n".join(lines)


def _fish_opt(opt: str) -> str:
    if opt.startswith("--"):
        return f"-l {opt[2:]}"
    if len(opt) == 2:
        return f"-s {opt[1:]}"
    return f"-o {opt[1:]}"  # vLLM's -tp, -pp, -dp, -dcp


def _fish(d: CompletionData) -> str:
    lines = [
        "# " + _HEADER.format(shell="fish"),
        "# Install: copy to ~/.config/fish/completions/vmemplan.fish (fish matches case-insensitively).",
        "",
        "complete -c vmemplan -f",
        f"complete -c vmemplan -n __fish_use_subcommand -a '{_words([c.name for c in d.commands])}'",
    ]
    for o in d.root_flags:
        if o in ("--show-completion", "--install-completion"):
            lines.append(f"complete -c vmemplan -n __fish_use_subcommand {_fish_opt(o)} -x -a '{_words(list(SHELLS))}'")
        else:
            lines.append(f"complete -c vmemplan -n __fish_use_subcommand {_fish_opt(o)}")
    for c in d.commands:
        cond = f"-n '__fish_seen_subcommand_from {c.name}'"
        seen = set()
        for o in c.options:
            if o in seen:
                continue
            seen.add(o)
            vals = c.choices.get(o) or d.values.get(o)
            lines.append(f"complete -c vmemplan {cond} {_fish_opt(o)} -x" + (f" -a '{_words(vals)}'" if vals else ""))
        for o in c.flags:
            lines.append(f"complete -c vmemplan {cond} {_fish_opt(o)}")
        if c.takes_model:
            lines.append(f"complete -c vmemplan {cond} -F -a '{_words(d.models)}'")
        if c.takes_file:
            lines.append(f"complete -c vmemplan {cond} -F")
    return "\n".join(lines) + "\n"


def render(shell: str, data: CompletionData | None = None) -> str:
    """The completion script for ``shell`` (bash, zsh or fish)."""
    data = data or completion_data()
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](data)


def write_files(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """(Re)write ``completions/vmemplan.{bash,zsh,fish}``; returns the paths written."""
    target = Path(directory) if directory is not None else Path(__file__).resolve().parents[2] / "completions"
    target.mkdir(parents=True, exist_ok=True)
    data = completion_data()
    written = []
    for shell, name in SHELLS.items():
        path = target / name
        path.write_text(render(shell, data), encoding="utf-8")
        written.append(str(path))
    return written


if __name__ == "__main__":  # pragma: no cover - the build step
    for written in write_files():
        print(written)
