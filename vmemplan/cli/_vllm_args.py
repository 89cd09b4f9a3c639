"""Every vLLM flag on the planning commands, and a pasted command after ``--``.

``size``, ``concurrency`` and ``sweep`` are registered with :class:`VllmCommand`: before click
parses the command line, the tokens that are vLLM's flags (by the release's argument table,
registry/vllm/args/) are taken out and parsed as ``vllm serve`` parses them
(:mod:`vmemplan.request.vllm_args`); vmemplan's own options (``--gpu``, ``--format``, ...) stay
for click.  Everything after ``--`` is a whole pasted command (``vllm serve MODEL ...``,
``python -m vllm.entrypoints.openai.api_server --model M ...``).  The parsed command waits in
the click context for :func:`vmemplan.cli._options.with_engine_flags` and the command.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

from vmemplan.core.errors import UsageError
from vmemplan.core.patterns import lazy

__all__ = ["VllmCommand", "current_vllm_command", "split_vllm_args"]

from vmemplan.cli._vllm_context import META_KEY, current_vllm_command  # noqa: F401 (re-exported)

_NEGATIVE_NUMBER = lazy(r"^-\d+$|^-\d*\.\d+$")


def _option_like(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def _vllm_name(option: str) -> str:
    """vLLM reads ``--flag_name`` as ``--flag-name`` (up to the first dot)."""
    if not option.startswith("--"):
        return option
    head, dot, tail = option[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail


def split_vllm_args(command: Any, args: list[str]) -> tuple[list[str], Any]:
    """(the tokens click should parse, the parsed vLLM command or None)."""
    own = _own_options(command)
    version = _vllm_version_arg(args)
    arg_table = _LazyArgTable(version)
    keep: list[str] = []
    positionals: list[str] = []
    vllm: list[str] = []
    pasted: list[str] | None = None
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if tok == "--":
            pasted = args[i:]
            break
        if tok in ("-h", "--help") or not _option_like(tok):
            keep.append(tok)
            if not _option_like(tok):
                positionals.append(tok)
            continue
        i = _take_option(args, i, tok, own, arg_table, keep, vllm)
    if pasted is None and not vllm:
        return args, None
    parsed = _parse_vllm_tokens(pasted, vllm, own, version)
    _take_model(keep, positionals, parsed)
    return keep, parsed


def _own_options(command: Any) -> dict[str, tuple[str, bool]]:
    """Each of the command's own option strings: (its parameter name, whether it takes a value)."""
    own: dict[str, tuple[str, bool]] = {}
    for p in command.params:
        if getattr(p, "param_type_name", "") == "option":
            for s in (*p.opts, *p.secondary_opts):
                own[s] = (p.name or "", not p.is_flag and not p.count)
    return own


def _vllm_version_arg(args: list[str]) -> str | None:
    """The ``--vllm-version`` given before ``--`` (the last one), or None."""
    version = None
    for i, tok in enumerate(args):
        if tok == "--":
            break
        if tok == "--vllm-version" and i + 1 < len(args):
            version = args[i + 1]
        elif tok.startswith("--vllm-version="):
            version = tok.split("=", 1)[1]
    return version


class _LazyArgTable:
    """The release's argument table, read only when a token may be vLLM's (vmemplan's own options need none)."""

    def __init__(self, version: str | None) -> None:
        self.version = version
        self._table: Any = None

    def __call__(self) -> Any:
        if self._table is None:
            from vmemplan.request.vllm_args import load_arg_table

            self._table = load_arg_table(self.version)
        return self._table


def _take_option(args: list[str], i: int, tok: str, own: dict[str, tuple[str, bool]],
                 arg_table: _LazyArgTable, keep: list[str], vllm: list[str]) -> int:
    """File the option ``tok`` (and its value tokens from ``args[i]`` on) under vmemplan's or vLLM's
    tokens; the index of the next token."""
    from vmemplan.cli._options import ENGINE_FLAGS

    name, eq, _ = tok.partition("=")
    vname = _vllm_name(name)
    mine = own.get(name)
    if mine is not None and not (mine[0] in ENGINE_FLAGS and vname in arg_table().by_string):
        keep.append(tok)
        if mine[1] and not eq and i < len(args):
            keep.append(args[i])
            i += 1
        return i
    # a vLLM flag: take it with its value(s), as vLLM's parser will
    vllm.append(tok)
    if name.startswith("-O") and not name.startswith("--"):
        if name == "-O" and i < len(args) and args[i] in {"0", "1", "2", "3"}:
            vllm.append(args[i])
            i += 1
        elif name.startswith("-O.") and not eq and i < len(args):
            vllm.append(args[i])
            i += 1
        return i
    if "." in vname and vname.startswith("--"):  # --json-arg.key value
        if not eq and i < len(args):
            vllm.append(args[i])
            i += 1
        return i
    table = arg_table()
    spec = table.lookup(vname)
    if spec is None:
        raise _no_such_option(name, vname, own, table, arg_table.version)
    if eq or spec.value in ("flag", "bool_optional"):
        return i
    if spec.value == "list":
        while i < len(args) and args[i] != "--" and not _option_like(args[i]):
            vllm.append(args[i])
            i += 1
    elif i < len(args) and args[i] != "--" and not _option_like(args[i]):
        vllm.append(args[i])
        i += 1
    return i


def _no_such_option(name: str, vname: str, own: dict[str, tuple[str, bool]], table: Any,
                    version: str | None) -> UsageError:
    """The error for an option neither vmemplan nor the vLLM release knows, with close matches."""
    import difflib

    close = difflib.get_close_matches(name, [*own, *(s for s in table.by_string if s.startswith("--"))],
                                      n=3, cutoff=0.6)
    from vmemplan.request.vllm_args import _unknown

    err = _unknown(vname, table, version)
    if close and "no longer takes" not in err.message:
        err = UsageError(f"no such option: {name} (neither vmemplan's nor vLLM {table.vllm_version}'s)",
                         hint=f"did you mean {' or '.join(close)}?")
    return err


def _parse_vllm_tokens(pasted: list[str] | None, vllm: list[str], own: dict[str, tuple[str, bool]],
                       version: str | None) -> Any:
    """Parse the pasted command with the vLLM flags written before ``--`` applied over it."""
    from vmemplan.request.vllm_args import parse_vllm_command

    tokens = (pasted or []) + vllm
    try:
        # vLLM flags written before `--` apply over the pasted command's
        return parse_vllm_command(tokens, vllm_version=version)
    except UsageError as err:
        for tok in pasted or ():
            name = tok.partition("=")[0]
            if name in own and name in err.message:
                raise UsageError(err.message, hint=f"{name} is vmemplan's option: write it before `--` "
                                                   "(everything after `--` is the vLLM command)") from None
        raise


def _take_model(keep: list[str], positionals: list[str], parsed: Any) -> None:
    """Give click the vLLM command's model as the positional, unless it names another one."""
    if parsed.model:
        if not positionals:
            keep.insert(0, parsed.model)
        elif positionals[0] != parsed.model:
            raise UsageError(f"two models: {positionals[0]} and {parsed.model} (from the vLLM command)",
                             hint="give the model once")


class VllmCommand(TyperCommand):
    """A typer command that also takes every vLLM flag and a pasted command after ``--``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if any(a in ("-h", "--help") for a in args[: args.index("--") if "--" in args else len(args)]):
            return super().parse_args(ctx, args)
        args, parsed = split_vllm_args(self, list(args))
        if parsed is not None:
            ctx.meta[META_KEY] = parsed
        return super().parse_args(ctx, args)
