"""Bounded, type-checked reading of untrusted files, and text that is safe to print.

Every file vmemplan reads from outside its own package goes through :func:`read_regular`: it
opens the path without blocking (``O_NONBLOCK``, so a FIFO never hangs the open), checks with
``fstat`` on the open descriptor that it is a regular file (a FIFO, a character device such as
``/dev/zero``, a socket or a directory is refused, also behind a symlink), and reads at most
``limit + 1`` bytes, so nothing is ever read without bound.  :func:`loads_json` turns the ways
Python's json gives up on hostile text (an integer of more than 4,300 digits raises ValueError,
deep nesting raises RecursionError) into one ``ValueError`` with a plain message.

:func:`printable` strips C0/C1 control characters (escape sequences included) from a string
that came from an input, and :func:`scrub_secrets` removes URL userinfo and token-like strings,
before anything is printed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from vmemplan.core.patterns import lazy

__all__ = ["NotRegularFile", "read_regular", "read_stream", "loads_json", "printable", "scrub_secrets",
           "MAX_CONFIG_BYTES", "MAX_LOG_BYTES"]

#: A config.json is a few KiB; the largest published ones (with huge ignore lists) are ~2 MiB.
MAX_CONFIG_BYTES = 32 * 1024 * 1024
#: The same cap for logs (files and standard input).
MAX_LOG_BYTES = 32 * 1024 * 1024


class NotRegularFile(OSError):
    """The path exists but is not a regular file (FIFO, device, socket, directory)."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The first ``limit + 1`` bytes at most of the regular file ``path``.

    Raises :class:`NotRegularFile` (an OSError) when the path is a FIFO, a device, a socket or a
    directory, and OSError when it cannot be opened; never blocks on a FIFO.  A caller that
    gets more than ``limit`` bytes back knows the file is larger than the cap.
    """
    try:  # the cheap check first: a FIFO or a device named directly
        st = os.stat(path)
    except OSError:
        raise
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(errno.EINVAL, f"is {_kind(st.st_mode)}, not a regular file", str(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)  # O_NONBLOCK: a FIFO swapped in after the stat does not block the open
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"is {_kind(st.st_mode)}, not a regular file", str(path))
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_stream(stream: Any, limit: int) -> bytes:
    """At most ``limit + 1`` bytes from a binary stream (standard input)."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogateescape")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that refuses hostile text with a ``ValueError`` carrying a plain message.

    json.JSONDecodeError (a ValueError) passes through for the caller's line/column message;
    an over-long integer literal and nesting deeper than the interpreter allows become ValueError.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError as error:  # "Exceeds the limit (4300 digits) for integer string conversion"
        if "digits" in str(error):
            raise ValueError("a number with more than 4,300 digits") from None
        raise


# C0 controls except tab and newline, DEL, C1 controls; and whole ANSI escape sequences first.
_ESCAPES = lazy(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = lazy(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with escape sequences and control characters removed (newlines and tabs kept)."""
    if not isinstance(text, str):
        text = str(text)
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


_USERINFO = lazy(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
_TOKEN_LIKE = lazy(r"hf_[A-Za-z0-9]{6,}")
#: a URL query parameter that carries a credential (``?token=…``, ``&X-Amz-Signature=…``)
_SECRET_PARAM = lazy(
    r"(?i)([?&;](?:[a-z0-9_.-]*[_.-])?(?:token|key|secret|password|passwd|pwd|auth|sig|signature|access_token|"
    r"credential|credentials|session)=)[^&#\s'\"<>]*")


def scrub_secrets(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` without URL userinfo (``user:pass@``), credential-like query parameters
    (``?token=…``, ``&sig=…``, ``&api_key=…``), Hugging Face token-like strings and the
    given secrets (the environment's tokens are always included)."""
    candidates = list(secrets) + [os.environ.get(n, "") for n in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")]
    for secret in sorted({s.strip() for s in candidates if s and len(s.strip()) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _USERINFO.sub(r"\1***@", text)
    text = _SECRET_PARAM.sub(r"\1***", text)
    return _TOKEN_LIKE.sub("hf_***", text)


def path_text(path: str | os.PathLike[str] | Path) -> str:
    """A path as it can be printed."""
    return printable(str(path))
