"""Per-release vLLM rules packs: the schema, version parsing and pack selection.

vmemplan predicts what one given vLLM release would do.  The rules that differ between
releases (defaults, batch limits, CUDA-graph capture sizes, the budget formula, how the KV
token count is derived, the exact log formats) live in YAML packs under
``registry/vllm/``, one file per release line.  This module (with the section schemas of
:mod:`vmemplan.rules_sections`, re-exported here) validates those files into frozen pydantic
models, parses the version strings people type, and picks the pack whose
``[min_version, max_version]`` range contains a version.

Every rule value carries where it was read from: scalar defaults are :class:`Sourced`
values; the other sections carry a ``sources`` map (field name -> "vllm/file.py::function
(version)") that must name a source for every field that is set.

Nothing here imports vLLM; the rules are restated from reading the release wheels.
``yaml`` is imported lazily (through :mod:`vmemplan._yaml`) inside :func:`load_rules_packs` so this module stays light.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from vmemplan.core import constraints as at
from vmemplan.core.errors import RegistryInvalid, UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.patterns import lazy
from vmemplan.core.records import Record as _Record
from vmemplan.core.records import validate
from vmemplan.core.version import parse_version
from vmemplan.rules_sections import (
    BatchDefaults,
    BatchTier,
    BudgetRules,
    CudaGraphRules,
    Defaults,
    KvCacheRules,
    LogFormats,
    Sourced,
)

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "GIB_BYTES",
    "Sourced",
    "Defaults",
    "BatchTier",
    "BatchDefaults",
    "CudaGraphRules",
    "BudgetRules",
    "KvCacheRules",
    "LogFormats",
    "RulesPack",
    "format_version",
    "parse_rules_pack",
    "load_rules_packs",
    "select_pack",
    "supported_range",
    "render_log_line",
]

GIB_BYTES = 1 << 30
_PACK_ID = lazy(r"^v\d+\.\d+(\.\d+)?(-v0|-v1)?$")


# --------------------------------------------------------------------------------------
# The pack
# --------------------------------------------------------------------------------------


@frozen(kw_only=True)
class RulesPack(_Record):
    """All release-dependent rules of one vLLM release line.

    ``engine_default`` is False for a pack that describes the engine a release still had
    as a fallback (e.g. V0 under 0.8.x, where V1 was the default): such a pack may share
    its version range with the default pack of the other engine.
    """

    id: str  # "v0.11", "v0.8.5", "v0.8-v0": checked in __post_init__
    min_version: str
    max_version: str | None
    engine: Literal["v0", "v1"]
    engine_default: bool = True
    summary: Annotated[str, at.MinLen(1)]
    defaults: Defaults
    batch_defaults: BatchDefaults
    cuda_graphs: CudaGraphRules
    budget: BudgetRules
    kv_cache: KvCacheRules
    log: LogFormats

    def __post_init__(self) -> None:
        if not _PACK_ID.match(self.id):
            raise ValueError(f"id: pack id {self.id!r} is not of the form v0.11 / v0.8.5 / v0.8-v0")
        low = _parse_for_schema(self.min_version, "min_version")
        if self.max_version is not None:
            high = _parse_for_schema(self.max_version, "max_version")
            if not _release_prefix_le(low, high):
                raise ValueError(f"max_version: {self.max_version} is below min_version {self.min_version}")

    @property
    def min_key(self) -> tuple[int, ...]:
        return parse_version(self.min_version)

    @property
    def max_key(self) -> tuple[int, ...] | None:
        return None if self.max_version is None else parse_version(self.max_version)

    def contains(self, version: str | tuple[int, ...]) -> bool:
        """Whether a version lies in ``[min_version, max_version]`` (inclusive)."""
        key = parse_version(version) if isinstance(version, str) else version
        if _cmp_key(key) < _cmp_key(self.min_key):
            return False
        return self.max_key is None or _release_prefix_le(key, self.max_key)

    @property
    def range_text(self) -> str:
        high = self.max_version
        if high is not None and len(parse_version(high)) < 3:
            high += ".x"
        return f"{self.min_version}–{high or 'newer'}"


# --------------------------------------------------------------------------------------
# Versions
# --------------------------------------------------------------------------------------

def format_version(key: Sequence[int]) -> str:
    return ".".join(str(part) for part in key)


def _cmp_key(key: Sequence[int]) -> tuple[int, ...]:
    """Pad to six parts so (0, 10, 1) < (0, 10, 1, 1)."""
    padded = list(key)[:6]
    return tuple(padded + [0] * (6 - len(padded)))


def _release_prefix_le(key: Sequence[int], bound: Sequence[int]) -> bool:
    """``key <= bound`` where the bound covers every longer release that starts with it.

    ``max_version: "0.26"`` covers 0.26.0, 0.26.1, ...; ``"0.10.1.1"`` covers 0.10.1.1 but
    not 0.10.2.  So the key is cut to the bound's length before comparing, and a shorter
    key is padded with zeros.
    """
    if len(key) >= len(bound):
        return tuple(key[: len(bound)]) <= tuple(bound)
    return tuple(key) + (0,) * (len(bound) - len(key)) <= tuple(bound)


def _parse_for_schema(text: str, field: str) -> tuple[int, ...]:
    """parse_version for validators: a ValueError naming the field, so it is reported there."""
    try:
        return parse_version(text)
    except UsageError:
        raise ValueError(f"{field}: not a version number: {text!r}") from None


def supported_range(packs: Sequence[RulesPack]) -> str:
    """``"0.5.0 to 0.33.0 and newer"``-style text for hints."""
    if not packs:
        return "no packs loaded"
    oldest = min(packs, key=lambda p: _cmp_key(p.min_key))
    open_ended = any(p.max_version is None for p in packs)
    if open_ended:
        newest_min = max(packs, key=lambda p: _cmp_key(p.min_key))
        return f"{oldest.min_version} to {newest_min.min_version} and newer"
    newest = max(packs, key=lambda p: _cmp_key(p.max_key or ()))
    return f"{oldest.min_version} to {newest.max_version}"


def select_pack(
    packs: Sequence[RulesPack],
    version: str | None,
    *,
    engine: Literal["v0", "v1"] | None = None,
) -> tuple[RulesPack, str | None]:
    """Pick the pack for a vLLM version; returns ``(pack, warning)``.

    * ``version=None``: the newest default pack, no warning.
    * A version inside a pack's range: that pack (the ``engine_default`` one unless
      ``engine`` asks for the other engine and a pack for it covers the version).  A
      version of a later minor line than the open-ended newest pack's ``min_version``
      (e.g. 0.34.0 against a pack read from 0.33.0) gets that pack plus a warning.
    * Older than the oldest / newer than a closed newest range: the nearest pack plus a
      warning string.  (The newest pack is normally open-ended.)
    * A malformed version raises :class:`~vmemplan.core.errors.UsageError` whose hint lists the
      supported range.
    """
    if not packs:
        raise RegistryInvalid("no vLLM rules packs are installed", hint="reinstall vmemplan")
    span = supported_range(packs)
    defaults = [p for p in packs if p.engine_default] or list(packs)
    ordered = sorted(defaults, key=lambda p: _cmp_key(p.min_key))
    if version is None:
        return ordered[-1], None
    try:
        key = parse_version(version)
    except UsageError as exc:
        raise UsageError(exc.message, hint=f"supported vLLM releases: {span}") from None

    covering = [p for p in packs if p.contains(key)]
    if covering:
        chosen = _prefer_default(covering)
        if engine is not None:
            wanted = [p for p in covering if p.engine == engine]
            if wanted:
                chosen = _prefer_default(wanted)
        warning = None
        if chosen.max_version is None and tuple(key[:2]) > tuple(chosen.min_key[:2]):
            # open-ended newest pack: the rules were read from an older release line
            warning = (
                f"vLLM {version} is newer than the newest release the rules were read from "
                f"({chosen.min_version}); using {chosen.id}, so figures may differ"
            )
        return chosen, warning

    if _cmp_key(key) < _cmp_key(ordered[0].min_key):
        pack = ordered[0]
        return pack, (
            f"vLLM {version} is older than the oldest rules pack ({pack.id}, {pack.range_text}); "
            f"using {pack.id}, so figures may differ"
        )
    # newer than every closed range, or inside a gap between packs: nearest lower pack
    lower = [p for p in ordered if _cmp_key(p.min_key) <= _cmp_key(key)]
    pack = lower[-1] if lower else ordered[-1]
    if pack is ordered[-1]:
        text = f"vLLM {version} is newer than the newest rules pack ({pack.id}, {pack.range_text})"
    else:
        text = f"vLLM {version} falls between rules packs"
    return pack, f"{text}; using {pack.id}, so figures may differ"


def _prefer_default(packs: Sequence[RulesPack]) -> RulesPack:
    for pack in packs:
        if pack.engine_default:
            return pack
    return packs[0]


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def _describe_errors(label: str, exc: ValidationError) -> list[str]:
    from vmemplan.core.records import describe_errors

    return [f"{label}: {loc or '(top level)'}: {msg}" for loc, msg in describe_errors(exc)]


def parse_rules_pack(mapping: Mapping[str, Any], *, label: str = "<rules pack>") -> RulesPack:
    """Validate one already-loaded mapping into a :class:`RulesPack` (pure).

    Raises :class:`~vmemplan.core.errors.RegistryInvalid` whose message has one
    ``"<label>: <field path>: <problem>"`` line per problem.
    """
    if not isinstance(mapping, Mapping):
        raise RegistryInvalid(f"{label}: (top level): expected a mapping, got {type(mapping).__name__}")
    from pydantic import ValidationError

    try:
        return validate(RulesPack, dict(mapping))
    except ValidationError as exc:
        raise RegistryInvalid("\n".join(_describe_errors(label, exc))) from None


def load_rules_packs(directory: Path) -> tuple[RulesPack, ...]:
    """Read and validate every ``*.yaml`` in ``directory``, sorted by ``min_version``.

    All problems in all files are collected into one
    :class:`~vmemplan.core.errors.RegistryInvalid` (no file is skipped).  Besides schema errors
    this checks that the file name equals the pack id, that ids are unique, and that the
    version ranges of default packs do not overlap.
    """
    from vmemplan._yaml import load_yaml_file, yaml_error

    directory = Path(directory)
    problems: list[str] = []
    packs: list[tuple[str, RulesPack]] = []
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise RegistryInvalid(f"{directory}: no *.yaml rules packs found")
    for path in files:
        label = path.name
        try:
            data = load_yaml_file(path)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{label}: (file): cannot read: {exc}")
            continue
        except yaml_error() as exc:
            problems.append(f"{label}: (yaml): {' '.join(str(exc).split())}")
            continue
        try:
            pack = parse_rules_pack(data, label=label)
        except RegistryInvalid as exc:
            problems.extend(exc.message.splitlines())
            continue
        if pack.id != path.stem:
            problems.append(f"{label}: id: pack id {pack.id!r} does not match the file name {path.stem!r}")
        packs.append((label, pack))

    seen: dict[str, str] = {}
    for label, pack in packs:
        if pack.id in seen:
            problems.append(f"{label}: id: duplicate pack id {pack.id!r} (also in {seen[pack.id]})")
        seen[pack.id] = label
    by_engine: dict[str, list[tuple[str, RulesPack]]] = {}
    for label, pack in packs:
        key = "default" if pack.engine_default else f"fallback-{pack.engine}"
        by_engine.setdefault(key, []).append((label, pack))
    for group in by_engine.values():
        group.sort(key=lambda item: _cmp_key(item[1].min_key))
        for (label_a, a), (label_b, b) in zip(group, group[1:]):
            if a.max_key is None or b.contains(a.max_key) or a.contains(b.min_key):
                problems.append(
                    f"{label_b}: min_version: range {b.range_text} overlaps {label_a} ({a.range_text})"
                )
    if problems:
        raise RegistryInvalid(
            "\n".join(problems), hint=f"fix the rules pack(s) under {directory}"
        )
    return tuple(sorted((p for _, p in packs), key=lambda p: (_cmp_key(p.min_key), not p.engine_default)))


# --------------------------------------------------------------------------------------
# Log rendering helpers
# --------------------------------------------------------------------------------------


def render_log_line(fmt: str, *args: object) -> str:
    """Apply printf-style ``%`` formatting the way Python's logging does (``fmt % args``)."""
    if not args:
        return fmt
    return fmt % args
