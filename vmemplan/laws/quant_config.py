"""Which quantization scheme a checkpoint's config (and ``--quantization``) selects, as vLLM's
quantization dispatch does (vllm/model_executor/layers/quantization/__init__.py and each method's
``from_config``, 0.33.0): the config readers for compressed-tensors, ModelOpt, GPTQ/AWQ, FP8,
MXFP4 and bitsandbytes.  The schemes themselves (how each prices a tensor) are
:mod:`vmemplan.laws.quant`."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.laws.quant import (
    BitsAndBytesScheme,
    Fp8Scheme,
    Mxfp4Scheme,
    NvFp4Scheme,
    QuantScheme,
    W8A8Scheme,
    WeightOnlyIntScheme,
    mxfp4_moe_backend,
)

__all__ = ["scheme_for"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


# ----------------------------------------------------------------------------------------
def _as_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(v) for v in value if isinstance(v, str))
    return ()


def _ct_group(qc: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any] | None]:
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ModelConfigError("compressed-tensors quantization_config has no config_groups")
    chosen = None
    for g in groups.values():
        if isinstance(g, Mapping) and any("Linear" in t or "re:" in t for t in _as_list(g.get("targets"))):
            chosen = g
            break
    if chosen is None:
        chosen = next(iter(groups.values()))
    w = chosen.get("weights")
    if not isinstance(w, Mapping):
        raise ModelConfigError("compressed-tensors config group has no weights entry")
    a = chosen.get("input_activations")
    return w, a if isinstance(a, Mapping) else None


@dataclasses.dataclass(frozen=True)
class _Read:
    """What a builder reads beside the quantization_config: where it came from, ``--quantization``,
    the GPU's SM major and the vLLM release."""

    source: str
    flag: str | None
    sm_major: int | None
    vllm_version: tuple[int, ...] | None


def _compressed_tensors(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    source = read.source
    w, a = _ct_group(qc)
    excluded = _as_list(qc.get("ignore"))
    bits = int(w.get("num_bits", 8))
    wtype = str(w.get("type", "int"))
    strategy = str(w.get("strategy", "tensor"))
    if wtype == "float" and bits == 4:
        return NvFp4Scheme(name="compressed-tensors nvfp4", excluded=excluded, source=source,
                           group_size=int(w.get("group_size") or 16))
    if a is None:  # weight-only
        if wtype == "float" and bits == 8:
            return Fp8Scheme(name="compressed-tensors fp8 weight-only (W8A16)", excluded=excluded,
                             source=source, strategy="channel" if strategy == "channel" else "tensor")
        gs = int(w.get("group_size") or -1) if strategy == "group" else -1
        actorder = w.get("actorder")
        return WeightOnlyIntScheme(
            name=f"compressed-tensors W{bits}A16 (group {gs})", excluded=excluded, source=source,
            bits=bits, group_size=gs, zero_point=not bool(w.get("symmetric", True)),
            act_order=actorder in ("group", True, "weight") and gs != -1 and actorder == "group",
            marlin=True, weight_shape=True,
        )
    dynamic = bool(a.get("dynamic", True))
    if wtype == "float":
        if strategy == "block":
            block = w.get("block_structure") or [128, 128]
            return Fp8Scheme(name="compressed-tensors fp8 block", excluded=excluded, source=source,
                             strategy="block", block=(int(block[0]), int(block[1])),
                             static_input=not dynamic)
        return Fp8Scheme(name=f"compressed-tensors fp8 W8A8 ({strategy})", excluded=excluded, source=source,
                         strategy="channel" if strategy == "channel" else "tensor", static_input=not dynamic)
    return W8A8Scheme(name=f"compressed-tensors int8 W8A8 ({strategy})", excluded=excluded, source=source,
                      per_channel=strategy == "channel", static_input=not dynamic,
                      asymmetric_input=not bool(a.get("symmetric", True)))


def _modelopt(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    source = read.source
    inner: Any = qc.get("quantization") if isinstance(qc.get("quantization"), Mapping) else qc
    algo = str(inner.get("quant_algo") or "").upper()
    excluded = _as_list(inner.get("exclude_modules") or inner.get("ignore") or qc.get("ignore"))
    if "NVFP4" in algo or "FP4" in algo:
        return NvFp4Scheme(name="modelopt nvfp4", excluded=excluded, source=source,
                           group_size=int(inner.get("group_size") or 16))
    if "FP8" in algo:
        if "BLOCK" in algo:
            return Fp8Scheme(name="modelopt fp8 block", excluded=excluded, source=source, strategy="block")
        if "CHANNEL" in algo:
            return Fp8Scheme(name="modelopt fp8 per-channel", excluded=excluded, source=source,
                             strategy="channel")
        return Fp8Scheme(name="modelopt fp8 (per-tensor, static input)", excluded=excluded,
                         source=source, strategy="tensor", static_input=True)
    raise ModelConfigError(f"modelopt quant_algo {algo or '(missing)'} is not supported")


def _malformed_as_config_error(read: Callable[_P, _R]) -> Callable[_P, _R]:
    """``read``, with a malformed setting (a TypeError, ValueError, KeyError... while reading
    it) raised as :class:`ModelConfigError`."""

    @functools.wraps(read)
    def reading(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return read(*args, **kwargs)
        except (TypeError, ValueError, KeyError, IndexError, OverflowError, AttributeError) as exc:
            raise ModelConfigError(f"quantization_config could not be read: {exc}",
                                   hint="check the quant_method and its bits / group_size fields") from None

    return reading


@_malformed_as_config_error
def scheme_for(
    quantization_config: Mapping[str, Any] | None,
    extra_files: Mapping[str, Any] | None = None,
    quantization: str | None = None,
    *,
    sm_major: int | None = 9,
    vllm_version: tuple[int, ...] | None = None,
) -> QuantScheme | None:
    """The scheme that prices a checkpoint's quantized tensors, or None for 16-bit weights.

    ``quantization_config`` is config.json's (``ModelConfig.quantization_config``);
    ``extra_files`` maps file names the model source delivered (``hf_quant_config.json``) to
    their parsed JSON; ``quantization`` is ``--quantization``.  Online ``fp8`` on a 16-bit
    checkpoint quantizes per tensor.  Mirrors the dispatch of
    vllm/model_executor/layers/quantization/__init__.py::get_quantization_config and
    vllm/config/model.py::ModelConfig._verify_quantization (0.33.0).  ``vllm_version`` (a
    release tuple; None = newest) selects release-dependent kernels; malformed settings raise
    :class:`ModelConfigError`.
    """
    qc, source = _checkpoint_config(quantization_config, extra_files)
    flag = (quantization or "").lower() or None
    if qc is None:
        return _online_scheme(flag)
    if not isinstance(qc, Mapping):
        raise ModelConfigError("quantization_config must be an object",
                               hint="quantization_config holds an object with quant_method and its settings")
    inner = qc.get("quantization")
    method = str(qc.get("quant_method")
                 or (isinstance(inner, Mapping) and inner.get("quant_algo") and "modelopt") or "").lower()
    from vmemplan.config_schema import check_quantization_flag, validate_quantization

    validate_quantization(qc, source)
    check_quantization_flag(method, flag)
    build = _BUILDERS.get(method)
    if build is None:
        raise ModelConfigError(
            f"quantization method {method or '(missing)'} is not supported by vmemplan",
            hint="supported: fp8, fbgemm_fp8, awq, gptq, compressed-tensors, modelopt, mxfp4, bitsandbytes",
        )
    return build(qc, _Read(source, flag, sm_major, vllm_version))


def _checkpoint_config(quantization_config: Mapping[str, Any] | None,
                       extra_files: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str]:
    """(the checkpoint's quantization config, where it came from): config.json's, else
    hf_quant_config.json's (ModelOpt unless it names its quant_method)."""
    qc: Mapping[str, Any] | None = quantization_config
    source = "config.json quantization_config"
    hf_quant = (extra_files or {}).get("hf_quant_config.json")
    if qc is None and isinstance(hf_quant, Mapping):
        qc = dict(hf_quant)
        qc.setdefault("quant_method", "modelopt")
        source = "hf_quant_config.json"
    return qc, source


def _online_scheme(flag: str | None) -> QuantScheme | None:
    """``--quantization`` on a 16-bit checkpoint: online fp8 (or bitsandbytes), else refused."""
    if flag is None:
        return None
    if flag in ("fp8", "fp8_per_tensor"):
        return Fp8Scheme(name="fp8 online (per-tensor)", source="--quantization fp8", strategy="tensor")
    if flag == "fp8_per_channel":
        return Fp8Scheme(name="fp8 online (per-channel)", source="--quantization", strategy="channel")
    if flag == "fp8_per_block":
        return Fp8Scheme(name="fp8 online (128×128 blocks)", source="--quantization", strategy="block")
    if flag == "bitsandbytes":
        return BitsAndBytesScheme(name="bitsandbytes 4-bit (in-flight)", source="--quantization", bits=4,
                                  double_quant=False)
    raise UsageError(
        f"--quantization {flag} needs a quantized checkpoint",
        hint="online quantization of a 16-bit checkpoint supports fp8 (and bitsandbytes in older vLLM)",
    )


def _fp8_excluded(qc: Mapping[str, Any]) -> tuple[str, ...]:
    return _as_list(qc.get("modules_to_not_convert") or qc.get("ignored_layers"))


def _fbgemm_fp8(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    return Fp8Scheme(name="fbgemm fp8 (per-channel)", excluded=_fp8_excluded(qc), source=read.source,
                     strategy="channel")


def _fp8(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    block = qc.get("weight_block_size")
    excluded = _fp8_excluded(qc)
    static = str(qc.get("activation_scheme", "dynamic")) == "static"
    if isinstance(block, Sequence) and len(block) == 2:
        return Fp8Scheme(name=f"fp8 block {block[0]}×{block[1]}", excluded=excluded, source=read.source,
                         strategy="block", block=(int(block[0]), int(block[1])), static_input=static,
                         match_mode="exact")
    return Fp8Scheme(name="fp8 per-tensor", excluded=excluded, source=read.source, strategy="tensor",
                     static_input=static, match_mode="exact")


def _awq(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    bits = int(qc.get("bits", qc.get("w_bit", 4)))
    marlin = read.flag not in ("awq",)
    return WeightOnlyIntScheme(
        name=f"awq {bits}-bit g{qc.get('group_size', qc.get('q_group_size', 128))}"
        + (" (marlin)" if marlin else " (gemm)"),
        excluded=_as_list(qc.get("modules_to_not_convert")), source=read.source, bits=bits,
        group_size=int(qc.get("group_size", qc.get("q_group_size", 128))),
        zero_point=bool(qc.get("zero_point", True)), marlin=marlin, match_mode="substring",
        # SM 9.0: linears whose shape Machete takes go to it (WeightOnlyIntScheme._machete_parts):
        # 0.33.0's auto_awq.py::AutoAWQMarlinLinearMethod picks the kernel with
        # choose_mp_linear_kernel; the older awq_marlin.py::AWQMarlinLinearMethod (0.13-era)
        # repacked for Marlin only, and the release that switched is not pinned: before 0.33, Marlin
        machete=(marlin and read.sm_major == 9 and bits in (4, 8)
                 and (read.vllm_version is None or tuple(read.vllm_version) >= (0, 33))),
    )


def _gptq(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    bits = int(qc.get("bits", 4))
    desc = bool(qc.get("desc_act", False))
    marlin = read.flag not in ("gptq",) and bits in (4, 8)
    return WeightOnlyIntScheme(
        name=f"gptq {bits}-bit g{qc.get('group_size', 128)}" + (" act-order" if desc else "")
        + (" (marlin)" if marlin else ""),
        excluded=_as_list(qc.get("modules_to_not_convert")), source=read.source, bits=bits,
        group_size=int(qc.get("group_size", 128)), zero_point=not bool(qc.get("sym", True)),
        act_order=desc, marlin=marlin, gptq_legacy=not marlin,
        quantize_lm_head=bool(qc.get("lm_head", False)),
        # SM 9.0: symmetric linears go to Machete, which keeps qzeros (WeightOnlyIntScheme._machete_parts)
        machete=marlin and read.sm_major == 9 and bool(qc.get("sym", True)) and bits in (4, 8),
    )


def _mxfp4(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    # Blackwell datacenter parts (sm 10) run FlashInfer's native FP4 MoE; Hopper the
    # bundled Triton kernels (from 0.12); the others (Ampere, and sm 12 parts such as
    # GB10 / RTX 50, as log 037 shows) Marlin.
    backend = mxfp4_moe_backend(read.sm_major, read.vllm_version)
    return Mxfp4Scheme(name=f"mxfp4 experts ({backend})", source=read.source, backend=backend,
                       vllm_version=read.vllm_version, excluded=_as_list(qc.get("modules_to_not_convert")))


def _bitsandbytes(qc: Mapping[str, Any], read: _Read) -> QuantScheme:
    eight = bool(qc.get("load_in_8bit", qc.get("_load_in_8bit", False)))
    return BitsAndBytesScheme(
        name="bitsandbytes " + ("8-bit" if eight else f"4-bit {qc.get('bnb_4bit_quant_type', 'nf4')}"),
        excluded=_as_list(qc.get("llm_int8_skip_modules")), source=read.source, bits=8 if eight else 4,
        double_quant=bool(qc.get("bnb_4bit_use_double_quant", False)), match_mode="substring",
    )


# quant_method -> the builder of its scheme (each method's ``from_config`` in
# vllm/model_executor/layers/quantization/, 0.33.0)
_BUILDERS: dict[str, Callable[[Mapping[str, Any], _Read], QuantScheme]] = {
    "fp8": _fp8,
    "fbgemm_fp8": _fbgemm_fp8,
    "awq": _awq,
    "gptq": _gptq,
    "compressed-tensors": _compressed_tensors,
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt,
    "mxfp4": _mxfp4,
    "bitsandbytes": _bitsandbytes,
}
