"""The bundled registry of model configs: ``registry/models/<org>--<name>.json``, aliases,
provenance, and the family-aware suggestions shown when an id is not bundled."""

from __future__ import annotations

import difflib
import functools
import os
import re
from pathlib import Path
from typing import Any

from vmemplan.core.errors import RegistryInvalid, VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.sources.cache import retry_uncached
from vmemplan.sources.local import (
    _SIDECAR_QUALIFIERS,
    _VARIANT_QUALIFIERS,
    ModelSource,
    _read_json_object,
)

# --------------------------------------------------------------------------------------------
# registry location


def default_registry_dir() -> Path:
    """The registry root directory.

    ``$VMEMPLAN_REGISTRY`` when set (it must be a directory), else the ``_registry`` folder that
    the wheel packs next to the package, else the checkout's ``registry/``.  Temporary home of
    this lookup until ``vmemplan.registry`` provides it.
    """
    env = os.environ.get("VMEMPLAN_REGISTRY")
    if env:
        root = Path(os.path.expandvars(env)).expanduser()
        if not root.is_dir():
            raise RegistryInvalid(
                f"VMEMPLAN_REGISTRY points at {root}, which is not a directory",
                hint="unset VMEMPLAN_REGISTRY to use the registry shipped with vmemplan",
            )
        return root
    import vmemplan._version as vmemplan  # a module in the package directory (not the root: no cycle)

    packaged = Path(vmemplan.__file__).resolve().parent / "_registry"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "registry"


def default_models_dir() -> Path:
    """The directory of bundled model configs: ``<registry>/models``."""
    return default_registry_dir() / "models"


# --------------------------------------------------------------------------------------------
# bundled registry


@frozen
class _BundledFile:
    """One bundled config file: the id it belongs to, its variant qualifier and its sidecars."""

    model_id: str  # canonical "org/name" spelling, from the file name
    variant: str | None  # "aiconfigurator-trimmed", ... or None for a plain copy
    path: Path
    sidecars: tuple[tuple[str, Path], ...]  # (repo file name, bundled path)

    @property
    def key(self) -> str:
        return self.model_id if self.variant is None else f"{self.model_id}:{self.variant}"


def _split_bundled_name(file_name: str) -> tuple[str, str | None, str | None]:
    """``org--name[.qualifier].json`` -> (model id, variant qualifier, sidecar file name)."""
    stem = file_name[: -len(".json")]
    variant: str | None = None
    sidecar: str | None = None
    for qualifier in _VARIANT_QUALIFIERS:
        if stem.endswith("." + qualifier):
            stem, variant = stem[: -len(qualifier) - 1], qualifier
            break
    else:
        for qualifier, repo_file in _SIDECAR_QUALIFIERS.items():
            if stem.endswith("." + qualifier):
                stem, sidecar = stem[: -len(qualifier) - 1], repo_file
                break
    org, sep, name = stem.partition("--")
    if not sep or not org or not name:
        raise RegistryInvalid(
            f"bundled model file {file_name} is not named <org>--<name>.json",
            hint="rename it after the Hugging Face id it holds, with '--' in place of '/'",
        )
    return f"{org}/{name}", variant, sidecar


def _scan_bundled(models_dir: Path) -> dict[str, _BundledFile]:
    """Index the bundled configs by lower-cased lookup key.

    Keys: the plain id ``org/name`` for a plain copy; ``org/name:<variant>`` for every variant
    copy; and the plain id for a variant copy too when no plain copy of that id exists (the first
    variant in name order).  Sidecars attach to every copy of their id.
    """
    if not models_dir.is_dir():
        return {}
    configs: list[tuple[str, str | None, Path]] = []
    sidecars: dict[str, list[tuple[str, Path]]] = {}
    for file in sorted(models_dir.iterdir(), key=lambda p: p.name):
        if not file.name.endswith(".json") or not file.is_file():
            continue
        model_id, variant, sidecar = _split_bundled_name(file.name)
        if sidecar is not None:
            sidecars.setdefault(model_id.lower(), []).append((sidecar, file))
        else:
            configs.append((model_id, variant, file))
    index: dict[str, _BundledFile] = {}
    for model_id, variant, file in configs:
        entry = _BundledFile(model_id, variant, file, tuple(sidecars.get(model_id.lower(), ())))
        index[entry.key.lower()] = entry
    for model_id, variant, _file in configs:  # a variant answers to the plain id when nothing else does
        if variant is not None and model_id.lower() not in index:
            index[model_id.lower()] = index[f"{model_id}:{variant}".lower()]
    return index


def _load_yaml_mapping(path: Path, required: str | None = None) -> dict[str, Any]:
    """Parse a small registry YAML file into a mapping (empty when the file is absent).

    Parsed once per (path, size, mtime); callers must not mutate the result.
    """
    try:
        stat = path.stat()
    except OSError:
        return {}
    return _parse_yaml_mapping(str(path), stat.st_size, stat.st_mtime_ns, required)


@functools.lru_cache(maxsize=32)
@retry_uncached  # a parse-cache entry of the wrong shape is dropped and its source parsed again
def _parse_yaml_mapping(path_text: str, size: int, mtime_ns: int, required: str | None = None) -> dict[str, Any]:
    from vmemplan._yaml import load_yaml_file, yaml_error

    path = Path(path_text)
    try:
        data = load_yaml_file(path)
    except (OSError, UnicodeDecodeError, yaml_error()) as error:  # yaml imported only on an error
        raise RegistryInvalid(f"registry file {path} cannot be read: {error}", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RegistryInvalid(f"registry file {path} must hold a mapping at the top level", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
    if required is not None and required not in data:
        raise RegistryInvalid(f"registry file {path} has no {required!r} key", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
    return data


@frozen
class _Alias:
    alias: str
    target: str
    source: str


def _load_aliases(models_dir: Path) -> dict[str, _Alias]:
    """``aliases.yaml`` as {lower-cased alias: _Alias}; validates its shape."""
    path = models_dir / "aliases.yaml"
    data = _load_yaml_mapping(path, "aliases").get("aliases") or {}
    if not isinstance(data, dict):
        raise RegistryInvalid(f"{path}: 'aliases' must be a mapping of id -> {{target, source}}", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
    aliases: dict[str, _Alias] = {}
    for alias, body in data.items():
        if not isinstance(alias, str) or not isinstance(body, dict):
            raise RegistryInvalid(f"{path}: alias {alias!r} must map to {{target: ..., source: ...}}", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
        target, source = body.get("target"), body.get("source")
        if not isinstance(target, str) or not target or not isinstance(source, str) or not source.strip():
            raise RegistryInvalid(f"{path}: alias {alias!r} needs a 'target' id and a 'source' line", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
        if alias.lower() in aliases:
            raise RegistryInvalid(f"{path}: alias {alias!r} is listed twice (ids match case-insensitively)", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
        aliases[alias.lower()] = _Alias(alias, target, " ".join(source.split()))
    return aliases


def _load_provenance(models_dir: Path) -> dict[str, dict[str, Any]]:
    files = _load_yaml_mapping(models_dir / "provenance.yaml", "files").get("files") or {}
    if not isinstance(files, dict):
        raise RegistryInvalid(f"{models_dir / 'provenance.yaml'}: 'files' must be a mapping", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
    return files


def list_bundled_models(bundled_dir: Path | None = None) -> list[str]:
    """Every bundled config once, by the id that selects it, sorted case-insensitively.

    Plain copies are listed as ``org/name``; a variant copy (trimmed, reserialized) is listed as
    ``org/name`` when it is the only copy of that id, else as ``org/name:<variant>``.  Aliases
    are not listed (see :func:`bundled_aliases`).
    """
    index = _scan_bundled(bundled_dir if bundled_dir is not None else default_models_dir())
    keys: dict[Path, str] = {}
    for key, entry in index.items():
        spelled = entry.model_id if key == entry.model_id.lower() else entry.key
        previous = keys.get(entry.path)
        if previous is None or len(spelled) < len(previous):  # prefer the plain id when a file has two keys
            keys[entry.path] = spelled
    return sorted(keys.values(), key=lambda k: (k.lower(), k))


def bundled_aliases(bundled_dir: Path | None = None) -> dict[str, str]:
    """``aliases.yaml`` as {alias id: bundled target id}, in file order."""
    aliases = _load_aliases(bundled_dir if bundled_dir is not None else default_models_dir())
    return {a.alias: a.target for a in aliases.values()}


def _find_bundled(ref: str, models_dir: Path) -> tuple[_BundledFile, _Alias | None, str] | None:
    """The bundled file for ``ref`` (case-insensitive, aliases followed) and the canonical spelling of ``ref``."""
    index = _scan_bundled(models_dir)
    entry = index.get(ref.lower())
    if entry is not None:
        return entry, None, (entry.model_id if ref.lower() == entry.model_id.lower() else entry.key)
    alias = _load_aliases(models_dir).get(ref.lower())
    if alias is None:
        return None
    target = index.get(alias.target.lower())
    if target is None:
        raise RegistryInvalid(
            f"{models_dir / 'aliases.yaml'}: alias {alias.alias} points at {alias.target}, which is not bundled",
            hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with",
        )
    return target, alias, alias.alias


def _load_bundled(entry: _BundledFile, alias: _Alias | None, model_id: str, models_dir: Path,
                  config_format: str = "auto") -> ModelSource:
    config = _read_json_object(entry.path, "config.json")
    extra = {repo_file: _read_json_object(path, repo_file) for repo_file, path in entry.sidecars}
    mistral_notes: list[str] = []
    params = extra.pop("params.json", None)
    if params is not None and config_format != "hf":
        from vmemplan.sources.mistral_format import parse_params

        # the repository ships consolidated*.safetensors and params.json (Mistral's own format), so
        # vLLM's --config-format auto reads params.json; the tensors' dtype is config.json's
        dtype = config.get("torch_dtype") or config.get("dtype")
        config = parse_params(params, config, dtype if isinstance(dtype, str) else None)
        mistral_notes.append("planned from the bundled params.json (Mistral's own format, which vLLM's --config-format "
                             "auto reads for this repository); --config-format hf plans its config.json")
    elif config_format == "mistral":
        mistral_notes.append(f"--config-format mistral: no params.json is bundled for {entry.model_id}; planned from "
                             "its config.json")
    provenance = _load_provenance(models_dir)
    notes: list[str] = []
    if alias is not None:
        notes.append(f"{alias.alias} is an alias of the bundled {entry.model_id}: {alias.source}")
    notes.append(_provenance_note(entry, provenance.get(entry.path.name)))
    for repo_file, path in entry.sidecars:
        notes.append(f"bundled {repo_file} of {entry.model_id} read from {path.name}")
    notes.extend(mistral_notes)
    return ModelSource.of_config(model_id, "bundled", config, extra, notes, revision=None, path=str(entry.path),
                                 safetensors_params=None)


def _provenance_note(entry: _BundledFile, record: dict[str, Any] | None) -> str:
    what = f"bundled copy of {entry.model_id}"
    if entry.variant is not None:
        what += f" ({entry.variant}: not the complete Hub file)"
    if not isinstance(record, dict):
        return f"{what}; no provenance recorded"
    parts = [what]
    if record.get("fidelity"):
        parts.append(f"fidelity: {record['fidelity']}")
    if record.get("origin"):
        parts.append(f"from {record['origin']}")
    text = "; ".join(parts)
    if record.get("note"):
        text += f" -- {' '.join(str(record['note']).split())}"
    return text



# --------------------------------------------------------------------------------------------
# suggestions for an id that is not bundled


def _family(model_id: str) -> tuple[str, str]:
    """(org, family) of a Hub id: the org lower-cased, and the leading letters of the name
    (``mistralai/Mistral-Nemo-Instruct-2407`` -> ``("mistralai", "mistral")``,
    ``Qwen/Qwen3-8B`` -> ``("qwen", "qwen")``)."""
    org, _, name = model_id.rpartition("/")
    match = re.match(r"[A-Za-z]+", name)
    return org.lower(), (match.group(0).lower() if match else name.lower())


def family_suggestions(ref: str, models_dir: Path, *, limit: int = 3) -> tuple[str | None, list[str]]:
    """(a near-identical bundled id or None, up to ``limit`` bundled ids of the same family).

    Only ids of the same org and model family count: a suggestion must never name a different
    model family (``mistralai/Mistral-Nemo-…`` is not ``unsloth/Mistral-Small-…-GGUF``), so
    edit distance alone decides nothing.  The near-identical id is a likely typo (ratio ≥ 0.9).
    """
    try:
        names = list_bundled_models(models_dir) + list(bundled_aliases(models_dir))
    except VmemplanError:
        return None, []
    want = _family(ref)
    same = [n for n in names if ":" not in n and _family(n) == want]
    if not same:
        return None, []
    scored = sorted(same, key=lambda n: (-difflib.SequenceMatcher(None, ref.lower(), n.lower()).ratio(), n))
    best = scored[0]
    typo = best if difflib.SequenceMatcher(None, ref.lower(), best.lower()).ratio() >= 0.9 else None
    return typo, scored[:limit]
