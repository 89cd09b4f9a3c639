"""The parse cache: registry YAML parsed once, kept as ``marshal`` data under the user's cache.

An entry is trusted only as far as it can be checked, and any doubt means parsing the source
again, silently:

* its file name is derived from the source's **content hash** (SHA-256), the package version and
  the cache format, so an edited source or an upgraded vmemplan never meets a stale entry;
* only a **regular file** of bounded size is opened (a FIFO, a symlink to ``/dev/zero`` or a
  huge file is skipped without blocking or reading it whole);
* the entry is an envelope ``(format, version, source sha256, data)`` whose header must match
  exactly, so an entry copied over another file's entry is refused;
* ``marshal`` holds only plain data, and the decoded data must be plain data again (dicts with
  string keys, lists, strings, numbers, booleans, None) before it is returned;
* an entry can still decode to plain data of the wrong shape (forged with the right header): a
  reader wrapped in :func:`retry_uncached` (the registry, the vLLM argument tables) that fails on
  any error after the cache served it an entry deletes the entries it was served and runs once
  more on freshly parsed sources, so a bad entry never decides the answer.

``VMEMPLAN_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from vmemplan.sources._io import read_regular

__all__ = ["cache_dir", "cached_parse", "cached_records", "retry_uncached", "MAX_ENTRY_BYTES"]

F = TypeVar("F", bound=Callable[..., Any])
#: The entries the cache has answered from in this process (see :func:`retry_uncached`).
_served: list[Path] = []

_FORMAT = "vmemplan-parse-cache-2"
#: The registry's largest file parses to well under a MiB of marshal data.
MAX_ENTRY_BYTES = 16 * 1024 * 1024
_MAX_NODES = 2_000_000


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vmemplan"


def _version() -> str:
    from vmemplan._version import __version__

    return __version__


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain data (iteratively, bounded)."""
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _MAX_NODES:
            return False
        if item is None or isinstance(item, (bool, int, float, str)):
            continue
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, (str, int, bool)) and key is not None:
                    return False
                stack.append(sub)
        else:
            return False
    return True


def cached_parse(source: bytes, parse: Callable[[bytes], Any], *, kind: str = "yaml") -> Any:
    """``parse(source)``, through the cache keyed by the source's content hash and the version."""
    if os.environ.get("VMEMPLAN_NO_CACHE"):
        return parse(source)
    digest = hashlib.sha256(source).hexdigest()
    version = _version()
    key = hashlib.sha256(f"{_FORMAT}|{version}|{kind}|{digest}".encode()).hexdigest()[:40]
    entry = cache_dir() / f"{kind}-{key}.marshal"
    try:
        blob = read_regular(entry, MAX_ENTRY_BYTES)
        if len(blob) <= MAX_ENTRY_BYTES:
            envelope = marshal.loads(blob)
            if (isinstance(envelope, tuple) and len(envelope) == 4
                    and envelope[:3] == (_FORMAT, version, digest) and _plain(envelope[3])):
                _served.append(entry)
                return envelope[3]
    except (OSError, EOFError, ValueError, TypeError, MemoryError, RecursionError, OverflowError):
        pass  # absent, not a regular file, unreadable, corrupt: parse again
    data = parse(source)
    try:
        blob = marshal.dumps((_FORMAT, version, digest, data))
        if len(blob) <= MAX_ENTRY_BYTES:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, entry)
    except (OSError, ValueError):  # unwritable cache or non-plain data: just do not cache
        pass
    return data


def cached_records(kind: str, sources: list[tuple[str, bytes]], build: Callable[[], Any],
                   classes: Mapping[str, type], accept: Callable[[Any], bool]) -> Any:
    """``build()`` -- a validated structure of frozen records -- through a snapshot keyed by the
    names and content hashes of every file it was built from and the package version.

    A hit rebuilds the records with :func:`vmemplan.core.records.decode` (no YAML, no pydantic):
    the registry is validated once per install and per edit, not once per process.  Only the
    record classes in ``classes`` can come out of a snapshot, only plain data goes into one
    (``marshal`` of dicts, tuples, lists and scalars), and any error while decoding means
    building again; a snapshot that decodes but later makes the reader fail is dropped by
    :func:`retry_uncached` like a parse-cache entry.
    """
    from vmemplan.core.records import decode, encode

    if os.environ.get("VMEMPLAN_NO_CACHE"):
        return build()
    version = _version()
    h = hashlib.sha256(f"{_FORMAT}|{version}|{kind}".encode())
    for name, blob in sources:
        h.update(b"|" + name.encode() + b"|" + hashlib.sha256(blob).digest())
    digest = h.hexdigest()
    entry = cache_dir() / f"{kind}-{digest[:40]}.marshal"
    try:
        raw = read_regular(entry, MAX_ENTRY_BYTES)
        if len(raw) <= MAX_ENTRY_BYTES:
            envelope = marshal.loads(raw)
            if isinstance(envelope, tuple) and len(envelope) == 4 and envelope[:3] == (_FORMAT, version, digest):
                value = decode(envelope[3], classes)
                if accept(value):
                    _served.append(entry)
                    return value
    except (OSError, EOFError, ValueError, TypeError, KeyError, MemoryError, RecursionError, OverflowError):
        pass  # absent, unreadable, corrupt, or of another shape: build again
    value = build()
    try:
        blob = marshal.dumps((_FORMAT, version, digest, encode(value)))
        if len(blob) <= MAX_ENTRY_BYTES:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, entry)
    except (OSError, ValueError, TypeError):  # unwritable cache or a value records cannot hold
        pass
    return value


def retry_uncached(reader: F) -> F:
    """Run ``reader``; when it raises anything after the cache answered from an entry, delete the
    entries it was served and run it once more, on sources parsed again (a real error raises
    again; one a forged or stale entry caused is gone)."""

    @functools.wraps(reader)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = len(_served)
        try:
            return reader(*args, **kwargs)
        except Exception:
            used = _served[start:]
            del _served[start:]
            if not used:
                raise
            for entry in used:
                try:
                    entry.unlink()
                except OSError:
                    pass
            return reader(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
