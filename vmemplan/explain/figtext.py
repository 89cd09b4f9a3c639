"""Small helpers the checks, suggestions and line notes share: figures as the log printed them,
their rounding, the block size and the release."""

from __future__ import annotations

from vmemplan.explain.startup import GIB, Figures, Startup, half_unit_bytes

__all__ = ["DEFAULT_BLOCK_SIZE", "block_size_of", "gib_text", "half_unit", "is_hybrid", "printed_text", "version_tuple"]

#: vLLM's default --block-size on CUDA (config/cache.py::CacheConfig), assumed when a log does not print it.
DEFAULT_BLOCK_SIZE = 16


def gib_text(n: int | float | None) -> str:
    """Bytes as a GiB string with 2 decimals."""
    if n is None:
        return "?"
    return f"{n / GIB:.2f}"


def printed_text(f: Figures, name: str) -> str:
    """The figure as the log printed it (GiB text), else 2 decimals."""
    text = f.printed.get(name)
    if text is not None:
        return text
    return gib_text(getattr(f, name))


def half_unit(f: Figures, name: str) -> int:
    return half_unit_bytes(f.printed.get(name))


def is_hybrid(s: Startup) -> bool:
    return "hybrid" in s.notes or "padding_layers" in s.notes


def block_size_of(f: Figures) -> tuple[int, bool]:
    """Block size and whether it was printed (else vLLM's default 16 is assumed)."""
    if f.block_size:
        return f.block_size, True
    return DEFAULT_BLOCK_SIZE, False


def version_tuple(v: str | None) -> tuple[int, ...] | None:
    if not v:
        return None
    parts: list[int] = []
    for piece in v.split(".")[:3]:
        digits = ""
        for ch in piece:
            if ch.isdigit():
                digits += ch
            else:
                break
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) if parts else None

