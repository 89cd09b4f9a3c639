"""The registry: GPUs, vLLM rules packs, cost-model constants and bundled model configs.

Data lives in YAML under ``registry/`` (shipped inside the wheel as ``vmemplan/_registry``);
this module holds their schemas and the only code that reads those files.  Every entry
carries its source.  ``parse_*`` functions are pure; ``load_registry`` does the I/O, is
cached, and collects every validation error across files into one :class:`RegistryInvalid`.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from vmemplan.core import constraints as at
from vmemplan.core.errors import RegistryInvalid
from vmemplan.core.frozen import frozen
from vmemplan.core.records import Record as _Record
from vmemplan.core.records import validate
from vmemplan.sources.cache import retry_uncached as _retry_uncached

if TYPE_CHECKING:
    from vmemplan.registry_schema import CostModel, SpeedConstants
    from vmemplan.rules import RulesPack

__all__ = ["Gpu", "Registry", "registry_dir", "load_registry", "parse_gpus"]


@frozen(kw_only=True)
class GpuSource(_Record):
    fact: str
    kind: str
    ref: str


@frozen(kw_only=True)
class Interconnect(_Record):
    kind: str
    gbps_bidirectional: float | None = None
    pcie_gbps_bidirectional: float | None = None


@frozen(kw_only=True)
class BatchTier(_Record):
    threshold_input_gib: float | None = None
    v1_name_rule: str | None = None
    memory_rule: str | None = None
    memory_rule_with_160gib_tier: str | None = None


@frozen(kw_only=True)
class Gpu(_Record):
    """One accelerator.  ``total_memory_bytes`` is what CUDA/HIP reports as the device total
    (``torch.cuda.mem_get_info()[1]``): the figure vLLM multiplies by
    ``gpu_memory_utilization``.  ``nvml_total_bytes`` is nvidia-smi's total, which vLLM uses
    only to choose its batch defaults."""

    id: str
    aliases: tuple[str, ...] = ()
    name_variants: tuple[str, ...] = ()
    vendor: Literal["nvidia", "amd"]
    name: str
    architecture: str
    arch: str
    compute_capability: str | None = None
    sm_count: int | None = None
    marketing_memory_gb: float
    memory_type: str | None = None
    total_memory_bytes: Annotated[int, at.Gt(0)]
    total_memory_mib: float | None = None
    total_memory_gib: float | None = None
    total_memory_evidence: str
    total_memory_observed_mib: tuple[float, ...] = ()
    nvml_total_mib: float | None = None
    nvml_total_bytes: int | None = None
    nvml_total_gib: float | None = None
    nvml_total_evidence: str | None = None
    ecc_on_nvml_total_mib: float | None = None
    ecc_off_nvml_total_mib: float | None = None
    cuda_over_nvml_ratio: float | None = None
    memory_bandwidth_tbps: float | None = None
    bf16_tflops: float | None = None
    fp16_tflops: float | None = None
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    compute_evidence: str | None = None
    interconnect: Interconnect | None = None
    vllm_batch_default_tier: BatchTier | None = None
    notes: str | None = None
    sources: Annotated[tuple[GpuSource, ...], at.MinLen(1)]

    @property
    def sm_major(self) -> int | None:
        """The CUDA compute capability major (9 for sm_90, 10 for sm_100); None for AMD."""
        if self.arch.startswith("sm_"):
            return int(self.arch[3:]) // 10
        return None

    @property
    def device_name(self) -> str:
        """The name CUDA reports, as vLLM sees it (``torch.cuda.get_device_name``)."""
        return self.name

    @property
    def batch_default_total_bytes(self) -> int:
        """The total vLLM's batch-default tiering reads: NVML's on CUDA; 0 where NVML cannot
        report memory (unified-memory parts such as GB10: vLLM then falls back to the small
        tier); the device total on ROCm."""
        if self.nvml_total_evidence == "not-supported":
            return 0
        return self.nvml_total_bytes or self.total_memory_bytes


def _format_validation(prefix: str, err: Any) -> list[str]:
    from vmemplan.core.records import describe_errors

    return [f"{prefix}: {loc}: {msg}" for loc, msg in describe_errors(err)]


def parse_gpus(data: Any, *, filename: str = "gpus.yaml") -> tuple[Gpu, ...]:
    """Validate the GPU registry mapping (pure).  Raises RegistryInvalid listing every error."""
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
        raise RegistryInvalid(f"{filename}: expected a mapping with a 'gpus' list", hint="reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with")
    from pydantic import ValidationError

    gpus: list[Gpu] = []
    errors: list[str] = []
    for i, raw in enumerate(data["gpus"]):
        try:
            gpus.append(validate(Gpu, raw))
        except ValidationError as err:
            ident = raw.get("id", f"#{i}") if isinstance(raw, dict) else f"#{i}"
            errors.extend(_format_validation(f"{filename}: {ident}", err))
    seen: dict[str, str] = {}
    for g in gpus:
        for key in (g.id, *g.aliases):
            k = key.lower()
            if k in seen and seen[k] != g.id:
                errors.append(f"{filename}: {g.id}: id or alias {key!r} also names {seen[k]}")
            seen[k] = g.id
    if errors:
        raise RegistryInvalid("; ".join(errors), hint="fix the registry file named above")
    return tuple(gpus)


class Registry:
    """Everything the registry holds, validated.  Built by :func:`load_registry`."""

    def __init__(
        self,
        *,
        root: Path,
        gpus: tuple[Gpu, ...],
        rules_packs: tuple[RulesPack, ...],
        cost_model: CostModel | None,
        speed: SpeedConstants | None,
        ambiguous: dict[str, list[str]] | None = None,
    ) -> None:
        self.root = root
        #: family names (``a100``) that fit several GPUs: asked about, never guessed
        self.ambiguous = dict(ambiguous or {})
        self.gpus = gpus
        self.rules_packs = rules_packs
        self.cost_model = cost_model
        self._speed = speed
        self._by_key = {}
        for g in gpus:
            for key in (g.id, *g.aliases):
                self._by_key[key.lower()] = g

    @property
    def speed(self) -> SpeedConstants:
        """The speed-model constants (speed.yaml), read on first use."""
        if self._speed is None:
            self._speed = _load_speed(self.root)
        return self._speed

    @property
    def bands(self) -> Any:
        """The error-band residuals (bands.yaml, laws/bands.py::BandData), read on first use;
        ``None`` when the registry has no bands.yaml."""
        if not hasattr(self, "_bands"):
            self._bands = _load_bands(self.root)
        return self._bands

    @property
    def vllm_architectures(self) -> dict[str, tuple[str, ...]]:
        """Every architecture vLLM's model registry serves, with its categories (text_generation,
        embedding, multimodal, ...: registry/vllm_architectures.yaml, generated from the wheel by
        bench/vllm_architectures/generate.py), read on first use; empty when the file is absent."""
        if not hasattr(self, "_vllm_archs"):
            self._vllm_archs = _load_vllm_architectures(self.root)
        return self._vllm_archs

    @property
    def vllm_removed_architectures(self) -> dict[str, str]:
        """Architectures the release's registry refuses as no longer served, with the last release
        that served them (``_PREVIOUSLY_SUPPORTED_MODELS``, in registry/vllm_architectures.yaml)."""
        if not hasattr(self, "_vllm_removed"):
            self._vllm_removed = _load_vllm_removed(self.root)
        return self._vllm_removed

    @property
    def declared_architectures(self) -> dict[str, dict[str, Any]]:
        """Architectures described as a planned family plus switches and config-key renames
        (registry/architectures/*.yaml, each with the vLLM source it mirrors), read on first use;
        empty when the file is absent.  vmemplan/models/declared.py turns them into adapters."""
        if not hasattr(self, "_declared"):
            self._declared = _load_declared_architectures(self.root)
        return self._declared

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    def gpu(self, key: str) -> Gpu:
        """Look a GPU up by id, alias or the name nvidia-smi / torch print, case- and
        punctuation-insensitively (vmemplan/request/gpu_match.py); an ambiguous name is an error
        listing the candidates; suggest close ids when unknown."""
        found = self._by_key.get(key.strip().lower())
        if found is not None and key.strip().lower() not in self.ambiguous:
            return found
        from vmemplan.request.gpu_match import find_gpu

        return find_gpu(self.gpus, key, ambiguous=self.ambiguous)

    def gpu_keys(self) -> list[str]:
        """Every id and alias, for shell completion."""
        return sorted({g.id for g in self.gpus} | {a for g in self.gpus for a in g.aliases if " " not in a})

    def rules(self, version: str | None) -> tuple[RulesPack, str | None]:
        """The rules pack of the release line that ``version`` belongs to, and a warning if any
        (remembered per version: the packs do not change while a registry is loaded)."""
        from vmemplan.rules import select_pack

        memo = self.__dict__.setdefault("_rules_memo", {})
        if version not in memo:
            memo[version] = select_pack(self.rules_packs, version)
        return memo[version]


def registry_dir() -> Path:
    """Where the registry lives: ``$VMEMPLAN_REGISTRY``, the packaged copy, or the checkout's."""
    env = os.environ.get("VMEMPLAN_REGISTRY")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    packaged = here / "_registry"
    if packaged.is_dir():
        return packaged
    return here.parent / "registry"


def _read_yaml(path: Path, errors: list[str]) -> Any:
    """``path`` parsed (through the parse cache: a hit imports no YAML), or None with the
    problem appended to ``errors``."""
    from vmemplan._yaml import load_yaml_file, yaml_error

    try:
        return load_yaml_file(path)
    except FileNotFoundError:
        errors.append(f"{path.name}: missing")
    except (OSError, UnicodeDecodeError, yaml_error()) as exc:  # yaml imported only on an error
        errors.append(f"{path.name}: not valid YAML ({str(exc).splitlines()[0]})")
    return None


def _registry_sources(root: Path) -> list[tuple[str, bytes]] | None:
    """The files a registry is validated from, as (name, bytes); None when one cannot be read
    (then validation reports it)."""
    from vmemplan.sources._io import read_regular

    paths = [root / "gpus.yaml", root / "cost_model.yaml", *sorted((root / "vllm").glob("*.yaml"))]
    try:
        return [(str(p.relative_to(root)), read_regular(p, 16 * 1024 * 1024)) for p in paths]
    except OSError:
        return None


def _record_classes() -> dict[str, type]:
    """Every record class a validated registry holds (what a snapshot may rebuild)."""
    import dataclasses

    from vmemplan import registry_schema, rules, rules_sections

    out: dict[str, type] = {}
    for module in (rules_sections, rules, registry_schema, sys.modules[__name__]):
        for obj in vars(module).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__:
                out[f"{module.__name__}.{obj.__qualname__}"] = obj
    return out


@functools.cache
@_retry_uncached  # a cache entry of the wrong shape is dropped and the registry validated again
def load_registry(root: Path | None = None) -> Registry:
    """The whole registry, validated once per install: a snapshot of the validated records
    (:func:`vmemplan.sources.cache.cached_records`, keyed by every file's content) serves
    later processes without YAML or pydantic."""
    root = Path(root) if root is not None else registry_dir()
    if not root.is_dir():
        raise RegistryInvalid(f"registry directory {root} not found", hint="reinstall vmemplan or unset VMEMPLAN_REGISTRY")
    sources = _registry_sources(root)
    if sources is None:
        parts = _validate_registry(root)
    else:
        from vmemplan.sources.cache import cached_records

        parts = cached_records("registry", sources, lambda: _validate_registry(root), _record_classes(),
                               _is_registry_parts)
    return Registry(root=root, gpus=parts["gpus"], rules_packs=parts["rules_packs"], cost_model=parts["cost_model"],
                    speed=None, ambiguous=parts["ambiguous"])


def _is_registry_parts(parts: Any) -> bool:
    """Whether a decoded snapshot has the shape :func:`_validate_registry` returns."""
    from vmemplan.registry_schema import CostModel
    from vmemplan.rules import RulesPack

    return (isinstance(parts, dict) and set(parts) == {"gpus", "rules_packs", "cost_model", "ambiguous"}
            and isinstance(parts["gpus"], tuple) and all(isinstance(g, Gpu) for g in parts["gpus"])
            and isinstance(parts["rules_packs"], tuple) and bool(parts["rules_packs"])
            and all(isinstance(p, RulesPack) for p in parts["rules_packs"])
            and isinstance(parts["cost_model"], CostModel) and isinstance(parts["ambiguous"], dict))


def _validate_registry(root: Path) -> dict[str, Any]:
    """Read and validate gpus.yaml, the rules packs and cost_model.yaml, collecting every error."""
    errors: list[str] = []
    gpus: tuple[Gpu, ...] = ()
    data = _read_yaml(root / "gpus.yaml", errors)
    ambiguous = (data or {}).get("ambiguous_names") if isinstance(data, dict) else None
    if data is not None:
        try:
            gpus = parse_gpus(data)
        except RegistryInvalid as exc:
            errors.append(exc.message)

    rules_packs: tuple[Any, ...] = ()
    try:
        from vmemplan.rules import load_rules_packs

        rules_packs = load_rules_packs(root / "vllm")
    except RegistryInvalid as exc:
        errors.append(exc.message)

    cost_model = None
    data = _read_yaml(root / "cost_model.yaml", errors)
    if data is not None:
        try:
            from vmemplan.registry_schema import parse_cost_model

            cost_model = parse_cost_model(data)
        except RegistryInvalid as exc:
            errors.append(exc.message)

    if errors:
        raise RegistryInvalid(
            "invalid registry: " + "; ".join(errors), hint=f"fix the files under {root}"
        )
    return {"gpus": gpus, "rules_packs": rules_packs, "cost_model": cost_model,
            "ambiguous": {str(k).lower(): [str(n) for n in v] for k, v in (ambiguous or {}).items()}}


@_retry_uncached
def _load_vllm_architectures(root: Path) -> dict[str, tuple[str, ...]]:
    path = root / "vllm_architectures.yaml"
    if not path.is_file():
        return {}
    errors: list[str] = []
    data = _read_yaml(path, errors)
    archs = data.get("architectures") if isinstance(data, dict) else None
    if errors or not isinstance(archs, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(c, str) for c in v) for k, v in archs.items()):
        raise RegistryInvalid("invalid registry: vllm_architectures.yaml: expected architectures: {name: [category]}"
                              + ("; " + "; ".join(errors) if errors else ""),
                              hint="regenerate it with bench/vllm_architectures/generate.py")
    return {k: tuple(v) for k, v in archs.items()}


@_retry_uncached
def _load_vllm_removed(root: Path) -> dict[str, str]:
    path = root / "vllm_architectures.yaml"
    if not path.is_file():
        return {}
    errors: list[str] = []
    data = _read_yaml(path, errors)
    removed = (data or {}).get("previously_supported") if isinstance(data, dict) else None
    if removed is None:
        return {}
    if errors or not isinstance(removed, dict):
        raise RegistryInvalid("invalid registry: vllm_architectures.yaml: previously_supported must map "
                              "architecture -> release", hint="regenerate it with bench/vllm_architectures/generate.py")
    return {str(k): str(v) for k, v in removed.items()}


_DECLARED_KEYS = {"base": str, "source": str, "switches": dict, "keys": dict, "config": str}


@_retry_uncached
def _load_declared_architectures(root: Path) -> dict[str, dict[str, Any]]:
    folder = root / "architectures"
    if not folder.is_dir():
        return {}
    errors: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = _read_yaml(path, errors)
        archs = data.get("architectures") if isinstance(data, dict) else None
        if not isinstance(archs, dict):
            errors.append(f"{path.name}: expected architectures: {{name: {{base, source, ...}}}}")
            continue
        for name, entry in archs.items():
            where = f"{path.name}: {name}"
            if name in out:
                errors.append(f"{where}: declared twice")
            if not isinstance(entry, dict) or not isinstance(entry.get("base"), str) \
                    or not isinstance(entry.get("source"), str):
                errors.append(f"{where}: needs base (a planned architecture) and source (the vLLM file it mirrors)")
                continue
            for key, value in entry.items():
                if key not in _DECLARED_KEYS or not isinstance(value, _DECLARED_KEYS[key]):
                    errors.append(f"{where}.{key}: not a known field of the right type ({', '.join(_DECLARED_KEYS)})")
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in (entry.get("keys") or {}).items()):
                errors.append(f"{where}.keys: a map of config key -> the config key it is read from")
            out[str(name)] = dict(entry)
    if errors:
        raise RegistryInvalid("invalid registry: architectures/: " + "; ".join(errors),
                              hint="each entry is base, source, and optional switches, keys and config")
    return out


@_retry_uncached
def _load_bands(root: Path) -> Any:
    """bands.yaml (generated by bench/calibrate_bands.py), validated by laws/bands.py."""
    path = root / "bands.yaml"
    if not path.is_file():
        return None
    errors: list[str] = []
    data = _read_yaml(path, errors)
    if errors:
        raise RegistryInvalid("invalid registry: " + "; ".join(errors), hint=f"fix the files under {root}")
    from vmemplan.laws.bands import parse_band_data

    return parse_band_data(data)


@_retry_uncached
def _load_speed(root: Path) -> Any:
    """speed.yaml, read only by the commands that use the speed model (keeps `size` fast)."""
    errors: list[str] = []
    data = _read_yaml(root / "speed.yaml", errors)
    if errors:
        raise RegistryInvalid("invalid registry: " + "; ".join(errors), hint=f"fix the files under {root}")
    from pydantic import ValidationError

    from vmemplan.registry_schema import parse_speed_constants

    try:
        return parse_speed_constants(data)
    except ValidationError as exc:
        raise RegistryInvalid("invalid registry: " + "; ".join(_format_validation("speed.yaml", exc)),
                              hint=f"fix the files under {root}") from None
