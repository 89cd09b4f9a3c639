"""The shipped completion scripts: where they are, where each shell loads them from.

Kept apart from :mod:`vmemplan.cli.completions` (the generator, which introspects the CLI) so
that the CLI can print or install a script without importing its own generator.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SHELLS", "install_path", "shipped_script"]

#: The shells and the file each script ships as (``completions/`` and the wheel's ``vmemplan/_completions``).
SHELLS: dict[str, str] = {"bash": "vmemplan.bash", "zsh": "vmemplan.zsh", "fish": "vmemplan.fish"}


def install_path(shell: str, home: Path | None = None) -> Path:
    """Where ``--install-completion`` writes the script: the place each shell loads it from."""
    home = home or Path.home()
    if shell == "bash":
        data_home = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
        return data_home / "bash-completion" / "completions" / "vmemplan"
    if shell == "zsh":
        return home / ".zfunc" / "_vmemplan"
    if shell == "fish":
        config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        return config / "fish" / "completions" / "vmemplan.fish"
    raise ValueError(shell)


def shipped_script(shell: str) -> str:
    """The script as shipped (the wheel's ``vmemplan/_completions`` or the checkout's
    ``completions/``)."""
    name = SHELLS[shell]
    here = Path(__file__).resolve().parents[1]
    for path in (here / "_completions" / name, here.parent / "completions" / name):
        if path.is_file():
            return path.read_text(encoding="utf-8")
    from vmemplan.core.errors import RegistryInvalid

    raise RegistryInvalid(f"the {shell} completion script is not installed",
                          hint="reinstall vmemplan, or run `python -m vmemplan.cli.completions` in a checkout")
