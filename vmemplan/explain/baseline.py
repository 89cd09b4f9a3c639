"""The settings a logged startup ran with, and the ``--what-if FLAG=VALUE`` changes to them.

:func:`resolve_baseline` reads the engine settings from a parsed startup, filling what the log
does not print from the release's rules pack (and naming each assumption);
:func:`parse_what_if` checks the changes a user asks for.  Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vmemplan.core.errors import UsageError, VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.explain.parse import Startup

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from vmemplan.explain.model_link import ModelLink
    from vmemplan.registry import Gpu, Registry
    from vmemplan.rules import RulesPack

__all__ = ["WHAT_IF_FLAGS", "Baseline", "parse_what_if", "convert_value", "resolve_baseline", "version_from_format",
           "select_rules", "batch_defaults"]

#: what-if flag (vLLM's spelling) -> (field name, type)
WHAT_IF_FLAGS: dict[str, tuple[str, type]] = {
    "gpu-memory-utilization": ("gpu_memory_utilization", float),
    "kv-cache-dtype": ("kv_cache_dtype", str),
    "max-model-len": ("max_model_len", int),
    "max-num-seqs": ("max_num_seqs", int),
    "max-num-batched-tokens": ("max_num_batched_tokens", int),
    "tensor-parallel-size": ("tensor_parallel_size", int),
    "enforce-eager": ("enforce_eager", bool),
    "block-size": ("block_size", int),
    "vllm-version": ("vllm_version", str),
}
#: The largest value an integer what-if takes.  Tensor parallelism must divide the attention
#: heads, and no model has more than 1,024 of them; the others are counts vLLM keeps in int64.
_INT_LIMITS = {"tensor-parallel-size": 1024, "block-size": 1 << 20}
_INT_LIMIT = 2**63 - 1
_ALIASES = {"util": "gpu-memory-utilization", "tp": "tensor-parallel-size", "kv-dtype": "kv-cache-dtype",
            "mnbt": "max-num-batched-tokens"}
_KV_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
              "fp8_per_token_head", "int8_per_token_head", "nvfp4")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

#: a log format that pins its release when the log prints no version
_FORMAT_VERSION = {"v0.6.4-oneline": "0.6.4", "v0.6.5-multiline": "0.6.5", "v1-joined": "0.33.0"}


# --------------------------------------------------------------------------------------------
# Parsing --what-if
# --------------------------------------------------------------------------------------------


def parse_what_if(items: Sequence[str]) -> dict[str, str]:
    """``["gpu-memory-utilization=0.95", "tp=2"]`` -> ``{"gpu-memory-utilization": "0.95",
    "tensor-parallel-size": "2"}`` (vLLM's flag names; a leading ``--`` and underscores are
    accepted).  Raises :class:`UsageError` for an unknown flag or a bad value."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key = key.strip().lstrip("-").replace("_", "-").lower()
        key = _ALIASES.get(key, key)
        value = value.strip()
        if not sep or not key:
            raise UsageError(f"--what-if {item!r} is not FLAG=VALUE",
                             hint="e.g. --what-if gpu-memory-utilization=0.95")
        if key not in WHAT_IF_FLAGS:
            raise UsageError(f"--what-if: unknown flag {key!r}", hint="one of " + ", ".join(WHAT_IF_FLAGS))
        _, kind = WHAT_IF_FLAGS[key]
        convert_value(key, value, kind)  # validate now: a bad value is a usage error
        out[key] = value
    return out


def convert_value(key: str, value: str, kind: type) -> Any:
    try:
        if kind is bool:
            low = value.lower()
            if low in _TRUE or low == "":
                return True
            if low in _FALSE:
                return False
            raise ValueError(value)
        if kind is int:
            text = value.replace(",", "").replace("_", "")
            if len(text) > 20:
                raise ValueError(value)
            n = int(text)
            if n < 1:
                raise ValueError(value)
            limit = _INT_LIMITS.get(key, _INT_LIMIT)
            if n > limit:
                raise UsageError(f"--what-if {key}={n:,}: more than {limit:,}",
                                 hint=f"give {key} a value vLLM could run with (1 to {limit:,})")
            return n
        if kind is float:
            x = float(value)
            if not 0 < x <= 1:
                raise UsageError(f"--what-if {key}={value}: outside (0, 1]", hint="a fraction such as 0.92")
            return x
    except ValueError:
        raise UsageError(f"--what-if {key}={value!r}: not a valid {kind.__name__}",
                         hint=f"e.g. --what-if {key}=" + {"int": "2", "float": "0.9", "bool": "true"}.get(
                             kind.__name__, "VALUE")) from None
    if key == "kv-cache-dtype" and value not in _KV_DTYPES:
        raise UsageError(f"--what-if kv-cache-dtype={value!r}: unknown", hint="one of " + ", ".join(_KV_DTYPES))
    if key == "vllm-version":
        from vmemplan.rules import parse_version

        parse_version(value)
    return value


def check_what_if_heads(link: Any, tensor_parallel_size: int | None) -> None:
    """A what-if tensor-parallel size must divide the linked model's attention heads, as ``size``
    requires: the same UsageError (exit 2), with vLLM's message.  Without a model, nothing to check."""
    heads = getattr(getattr(link, "config", None), "num_attention_heads", None)
    if tensor_parallel_size is None or not isinstance(heads, int) or heads <= 0:
        return
    from vmemplan.request.refusals import check_tp_heads

    try:
        check_tp_heads(heads, int(tensor_parallel_size))
    except UsageError as error:
        raise UsageError(f"--what-if tensor-parallel-size={tensor_parallel_size}: {error.message}",
                         hint=f"a tensor-parallel size that divides {heads},"
                              + (error.hint.partition(":")[2] if error.hint else "")) from None


# --------------------------------------------------------------------------------------------
# Baseline: the settings the log ran with
# --------------------------------------------------------------------------------------------


def version_from_format(fmt: str) -> str | None:
    """The release a log format pins when the log prints no version (0.6.4's one-line profiler
    summary, 0.6.5's three-line one, 0.33.0's joined KV line); ``None`` when the format spans
    several releases."""
    return _FORMAT_VERSION.get(fmt)


@frozen
class Baseline:
    """The engine settings a startup ran with, with the ones that were not in the log named."""

    vllm_version: str | None
    version_note: str
    rules: RulesPack
    gpu_memory_utilization: float
    tensor_parallel_size: int
    pipeline_parallel_size: int
    kv_cache_dtype: str
    block_size: int
    max_model_len: int | None
    max_num_batched_tokens: int
    max_num_seqs: int
    enforce_eager: bool
    model_dtype: str
    mnbt_printed: bool
    seqs_printed: bool
    assumed: tuple[str, ...] = ()


def select_rules(registry: Registry, version: str | None, fmt: str) -> tuple[RulesPack, str | None]:
    from vmemplan.rules import select_pack

    engine = "v0" if fmt.startswith("v0") else ("v1" if fmt.startswith("v1") else None)
    try:
        return select_pack(registry.rules_packs, version, engine=engine)  # type: ignore[arg-type]
    except UsageError:
        return select_pack(registry.rules_packs, None)


def batch_defaults(rules: RulesPack, gpu: Gpu | None, max_model_len: int | None,
                    total_bytes: int | None) -> tuple[int, int]:
    """Default (max_num_batched_tokens, max_num_seqs) for ``vllm serve`` under ``rules``."""
    L = max_model_len or 2048
    chunked = bool(rules.defaults.enable_chunked_prefill.value)
    auto = rules.defaults.chunked_prefill_auto_above_max_model_len
    if not chunked and auto is not None and L > auto.value:
        chunked = True
    name = gpu.device_name if gpu is not None else ""
    nvml = gpu.batch_default_total_bytes if gpu is not None else (total_bytes or 0)
    return rules.batch_defaults.for_device(device_name=name, nvml_total_bytes=nvml, max_model_len=L,
                                           chunked_prefill=chunked)


def resolve_baseline(startup: Startup, registry: Registry, *, vllm_version: str | None = None,
                     version_source: str = "", gpu: Gpu | None = None,
                     link: ModelLink | None = None) -> Baseline:
    """The settings the startup ran with: the log's figures, else ``vllm_version`` (from
    ``--vllm-version`` or a corpus header), else the rules pack's defaults (named in ``assumed``)."""
    f = startup.figures
    assumed: list[str] = []
    version = startup.vllm_version
    note = f"vLLM {version} (printed in the log)" if version else ""
    if version is None and vllm_version:
        version, note = vllm_version, f"vLLM {vllm_version} ({version_source or 'given'})"
    if version is None:
        pinned = version_from_format(startup.format)
        if pinned:
            version, note = pinned, f"vLLM {pinned} (the log's {startup.format} format is only printed by it)"
    rules, warning = select_rules(registry, version, startup.format)
    if version is None:
        note = f"vLLM version not in the log: the rules of {rules.id} (newest) are used"
    elif warning:
        note += f"; {warning}"
    else:
        note += f"; rules pack {rules.id}"
    util = f.gpu_memory_utilization
    if util is None:
        util = float(rules.defaults.gpu_memory_utilization.value)
        assumed.append(f"gpu_memory_utilization {util} (the release's default)")
    tp = f.tensor_parallel_size or 1
    if f.tensor_parallel_size is None:
        assumed.append("tensor_parallel_size 1")
    kv_dtype = f.kv_cache_dtype or str(rules.defaults.kv_cache_dtype.value)
    bs = f.block_size or int(rules.defaults.block_size.value)
    L = f.max_model_len
    if L is None and link is not None:
        try:
            L = link.adapter.default_max_model_len()
            assumed.append(f"max_model_len {L:,} (the model's own context length)")
        except VmemplanError:
            L = None
    mnbt_d, seqs_d = batch_defaults(rules, gpu, L, f.total_memory_bytes)
    mnbt = f.max_num_batched_tokens or mnbt_d
    if f.max_num_batched_tokens is None:
        assumed.append(f"max_num_batched_tokens {mnbt:,} (the release's default)")
    seqs = f.max_num_seqs or seqs_d
    if f.max_num_seqs is None:
        if rules.batch_defaults.cap_seqs_by_tokens:
            seqs = min(seqs, mnbt)
        assumed.append(f"max_num_seqs {seqs} (the release's default)")
    from vmemplan.explain.model_link import model_dtype_name

    if link is not None:
        dtype = model_dtype_name(f.dtype, link.config)
    else:
        dtype = (f.dtype or "bfloat16").removeprefix("torch.")
    return Baseline(vllm_version=version, version_note=note, rules=rules, gpu_memory_utilization=float(util),
                    tensor_parallel_size=int(tp), pipeline_parallel_size=int(f.pipeline_parallel_size or 1),
                    kv_cache_dtype=kv_dtype, block_size=int(bs), max_model_len=L, max_num_batched_tokens=int(mnbt),
                    max_num_seqs=int(seqs), enforce_eager=bool(f.enforce_eager), model_dtype=dtype,
                    mnbt_printed=f.max_num_batched_tokens is not None, seqs_printed=f.max_num_seqs is not None,
                    assumed=tuple(assumed))
