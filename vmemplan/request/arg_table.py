"""The argument table of a vLLM release: every option ``vllm serve`` takes, with its memory effect.

The table (registry/vllm/args/<version>.yaml) is generated from the release wheel by
bench/vllm_args/generate.py: every option string (aliases, ``-tp`` style short forms, the
``--no-``/``--disable-`` negations), the value parser, choices and nargs.  The overlay
registry/vllm/args/memory_effects.yaml says what each argument does to GPU memory, and
registry/vllm/args/removed.yaml lists the flags later releases dropped.

:mod:`vmemplan.request.vllm_args` parses command lines against it (and re-exports these names).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import field
from pathlib import Path
from typing import Any

from vmemplan.core.errors import RegistryInvalid, UsageError
from vmemplan.core.frozen import frozen
from vmemplan.sources.cache import retry_uncached

__all__ = ["EFFECTS", "ArgSpec", "ArgTable", "available_tables", "load_arg_table", "removed_flag"]

#: The three memory-effect classes of registry/vllm/args/memory_effects.yaml.
EFFECTS = ("modelled", "none", "not_modelled")


@frozen
class ArgSpec:
    """One argument of ``vllm serve`` (one row of the generated table)."""

    dest: str
    flags: tuple[str, ...]
    negations: tuple[str, ...] = ()
    value: str = "value"  # value | flag | bool_optional | optional_value | list
    type: str | None = None
    none_allowed: bool = False
    nargs: Any = None
    choices: tuple[Any, ...] | None = None
    const: Any = None
    default: Any = None
    group: str = ""
    source: str = ""
    positional: bool = False
    effect: str = "none"
    reason: str = ""
    removed_in: str | None = None  # set on entries from removed.yaml

    @property
    def name(self) -> str:
        """The flag as people write it (the first long option string)."""
        longs = [f for f in self.flags if f.startswith("--")]
        return (longs or list(self.flags))[0]


@frozen
class ArgTable:
    """Every argument of one release, indexed by option string and by dest."""

    vllm_version: str
    args: tuple[ArgSpec, ...]
    source: str
    note: str | None = None
    by_string: dict[str, ArgSpec] = field(default_factory=dict, compare=False, repr=False)
    by_dest: dict[str, ArgSpec] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for spec in self.args:
            self.by_dest.setdefault(spec.dest, spec)
            for s in (*spec.flags, *spec.negations):
                if s.startswith("-"):
                    self.by_string.setdefault(s, spec)

    def lookup(self, option: str) -> ArgSpec | None:
        """The argument an option string names, exactly or by a unique prefix (argparse's
        ``allow_abbrev``); raises UsageError on an ambiguous prefix; None when unknown."""
        if option in self.by_string:
            return self.by_string[option]
        if not option.startswith("--"):
            return None
        hits = sorted({s for s in self.by_string if s.startswith(option)})
        specs = {id(self.by_string[s]) for s in hits}
        if len(specs) == 1:
            return self.by_string[hits[0]]
        if len(hits) > 1:
            raise UsageError(
                f"ambiguous option: {option} could match {', '.join(hits[:6])}"
                + (", ..." if len(hits) > 6 else ""),
                hint="write the whole flag name (vLLM's parser accepts only unambiguous prefixes)")
        return None

    def suggest(self, option: str) -> list[str]:
        longs = [s for s in self.by_string if s.startswith("--")]
        return difflib.get_close_matches(option, longs, n=3, cutoff=0.6)


def _args_dir() -> Path:
    from vmemplan.registry import registry_dir

    return registry_dir() / "vllm" / "args"


def _version_key(text: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", text.split("+")[0])[:4]
    if any(len(p) > 9 for p in parts):  # no release number is that long (and 4,300 digits raise)
        from vmemplan.core.version import VERSION_HINT

        raise UsageError(f"not a vLLM version: {text[:60]!r}" + ("…" if len(text) > 60 else ""), hint=VERSION_HINT)
    return tuple(int(p) for p in parts)


def available_tables() -> list[str]:
    """The releases with a generated table, oldest first."""
    d = _args_dir()
    names = [p.stem for p in d.glob("*.yaml") if re.match(r"^\d+\.\d+", p.stem)]
    return sorted(names, key=_version_key)


def _read_yaml(path: Path) -> Any:
    from vmemplan._yaml import load_yaml_file

    try:
        return load_yaml_file(path)
    except FileNotFoundError:
        raise RegistryInvalid(f"{path} is missing", hint="reinstall vmemplan") from None


@functools.cache
@retry_uncached  # a parse-cache entry of the wrong shape is dropped and its source parsed again
def load_arg_table(version: str | None = None) -> ArgTable:
    """The argument table of ``version`` (default: the newest), with each argument's memory effect.

    A release without its own table gets the nearest newer one (else the newest), plus the
    flags registry/vllm/args/removed.yaml lists as removed after that release; ``note`` says so.
    """
    tables = available_tables()
    if not tables:
        raise RegistryInvalid("registry/vllm/args has no argument table", hint="run bench/vllm_args/generate.py")
    note = None
    if version is None:
        chosen = tables[-1]
    else:
        want = _version_key(version)
        exact = [t for t in tables if _version_key(t) == want]
        newer = [t for t in tables if _version_key(t) >= want]
        chosen = exact[0] if exact else (newer[0] if newer else tables[-1])
        if not exact:
            note = (f"vLLM {version} has no generated argument table; using {chosen}'s plus the flags "
                    "removed since (registry/vllm/args/removed.yaml)")
    d = _args_dir()
    data = _read_yaml(d / f"{chosen}.yaml")
    effects = _read_yaml(d / "memory_effects.yaml")
    effect_of: dict[str, tuple[str, str]] = {}
    for cls in EFFECTS:
        for dest, reason in (effects.get(cls) or {}).items():
            effect_of[dest] = (cls, str(reason))
    specs: list[ArgSpec] = []
    for raw in data["arguments"]:
        cls, reason = effect_of.get(raw["dest"], ("not_modelled", "not classified in memory_effects.yaml"))
        specs.append(ArgSpec(
            dest=raw["dest"], flags=tuple(raw.get("flags") or ()), negations=tuple(raw.get("negations") or ()),
            value=raw.get("value", "value"), type=raw.get("type"), none_allowed=bool(raw.get("none_allowed")),
            nargs=raw.get("nargs"), choices=tuple(raw["choices"]) if raw.get("choices") is not None else None,
            const=raw.get("const"), default=raw.get("default"), group=raw.get("group", ""),
            source=raw.get("source", ""), positional=bool(raw.get("positional")), effect=cls, reason=reason,
        ))
    if version is not None and not exact:
        removed = _read_yaml(d / "removed.yaml") if (d / "removed.yaml").exists() else {}
        known = {s for spec in specs for s in (*spec.flags, *spec.negations)}
        for raw in removed.get("removed") or ():
            if _version_key(version) >= _version_key(str(raw["removed_in"])):
                continue
            if _version_key(version) < _version_key(str(raw.get("added_in", "0"))):
                continue
            flags = tuple(f for f in raw["flags"] if f not in known)
            if not flags:
                continue
            specs.append(ArgSpec(
                dest=raw["dest"], flags=flags, negations=tuple(raw.get("negations") or ()),
                value=raw.get("value", "value"), type=raw.get("type"), nargs=raw.get("nargs"),
                choices=tuple(raw["choices"]) if raw.get("choices") else None,
                effect=raw.get("effect", "none"), reason=str(raw.get("reason", "")), source=raw.get("source", ""),
                removed_in=str(raw["removed_in"]),
            ))
    return ArgTable(vllm_version=str(data.get("vllm_version", chosen)), args=tuple(specs),
                    source=str(data.get("source", "")), note=note)


def removed_flag(option: str, version: str | None) -> dict[str, Any] | None:
    """The removed.yaml entry for an option string vLLM ``version`` no longer takes, if any."""
    path = _args_dir() / "removed.yaml"
    if not path.exists():
        return None
    for raw in _read_yaml(path).get("removed") or ():
        if option in raw.get("flags", ()) or option in raw.get("negations", ()):
            return dict(raw)
    return None
