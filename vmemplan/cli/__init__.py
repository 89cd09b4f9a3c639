"""The command line: a table of contents.  Each command lives in its own module.

:func:`main` is the console entry point and the one place that turns every way a run can end
into the documented exit code (see :class:`vmemplan.core.errors.ExitCode`): an expected failure
becomes one ``error:`` line (plus a ``hint:`` line) on stderr, a bad flag becomes exit 2 in the
same format, Ctrl-C becomes 130, and anything else is a bug (exit 1) whose traceback is shown
only with ``VMEMPLAN_DEBUG=1``.

Only typer is imported at module level; rich, pydantic models, YAML and huggingface_hub are
imported by the commands that need them, so ``--version`` and ``--help`` stay cheap.
"""

from __future__ import annotations

import errno
import os
import sys

import typer

from vmemplan._version import __version__

PROG_NAME = "vmemplan"

class _PlainValues:
    """Options whose plain values are coerced without pydantic (vmemplan.cli._coerce)."""

    params: list[typer.core.click.Parameter]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        from vmemplan.cli._coerce import install

        install(self.params)

    def get_help_option(self, ctx: typer.Context) -> typer.core.TyperOption | None:
        from vmemplan.cli._coerce import install

        option = super().get_help_option(ctx)  # type: ignore[misc]
        install([option])
        return option  # type: ignore[no-any-return]


class _Group(_PlainValues, typer.core.TyperGroup):
    """The root group."""


_app = typer.Typer(
    name=PROG_NAME,
    cls=_Group,
    help="Plan vLLM GPU memory before you boot a GPU.",
    no_args_is_help=True,
    add_completion=False,  # static scripts instead (vmemplan.cli.completions): no Python per TAB
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"vmemplan {__version__}\n")
        raise typer.Exit()


def _no_color(value: bool) -> None:
    # Every console is made per call by vmemplan.cli._common.console, which reads NO_COLOR;
    # setting it here makes `vmemplan --no-color <command>` reach every command.
    if value:
        os.environ["NO_COLOR"] = "1"


def _shell(value: str | None) -> str | None:
    from vmemplan.cli.completion_files import SHELLS
    from vmemplan.core.errors import UsageError

    if value is not None and value not in SHELLS:
        raise UsageError(f"no completion for shell {value!r}", hint="one of: " + ", ".join(SHELLS))
    return value


def _show_completion(value: str | None) -> None:
    if _shell(value):
        from vmemplan.cli.completion_files import shipped_script

        sys.stdout.write(shipped_script(value))  # type: ignore[arg-type]
        raise typer.Exit()


def _install_completion(value: str | None) -> None:
    if _shell(value):
        from vmemplan.cli.completion_files import install_path, shipped_script

        path = install_path(value)  # type: ignore[arg-type]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(shipped_script(value), encoding="utf-8")  # type: ignore[arg-type]
        sys.stdout.write(f"{value} completion installed in {path}\n")
        if value == "zsh":
            sys.stdout.write("add `fpath+=(~/.zfunc)` before `compinit` in ~/.zshrc if it is not there yet\n")
        sys.stdout.write("open a new shell to use it\n")
        raise typer.Exit()


@_app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
    no_color: bool = typer.Option(False, "--no-color", callback=_no_color, is_eager=True,
                                  help="No colour in any output (also NO_COLOR=1)."),
    show_completion: str = typer.Option(None, "--show-completion", callback=_show_completion, is_eager=True,
                                        metavar="SHELL", help="Print the completion script for bash, zsh or fish.",
                                        show_default=False),
    install_completion: str = typer.Option(None, "--install-completion", callback=_install_completion,
                                           is_eager=True, metavar="SHELL",
                                           help="Install the completion script for bash, zsh or fish.",
                                           show_default=False),
) -> None:
    """Plan vLLM GPU memory before you boot a GPU."""


#: Help metavars by parameter name (what the value is, in the user's words); the rest read
#: N (whole numbers), X (fractions) or TEXT.  typer would print its types (`<list[str]>`).
METAVARS = {
    "model": "MODEL", "gpu": "GPU", "vary": "FLAG=VALUES", "what_if": "FLAG=VALUE", "kv_cache_dtype": "DTYPE",
    "dtype": "DTYPE", "quantization": "METHOD", "revision": "REV", "vllm_version": "VERSION",
    "lengths": "N,N,…", "prompt_tokens": "N|DIST", "output_tokens": "N|DIST", "arrival_rate": "RATE",
    "image_size": "WxH", "video_size": "WxH", "kv_cache_memory": "BYTES", "speculative_config": "JSON",
    "limit_mm_per_prompt": "JSON", "chart": "OUTPUT", "chart_x": "FLAG", "log": "LOG", "sampler": "NAME",
    "runner": "NAME", "assume_family": "ARCH", "mm_encoder_tp_mode": "MODE", "gpu_memory_utilization": "FRACTION",
}


class _Command(_PlainValues, typer.core.TyperCommand):
    """A command whose options show readable metavars in --help (see :data:`METAVARS`)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, typer.core.TyperArgument):
                # its name is its metavar already; the type would read `MODEL <str>`
                param.display_type_rich = lambda ctx=None: None  # type: ignore[method-assign]
                if param.metavar is None and param.name:
                    param.metavar = METAVARS.get(param.name, param.name.upper())
                continue
            if param.metavar is not None or getattr(param, "is_flag", False) or not param.name:
                continue
            desc = getattr(param, "type_descriptor", None)
            if desc is not None and desc.is_choice:
                param.metavar = "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices or ()) + "]"
                continue
            annotation = str(getattr(desc, "annotation", ""))
            default = "N" if "int" in annotation else "X" if "float" in annotation else "TEXT"
            param.metavar = METAVARS.get(param.name, default)


#: Each command: (module, function, whether it takes every vLLM flag).  A command's module is
#: imported only when that command runs (or when the whole ``app`` is asked for: ``--help``, an
#: unknown command, tests), so ``size`` does not pay for ``sweep``'s or ``explain-log``'s imports.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "size": ("vmemplan.cli.size", "size", True),
    "gpus": ("vmemplan.cli.registry_cmds", "gpus", False),
    "models": ("vmemplan.cli.registry_cmds", "models", False),
    "concurrency": ("vmemplan.cli.concurrency", "concurrency", True),
    "sweep": ("vmemplan.cli.sweep", "sweep", True),
    "explain-log": ("vmemplan.cli.explain_log", "explain_log", False),
}
_registered: list[str] = []


def _register(names: list[str] | None = None) -> typer.Typer:
    """Add the named commands (all when ``None``) to the typer app, in the table's order."""
    import importlib

    wanted = [n for n in COMMANDS if (names is None or n in names) and n not in _registered]
    for name in wanted:
        module, function, vllm_flags = COMMANDS[name]
        cls: type = _Command
        if vllm_flags:
            from vmemplan.cli._vllm_args import VllmCommand

            cls = type("_PlanCommand", (VllmCommand, _Command), {
                "__doc__": "A planning command: every vLLM flag and a pasted command, with readable help metavars."})
        command = getattr(importlib.import_module(module), function)
        _app.command(name, cls=cls)(command)
        _registered.append(name)
    order = list(COMMANDS)
    _app.registered_commands.sort(key=lambda info: order.index(info.name) if info.name in order else len(order))
    return _app


def __getattr__(name: str) -> object:
    """``vmemplan.cli.app``: the typer app with every command registered."""
    if name == "app":
        return _register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command_named(argv: list[str]) -> str | None:
    """The command ``argv`` runs, when it names one before any help flag; else ``None``."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return None
        if arg in ("--show-completion", "--install-completion"):
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _debug() -> bool:
    return bool(os.environ.get("VMEMPLAN_DEBUG"))


def _click_usage(error: typer.TyperException) -> int:
    """A typer/click usage error (bad flag, bad value, missing argument) as one error line."""
    from vmemplan.cli._common import report

    ctx = getattr(error, "ctx", None)
    if ctx is not None and type(error).__name__ == "NoArgsIsHelpError":
        sys.stderr.write(ctx.get_help() + "\n")  # `vmemplan` alone: the help, as click does
        return int(error.exit_code)
    message = _usage_message(" ".join(error.format_message().split()))
    hint = None
    if ctx is not None:
        hint = f"see `{ctx.command_path} --help`"
    code = int(error.exit_code)
    report(message, hint, code=code)
    return code


def _usage_message(message: str) -> str:
    """click's "Invalid value for '--format' / '-f': Value error, 'yaml' is not one of 'table',
    'json'." as "--format: 'yaml' is not one of table, json"."""
    import re

    m = re.match(r"Invalid value for '([^']+)'(?: / '[^']+')*: (.*)$", message)
    if not m:
        return message
    name, text = m.group(1), m.group(2)
    text = re.sub(r"^(Value error|Assertion failed), ", "", text).rstrip(".")
    head, sep, choices = text.partition(" is not one of ")
    if sep:
        text = head + sep + ", ".join(c.strip().strip("'") for c in choices.split(","))
    if text.startswith("Input should be a valid integer"):
        text = "expects a whole number"
    elif text.startswith("Input should be a valid number"):
        text = "expects a number"
    return f"{name}: {text}"


_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EBADF, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EPIPE, errno.EINVAL}


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - kept open until exit
    except OSError:
        pass


def _stdout_is_open() -> bool:
    if sys.stdout is None:
        return False
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # an in-memory stream (tests, embedding programs)
        return True
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _input_too_hostile(error: BaseException) -> str | None:
    """A plain description when ``error`` is how Python gives up on a hostile input value."""
    if isinstance(error, RecursionError):
        return "an input is nested too deeply"
    if isinstance(error, ValueError) and "integer string conversion" in str(error):
        return "an input holds a number with more than 4,300 digits"
    if isinstance(error, MemoryError):
        return "an input is too large to hold in memory"
    return None


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the documented exit codes, one ``error:`` line, no traceback.

    ``VMEMPLAN_DEBUG=1`` prints the traceback of any failure (expected or not) before the
    usual lines; the exit code stays the documented one.  A standard output that is closed or
    cannot be written (a full disk, ``>/dev/full``) is exit 4 with one ``error:`` line; a pipe
    closed by its reader (``| head``) ends the run quietly with exit 0.
    """
    from vmemplan.core.errors import ExitCode, VmemplanError

    if not _stdout_is_open():
        from vmemplan.cli._common import report

        report("standard output is closed, so vmemplan cannot print its answer",
               "run it with standard output open (a terminal, a file or a pipe)")
        sys.exit(int(ExitCode.BAD_INPUT))
    try:
        args = sys.argv[1:] if argv is None else argv
        command = _command_named(args)
        code = _register(None if command is None else [command])(args=args, prog_name=PROG_NAME,
                                                                 standalone_mode=False)
        if sys.stdout is not None:
            sys.stdout.flush()
    except VmemplanError as error:  # a command without @reports_errors
        from vmemplan.cli._common import print_traceback_if_debug, report

        print_traceback_if_debug()

        report(error.message, error.hint, code=int(error.exit_code))
        code = int(error.exit_code)
    except typer.TyperException as error:  # click's UsageError family, FileError, ...
        code = _click_usage(error)
    except (KeyboardInterrupt, typer.Abort):
        from vmemplan.cli._common import report

        report("interrupted", "the run was stopped by Ctrl-C (SIGINT) before it finished; run it again")
        code = int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # `vmemplan ... | head`: the reader has what it wanted
        _silence_stdout()
        code = 0
    except Exception as error:  # noqa: BLE001 - the last line of defence
        from vmemplan.cli._common import print_traceback_if_debug, report

        print_traceback_if_debug()
        hostile = _input_too_hostile(error)
        if isinstance(error, OSError) and error.errno in _OUTPUT_ERRNOS and error.filename is None:
            _silence_stdout()
            report(f"cannot write the output: {error.strerror or error}",
                   "send standard output to a file on a disk with room, a terminal or a pipe")
            code = int(ExitCode.BAD_INPUT)
        elif hostile is not None:
            report(hostile, "check the config, log or flag values you passed: vmemplan reads them as plain, bounded data")
            code = int(ExitCode.BAD_INPUT)
        else:
            what = type(error).__name__
            detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
            report(f"vmemplan hit a bug ({what}{': ' + detail if detail else ''})",
                   "please report it with the command you ran and the output of VMEMPLAN_DEBUG=1"
                   if not _debug() else "please report it with the command you ran and the traceback above")
            code = int(ExitCode.BUG)
    if code is None or not isinstance(code, int):
        code = 0
    sys.exit(code)
