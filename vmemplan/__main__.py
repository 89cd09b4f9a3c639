"""``python -m vmemplan`` and the ``vmemplan`` console script.

:func:`entry` installs the Ctrl-C handler before anything heavy is imported (typer, rich,
pydantic take a while), so an interrupt during the imports is one ``error:`` line, one
``hint:`` line and exit 130 -- never a traceback.
"""

from __future__ import annotations

import os
import signal
import sys

_INTERRUPTED = b"error: interrupted\nhint: the run was stopped by Ctrl-C (SIGINT) before it finished; run it again\n"


def _on_sigint(signum: int, frame: object) -> None:  # noqa: ARG001 - signal handler signature
    try:
        os.write(2, _INTERRUPTED)
    except OSError:
        pass
    os._exit(130)


def entry() -> None:
    """The console entry point: the interrupt handler first, then the CLI."""
    try:
        signal.signal(signal.SIGINT, _on_sigint)
    except (ValueError, OSError):  # not the main thread, or no signals here
        pass
    from vmemplan.cli import main

    main(sys.argv[1:])


if __name__ == "__main__":
    entry()
