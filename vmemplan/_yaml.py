"""Reading registry YAML fast and safely: libyaml when present, bounded, aliases bounded, cached.

Files are parsed with libyaml's ``CSafeLoader`` when PyYAML has it (else the pure-Python safe
loader).  Only a regular file of at most :data:`MAX_YAML_BYTES` is read, and a document whose
aliases would expand past :data:`MAX_ALIAS_EXPANSION` nodes (a "billion laughs" bomb) is refused
before anything walks it.  The parsed data goes through the parse cache
(:mod:`vmemplan.sources.cache`), keyed by the file's content hash and the package version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["load_yaml_file", "load_yaml_text", "safe_load_text", "yaml_error", "cache_dir", "MAX_YAML_BYTES",
           "MAX_ALIAS_EXPANSION"]

MAX_YAML_BYTES = 16 * 1024 * 1024
#: Nodes a document may reach through its aliases (real registry files use none).
MAX_ALIAS_EXPANSION = 100_000


def cache_dir() -> Path:
    from vmemplan.sources.cache import cache_dir as _cache_dir

    return _cache_dir()


def _check_aliases(node: Any) -> None:
    """Refuse a composed YAML graph whose alias expansion exceeds MAX_ALIAS_EXPANSION nodes."""
    import yaml

    sizes: dict[int, int] = {}

    def size(n: Any, depth: int = 0) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        if depth > 200:
            raise yaml.YAMLError("YAML nested more than 200 levels deep")
        total = 1
        if isinstance(n, yaml.SequenceNode):
            for child in n.value:
                total += size(child, depth + 1)
                if total > MAX_ALIAS_EXPANSION:
                    break
        elif isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                total += size(k, depth + 1) + size(v, depth + 1)
                if total > MAX_ALIAS_EXPANSION:
                    break
        sizes[id(n)] = total
        if total > MAX_ALIAS_EXPANSION:
            raise yaml.YAMLError(f"YAML aliases expand past {MAX_ALIAS_EXPANSION} nodes")
        return total

    if node is not None:
        size(node)


def load_yaml_text(text: str) -> Any:
    """Parse one YAML document with a safe loader, refusing alias bombs (yaml.YAMLError)."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    if "*" in text:  # aliases present: bound their expansion before constructing anything
        loader = loader_cls(text)
        try:
            node = loader.get_single_node()
            _check_aliases(node)
            return loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    return yaml.load(text, Loader=loader_cls)  # noqa: S506 - a safe loader either way


def _parse(raw: bytes) -> Any:
    return load_yaml_text(raw.decode("utf-8"))


def load_yaml_file(path: Path) -> Any:
    """Parse ``path`` as YAML (safe loader), through the parse cache.  Raises OSError (also for a
    file that is not regular or is too large), UnicodeDecodeError or yaml.YAMLError like a plain
    parse would."""
    from vmemplan.sources._io import read_regular
    from vmemplan.sources.cache import cached_parse

    raw = read_regular(path, MAX_YAML_BYTES)
    if len(raw) > MAX_YAML_BYTES:
        raise OSError(f"larger than {MAX_YAML_BYTES >> 20} MiB")
    return cached_parse(raw, _parse)


def safe_load_text(text: str) -> Any:
    """YAML of a string, uncached, with alias expansion bounded (:func:`load_yaml_text`)."""
    return load_yaml_text(text)


def yaml_error() -> type[Exception]:
    """PyYAML's base error class, for ``except`` clauses outside this module."""
    import yaml

    return yaml.YAMLError
