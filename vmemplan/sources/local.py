"""Model sources on disk: the ModelSource record, the bounded JSON and safetensors readers,
and local paths (a config.json or a model directory)."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import struct
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from vmemplan.core.errors import BadInput, ModelConfigError, VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.core.patterns import lazy
from vmemplan.sources._io import MAX_CONFIG_BYTES, NotRegularFile, loads_json, printable, read_regular

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
_SIDECAR_QUALIFIERS: dict[str, str] = {"hf_quant_config": "hf_quant_config.json", "params": "params.json"}

_HUB_SPINNER_TEXT = "Fetching config.json from the Hugging Face Hub…"
_OFFLINE_HINT = "it is not bundled and not in your Hugging Face cache; run once online or pass a local config.json"
_GATED_HINT = (
    "accept the model's licence on its Hugging Face page, then log in with `hf auth login` "
    "or set HF_TOKEN to a token of that account"
)
_MAX_JSON_BYTES = MAX_CONFIG_BYTES  # a config.json is a few KiB; refuse anything absurd
_MAX_SHARDS = 100_000
_MAX_SAFETENSORS_HEADER_BYTES = 100 * 1024 * 1024  # safetensors' own limit
_COMMIT_RE = lazy(r"^[0-9a-f]{40}$")
_REPO_ID_RE = lazy(r"^(?:[A-Za-z0-9_.-]{1,96}/)?[A-Za-z0-9_.-]{1,96}$")
_TOKEN_LIKE_RE = lazy(r"hf_[A-Za-z0-9]{8,}")


@frozen
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

    @classmethod
    def of_config(cls, model_id: str, source: SourceKind, config: dict[str, Any], extra: dict[str, dict[str, Any]],
                  notes: list[str], *, revision: str | None, path: str | None,
                  safetensors_params: dict[str, int] | None,
                  scrub: Callable[[str], str] | None = None) -> ModelSource:
        """The record of a ``config.json`` read from ``source``: ``notes`` then, where the config
        declares ``auto_map``, the note that its custom code is never run; ``scrub`` (the Hub's
        token scrubber) is applied to every note."""
        notes = [*notes, *_auto_map_notes(config)]
        return cls(model_id=model_id, source=source, config=config, extra=extra, revision=revision, path=path,
                   safetensors_params=safetensors_params,
                   notes=tuple(notes if scrub is None else (scrub(n) for n in notes)))


# --------------------------------------------------------------------------------------------
# JSON and safetensors readers


def _read_json_object(path: Path, label: str) -> dict[str, Any]:
    """Parse ``path`` as a JSON object; ``label`` names the file in messages (``config.json``...).

    Only a regular file is opened (a FIFO or a device is refused before it can block or stream
    forever), at most :data:`_MAX_JSON_BYTES` are read, and an integer of thousands of digits or
    nesting deeper than the interpreter allows is an input error, never a crash.  Python's json
    accepts the non-standard ``Infinity``/``NaN`` tokens that some published configs carry
    (Nemotron-H's ``time_step_limit``), as transformers does; the config schema refuses them in
    every field a law reads.
    """
    shown = printable(str(path))
    try:
        raw = read_regular(path, _MAX_JSON_BYTES)
    except NotRegularFile as error:
        raise BadInput(f"{label} at {shown} {error.strerror}",
                       hint="pass a regular config.json file (not a pipe or a device), or a model directory") from None
    except OSError as error:
        raise BadInput(f"cannot read {label} at {shown}: {error.strerror or error}",
                       hint="check that the file exists and that you may read it (and search its directories)") from None
    if len(raw) > _MAX_JSON_BYTES:
        raise ModelConfigError(f"{label} at {shown} is larger than {_MAX_JSON_BYTES >> 20} MiB, too large to be a model config",
                               hint="pass the model's config.json, a few KiB of JSON")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ModelConfigError(f"{label} at {shown} is not UTF-8 text",
                               hint="a config.json is UTF-8 JSON; fetch a fresh copy of the file") from None
    try:
        data = loads_json(text)
    except json.JSONDecodeError as error:
        raise ModelConfigError(
            f"{label} at {shown} is not valid JSON: line {error.lineno} column {error.colno} ({error.msg})",
            hint="the file may be truncated or hand-edited; fetch a fresh copy",
        ) from None
    except ValueError as error:
        raise ModelConfigError(f"{label} at {shown} cannot be used: {error}",
                               hint="the file is not a real model config; fetch a fresh copy") from None
    if not isinstance(data, dict):
        raise ModelConfigError(
            f"{label} at {shown} is not a JSON object (it holds a JSON {_json_kind(data)})",
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
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError("not a regular file")
    fd = os.open(path, flags)  # never blocks on a FIFO
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            prefix = handle.read(8)
            if len(prefix) != 8:
                raise ValueError("file shorter than a safetensors header")
            (length,) = struct.unpack("<Q", prefix)
            if length > _MAX_SAFETENSORS_HEADER_BYTES:
                raise ValueError(f"header length {length} is implausible")
            body = handle.read(length)
    finally:
        os.close(fd)
    if len(body) != length:
        raise ValueError("truncated header")
    header = loads_json(body.decode("utf-8"))
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
    try:
        files = sorted(model_dir.glob("*.safetensors"))
    except OSError as error:
        return None, f"safetensors parameter counts skipped: {error.strerror or error}"
    if not files:
        return None, None
    index_path = model_dir / "model.safetensors.index.json"
    if index_path.exists():
        try:
            index = _read_json_object(index_path, "model.safetensors.index.json")
        except VmemplanError as error:
            return None, f"safetensors parameter counts skipped: {error}"
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict):
            return None, "safetensors parameter counts skipped: the index has no weight_map"
        shards = sorted({str(v) for v in weight_map.values()})
        if len(shards) > _MAX_SHARDS or any(Path(s).name != s or s in (".", "..") for s in shards):
            return None, "safetensors parameter counts skipped: the index names shards outside the directory"
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
            return None, printable(f"safetensors parameter counts skipped: cannot read the header of {file.name} ({error})")
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
        try:
            present = candidate.exists()
        except OSError:
            present = True  # unreadable: let the reader say why
        if present and (skip is None or candidate.resolve() != skip.resolve()):
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


def _stat(path: Path, shown: str) -> os.stat_result | None:
    """``os.stat`` of a local path: None when it does not exist, BadInput when it cannot be examined."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise BadInput(
            f"cannot examine {shown}: {error.strerror or error}",
            hint="check the path and that you may read it and search every directory above it",
        ) from None


def _load_local(ref: str, revision: str | None, config_format: str = "auto") -> ModelSource:
    given = Path(ref).expanduser()
    shown = printable(ref)
    if len(ref) > 4096:
        raise BadInput("the model path is longer than 4,096 characters",
                       hint="pass a config.json, a model directory, or a Hugging Face id such as org/name")
    st = _stat(given, shown)
    if st is None:
        raise BadInput(
            f"no such file or directory: {shown}",
            hint="pass a config.json, a model directory that holds one, or a Hugging Face id such as org/name",
        )
    if stat.S_ISDIR(st.st_mode):
        if config_format == "mistral" and not (given / "params.json").is_file():
            raise BadInput(f"--config-format mistral: {printable(str(given))} has no params.json",
                           hint="vLLM reads a Mistral-format model from params.json; use --config-format auto or hf")
        if config_format == "mistral" or (config_format == "auto" and _is_mistral_dir(given)):
            return _load_mistral_dir(given, revision)
        config_path = given / "config.json"
        if _stat(config_path, printable(str(config_path))) is None:
            raise BadInput(
                f"{printable(str(given))} is a directory without a config.json",
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
    return ModelSource.of_config(os.path.normpath(str(given)), "local", config, extra, notes, revision=None,
                                 path=str(config_path.resolve()), safetensors_params=params)



def _is_mistral_dir(model_dir: Path) -> bool:
    """vLLM's ``--config-format auto`` test: ``consolidated*.safetensors`` and a ``params.json``
    (vllm/transformers_utils/config.py::get_config, repo_utils.py::is_mistral_model_repo, 0.33.0)."""
    try:
        return (model_dir / "params.json").is_file() and any(model_dir.glob("consolidated*.safetensors"))
    except OSError:
        return False


def _load_mistral_dir(model_dir: Path, revision: str | None) -> ModelSource:
    """A Mistral-format directory read as vLLM reads it: params.json, with config.json (when
    present) for the context length and the missing top-level keys, and the consolidated tensors'
    dtype (MistralConfigParser.parse; :mod:`vmemplan.sources.mistral_format`)."""
    from vmemplan.sources.mistral_format import common_float_dtype, parse_params

    params = _read_json_object(model_dir / "params.json", "params.json")
    hf_path = model_dir / "config.json"
    hf = _read_json_object(hf_path, "config.json") if hf_path.is_file() else {}
    notes = [f"read from local file {(model_dir / 'params.json').resolve()}: the directory holds "
             "consolidated*.safetensors and params.json, so vLLM's --config-format auto reads params.json "
             "(pass config.json itself to plan the transformers layout, as --config-format hf does)"]
    if revision is not None:
        notes.append(f"revision {revision} ignored: {model_dir} is a local path")
    counts: dict[str, int] = {}
    for file in sorted(model_dir.glob("consolidated*.safetensors")):
        try:
            for dtype, n in _safetensors_header_params(file).items():
                counts[dtype] = counts.get(dtype, 0) + n
        except (OSError, ValueError, UnicodeDecodeError) as error:
            notes.append(printable(f"dtype not inferred: cannot read the header of {file.name} ({error})"))
            counts = {}
            break
    dtype = common_float_dtype(counts)
    if params.get("dtype") is None and dtype is not None:
        notes.append(f"dtype {dtype} inferred from the consolidated*.safetensors headers, as vLLM does")
    config = parse_params(params, hf, dtype)
    return ModelSource.of_config(os.path.normpath(str(model_dir)), "local", config, {}, notes, revision=None,
                                 path=str((model_dir / "params.json").resolve()), safetensors_params=counts or None)
