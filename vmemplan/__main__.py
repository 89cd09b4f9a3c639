"""``python -m vmemplan`` and the ``vmemplan`` console script.

:func:`entry` installs the Ctrl-C handler (``vmemplan._install_interrupt_handler``) before anything
heavy is imported; ``vmemplan/__init__`` already installs it when the process is the CLI, so an
interrupt during the imports is one ``error:`` line, one ``hint:`` line and exit 130.
"""

from __future__ import annotations

import sys

from vmemplan import _install_interrupt_handler


def entry() -> None:
    """The console entry point: the interrupt handler first, then the CLI."""
    _install_interrupt_handler()
    from vmemplan.cli import main

    main(sys.argv[1:])


if __name__ == "__main__":
    entry()
