"""The command line: a table of contents.  Each command lives in its own module."""

from __future__ import annotations

import os
import sys

import typer

from vmemplan._version import __version__

app = typer.Typer(
    name="vmemplan",
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


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    """Plan vLLM GPU memory before you boot a GPU."""


from vmemplan.cli.registry_cmds import gpus, models  # noqa: E402
from vmemplan.cli.size import size  # noqa: E402

app.command("size")(size)
app.command("gpus")(gpus)
app.command("models")(models)

try:  # commands added by later modules register themselves here
    from vmemplan.cli import explain_log as _explain_log  # noqa: F401
except ImportError:  # pragma: no cover - during development only
    pass


def main() -> None:
    """Console entry point: exit 130 on Ctrl-C, never a traceback unless VMEMPLAN_DEBUG."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except Exception:
        if os.environ.get("VMEMPLAN_DEBUG"):
            raise
        import traceback

        sys.stderr.write("error: vmemplan hit a bug; please report it with the output of "
                         "VMEMPLAN_DEBUG=1 and the command you ran\n")
        sys.stderr.write("".join(traceback.format_exception_only(*sys.exc_info()[:2])))
        sys.exit(1)
