"""Where a model's ``config.json`` comes from: a local path, the bundled registry, the HF cache or the Hub.

:func:`load_model_source` resolves a model reference in this order and stops at the first hit:

1. **local** -- a ``config.json`` file, or a model directory holding one.  A reference is read as a
   path only when that path exists, or when it is written like one (starts with ``/``, ``./``,
   ``../`` or ``~``, or ends in ``.json``); a path-like reference that does not exist is a
   :class:`~vmemplan.core.errors.BadInput`.
2. **bundled** -- ``registry/models/<org>--<name>.json`` (ids match case-insensitively, and
   ``aliases.yaml`` maps further ids onto those files).  Skipped when a revision is asked for,
   because a bundled copy belongs to no revision.
3. **hf-cache** -- a ``config.json`` already in the Hugging Face cache (``HF_HUB_CACHE`` /
   ``HF_HOME``), found without any network access.
4. **hub** -- ``config.json`` downloaded from the Hub into the HF cache (``HF_ENDPOINT``,
   ``HF_TOKEN``, ``HF_HUB_OFFLINE`` honoured), plus ``hf_quant_config.json`` where vLLM would read
   it, plus exact parameter counts per dtype from the safetensors headers.

Security: nothing from a model repository is ever executed.  ``auto_map`` entries are data, no
``trust_remote_code`` flag exists anywhere in vmemplan, and the only files fetched are
``config.json``, ``hf_quant_config.json`` and safetensors headers (plus, for sharded checkpoints,
the ``model.safetensors.index.json`` that ``get_safetensors_metadata`` reads to find the shards),
all into the Hugging Face cache.

This is the only vmemplan module that imports :mod:`huggingface_hub`, and it does so inside
functions, so importing this module stays cheap.  It is also the only place where
huggingface_hub exceptions turn into :class:`~vmemplan.core.errors.VmemplanError` subclasses; an access
token never appears in any message, note or exception text built here.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import os
import re
import struct
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vmemplan.core.errors import BadInput, HubUnavailable, ModelConfigError, RegistryInvalid, VmemplanError

__all__ = [
    "EXTRA_CONFIG_FILES",
    "ModelSource",
    "SourceKind",
    "bundled_aliases",
    "default_models_dir",
    "default_registry_dir",
    "list_bundled_models",
    "load_model_source",
]

SourceKind = Literal["local", "bundled", "hf-cache", "hub"]

#: Other JSON files of a model directory that vLLM's quantization loaders read next to config.json
#: (``get_config_filenames`` of the ModelOpt, AutoGPTQ/AutoAWQ and INC configs in
#: vllm/model_executor/layers/quantization/, 0.33.0).  Local directories and the HF cache are
#: searched for all of them; from the Hub only ``hf_quant_config.json`` is fetched.
EXTRA_CONFIG_FILES: tuple[str, ...] = (
    "hf_quant_config.json",
    "quantize_config.json",
    "quant_config.json",
    "quantization_config.json",
)
_HUB_EXTRA_FILE = "hf_quant_config.json"

#: Suffixes of bundled copies that are known to differ from the Hub file (see provenance.yaml).
_VARIANT_QUALIFIERS: tuple[str, ...] = ("aiconfigurator-trimmed", "megatron-bridge-trimmed", "reserialized")
#: Suffixes of bundled sidecar files and the repo file name each stands for.
_SIDECAR_QUALIFIERS: dict[str, str] = {"hf_quant_config": "hf_quant_config.json"}

_HUB_SPINNER_TEXT = "Fetching config.json from the Hugging Face Hub…"
_OFFLINE_HINT = "it is not bundled and not in your Hugging Face cache; run once online or pass a local config.json"
_GATED_HINT = (
    "accept the model's licence on its Hugging Face page, then log in with `hf auth login` "
    "or set HF_TOKEN to a token of that account"
)
_MAX_JSON_BYTES = 64 * 1024 * 1024  # a config.json is a few KiB; refuse anything absurd
_MAX_SAFETENSORS_HEADER_BYTES = 100 * 1024 * 1024
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9_.-]{1,96}/)?[A-Za-z0-9_.-]{1,96}$")
_TOKEN_LIKE_RE = re.compile(r"hf_[A-Za-z0-9]{8,}")


@dataclass(frozen=True)
class ModelSource:
    """A parsed ``config.json`` and where it came from.

    ``revision`` is the commit the config was read at when the HF cache or the Hub tells it
    (a 40-hex sha), else the revision asked for, else ``None`` (local and bundled copies).
    ``safetensors_params`` maps a safetensors dtype (``"BF16"``, ``"F8_E4M3"``, ...) to the number
    of parameters stored in it, summed over every tensor of every shard; ``None`` when no
    safetensors header was available.
    """

    model_id: str
    source: SourceKind
    config: dict[str, Any] = field(repr=False)
    extra: dict[str, dict[str, Any]] = field(repr=False)
    revision: str | None
    path: str | None
    safetensors_params: dict[str, int] | None
    notes: tuple[str, ...]


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
    import vmemplan._version as vmemplan  # a module in the package directory (not the package root: no cycle)

    packaged = Path(vmemplan.__file__).resolve().parent / "_registry"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / "registry"


def default_models_dir() -> Path:
    """The directory of bundled model configs: ``<registry>/models``."""
    return default_registry_dir() / "models"


# --------------------------------------------------------------------------------------------
# bundled registry


@dataclass(frozen=True)
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


def _load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Parse a small registry YAML file into a mapping (empty when the file is absent).

    Parsed once per (path, size, mtime); callers must not mutate the result.
    """
    try:
        stat = path.stat()
    except OSError:
        return {}
    return _parse_yaml_mapping(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _parse_yaml_mapping(path_text: str, size: int, mtime_ns: int) -> dict[str, Any]:
    import yaml  # lazy: keep `import vmemplan.sources` light

    path = Path(path_text)
    try:
        from vmemplan._yaml import load_yaml_file

        data = load_yaml_file(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise RegistryInvalid(f"registry file {path} cannot be read: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RegistryInvalid(f"registry file {path} must hold a mapping at the top level")
    return data


@dataclass(frozen=True)
class _Alias:
    alias: str
    target: str
    source: str


def _load_aliases(models_dir: Path) -> dict[str, _Alias]:
    """``aliases.yaml`` as {lower-cased alias: _Alias}; validates its shape."""
    path = models_dir / "aliases.yaml"
    data = _load_yaml_mapping(path).get("aliases") or {}
    if not isinstance(data, dict):
        raise RegistryInvalid(f"{path}: 'aliases' must be a mapping of id -> {{target, source}}")
    aliases: dict[str, _Alias] = {}
    for alias, body in data.items():
        if not isinstance(alias, str) or not isinstance(body, dict):
            raise RegistryInvalid(f"{path}: alias {alias!r} must map to {{target: ..., source: ...}}")
        target, source = body.get("target"), body.get("source")
        if not isinstance(target, str) or not target or not isinstance(source, str) or not source.strip():
            raise RegistryInvalid(f"{path}: alias {alias!r} needs a 'target' id and a 'source' line")
        if alias.lower() in aliases:
            raise RegistryInvalid(f"{path}: alias {alias!r} is listed twice (ids match case-insensitively)")
        aliases[alias.lower()] = _Alias(alias, target, " ".join(source.split()))
    return aliases


def _load_provenance(models_dir: Path) -> dict[str, dict[str, Any]]:
    files = _load_yaml_mapping(models_dir / "provenance.yaml").get("files") or {}
    if not isinstance(files, dict):
        raise RegistryInvalid(f"{models_dir / 'provenance.yaml'}: 'files' must be a mapping")
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
            f"{models_dir / 'aliases.yaml'}: alias {alias.alias} points at {alias.target}, which is not bundled"
        )
    return target, alias, alias.alias


def _load_bundled(entry: _BundledFile, alias: _Alias | None, model_id: str, models_dir: Path) -> ModelSource:
    config = _read_json_object(entry.path, "config.json")
    extra = {repo_file: _read_json_object(path, repo_file) for repo_file, path in entry.sidecars}
    provenance = _load_provenance(models_dir)
    notes: list[str] = []
    if alias is not None:
        notes.append(f"{alias.alias} is an alias of the bundled {entry.model_id}: {alias.source}")
    notes.append(_provenance_note(entry, provenance.get(entry.path.name)))
    for repo_file, path in entry.sidecars:
        notes.append(f"bundled {repo_file} of {entry.model_id} read from {path.name}")
    notes.extend(_auto_map_notes(config))
    return ModelSource(
        model_id=model_id,
        source="bundled",
        config=config,
        extra=extra,
        revision=None,
        path=str(entry.path),
        safetensors_params=None,
        notes=tuple(notes),
    )


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
# JSON and safetensors readers


def _read_json_object(path: Path, label: str) -> dict[str, Any]:
    """Parse ``path`` as a JSON object; ``label`` names the file in messages (``config.json``...).

    Python's json accepts the non-standard ``Infinity``/``NaN`` tokens that some published
    configs carry (Nemotron-H's ``time_step_limit``), as transformers does.
    """
    try:
        size = path.stat().st_size
        if size > _MAX_JSON_BYTES:
            raise ModelConfigError(f"{label} at {path} is {size} bytes, too large to be a model config")
        raw = path.read_bytes()
    except OSError as error:
        raise BadInput(f"cannot read {label} at {path}: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ModelConfigError(f"{label} at {path} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ModelConfigError(
            f"{label} at {path} is not valid JSON: line {error.lineno} column {error.colno} ({error.msg})",
            hint="the file may be truncated or hand-edited; fetch a fresh copy",
        ) from None
    if not isinstance(data, dict):
        raise ModelConfigError(
            f"{label} at {path} is not a JSON object (it holds a JSON {_json_kind(data)})",
            hint="a config.json holds one object with keys such as architectures and hidden_size",
        )
    return data


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


def _safetensors_header_params(path: Path) -> dict[str, int]:
    """Parameters per dtype in one ``.safetensors`` file, from its header alone.

    Layout (safetensors format): 8 bytes little-endian header length N, then N bytes of JSON
    ``{tensor: {dtype, shape, data_offsets}, "__metadata__": {...}}``.  A tensor holds
    prod(shape) parameters (1 for a scalar).  Raises ValueError on a malformed header.
    """
    with path.open("rb") as handle:
        prefix = handle.read(8)
        if len(prefix) != 8:
            raise ValueError("file shorter than a safetensors header")
        (length,) = struct.unpack("<Q", prefix)
        if length > _MAX_SAFETENSORS_HEADER_BYTES:
            raise ValueError(f"header length {length} is implausible")
        body = handle.read(length)
    if len(body) != length:
        raise ValueError("truncated header")
    header = json.loads(body.decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    counts: dict[str, int] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or not isinstance(info.get("dtype"), str):
            raise ValueError(f"tensor {name!r} has no dtype")
        shape = info.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"tensor {name!r} has a malformed shape")
        counts[info["dtype"]] = counts.get(info["dtype"], 0) + math.prod(shape)
    return counts


def _local_safetensors_params(model_dir: Path) -> tuple[dict[str, int] | None, str | None]:
    """Sum the safetensors headers of a model directory: (counts or None, note or None).

    With a ``model.safetensors.index.json`` only the shards it names count, and every one of
    them must be present; otherwise every ``*.safetensors`` file of the directory counts.
    """
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None, None
    index_path = model_dir / "model.safetensors.index.json"
    if index_path.is_file():
        try:
            index = _read_json_object(index_path, "model.safetensors.index.json")
        except VmemplanError as error:
            return None, f"safetensors parameter counts skipped: {error}"
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict):
            return None, "safetensors parameter counts skipped: the index has no weight_map"
        shards = sorted({str(v) for v in weight_map.values()})
        missing = [s for s in shards if not (model_dir / s).is_file()]
        if missing:
            return None, (
                f"safetensors parameter counts skipped: {len(missing)} of {len(shards)} shards "
                f"are not in {model_dir} (first: {missing[0]})"
            )
        files = [model_dir / s for s in shards]
    totals: dict[str, int] = {}
    for file in files:
        try:
            counts = _safetensors_header_params(file)
        except (OSError, ValueError, UnicodeDecodeError) as error:
            return None, f"safetensors parameter counts skipped: cannot read the header of {file.name} ({error})"
        for dtype, count in counts.items():
            totals[dtype] = totals.get(dtype, 0) + count
    return totals, f"parameter counts read from {len(files)} local safetensors header(s)"


def _auto_map_notes(config: dict[str, Any]) -> list[str]:
    if "auto_map" in config:
        return ["config.json declares auto_map (custom model code); vmemplan reads the JSON only and never runs it"]
    return []


def _read_local_extras(model_dir: Path, skip: Path | None = None) -> dict[str, dict[str, Any]]:
    extras: dict[str, dict[str, Any]] = {}
    for name in EXTRA_CONFIG_FILES:
        candidate = model_dir / name
        if candidate.is_file() and (skip is None or candidate.resolve() != skip.resolve()):
            extras[name] = _read_json_object(candidate, name)
    return extras


# --------------------------------------------------------------------------------------------
# local paths


def _looks_like_path(ref: str) -> bool:
    return (
        ref.startswith(("/", "./", "../", "~", ".\\", "..\\"))
        or ref in (".", "..")
        or ref.lower().endswith(".json")
        or re.match(r"^[A-Za-z]:[\\/]", ref) is not None
    )


def _load_local(ref: str, revision: str | None) -> ModelSource:
    given = Path(ref).expanduser()
    if not given.exists():
        raise BadInput(
            f"no such file or directory: {ref}",
            hint="pass a config.json, a model directory that holds one, or a Hugging Face id such as org/name",
        )
    if given.is_dir():
        config_path = given / "config.json"
        if not config_path.is_file():
            raise BadInput(
                f"{given} is a directory without a config.json",
                hint="point at the model directory that holds config.json, or at the file itself",
            )
    else:
        config_path = given
    config = _read_json_object(config_path, "config.json")
    notes = [f"read from local file {config_path.resolve()}"]
    if revision is not None:
        notes.append(f"revision {revision} ignored: {ref} is a local path")
    extra: dict[str, dict[str, Any]] = {}
    params: dict[str, int] | None = None
    if config_path.name == "config.json":  # a model directory: its other files belong to this model
        model_dir = config_path.parent
        extra = _read_local_extras(model_dir, skip=config_path)
        notes.extend(f"{name} read from {model_dir}" for name in extra)
        params, note = _local_safetensors_params(model_dir)
        if note:
            notes.append(note)
    notes.extend(_auto_map_notes(config))
    return ModelSource(
        model_id=os.path.normpath(str(given)),
        source="local",
        config=config,
        extra=extra,
        revision=None,
        path=str(config_path.resolve()),
        safetensors_params=params,
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# Hugging Face cache and Hub


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().upper() in {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class _HubSettings:
    endpoint: str
    cache_dir: str
    offline: bool


def _hub_settings() -> _HubSettings:
    """Endpoint, cache directory and offline flag, read from the environment at call time.

    huggingface_hub reads these once, at its import; reading them here again lets a variable set
    later (tests, embedding programs) still win.  Precedence mirrors huggingface_hub.constants:
    HF_HUB_CACHE, then HUGGINGFACE_HUB_CACHE, then $HF_HOME/hub.
    """
    from huggingface_hub import constants

    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if cache:
        cache_dir = os.path.expanduser(os.path.expandvars(cache))
    elif os.environ.get("HF_HOME"):
        cache_dir = os.path.join(os.path.expanduser(os.path.expandvars(os.environ["HF_HOME"])), "hub")
    else:
        cache_dir = constants.HF_HUB_CACHE
    offline = (
        _truthy(os.environ.get("HF_HUB_OFFLINE"))
        or _truthy(os.environ.get("TRANSFORMERS_OFFLINE"))
        or bool(constants.HF_HUB_OFFLINE)
    )
    return _HubSettings(endpoint=endpoint, cache_dir=cache_dir, offline=offline)


def _check_repo_id(ref: str) -> None:
    bad = (
        not _REPO_ID_RE.fullmatch(ref)
        or "--" in ref
        or ".." in ref
        or ref.endswith(".git")
        or any(part.startswith((".", "-")) for part in ref.split("/"))
    )
    if bad:
        raise BadInput(
            f"{ref!r} is neither an existing path nor a valid Hugging Face model id",
            hint="pass a config.json, a model directory, or an id such as meta-llama/Llama-3.1-8B",
        )


def _commit_of(snapshot_file: str) -> str | None:
    name = Path(snapshot_file).parent.name
    return name if _COMMIT_RE.fullmatch(name) else None


def _from_cache(repo_id: str, revision: str | None, settings: _HubSettings) -> ModelSource | None:
    """``config.json`` from the HF cache layout ``models--org--name/snapshots/<sha>/``; no network."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=settings.cache_dir, revision=revision)
    if not isinstance(found, str):
        return None
    path = Path(found)
    config = _read_json_object(path, "config.json")
    commit = _commit_of(found)
    extra: dict[str, dict[str, Any]] = {}
    for name in EXTRA_CONFIG_FILES:
        cached = try_to_load_from_cache(repo_id, name, cache_dir=settings.cache_dir, revision=commit or revision)
        if isinstance(cached, str):
            extra[name] = _read_json_object(Path(cached), name)
    notes = [
        f"read from the Hugging Face cache ({settings.cache_dir}) at revision {revision or 'main'}"
        + (f" (commit {commit})" if commit else "")
        + "; no network access"
    ]
    notes.extend(f"{name} read from the Hugging Face cache" for name in extra)
    params, note = _local_safetensors_params(path.parent)
    if note:
        notes.append(note)
    notes.extend(_auto_map_notes(config))
    return ModelSource(
        model_id=repo_id,
        source="hf-cache",
        config=config,
        extra=extra,
        revision=commit or revision,
        path=found,
        safetensors_params=params,
        notes=tuple(notes),
    )


class _Scrubber:
    """Removes access tokens from text built from Hub exceptions."""

    def __init__(self, token: str | None) -> None:
        candidates = [token, os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN")]
        self._secrets = sorted({t.strip() for t in candidates if t and len(t.strip()) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _TOKEN_LIKE_RE.sub("hf_***", text)


def _translate_hub_error(
    error: BaseException, *, repo_id: str, revision: str | None, filename: str, settings: _HubSettings, scrub: _Scrubber
) -> VmemplanError | None:
    """Map a huggingface_hub / HTTP-client exception to one of ours; ``None`` if it is not one we expect.

    Order matters: GatedRepoError subclasses RepositoryNotFoundError, and LocalEntryNotFoundError
    (nothing cached, Hub unreachable) shares the EntryNotFoundError base with the remote 404.
    """
    from huggingface_hub import errors as hub_errors

    at = f" at revision {revision}" if revision else ""
    remote_entry = getattr(hub_errors, "RemoteEntryNotFoundError", None)

    if isinstance(error, hub_errors.GatedRepoError):
        return HubUnavailable(
            f"{repo_id} is a gated repository on the Hugging Face Hub and this request may not read it",
            hint=_GATED_HINT,
        )
    if isinstance(error, hub_errors.RepositoryNotFoundError):
        return HubUnavailable(
            f"model {repo_id} was not found on the Hugging Face Hub ({settings.endpoint}), or it is private",
            hint="check the id; a private repository needs `hf auth login` or HF_TOKEN",
        )
    if isinstance(error, hub_errors.RevisionNotFoundError):
        return HubUnavailable(
            f"revision {revision} of {repo_id} was not found on the Hugging Face Hub",
            hint="pass an existing branch, tag or commit with --revision",
        )
    if isinstance(error, hub_errors.LocalEntryNotFoundError):
        return HubUnavailable(
            f"cannot reach the Hugging Face Hub ({settings.endpoint}) to fetch {filename} of {repo_id}{at}",
            hint="check your network, proxy or HF_ENDPOINT; " + _OFFLINE_HINT,
        )
    if (remote_entry is not None and isinstance(error, remote_entry)) or isinstance(
        error, hub_errors.EntryNotFoundError
    ):
        return HubUnavailable(
            f"{repo_id} has no {filename}{at} on the Hugging Face Hub",
            hint="vmemplan needs a transformers-style config.json; pass a local one",
        )
    if isinstance(error, hub_errors.OfflineModeIsEnabled):
        return HubUnavailable(
            f"Hugging Face Hub access is disabled (HF_HUB_OFFLINE), so {filename} of {repo_id} cannot be fetched",
            hint=_OFFLINE_HINT,
        )
    if isinstance(error, getattr(hub_errors, "HFValidationError", ())):
        return BadInput(
            f"{repo_id!r} is not a valid Hugging Face model id",
            hint="pass a config.json, a model directory, or an id such as meta-llama/Llama-3.1-8B",
        )
    if isinstance(error, hub_errors.HfHubHTTPError):
        response = getattr(error, "response", None)
        status = getattr(response, "status_code", None)
        return HubUnavailable(
            f"the Hugging Face Hub answered HTTP {status} when fetching {filename} of {repo_id}{at}",
            hint="a 401/403 usually means a missing or insufficient token (`hf auth login`, HF_TOKEN); "
            "a 5xx means the Hub is having trouble, try again later",
        )
    if isinstance(error, _network_error_types()):
        detail = scrub(str(error)).strip()
        return HubUnavailable(
            f"cannot reach the Hugging Face Hub ({settings.endpoint}): {type(error).__name__}"
            + (f": {detail}" if detail else ""),
            hint="check your network, proxy or HF_ENDPOINT; " + _OFFLINE_HINT,
        )
    if isinstance(error, OSError):  # e.g. the cache directory is not writable
        detail = scrub(str(error)).strip()
        return HubUnavailable(
            f"cannot store {filename} of {repo_id} in the Hugging Face cache ({settings.cache_dir}): {detail}",
            hint="make HF_HOME or HF_HUB_CACHE point at a writable directory",
        )
    return None


def _network_error_types() -> tuple[type[BaseException], ...]:
    """Connection and timeout errors of whichever HTTP client this huggingface_hub uses."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module_name, names in (
        ("httpx2", ("TransportError", "TimeoutException")),
        ("httpx", ("TransportError", "TimeoutException")),
        ("requests", ("ConnectionError", "Timeout")),
    ):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        types.extend(t for t in (getattr(module, n, None) for n in names) if isinstance(t, type))
    return tuple(types)


def _call_hub(fn: Callable[[], Any], **context: Any) -> Any:
    """Run a huggingface_hub call; re-raise a failure as a VmemplanError with no chained hub exception.

    The translated error is raised outside the ``except`` block so it carries no ``__context__``:
    a hub exception may quote server text, and nothing of it must leak a token.
    """
    failure: VmemplanError | None = None
    try:
        return fn()
    except Exception as error:  # translated below, or re-raised untouched
        failure = _translate_hub_error(error, **context)
        if failure is None:
            raise
    raise failure


@contextmanager
def _quiet_hub() -> Iterator[None]:
    """Silence huggingface_hub's tqdm bars for the duration (the CLI shows its own spinner)."""
    from huggingface_hub import utils as hub_utils

    was_disabled = hub_utils.are_progress_bars_disabled()  # type: ignore[attr-defined]
    hub_utils.disable_progress_bars()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if not was_disabled:
            hub_utils.enable_progress_bars()  # type: ignore[attr-defined]


def _spinner(progress: Callable[[str], AbstractContextManager[Any]] | None, text: str) -> AbstractContextManager[Any]:
    return progress(text) if progress is not None else nullcontext()


def _download_optional(fn: Callable[[], Any], **context: Any) -> tuple[Any, str | None]:
    """Run an optional Hub call: (result, None), or (None, None) when the file is simply absent,
    or (None, reason) for any other failure.  Never raises for an expected Hub failure."""
    from huggingface_hub import errors as hub_errors

    absent: tuple[type[BaseException], ...] = tuple(
        t
        for t in (
            getattr(hub_errors, "RemoteEntryNotFoundError", None),
            getattr(hub_errors, "NotASafetensorsRepoError", None),
        )
        if isinstance(t, type)
    )
    reason: str | None = None
    try:
        return fn(), None
    except absent:
        return None, None
    except Exception as error:  # noqa: BLE001 - optional data: report why it is missing
        translated = _translate_hub_error(error, **context)
        if translated is not None:
            reason = translated.message
        else:
            first_line = (str(error).splitlines() or [""])[0]
            reason = context["scrub"](f"{type(error).__name__}: {first_line}".rstrip(": "))
    return None, reason


def _from_hub(
    repo_id: str,
    revision: str | None,
    token: str | None,
    settings: _HubSettings,
    progress: Callable[[str], AbstractContextManager[Any]] | None,
) -> ModelSource:
    """Download config.json (and hf_quant_config.json where vLLM reads it) and read safetensors headers."""
    import huggingface_hub as hub

    scrub = _Scrubber(token)
    context = {"repo_id": repo_id, "revision": revision, "settings": settings, "scrub": scrub}
    notes: list[str] = []
    with _quiet_hub():
        with _spinner(progress, _HUB_SPINNER_TEXT):
            downloaded = _call_hub(
                lambda: hub.hf_hub_download(
                    repo_id,
                    "config.json",
                    revision=revision,
                    cache_dir=settings.cache_dir,
                    endpoint=settings.endpoint,
                    token=token,
                ),
                filename="config.json",
                **context,
            )
        config = _read_json_object(Path(downloaded), "config.json")
        commit = _commit_of(downloaded)
        pinned = commit or revision
        notes.append(
            f"downloaded config.json of {repo_id} from {settings.endpoint} at revision {revision or 'main'}"
            + (f" (commit {commit})" if commit else "")
            + f" into the Hugging Face cache ({settings.cache_dir})"
        )

        extra: dict[str, dict[str, Any]] = {}
        # vLLM reads hf_quant_config.json (older ModelOpt exports) only when config.json carries no
        # quantization_config: vllm/transformers_utils/config.py::get_config (0.33.0).
        if "quantization_config" not in config:
            with _spinner(progress, "Fetching hf_quant_config.json from the Hugging Face Hub…"):
                quant_path, note = _download_optional(
                    lambda: hub.hf_hub_download(
                        repo_id,
                        _HUB_EXTRA_FILE,
                        revision=pinned,
                        cache_dir=settings.cache_dir,
                        endpoint=settings.endpoint,
                        token=token,
                    ),
                    filename=_HUB_EXTRA_FILE,
                    **dict(context, revision=pinned),
                )
            if quant_path is not None:
                extra[_HUB_EXTRA_FILE] = _read_json_object(Path(quant_path), _HUB_EXTRA_FILE)
                notes.append(f"{_HUB_EXTRA_FILE} downloaded from the Hub")
            elif note:
                notes.append(f"{_HUB_EXTRA_FILE} not fetched: {note}")

        params: dict[str, int] | None = None
        api = hub.HfApi(endpoint=settings.endpoint)
        with _spinner(progress, "Reading safetensors headers from the Hugging Face Hub…"):
            metadata, note = _download_optional(
                lambda: api.get_safetensors_metadata(repo_id, revision=pinned, token=token),
                filename="model.safetensors",
                **dict(context, revision=pinned),
            )
        if metadata is not None:
            params = {str(k): int(v) for k, v in dict(metadata.parameter_count).items()}
            shards = len(getattr(metadata, "files_metadata", None) or {})
            notes.append(f"parameter counts read from {shards} safetensors header(s) on the Hub")
        else:
            notes.append(f"no safetensors parameter counts: {note or 'the repository has no safetensors weights'}")

    notes.extend(_auto_map_notes(config))
    return ModelSource(
        model_id=repo_id,
        source="hub",
        config=config,
        extra=extra,
        revision=pinned,
        path=downloaded,
        safetensors_params=params,
        notes=tuple(scrub(n) for n in notes),
    )


def _close_bundled_match(ref: str, models_dir: Path) -> str | None:
    try:
        names = list_bundled_models(models_dir) + list(bundled_aliases(models_dir))
    except VmemplanError:
        return None
    lowered = {n.lower(): n for n in names}
    match = difflib.get_close_matches(ref.lower(), list(lowered), n=1, cutoff=0.8)
    return lowered[match[0]] if match else None


# --------------------------------------------------------------------------------------------
# entry point


def load_model_source(
    ref: str,
    *,
    revision: str | None = None,
    bundled_dir: Path | None = None,
    token: str | None = None,
    allow_hub: bool = True,
    progress: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> ModelSource:
    """Resolve ``ref`` (a path or a Hub id) to its parsed config.json: local, bundled, HF cache, then Hub.

    ``revision`` pins a branch, tag or commit (and skips the bundled copy, which has none);
    ``token`` overrides ``HF_TOKEN`` and the stored login; ``allow_hub=False`` stops before the
    network; ``progress(text)`` is entered as a context manager around each network call.
    """
    ref = ref.strip() if isinstance(ref, str) else ref
    if not isinstance(ref, str) or not ref:
        raise BadInput("no model given", hint="pass a config.json, a model directory or a Hugging Face id")
    revision = revision.strip() or None if isinstance(revision, str) else None

    # 1. local path
    if _looks_like_path(ref) or Path(ref).expanduser().exists():
        return _load_local(ref, revision)

    repo_id = ref.rstrip("/")
    models_dir = bundled_dir if bundled_dir is not None else default_models_dir()

    # 2. bundled registry
    skipped_bundled: str | None = None
    found = _find_bundled(repo_id, models_dir)
    if found is not None:
        if revision is None:
            return _load_bundled(found[0], found[1], found[2], models_dir)
        skipped_bundled = (
            f"revision {revision} requested: skipped the bundled copy of {found[0].model_id}, which has no revision"
        )

    _check_repo_id(repo_id)
    try:
        settings = _hub_settings()
    except ImportError:
        raise HubUnavailable(
            f"{repo_id} is not bundled with vmemplan and huggingface_hub is not installed",
            hint="install huggingface_hub, or pass a local config.json",
        ) from None

    def with_skip_note(source: ModelSource) -> ModelSource:
        if skipped_bundled is None:
            return source
        return dataclasses.replace(source, notes=(skipped_bundled, *source.notes))

    # 3. Hugging Face cache (no network)
    scrub = _Scrubber(token)
    cached = _call_hub(
        lambda: _from_cache(repo_id, revision, settings),
        repo_id=repo_id,
        revision=revision,
        filename="config.json",
        settings=settings,
        scrub=scrub,
    )
    if cached is not None:
        return with_skip_note(cached)

    # 4. the Hub
    suggestion = None if skipped_bundled else _close_bundled_match(repo_id, models_dir)
    did_you_mean = f"did you mean {suggestion}? " if suggestion else ""
    if not allow_hub:
        where = (
            f"revision {revision} of {repo_id} is not in your Hugging Face cache"
            if skipped_bundled
            else f"{repo_id} is not bundled with vmemplan and not in your Hugging Face cache"
        )
        raise HubUnavailable(f"{where}, and Hub access is off", hint=did_you_mean + "pass a local config.json")
    if settings.offline:
        raise HubUnavailable(
            f"HF_HUB_OFFLINE is set, so vmemplan cannot fetch {repo_id} from the Hugging Face Hub",
            hint=(
                "a pinned revision is never served from the bundled copy and this one is not in your "
                "Hugging Face cache; drop --revision, run once online or pass a local config.json"
                if skipped_bundled
                else did_you_mean + _OFFLINE_HINT
            ),
        )
    try:
        return with_skip_note(_from_hub(repo_id, revision, token, settings, progress))
    except HubUnavailable as error:
        if suggestion and error.message.startswith(f"model {repo_id} was not found"):
            raise HubUnavailable(error.message, hint=f"did you mean {suggestion} (bundled)?") from None
        raise
