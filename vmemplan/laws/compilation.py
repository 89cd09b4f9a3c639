"""``-O`` / ``--optimization-level`` and ``--compilation-config``: which CUDA graphs vLLM captures.

Mirrors vLLM 0.33.0 (V1 model runner):

* vllm/config/vllm.py::OPTIMIZATION_LEVEL_00 .. _03 and VllmConfig._apply_optimization_level_defaults:
  a level fills only what the user left unset: O0 ``cudagraph_mode`` NONE, O1 PIECEWISE, O2 and O3
  FULL_AND_PIECEWISE;
* VllmConfig.__post_init__: an unset compilation ``mode`` is VLLM_COMPILE above O0, else NONE;
  ``--enforce-eager`` is mode NONE and cudagraph_mode NONE; pooling models lose their full
  graphs (PIECEWISE);
* VllmConfig._normalize_piecewise_cudagraph_mode with CUDAGraphMode.without_piecewise
  (vllm/config/compilation.py): a mode that needs piecewise compilation under any compilation
  mode but VLLM_COMPILE drops its piecewise part (PIECEWISE -> NONE, FULL_AND_PIECEWISE ->
  FULL_DECODE_ONLY);
* vllm/config/compilation.py::CompilationConfig.resolve_cudagraph_mode_and_sizes: a FULL mixed
  mode under an attention backend that cannot capture mixed batches (FlashAttention 2, below
  SM 9.0: vllm/v1/attention/backends/flash_attn.py, ``_cudagraph_support`` UNIFORM_BATCH)
  becomes FULL_AND_PIECEWISE when attention is a splitting op (VLLM_COMPILE), else
  FULL_DECODE_ONLY;
* vllm/engine/arg_utils.py::EngineArgs.create_engine_config: ``--cudagraph-capture-sizes`` /
  ``--max-cudagraph-capture-size`` and the same keys of ``--compilation-config`` are mutually
  exclusive; the sizes then follow VllmConfig._set_cudagraph_sizes (laws/cudagraph_sizes.py).

Architectures that vLLM runs with breakable CUDA graphs by default
(vllm/config/vllm.py::default_breakable_cudagraph_architectures) skip the normalisation; they
are not distinguished here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = ["CompilationChoice", "LEVEL_CUDAGRAPH_MODE", "COMPILATION_MODES", "MODELLED_KEYS", "NO_EFFECT_KEYS",
           "parse_optimization_level", "choose_cudagraph_mode", "without_piecewise"]

#: vllm/config/vllm.py::OPTIMIZATION_LEVEL_0x["compilation_config"]["cudagraph_mode"] (0.33.0)
LEVEL_CUDAGRAPH_MODE = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}
#: vllm/config/compilation.py::CompilationMode (0.33.0)
COMPILATION_MODES = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")
_CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
#: compilation_config keys whose memory effect vmemplan computes
MODELLED_KEYS = frozenset({"mode", "cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size"})
#: keys that only move files, logs or host-side warm-up (no GPU memory)
NO_EFFECT_KEYS = frozenset({"debug_dump_path", "cache_dir", "compile_cache_save_format", "cudagraph_num_of_warmups"})


@frozen
class CompilationChoice:
    """What vLLM 0.33.0 settles on: the CUDA-graph mode, the compilation mode, the capture-size
    keys the compilation config gives, and what vLLM logs on the way (notes)."""

    cudagraph_mode: str
    compilation_mode: str
    capture_sizes: list[int] | None
    max_capture_size: int | None
    notes: tuple[str, ...]
    unmodelled_keys: tuple[str, ...]


def parse_optimization_level(value: Any) -> int:
    """``-O N`` / ``--optimization-level N``: vLLM's OptimizationLevel takes 0, 1, 2 or 3
    (vllm/config/vllm.py::OptimizationLevel)."""
    text = str(value).strip()
    if text not in ("0", "1", "2", "3"):
        raise UsageError(f"argument --optimization-level: Input should be 0, 1, 2 or 3, got {value!r}",
                         hint="-O0 (no compilation, no CUDA graphs), -O1 (piecewise graphs), -O2 (the default) or -O3")
    return int(text)


def without_piecewise(mode: str) -> str:
    """vllm/config/compilation.py::CUDAGraphMode.without_piecewise."""
    return {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}.get(mode, mode)


def _has_full(mode: str) -> bool:
    return mode in ("FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


def _needs_piecewise(mode: str) -> bool:
    return mode in ("PIECEWISE", "FULL_AND_PIECEWISE")


def _compilation_mode(value: Any) -> str:
    """``mode``: 0..3 or a CompilationMode name (CompilationConfig.validate_mode_before)."""
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int) and 0 <= value < len(COMPILATION_MODES):
        return COMPILATION_MODES[value]
    if isinstance(value, str) and value.strip().isdigit() and int(value) < len(COMPILATION_MODES):
        return COMPILATION_MODES[int(value)]
    if isinstance(value, str) and value.upper() in COMPILATION_MODES:
        return value.upper()
    raise UsageError(f"Invalid compilation mode: {value}. Valid modes are: {', '.join(COMPILATION_MODES)}",
                     hint="--compilation-config '{\"mode\": 3}' (VLLM_COMPILE, the default above -O0) or 0 (NONE)")


def _cudagraph_mode(value: Any) -> str:
    name = str(value).upper()
    if name not in _CUDAGRAPH_MODES:
        raise UsageError(f"argument --compilation-config/-cc: cudagraph_mode {value!r} is not a CUDAGraphMode",
                         hint="cudagraph_mode takes one of " + ", ".join(_CUDAGRAPH_MODES))
    return name


def _sizes(value: Any) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, Sequence) and not isinstance(value, str):  # "-cc.cudagraph_capture_sizes+ 1,2": strings
        value = [int(s) if isinstance(s, str) and s.strip().isdigit() else s for s in value]
    if not isinstance(value, Sequence) or isinstance(value, str) or \
            not all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        raise UsageError("argument --compilation-config/-cc: cudagraph_capture_sizes must be a list of integers",
                         hint="e.g. -cc.cudagraph_capture_sizes '[1, 2, 4, 8]'")
    return list(value)


def choose_cudagraph_mode(*, optimization_level: int | None, compilation: Mapping[str, Any] | None,
                          known_keys: frozenset[str] | None, flag_sizes: Sequence[int] | None,
                          flag_max_size: int | None, enforce_eager: bool, pooling: bool,
                          sm_major: int | None) -> CompilationChoice:
    """The CUDA-graph mode and capture-size keys vLLM 0.33.0 derives from ``-O`` and
    ``--compilation-config`` (see the module docstring for each rule).  ``known_keys`` are the
    fields of the release's CompilationConfig (any other key is vLLM's pydantic refusal)."""
    cc = dict(compilation or {})
    level = 2 if optimization_level is None else optimization_level
    if known_keys is not None:
        unknown = sorted(k for k in cc if k not in known_keys)
        if unknown:
            renamed = " ('level' was renamed 'mode')" if "level" in unknown else ""
            raise UsageError(
                f"argument --compilation-config/-cc: {len(unknown)} validation error(s) for CompilationConfig: "
                + "; ".join(f"{k}: Unexpected keyword argument" for k in unknown),
                hint="CompilationConfig forbids extra fields" + renamed
                     + "; the CUDA-graph keys are mode, cudagraph_mode, cudagraph_capture_sizes, "
                       "max_cudagraph_capture_size")
    for key, flag in (("cudagraph_capture_sizes", flag_sizes), ("max_cudagraph_capture_size", flag_max_size)):
        if flag is not None and cc.get(key) is not None:
            raise UsageError(f"{key} and compilation_config.{key} are mutually exclusive",
                             hint=f"give --{key.replace('_', '-')} or compilation_config.{key}, not both")
    notes: list[str] = []
    comp = _compilation_mode(cc["mode"]) if cc.get("mode") is not None else (
        "VLLM_COMPILE" if level > 0 else "NONE")
    mode = _cudagraph_mode(cc["cudagraph_mode"]) if cc.get("cudagraph_mode") is not None else \
        LEVEL_CUDAGRAPH_MODE[level]
    sizes, max_size = _sizes(cc.get("cudagraph_capture_sizes")), cc.get("max_cudagraph_capture_size")
    if max_size is not None and (not isinstance(max_size, int) or isinstance(max_size, bool)):
        raise UsageError("argument --compilation-config/-cc: max_cudagraph_capture_size must be an integer")
    if enforce_eager:
        return CompilationChoice("NONE", "NONE", sizes, max_size, (), ())

    def normalise(m: str) -> str:
        if _needs_piecewise(m) and comp != "VLLM_COMPILE":
            fallback = without_piecewise(m)
            notes.append(f"Cudagraph mode {m} is not compatible with compilation mode {comp}. Overriding to "
                         f"{fallback}.")
            return fallback
        return m

    mode = normalise(mode)
    if pooling and _has_full(mode):
        notes.append("Pooling models do not support full cudagraphs. Overriding cudagraph_mode to PIECEWISE.")
        mode = normalise("PIECEWISE")
    if mode == "FULL" and sm_major is not None and sm_major < 9:
        # the default FLASH_ATTN backend runs FlashAttention 2 below SM 9.0: mixed batches cannot
        # be captured whole (vllm/v1/attention/backends/fa_utils.py::get_flash_attn_version)
        mode = "FULL_AND_PIECEWISE" if comp == "VLLM_COMPILE" else "FULL_DECODE_ONLY"
        notes.append(f"CUDAGraphMode.FULL is not supported with FlashAttentionBackend backend (support: "
                     f"AttentionCGSupport.UNIFORM_BATCH); setting cudagraph_mode={mode}")
    if comp == "STOCK_TORCH_COMPILE" and mode != "NONE":
        notes.append("not modelled: compilation mode STOCK_TORCH_COMPILE (Model Runner V2, vLLM 0.33's default "
                     "where it supports the model, captures no CUDA graphs with it: VllmConfig."
                     f"_disable_cudagraphs_for_v2_stock_torch_compile); the figure is the V1 runner's ({mode}), "
                     "so it and the KV pool are estimates")
    unmodelled = tuple(sorted(k for k in cc if k not in MODELLED_KEYS | NO_EFFECT_KEYS))
    return CompilationChoice(mode, comp, sizes, max_size, tuple(notes), unmodelled)
