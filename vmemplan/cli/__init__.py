"""The command line: a table of contents.  Each command lives in its own module.

:func:`main` is the console entry point and the one place that turns every way a run can end
into the documented exit code (see :class:`vmemplan.errors.ExitCode`): an expected failure
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

app = typer.Typer(
    name=PROG_NAME,
    help="Plan vLLM GPU memory before you boot a GPU.",
    no_args_is_help=True,
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


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
    no_color: bool = typer.Option(False, "--no-color", callback=_no_color, is_eager=True,
                                  help="No colour in any output (also NO_COLOR=1)."),
) -> None:
    """Plan vLLM GPU memory before you boot a GPU."""


from vmemplan.cli.registry_cmds import gpus, models  # noqa: E402
from vmemplan.cli.size import size  # noqa: E402

app.command("size")(size)
app.command("gpus")(gpus)
app.command("models")(models)
app.command("concurrency")(__import__("vmemplan.cli.concurrency", fromlist=["_"]).concurrency)
app.command("sweep")(__import__("vmemplan.cli.sweep", fromlist=["_"]).sweep)

from vmemplan.cli.explain_log import explain_log  # noqa: E402

app.command("explain-log")(explain_log)


def _debug() -> bool:
    return bool(os.environ.get("VMEMPLAN_DEBUG"))


def _click_usage(error: typer.TyperException) -> int:
    """A typer/click usage error (bad flag, bad value, missing argument) as one error line."""
    from vmemplan.cli._common import report

    ctx = getattr(error, "ctx", None)
    if ctx is not None and type(error).__name__ == "NoArgsIsHelpError":
        sys.stderr.write(ctx.get_help() + "\n")  # `vmemplan` alone: the help, as click does
        return int(error.exit_code)
    message = " ".join(error.format_message().split())
    hint = None
    if ctx is not None:
        hint = f"see `{ctx.command_path} --help`"
    code = int(error.exit_code)
    report(message, hint, code=code)
    return code


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
    from vmemplan.errors import ExitCode, VmemplanError

    if not _stdout_is_open():
        from vmemplan.cli._common import report

        report("standard output is closed, so vmemplan cannot print its answer",
               "run it with standard output open (a terminal, a file or a pipe)")
        sys.exit(int(ExitCode.BAD_INPUT))
    try:
        code = app(args=argv, prog_name=PROG_NAME, standalone_mode=False)
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
