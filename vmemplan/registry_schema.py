"""The registry's schemas: what ``registry/cost_model.yaml`` and ``registry/speed.yaml`` may say.

Validated here, next to the loader (:mod:`vmemplan.registry`), so that the loader imports no
law: the cost model hands the overhead and activation laws their constants
(:class:`~vmemplan.laws.activation.ActivationConstants`, the ``*Constants`` of
:mod:`vmemplan.laws.overhead`), and the speed constants feed :mod:`vmemplan.sim.speed`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import field
from typing import Annotated, Any, Literal

from vmemplan.core import constraints as at
from vmemplan.core.errors import RegistryInvalid, UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.patterns import lazy
from vmemplan.core.records import Record as _Record
from vmemplan.core.records import validate
from vmemplan.laws.activation import ActivationConstants
from vmemplan.laws.overhead import (
    CUDA_GRAPH_MODES,
    CudaGraphConstants,
    CudaGraphFamily,
    NonTorchConstants,
    PreBudgetConstants,
)

__all__ = [
    "Constant",
    "ConstantTable",
    "CostModel",
    "Era",
    "SpeedConstants",
    "parse_cost_model",
    "parse_speed_constants",
    "parse_vllm_version",
]


# --------------------------------------------------------------------------- cost_model.yaml


#: answers of the frozen cost model's lookups, per model object (a plan asks each a few times and
#: a sweep once per point): (id(model), method, args) -> (model, answer); the model is kept so that
#: its id stays its own
_ANSWERS: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def _memo(fn: Any) -> Any:
    """Cache a frozen model's method by its arguments (the model cannot change)."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = (id(self), fn.__name__, args, tuple(sorted(kwargs.items())))
        hit = _ANSWERS.get(key)
        if hit is not None and hit[0] is self:
            return hit[1]
        answer = fn(self, *args, **kwargs)
        _ANSWERS[key] = (self, answer)
        return answer

    return wrapper


@frozen(kw_only=True)
class Constant(_Record):
    """One registry number with its provenance."""

    value: Annotated[float, at.Ge(0)]  # every cost-model constant is a count or a size
    source: Annotated[str, at.MinLen(1)]
    obtained: Annotated[str, at.MinLen(1)]
    vllm_version: Annotated[str, at.MinLen(1)]


@frozen(kw_only=True)
class ConstantTable(_Record):
    """A table of registry numbers (keyed by tp, world size or mode) with its provenance."""

    values: dict[Any, float]
    source: Annotated[str, at.MinLen(1)]
    obtained: Annotated[str, at.MinLen(1)]
    vllm_version: Annotated[str, at.MinLen(1)]


@frozen(kw_only=True)
class SamplerReleaseDefault(_Record):
    """A sampler path that is the default only for the releases before ``vllm_before`` (within
    the era), with the vLLM source that says so."""

    vllm_before: str
    path: str
    source: Annotated[str, at.MinLen(1)]


@frozen(kw_only=True)
class SamplerRegistry(_Record):
    default_path: str
    paths: dict[str, Constant]
    release_defaults: list[SamplerReleaseDefault] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.default_path not in self.paths:
            raise ValueError(f"default_path {self.default_path!r} is not one of {sorted(self.paths)}")
        for rd in self.release_defaults:
            if rd.path not in self.paths:
                raise ValueError(f"release default path {rd.path!r} is not one of {sorted(self.paths)}")
            parse_vllm_version(rd.vllm_before)

    def default_for(self, version: tuple[int, int, int]) -> str:
        """The path a release runs by default: the first ``release_defaults`` entry whose
        ``vllm_before`` is above ``version``, else ``default_path``."""
        for rd in self.release_defaults:
            if version < parse_vllm_version(rd.vllm_before):
                return rd.path
        return self.default_path


@frozen(kw_only=True)
class FusedMoeRegistry(_Record):
    """How one release era's fused-MoE call lays out its workspaces (read from vLLM's code)."""

    workspace_layout: Literal["fused_experts_impl", "modular"]
    chunk_tokens: Annotated[int, at.Ge(0)]  # VLLM_FUSED_MOE_CHUNK_SIZE's default; 0 = no chunking
    source: Annotated[str, at.MinLen(1)]
    obtained: Annotated[str, at.MinLen(1)]
    vllm_version: Annotated[str, at.MinLen(1)]
    calibrated_by: Annotated[str, at.MinLen(1)]  # corpus logs that check it, or "none"


@frozen(kw_only=True)
class ActivationRegistry(_Record):
    dense_hidden_buffers: Constant
    dense_intermediate_buffers: Constant
    fused_moe: FusedMoeRegistry
    floor_bytes: Constant
    sampler: SamplerRegistry


@frozen(kw_only=True)
class Era(_Record):
    """A span of vLLM releases whose memory accounting works the same way."""

    id: str
    engine: Literal["v0", "v1"]
    vllm_from: str
    vllm_before: str | None = None
    calibrated_against: str
    budget_formula: str
    nccl_inside_budget: bool
    cuda_context_inside_budget: bool
    cudagraph_estimate: Literal["none", "opt_in", "default"]
    activation: ActivationRegistry
    non_torch_base_bytes: Constant
    notes: str = ""

    def __post_init__(self) -> None:
        parse_vllm_version(self.vllm_from)
        if self.vllm_before is not None:
            parse_vllm_version(self.vllm_before)

    def contains(self, version: tuple[int, int, int]) -> bool:
        lo = parse_vllm_version(self.vllm_from)
        if version < lo:
            return False
        return self.vllm_before is None or version < parse_vllm_version(self.vllm_before)


@frozen(kw_only=True)
class CudaGraphFamilyRegistry(_Record):
    floor_bytes: Constant
    per_token_hidden_layer_bytes: Constant
    per_graph_bytes: Constant


@frozen(kw_only=True)
class CudaGraphRegistry(_Record):
    flat_bytes_by_mode: ConstantTable
    families: dict[Literal["piecewise", "full"], CudaGraphFamilyRegistry] | None = None

    def __post_init__(self) -> None:
        unknown = set(self.flat_bytes_by_mode.values) - set(CUDA_GRAPH_MODES)
        if unknown:
            raise ValueError(f"unknown CUDA graph modes {sorted(map(str, unknown))}")


@frozen(kw_only=True)
class PreBudgetRegistry(_Record):
    cuda_context_bytes: Constant
    workspace_bytes: Constant
    communicator_bytes_by_world_size: ConstantTable


@frozen(kw_only=True)
class CostModel(_Record):
    """The whole cost-model registry, validated."""

    schema_version: Literal[1]
    eras: Annotated[list[Era], at.MinLen(1)]
    pre_budget: PreBudgetRegistry
    cuda_graphs: CudaGraphRegistry

    @_memo
    def era_for(self, vllm_version: str, *, engine: Literal["v0", "v1"] = "v1") -> Era:
        """The era that covers a vLLM version for an engine (V0 or V1)."""
        ver = parse_vllm_version(vllm_version)
        for era in self.eras:
            if era.engine == engine and era.contains(ver):
                return era
        raise RegistryInvalid(f"cost model has no {engine} era covering vLLM {vllm_version}")

    @_memo
    def activation_constants(
        self, vllm_version: str, *, engine: Literal["v0", "v1"] = "v1", sampler_path: str | None = None
    ) -> ActivationConstants:
        era = self.era_for(vllm_version, engine=engine)
        act = era.activation
        path = sampler_path or act.sampler.default_for(parse_vllm_version(vllm_version))
        if path not in act.sampler.paths:
            raise UsageError(
                f"sampler path {path!r} is not in era {era.id}",
                hint="use one of " + ", ".join(sorted(act.sampler.paths)),
            )
        return ActivationConstants(
            era=era.id,
            vllm_version=era.calibrated_against,
            dense_hidden_buffers=act.dense_hidden_buffers.value,
            dense_intermediate_buffers=act.dense_intermediate_buffers.value,
            moe_workspace_layout=act.fused_moe.workspace_layout,
            moe_chunk_tokens=int(act.fused_moe.chunk_tokens),
            floor_bytes=int(act.floor_bytes.value),
            sampler_path=path,
            sampler_fp32_copies=act.sampler.paths[path].value,
        )

    @_memo
    def non_torch_constants(
        self, vllm_version: str, *, engine: Literal["v0", "v1"] = "v1"
    ) -> NonTorchConstants:
        era = self.era_for(vllm_version, engine=engine)
        return NonTorchConstants(
            era=era.id,
            vllm_version=era.calibrated_against,
            base_bytes=int(era.non_torch_base_bytes.value),
            communicator_bytes_by_world_size=self._communicator_table(),
        )

    @_memo
    def pre_budget_constants(self) -> PreBudgetConstants:
        pb = self.pre_budget
        return PreBudgetConstants(
            vllm_version=pb.cuda_context_bytes.vllm_version,
            cuda_context_bytes=int(pb.cuda_context_bytes.value),
            workspace_bytes=int(pb.workspace_bytes.value),
            communicator_bytes_by_world_size=self._communicator_table(),
        )

    @_memo
    def cuda_graph_constants(self) -> CudaGraphConstants:
        cg = self.cuda_graphs
        fams = None
        if cg.families is not None:
            fams = {
                name: CudaGraphFamily(
                    floor_bytes=int(f.floor_bytes.value),
                    per_token_hidden_layer_bytes=f.per_token_hidden_layer_bytes.value,
                    per_graph_bytes=int(f.per_graph_bytes.value),
                )
                for name, f in cg.families.items()
            }
        return CudaGraphConstants(
            vllm_version=cg.flat_bytes_by_mode.vllm_version,
            flat_bytes_by_mode={str(k): int(v) for k, v in cg.flat_bytes_by_mode.values.items()},
            families=fams,
        )

    def _communicator_table(self) -> dict[int, int]:
        return {
            int(k): int(v) for k, v in self.pre_budget.communicator_bytes_by_world_size.values.items()
        }


_VERSION_RE = lazy(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


@functools.lru_cache(maxsize=256)  # pure; a sweep asks for the same few versions per point
def parse_vllm_version(text: str) -> tuple[int, int, int]:
    """``"0.13.0+faa43dbf.nv26.01"`` → ``(0, 13, 0)``; suffixes (rc, dev, post, local) are ignored."""
    m = _VERSION_RE.match(str(text))
    if not m:
        raise RegistryInvalid(f"not a vLLM version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def parse_cost_model(mapping: Mapping[str, Any]) -> CostModel:
    """Validate the parsed ``cost_model.yaml`` mapping into a frozen :class:`CostModel`.

    Raises :class:`vmemplan.core.errors.RegistryInvalid` (never a pydantic traceback) when a key is
    missing, unknown, of the wrong type, or a constant lacks its ``source``/``obtained`` text.
    """
    if not isinstance(mapping, Mapping):
        raise RegistryInvalid("cost model registry must be a mapping at the top level")
    # Top-level keys starting with "x-" hold YAML anchors shared by the eras; they carry no data.
    data = {k: v for k, v in mapping.items() if not (isinstance(k, str) and k.startswith("x-"))}
    from pydantic import ValidationError

    try:
        model = validate(CostModel, data)
    except ValidationError as exc:
        from vmemplan.core.records import describe_errors

        where, msg = describe_errors(exc)[0]
        raise RegistryInvalid(
            f"cost model registry invalid at {where or '<root>'}: {msg}",
            hint=f"{exc.error_count()} problem(s); see registry/COST_MODEL.md for the schema",
        ) from None
    ids = [e.id for e in model.eras]
    if len(set(ids)) != len(ids):
        raise RegistryInvalid("cost model registry has duplicate era ids")
    return model


# --------------------------------------------------------------------------- speed.yaml


_CONSTANT_NAMES = (
    "efficiency_compute",
    "efficiency_bandwidth",
    "efficiency_interconnect",
    "allreduce_latency_s",
    "default_interconnect_bytes_per_s",
    "allreduce_bytes_per_element",
)


@frozen(kw_only=True)
class SpeedConstants(_Record):
    """The tunable constants of the speed model, each with the text saying where it came from."""

    efficiency_compute: Annotated[float, at.Gt(0), at.Le(1)]
    efficiency_bandwidth: Annotated[float, at.Gt(0), at.Le(1)]
    efficiency_interconnect: Annotated[float, at.Gt(0), at.Le(1)]
    allreduce_latency_s: Annotated[float, at.Ge(0), at.Lt(1)]
    default_interconnect_bytes_per_s: Annotated[float, at.Gt(0)]
    allreduce_bytes_per_element: Annotated[int, at.Ge(1), at.Le(8)]
    sources: dict[str, str]

    def __post_init__(self) -> None:
        missing = [n for n in _CONSTANT_NAMES if not str(self.sources.get(n, "")).strip()]
        if missing:
            raise ValueError(f"no source text for: {', '.join(missing)}")
        extra = sorted(set(self.sources) - set(_CONSTANT_NAMES))
        if extra:
            raise ValueError(f"sources given for unknown constants: {', '.join(extra)}")


def parse_speed_constants(mapping: Mapping[str, Any]) -> SpeedConstants:
    """Build :class:`SpeedConstants` from the parsed content of ``registry/speed.yaml``.

    Expected shape: ``{"schema_version": 1, "constants": {NAME: {"value": V, "source": TEXT}}}``.
    Pure (no file access).  Raises :class:`~vmemplan.core.errors.RegistryInvalid` on anything else.
    """
    hint = "see registry/speed.yaml: constants: NAME: {value: ..., source: ...}"
    if not isinstance(mapping, Mapping):
        raise RegistryInvalid("speed registry: top level is not a mapping", hint=hint)
    unknown_top = sorted(set(mapping) - {"schema_version", "constants"})
    if unknown_top:
        raise RegistryInvalid(f"speed registry: unknown keys {unknown_top}", hint=hint)
    if mapping.get("schema_version") != 1:
        raise RegistryInvalid(
            f"speed registry: schema_version {mapping.get('schema_version')!r} is not supported (expected 1)", hint=hint
        )
    constants = mapping.get("constants")
    if not isinstance(constants, Mapping):
        raise RegistryInvalid("speed registry: 'constants' is missing or not a mapping", hint=hint)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, entry in constants.items():
        if not isinstance(entry, Mapping) or set(entry) != {"value", "source"}:
            raise RegistryInvalid(f"speed registry: {name!r} must have exactly 'value' and 'source'", hint=hint)
        values[str(name)] = entry["value"]
        sources[str(name)] = entry["source"] if isinstance(entry["source"], str) else ""
    from pydantic import ValidationError

    try:
        return validate(SpeedConstants, {**values, "sources": sources})
    except ValidationError as exc:
        from vmemplan.core.records import describe_errors

        where, msg = describe_errors(exc)[0]
        raise RegistryInvalid(f"speed registry: {where or 'constants'}: {msg}", hint=hint) from None
    except TypeError as exc:  # pragma: no cover - defensive
        raise RegistryInvalid(f"speed registry: {exc}", hint=hint) from None
