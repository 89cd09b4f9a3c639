"""``-O`` / ``--optimization-level`` and ``--compilation-config`` on a resolved request.

:func:`with_compilation` sets the CUDA-graph mode vLLM 0.33.0 would capture
(:func:`vmemplan.laws.compilation.choose_cudagraph_mode`) and hands the capture-size keys of the
compilation config to the capture-size rule (vmemplan/laws/cudagraph_sizes.py) as the
``--cudagraph-capture-sizes`` / ``--max-cudagraph-capture-size`` flags would be
(vllm/engine/arg_utils.py::EngineArgs.create_engine_config copies those flags into the same keys).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import UsageError

if TYPE_CHECKING:
    from vmemplan.resolve import ResolvedRequest

__all__ = ["with_compilation", "compilation_fields"]


def compilation_fields(vllm_version: str | None) -> frozenset[str] | None:
    """The fields of the release's CompilationConfig (the keys of ``--compilation-config``'s
    default in the generated argument table), or None when the table lists none."""
    from vmemplan.request.vllm_args import load_arg_table

    try:
        spec = load_arg_table(vllm_version).by_dest.get("compilation_config")
    except Exception:  # noqa: BLE001 - a release without a table: no key check
        return None
    default = getattr(spec, "default", None)
    return frozenset(default) if isinstance(default, dict) else None


def _as_mapping(value: Any) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    try:
        data = json.loads(str(value))
    except json.JSONDecodeError as exc:
        raise UsageError(f"argument --compilation-config/-cc: invalid JSON: {exc.msg}",
                         hint="JSON such as '{\"cudagraph_mode\": \"PIECEWISE\"}'") from None
    if not isinstance(data, dict):
        raise UsageError("argument --compilation-config/-cc: expected a JSON object",
                         hint="JSON such as '{\"cudagraph_mode\": \"PIECEWISE\"}'")
    return data


def with_compilation(req: ResolvedRequest) -> ResolvedRequest:
    """``req`` with vLLM 0.33.0's CUDA-graph mode for its ``-O`` and ``--compilation-config``;
    before 0.33 the release default stays, with a not-modelled warning."""
    from vmemplan.core.version import version_tuple_or_none
    from vmemplan.laws.compilation import choose_cudagraph_mode, parse_optimization_level

    inputs = req.inputs
    flags = [f for f, v in (("-O", inputs.optimization_level), ("--compilation-config", inputs.compilation_config))
             if v is not None]
    version = version_tuple_or_none(req.vllm_version)
    if version is not None and version[:2] < (0, 33):
        return replace(req, warnings=req.warnings + (
            f"not modelled: {' / '.join(flags)} (vmemplan read the rule from vLLM 0.33.0, not {req.vllm_version}); "
            "the CUDA-graph figure uses the release's default mode, so it and the KV pool are estimates",))
    level = None if inputs.optimization_level is None else parse_optimization_level(inputs.optimization_level)
    cc = _as_mapping(inputs.compilation_config)
    choice = choose_cudagraph_mode(
        optimization_level=level, compilation=cc, known_keys=compilation_fields(req.vllm_version),
        flag_sizes=inputs.cudagraph_capture_sizes, flag_max_size=inputs.max_cudagraph_capture_size,
        enforce_eager=req.enforce_eager, pooling=req.runner == "pooling", sm_major=getattr(req.gpu, "sm_major", None))
    warnings = list(choice.notes)
    if choice.unmodelled_keys:
        warnings.append("not modelled: --compilation-config key(s) " + ", ".join(choice.unmodelled_keys)
                        + " (compilation passes, encoder graphs and kernel choices move memory vmemplan leaves "
                          "out); the CUDA-graph figure and the KV pool are estimates")
    update: dict[str, Any] = {}
    if choice.capture_sizes is not None:
        update["cudagraph_capture_sizes"] = choice.capture_sizes
    if choice.max_capture_size is not None:
        update["max_cudagraph_capture_size"] = choice.max_capture_size
    if choice.cudagraph_mode == "NONE" and not req.enforce_eager:
        sized = update or inputs.cudagraph_capture_sizes is not None or inputs.max_cudagraph_capture_size is not None
        warnings.append("cudagraph_mode NONE: vLLM captures no CUDA graphs"
                        + (" and ignores the capture sizes" if sized else ""))
    new_inputs = inputs.updated(**update) if update else inputs
    return replace(req, inputs=new_inputs, cudagraph_mode=None if req.enforce_eager else choice.cudagraph_mode,
                   warnings=req.warnings + tuple(w for w in warnings if w not in req.warnings))


def custom_ops_on(req: ResolvedRequest) -> bool:
    """Whether vLLM runs its custom ops: compilation mode NONE (--enforce-eager, -O0, or a
    --compilation-config mode/level 0) makes ``custom_ops`` "all"; the default compiled mode
    makes it "none" (vllm/config/vllm.py::VllmConfig.__post_init__, 0.33.0)."""
    if req.enforce_eager:
        return True
    level = req.inputs.optimization_level
    if level is not None and str(level).strip() in ("0", "O0"):
        return True
    cc = req.inputs.compilation_config
    if isinstance(cc, str):
        try:
            cc = json.loads(cc)
        except ValueError:
            return False
    if isinstance(cc, dict):
        mode = cc.get("mode", cc.get("level"))
        return mode in (0, "0", "NONE")
    return False
