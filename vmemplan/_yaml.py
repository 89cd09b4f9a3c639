"""Reading registry YAML fast: libyaml when present, and a parsed-file cache.

The registry is read on every command, so its parse time is startup time.  Files are parsed
with libyaml's ``CSafeLoader`` when PyYAML has it (else the pure-Python safe loader), and the
parsed data is kept in a ``marshal`` file under the user's cache directory, keyed by the
file's path, size and modification time, so later runs skip parsing.  ``marshal`` holds only
plain data (dicts, lists, strings, numbers, booleans, None): nothing in the cache can run
code, and any unreadable or stale entry is simply parsed again.  ``VMEMPLAN_NO_CACHE=1``
turns the cache off.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from pathlib import Path
from typing import Any

__all__ = ["load_yaml_file", "cache_dir", "safe_load_text", "yaml_error"]

_CACHE_VERSION = b"1"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vmemplan"


def _parse(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader either way


def load_yaml_file(path: Path) -> Any:
    """Parse ``path`` as YAML (safe loader), through the cache.  Raises OSError,
    UnicodeDecodeError or yaml.YAMLError like a plain parse would."""
    stat = path.stat()
    key = hashlib.sha1(
        b"|".join([_CACHE_VERSION, str(path.resolve()).encode(), str(stat.st_size).encode(),
                   str(stat.st_mtime_ns).encode()])
    ).hexdigest()
    use_cache = not os.environ.get("VMEMPLAN_NO_CACHE")
    entry = cache_dir() / f"yaml-{key}.marshal"
    if use_cache:
        try:
            return marshal.loads(entry.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            pass
    data = _parse(path.read_text(encoding="utf-8"))
    if use_cache:
        try:
            blob = marshal.dumps(data)
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, entry)
        except (OSError, ValueError):  # unwritable cache or non-plain data: just do not cache
            pass
    return data


def safe_load_text(text: str) -> Any:
    """``yaml.safe_load`` of a string, uncached (PyYAML imported on first use)."""
    import yaml

    return yaml.safe_load(text)


def yaml_error() -> type[Exception]:
    """PyYAML's base error class, for ``except`` clauses outside this module."""
    import yaml

    return yaml.YAMLError
