"""vLLM version strings as comparable release tuples."""

from __future__ import annotations

import functools
import re

from vmemplan.core.errors import UsageError
from vmemplan.core.patterns import lazy

__all__ = ["VERSION_HINT", "parse_version", "version_tuple_or_none"]

VERSION_HINT = "use a release number such as 0.11.0, v0.33.0 or 0.8.5.post1"

_VERSION_RE = lazy(
    r"""^\s*v?
    (?P<release>\d+(?:\.\d+)*)
    (?P<wild>\.[x*])?
    (?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c)[-_.]?(?P<pre_n>\d*))?
    (?:[-_.]?post[-_.]?(?P<post>\d*))?
    (?:[-_.]?dev[-_.]?(?P<dev>\d*))?
    (?:\+(?P<local>[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)


def parse_version(text: str) -> tuple[int, ...]:
    """Parse a vLLM version string into a comparable release tuple.

    Accepts a ``v`` prefix, PEP 440 pre/post/dev segments (``rc1``, ``.post1``,
    ``.dev169``) and a ``+local`` label (``+g7d9f6663a``, ``+faa43dbf.nv26.01``), and a
    trailing ``.x`` wildcard (``0.19.x``).  Only the numeric release segment is returned
    (``"0.8.5.dev169+gce17db808"`` -> ``(0, 8, 5)``): a pre-release of X belongs to X's
    line.  Raises :class:`~vmemplan.core.errors.UsageError` for anything else.
    """
    if not isinstance(text, str):
        raise UsageError(f"not a vLLM version: {text!r}", hint=VERSION_HINT)
    return _parse_release(text)


@functools.lru_cache(maxsize=1024)
def _parse_release(text: str) -> tuple[int, ...]:
    """:func:`parse_version` of a string, remembered (the rules packs ask for the same few
    versions many times a plan); errors are raised again each time, never cached."""
    match = _VERSION_RE.match(text) if len(text) <= 100 else None
    if match is None or any(len(part) > 9 for part in match.group("release").split(".")):
        text = text if len(text) <= 60 else text[:60] + "…"
        raise UsageError(f"not a vLLM version: {text!r}", hint=VERSION_HINT)
    return tuple(int(part) for part in match.group("release").split("."))


def version_tuple_or_none(text: str | None) -> tuple[int, ...] | None:
    """:func:`parse_version`, or ``None`` for a missing or unreadable version."""
    if not text:
        return None
    try:
        return parse_version(text)
    except UsageError:
        return None
