"""What the user asked for, as vLLM's flags: :class:`PlanInputs`, checked where it is built.

The request is the one boundary every plan crosses, so checking it must not cost a pydantic
schema on every run.  A field holding exactly its declared type (what the CLI's parser and a
well-typed API call give) is checked here in plain Python: its type, its lower bound, and that no
unknown flag was passed.  Any other value (``"3"`` for an integer, ``1`` for a float, ``"true"``
for a flag) is handed to pydantic -- imported only then -- which coerces it as it always did, or
reports why not, in pydantic's words.  Errors name the flag as the user wrote it
(``--max-model-len: Input should be greater than or equal to 1``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = ["PlanInputs", "InputsError"]

#: the hint every rejected flag carries
HINT = "vmemplan takes vLLM's flag names and values"


class InputsError(UsageError):
    """A flag PlanInputs refuses: ``field`` (the PlanInputs name) and pydantic's ``reason``."""

    def __init__(self, field: str, reason: str, *, prefix: str = "--", hint: str | None = HINT) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"{prefix}{field.replace('_', '-')}: {reason}", hint=hint)


def _at_least(minimum: int) -> Any:
    """A field that is unset (None) or at least ``minimum`` (pydantic's ``ge``)."""
    return dataclasses.field(default=None, metadata={"ge": minimum})


@frozen(kw_only=True)
class PlanInputs:
    """The user's choices, with vLLM's flag names.  None means "not set: use the default"."""

    model: str
    gpu: str | None = None  # None with gpu_total_memory: a GPU known only by its memory
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = _at_least(1)
    max_num_seqs: int | None = _at_least(1)
    max_num_batched_tokens: int | None = _at_least(1)
    block_size: int | None = _at_least(1)
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    tensor_parallel_size: int | None = _at_least(1)
    pipeline_parallel_size: int | None = _at_least(1)
    enforce_eager: bool | None = None
    disable_sliding_window: bool | None = None
    kv_cache_memory_bytes: int | None = _at_least(0)
    revision: str | None = None
    # vLLM's --config-format: auto / mistral read a Mistral-format params.json where vmemplan has one
    # (vmemplan/sources/mistral_format.py), hf the config.json
    config_format: str | None = None
    vllm_version: str | None = None
    request_tokens: int | None = _at_least(1)
    enable_prefix_caching: bool | None = None
    # multimodal and speculative decoding (JSON strings as vLLM takes them, or dicts)
    limit_mm_per_prompt: str | dict[str, Any] | None = None
    skip_mm_profiling: bool | None = None
    mm_encoder_tp_mode: str | None = None
    speculative_config: str | dict[str, Any] | None = None
    # quantization and parallel layouts
    quantization: str | None = None
    data_parallel_size: int | None = _at_least(1)
    enable_expert_parallel: bool | None = None
    enable_eplb: bool | None = None
    num_redundant_experts: int | None = _at_least(0)
    decode_context_parallel_size: int | None = _at_least(1)
    # the top-k/top-p sampler the engine runs (FlashInfer when installed and enabled, the torch
    # sort path, or Triton): it sets the sampler's share of the activation peak
    sampler: str | None = None
    # vLLM's --runner: "generate" (the default) or "pooling" for embedding/scoring models
    runner: str | None = None
    # any GPU (vmemplan/request/gpu_match.py): its CUDA total, alone or over the registry's, and
    # the memory other processes hold (vLLM's startup free-memory check)
    gpu_total_memory: int | str | None = None
    gpu_memory_in_use: int | str | None = None
    # LoRA (vmemplan/laws/lora.py): the stacked adapter buffers allocated with the weights
    enable_lora: bool | None = None
    max_loras: int | None = _at_least(1)
    max_lora_rank: int | None = _at_least(1)
    lora_dtype: str | None = None
    fully_sharded_loras: bool | None = None
    # --cpu-offload-gb (vmemplan/laws/offload.py): decoder-layer weights kept in host memory
    cpu_offload_gb: float | None = _at_least(0)
    # the prefetch offloader (vmemplan/request/offload.py, laws/offload.py): --offload-backend,
    # --offload-group-size, --offload-num-in-group, --offload-prefetch-step, --offload-params
    offload_backend: str | None = None
    offload_group_size: int | None = _at_least(0)
    offload_num_in_group: int | None = _at_least(1)
    offload_prefetch_step: int | None = _at_least(0)
    offload_params: list[str] | None = None
    # --hf-overrides: config.json edits, applied as vLLM applies them (vmemplan/request/overrides.py)
    hf_overrides: str | dict[str, Any] | None = None
    # vmemplan's --assume-family ARCH: plan an architecture vmemplan has no family for with ARCH's
    # model graph (flagged: every figure it moves is estimated)
    assume_family: str | None = None
    # --num-gpu-blocks-override: the pool gets this many blocks, whatever the budget left
    # (vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs, may_override_num_blocks, 0.33.0);
    # vLLM validates nothing (vllm/config/cache.py::CacheConfig: ``int | None``)
    num_gpu_blocks_override: int | None = None
    # --async-scheduling / --no-async-scheduling (None = the release's default): how many batches are
    # in flight (vllm/config/vllm.py::VllmConfig.max_concurrent_batches), which windowed and chunked
    # layers reserve for at admission (VllmConfig.max_in_flight_tokens, 0.33.0)
    async_scheduling: bool | None = None
    # --disable-hybrid-kv-cache-manager (True), --enable-hybrid-kv-cache-manager (False), None = vLLM
    # decides (vllm/config/vllm.py::VllmConfig.__post_init__, 0.33.0): off, window and chunked
    # layers are allocated as full attention (kv_cache_planning.py::unify_hybrid_kv_cache_specs)
    disable_hybrid_kv_cache_manager: bool | None = None
    # --cudagraph-capture-sizes / --max-cudagraph-capture-size: the batch sizes CUDA graphs are
    # captured for (vmemplan/laws/cudagraph_sizes.py; vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes)
    cudagraph_capture_sizes: list[int] | None = None
    max_cudagraph_capture_size: int | None = None
    # -O / --optimization-level (0..3) and --compilation-config (a JSON object): the CUDA-graph mode
    # (vmemplan/request/compilation.py; vllm/config/vllm.py::VllmConfig.__post_init__)
    optimization_level: int | str | None = None
    compilation_config: dict[str, Any] | str | None = None
    # --attention-backend: checked against --block-size (vmemplan/request/attention_backend.py)
    attention_backend: str | None = None
    # --mamba-cache-dtype / --mamba-ssm-cache-dtype (None = "auto"): the recurrent-state dtypes of hybrid
    # models (vllm/config/cache.py::CacheConfig, MambaDType; vmemplan/request/mamba.py); --mamba-block-size:
    # checked only, it leaves the pool as it is (vllm/config/vllm.py::VllmConfig.validate_mamba_block_size)
    mamba_cache_dtype: str | None = None
    mamba_ssm_cache_dtype: str | None = None
    mamba_block_size: int | None = _at_least(1)

    def __post_init__(self) -> None:
        values = self.__dict__
        for name, value in values.items():
            if value is not None or name == "model":
                checked = _checked(name, value)
                if checked is not value:
                    object.__setattr__(self, name, checked)

    @classmethod
    def from_flags(cls, flags: dict[str, Any], *, prefix: str = "--", hint: str | None = HINT) -> PlanInputs:
        """PlanInputs from a flags mapping; an unknown or missing flag, or a bad value, is an
        :class:`InputsError` naming it (``prefix`` + the flag's name)."""
        known = _field_names()
        for name in flags:
            if name not in known:
                raise InputsError(name, "Extra inputs are not permitted", prefix=prefix, hint=hint)
        if "model" not in flags:
            raise InputsError("model", "Field required", prefix=prefix, hint=hint)
        try:
            return cls(**flags)
        except InputsError as exc:  # named as this caller names flags
            raise InputsError(exc.field, exc.reason, prefix=prefix, hint=hint) from None

    def given(self) -> frozenset[str]:
        """The flags that hold a value (not None): what the user set."""
        return frozenset(name for name in _field_names() if self.__dict__[name] is not None)

    def updated(self, **changes: Any) -> PlanInputs:
        """A copy with ``changes`` applied, each checked as the constructor checks it (the
        fields left as they were are not checked again)."""
        known = _field_names()
        new = object.__new__(PlanInputs)
        state = dict(self.__dict__)
        for name, value in changes.items():
            if name not in known:
                raise InputsError(name, "Extra inputs are not permitted")
            state[name] = value if value is None and name != "model" else _checked(name, value)
        new.__dict__.update(state)
        return new


#: the declared types a value may hold exactly, by the token its annotation spells
_KINDS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "None": type(None),
                          "dict[str, Any]": dict, "list[str]": ("list", str), "list[int]": ("list", int)}


@functools.cache
def _field_names() -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(PlanInputs))


@functools.cache
def _checks() -> dict[str, tuple[tuple[Any, ...], int | None]]:
    """field -> (exact kinds, minimum), read from the annotations (strings here)."""
    out = {}
    for f in dataclasses.fields(PlanInputs):
        kinds = tuple(_KINDS[token.strip()] for token in str(f.type).split(" | "))
        out[f.name] = (kinds, f.metadata.get("ge"))
    return out


def _checked(name: str, value: Any) -> Any:
    """``value`` for field ``name``: itself when it holds its declared type exactly, else as
    pydantic coerces it; an InputsError when it is the wrong type or below its bound."""
    kinds, minimum = _checks()[name]
    if value is None:  # only "model" is required
        raise InputsError(name, "Input should be a valid string")
    if not _exact(value, kinds):
        value = _coerce(name, value)
    if minimum is not None and value < minimum:
        raise InputsError(name, f"Input should be greater than or equal to {minimum}")
    return value


def _exact(value: Any, kinds: tuple[Any, ...]) -> bool:
    """Whether ``value`` is exactly one of ``kinds`` (no bool for an int, no int for a float)."""
    for kind in kinds:
        if isinstance(kind, tuple):
            if type(value) is list and all(type(item) is kind[1] for item in value):
                return True
        elif type(value) is kind:
            if kind is not dict or all(type(key) is str for key in value):
                return True
    return False


@functools.cache
def _adapter(name: str) -> Any:
    from typing import get_type_hints

    from pydantic import TypeAdapter

    return TypeAdapter(get_type_hints(PlanInputs)[name])


def _coerce(name: str, value: Any) -> Any:
    """``value`` as pydantic's lax mode makes it for field ``name``, or an InputsError."""
    from pydantic import ValidationError

    try:
        return _adapter(name).validate_python(value)
    except ValidationError as exc:
        raise InputsError(name, exc.errors()[0]["msg"]) from None
