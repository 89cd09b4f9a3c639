"""Quantization schemes: the tensors a quantized layer keeps after loading, in bytes.

Each scheme implements the ``WeightScheme`` protocol of :mod:`vmemplan.laws.weights`
(``name``, ``tensor_bytes``) and its ``tensor_parts`` extension: for one allocation unit of a
:class:`~vmemplan.core.graph.WeightTensor` (one layer's linear, or one layer's fused experts)
the list of separate tensors vLLM holds — packed weight, scales, zero points, group indices —
so that the weights law can round each one as the CUDA allocator does.

What each scheme mirrors (vLLM 0.33.0 unless stated; ``create_weights`` gives the tensors,
``process_weights_after_loading`` what survives):

* :class:`Fp8Scheme` — vllm/model_executor/layers/quantization/fp8.py (Fp8LinearMethod,
  Fp8MoEMethod) and utils/fp8_utils.py (create_fp8_weight_parameter,
  create_fp8_scale_parameter): fp8 weight ``[N, K]``; fp32 scales per tensor (one per merged
  shard), per channel ``[N, 1]`` or per 128×128 block ``[ceil(N/128), ceil(K/128)]``; an
  fp32 input scale when activations are static.  Also the online ``--quantization fp8`` of a
  16-bit checkpoint (quantization/online/fp8.py: per-tensor).
* :class:`WeightOnlyIntScheme` — auto_awq.py (AutoAWQMarlinLinearMethod, AutoAWQMoEMethod),
  auto_gptq.py, compressed_tensors/schemes/compressed_tensors_wNa16.py and the Marlin
  repack in kernels/linear/mixed_precision/marlin.py: int32-packed weight of ``bits`` per
  element, 16-bit group scales ``[K/g, N]``, packed zero points ``[K/g, N·bits/32]`` when
  asymmetric, and ``g_idx`` + sort indices (int32 ``[K]``) under act-order; Marlin pads
  ``(N, K)`` to its tile (utils/marlin_utils.py::marlin_padded_nk).
* :class:`W8A8Scheme` — compressed_tensors_w8a8_int8.py / _w8a8_fp8.py: 8-bit weight, fp32
  scale per channel ``[N, 1]`` or per tensor, static input scale / zero point, and the int32
  ``azp_adj [N]`` of asymmetric int8.
* :class:`NvFp4Scheme` — compressed_tensors_w4a4_nvfp4.py and modelopt.py
  (ModelOptNvFp4LinearMethod): 4-bit e2m1 weight packed two per byte ``[N, K/2]``, fp8 block
  scales per 16 ``[N, K/16]`` swizzled to ``[round_up(N,128), round_up(K/16,4)]``, fp32
  global scales.
* :class:`Mxfp4Scheme` — mxfp4.py (Mxfp4MoEMethod): experts only, e2m1 weight ``[E, N, K/2]``,
  e8m0 scale per 32 ``[E, N, K/32]``, intermediate and hidden sizes padded for the backend.
* :class:`BitsAndBytesScheme` — quantization/bitsandbytes.py of the last releases that ship
  it (0.8.5 … 0.27.0; 0.33.0 no longer does): 4-bit weight two per byte plus the quant
  state's absmax (fp32 per 64, or uint8 per 64 with fp32 per 256 blocks when double
  quantized); 8-bit weight with fp32 row scales.

Modules a config leaves out (``ignore``, ``modules_to_not_convert``, ``exclude_modules``,
``llm_int8_skip_modules``), the embedding, the router and the LM head stay at checkpoint
width.  :func:`scheme_for` reads the scheme from ``quantization_config``,
``hf_quant_config.json`` or the ``--quantization`` flag.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import WeightTensor
from vmemplan.core.units import dtype_bytes

__all__ = [
    "QuantScheme",
    "Fp8Scheme",
    "WeightOnlyIntScheme",
    "W8A8Scheme",
    "NvFp4Scheme",
    "Mxfp4Scheme",
    "BitsAndBytesScheme",
    "scheme_for",
    "marlin_padded_nk",
]

Part = tuple[str, int, int]

# fused vLLM modules and the checkpoint modules they merge
_FUSED = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
}
_LAYER_RE = re.compile(r"layers\.(\d+)\.")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil(a, b) * b


def marlin_padded_nk(size_n: int, size_k: int, group_size: int = -1) -> tuple[int, int]:
    """The (n, k) Marlin pads a weight to: the cheaper of (n % 64, k % 128) and
    (n % 128, k % 64), keeping k a multiple of the group.

    Mirrors vllm/model_executor/layers/quantization/utils/marlin_utils.py::marlin_padded_nk
    (0.33.0).
    """
    import math

    group = group_size if group_size > 0 else 1
    cands = (
        (_round_up(size_n, 64), _round_up(size_k, math.lcm(128, group))),
        (_round_up(size_n, 128), _round_up(size_k, math.lcm(64, group))),
    )
    return min(cands, key=lambda nk: (nk[0] * nk[1], nk[0] + nk[1]))


@dataclass(frozen=True)
class QuantScheme:
    """Common machinery: exclusions and the per-unit loop.  Subclasses price one unit."""

    name: str
    excluded: tuple[str, ...] = ()
    source: str = ""  # where the settings were read ("config.json quantization_config", ...)
    quantize_lm_head: bool = False
    #: how ignore-list entries match module names: "exact", "substring" or "pattern"
    match_mode: str = "pattern"
    _cache: dict[tuple[str, int], int] = field(default_factory=dict, compare=False, repr=False)

    # -- protocol ---------------------------------------------------------------------
    def tensor_bytes(self, tensor: WeightTensor, model_dtype_bytes: int) -> int | None:
        parts = self.tensor_parts(tensor, model_dtype_bytes)
        if parts is None:
            return None
        return sum(b * n for _, b, n in parts)

    def tensor_parts(self, tensor: WeightTensor, model_dtype_bytes: int) -> list[Part] | None:
        if tensor.kind in ("embedding", "router", "norm", "bias"):
            return None
        if tensor.kind == "lm_head" and not self.quantize_lm_head:
            return None
        if not tensor.quantizable and tensor.kind != "lm_head":
            return None
        if not self.applies_to(tensor):
            return None
        units = tensor.num_allocations
        experts = max(1, tensor.count // max(1, units))
        kept = self.unquantized_units(tensor)
        plain = tensor.elements // max(1, tensor.count) * experts * (
            model_dtype_bytes if tensor.dtype is None else _dtype_width(tensor.dtype))
        quant = self.unit_parts(tensor, experts, model_dtype_bytes)
        out: list[Part] = []
        if units - kept:
            out += [(n, b, units - kept) for n, b in quant]
        if kept:
            out.append(("weight(unquantized)", plain, kept))
        return out

    def applies_to(self, tensor: WeightTensor) -> bool:
        """Whether the scheme quantizes this kind of tensor at all (mxfp4: experts only)."""
        return True

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        raise NotImplementedError

    def describe(self) -> str:
        """One line for provenance: the scheme, its settings and where they were read."""
        src = f" (from {self.source})" if self.source else ""
        skip = f"; {len(self.excluded)} module pattern(s) kept at checkpoint width" if self.excluded else ""
        return f"{self.name}{src}{skip}"

    # -- exclusions -----------------------------------------------------------------------
    def unquantized_units(self, t: WeightTensor) -> int:
        """How many of the tensor's allocation units (layers) the config leaves unquantized.

        Layer-specific patterns (``model.layers.3.mlp.gate_proj``) exclude that layer only;
        the others apply to every layer.  A fused module is excluded when the module or all
        of its checkpoint shards are (vllm/model_executor/layers/quantization/utils/
        quant_utils.py::is_layer_skipped).  Layer indices are counted from the first layer
        of the tensor (the rank's pipeline stage offset is not known here).
        """
        if not self.excluded:
            return 0
        units = t.num_allocations
        key = (t.name, units)
        if key in self._cache:
            return self._cache[key]
        generic = [p for p in self.excluded if not _LAYER_RE.search(p)]
        specific: dict[int, list[str]] = {}
        for p in self.excluded:
            m = _LAYER_RE.search(p)
            if m:
                specific.setdefault(int(m.group(1)), []).append(p)
        n = 0
        for i in range(units):
            pats = generic + specific.get(i, [])
            if pats and self._module_skipped(t.name, i, pats, self.match_mode):
                n += 1
        self._cache[key] = n
        return n

    @staticmethod
    def _module_skipped(name: str, layer: int, patterns: Sequence[str], mode: str) -> bool:
        if name in ("lm_head",):
            return any(_match("lm_head", p, mode) for p in patterns)
        base = name[:-len("_weight")] if name.endswith("_weight") else name
        module = base.rsplit(".", 1)[0] if ".experts." in base else base
        full = f"model.layers.{layer}.{module}"
        if any(_match(full, p, mode) for p in patterns):
            return True
        leaf = module.rsplit(".", 1)[-1]
        if leaf in _FUSED:
            prefix = full[: -len(leaf)]
            return all(any(_match(prefix + s, p, mode) for p in patterns) for s in _FUSED[leaf])
        return False


def _match(module: str, pattern: str, mode: str = "pattern") -> bool:
    """Whether ``pattern`` from an ignore list names ``module``.

    ``exact`` (fp8's modules_to_not_convert), ``substring`` (AWQ, bitsandbytes) as
    vllm/model_executor/layers/quantization/utils/quant_utils.py::is_layer_skipped does;
    ``pattern`` adds ``re:`` regexes (compressed-tensors) and shell wildcards (ModelOpt) and
    accepts a dotted suffix.
    """
    if mode == "exact":
        return module == pattern
    if mode == "substring":
        return pattern in module
    if pattern.startswith("re:"):
        return re.match(pattern[3:], module) is not None
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
    return module == pattern or module.endswith("." + pattern)


def _dtype_width(name: str) -> int:
    return dtype_bytes(name)


def _merged_shards(name: str) -> int:
    leaf = name.rsplit(".", 1)[-1]
    if leaf.startswith("qkv_proj"):
        return 3
    if leaf.startswith("gate_up_proj") or leaf.startswith("w13"):
        return 2
    return 1


# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fp8Scheme(QuantScheme):
    """fp8 e4m3 weights; ``strategy`` is "tensor", "channel" or "block"."""

    strategy: str = "block"
    block: tuple[int, int] = (128, 128)
    static_input: bool = False

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        n, k, e = t.rows, t.cols, experts
        parts = [("weight", e * n * k)]
        is_expert = t.kind == "expert" or ".experts." in t.name
        shards = _merged_shards(t.name)
        if self.strategy == "block":
            bn, bk = self.block
            rows = shards * _ceil(n // shards, bn) if n % shards == 0 else _ceil(n, bn)
            parts.append(("weight_scale_inv", e * rows * _ceil(k, bk) * 4))
        elif self.strategy == "channel":
            parts.append(("weight_scale", e * n * 4))
        else:  # one fp32 per merged shard (per expert for MoE)
            parts.append(("weight_scale", e * (shards if is_expert else 1) * 4))
        if self.static_input:
            parts.append(("input_scale", 4 * (e if is_expert else 1)))
        return parts


@dataclass(frozen=True)
class WeightOnlyIntScheme(QuantScheme):
    """Integer weights with 16-bit group scales (AWQ, GPTQ, compressed-tensors WNA16)."""

    bits: int = 4
    group_size: int = 128
    zero_point: bool = False
    act_order: bool = False
    marlin: bool = True
    #: the non-Marlin GPTQ kernels keep packed zeros and ``g_idx`` even when symmetric
    gptq_legacy: bool = False

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        n, k, e = t.rows, t.cols, experts
        g = self.group_size if self.group_size and self.group_size > 0 else -1
        if self.marlin:
            n, k = marlin_padded_nk(n, k, g)
        groups = 1 if g == -1 else _ceil(k, g)
        pack = 32 // self.bits if 32 % self.bits == 0 else None
        qweight = e * k * n * self.bits // 8 if pack else e * k * n * self.bits // 8
        parts = [("qweight", qweight), ("scales", e * groups * n * width)]
        if self.zero_point or self.gptq_legacy:
            parts.append(("qzeros", e * groups * _ceil(n * self.bits, 32) * 4))
        if self.act_order or self.gptq_legacy:
            parts.append(("g_idx", e * k * 4))
            if self.marlin and self.act_order:
                parts.append(("g_idx_sort_indices", e * k * 4))
        return parts


@dataclass(frozen=True)
class W8A8Scheme(QuantScheme):
    """8-bit weights and activations (compressed-tensors int8 or fp8)."""

    per_channel: bool = True
    static_input: bool = False
    asymmetric_input: bool = False

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        n, k, e = t.rows, t.cols, experts
        parts = [("weight", e * n * k), ("weight_scale", e * (n if self.per_channel else 1) * 4)]
        if self.static_input:
            parts.append(("input_scale", 4 * e))
            if self.asymmetric_input:
                parts.append(("input_zero_point", 4 * e))
        if self.asymmetric_input:
            parts.append(("azp_adj", e * n * 4))
        return parts


@dataclass(frozen=True)
class NvFp4Scheme(QuantScheme):
    """NVFP4: e2m1 weights, fp8 scales per 16 elements, fp32 global scales."""

    group_size: int = 16

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        n, k, e = t.rows, t.cols, experts
        scale_rows = _round_up(n, 128)
        scale_cols = _round_up(_ceil(k, self.group_size), 4)
        parts = [("weight_packed", e * n * k // 2), ("weight_scale", e * scale_rows * scale_cols)]
        is_expert = t.kind == "expert" or ".experts." in t.name
        shards = _merged_shards(t.name) if is_expert else 1
        parts += [("weight_global_scale", 4 * e * shards), ("input_global_scale", 4 * e)]
        if not is_expert:
            parts.append(("alpha", 4))
        return parts


@dataclass(frozen=True)
class Mxfp4Scheme(QuantScheme):
    """MXFP4 experts (gpt-oss): everything but the routed experts stays 16-bit.

    ``backend`` picks the padding: "marlin" (intermediate → ×128, hidden → ×256; GPUs
    without native FP4), "flashinfer" (both ×256; Blackwell), "triton" (intermediate → ×64).
    Mirrors vllm/model_executor/layers/quantization/mxfp4.py::Mxfp4MoEMethod.create_weights.
    """

    backend: str = "marlin"

    def applies_to(self, tensor: WeightTensor) -> bool:
        return tensor.kind == "expert" or ".experts." in tensor.name

    def _pads(self) -> tuple[int, int]:
        return {"marlin": (128, 256), "flashinfer": (256, 256), "triton": (64, 1)}.get(self.backend, (64, 1))

    def describe(self) -> str:
        return super().describe() + f"; experts padded for the {self.backend} backend"

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        pad_i, pad_h = self._pads()
        e = experts
        if t.name.endswith("bias"):  # expert biases stay bf16 but follow the padding
            if _merged_shards(t.name) == 2:
                return [("bias", e * 2 * _round_up(t.rows // 2, pad_i) * 2)]
            return [("bias", e * _round_up(t.rows, pad_h) * 2)]
        if _merged_shards(t.name) == 2:  # w13: [2·I, H]
            n = 2 * _round_up(t.rows // 2, pad_i)
            k = _round_up(t.cols, pad_h)
        else:  # w2: [H, I]
            n = _round_up(t.rows, pad_h)
            k = _round_up(t.cols, pad_i)
        return [("weight", e * n * k // 2), ("weight_scale", e * n * _ceil(k, 32))]


@dataclass(frozen=True)
class BitsAndBytesScheme(QuantScheme):
    """bitsandbytes: NF4/FP4 (4-bit) or LLM.int8 (8-bit)."""

    bits: int = 4
    double_quant: bool = True
    blocksize: int = 64

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        numel = t.rows * t.cols * experts
        if self.bits == 8:
            return [("weight", numel), ("SCB", t.rows * experts * 4)]
        shards = _merged_shards(t.name)
        blocks = _ceil(numel, self.blocksize)
        parts = [("weight", _ceil(numel, 2))]
        if self.double_quant:
            parts += [("absmax", blocks), ("nested_absmax", _ceil(blocks, 256) * 4)]
            small = [("nested_code", 256 * 4), ("offset", 4)]
        else:
            parts.append(("absmax", blocks * 4))
            small = []
        # one quant state (with its 16-entry code) per merged checkpoint shard
        return parts + (small + [("code", 16 * 4)]) * shards


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


def _compressed_tensors(qc: Mapping[str, Any], source: str, sm_major: int | None) -> QuantScheme:
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
            marlin=True,
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


def _modelopt(qc: Mapping[str, Any], source: str) -> QuantScheme:
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


def scheme_for(
    quantization_config: Mapping[str, Any] | None,
    extra_files: Mapping[str, Any] | None = None,
    quantization: str | None = None,
    *,
    sm_major: int | None = 9,
) -> QuantScheme | None:
    """The scheme that prices a checkpoint's quantized tensors, or None for 16-bit weights.

    See :func:`_scheme_for`; malformed settings raise :class:`ModelConfigError`.
    """
    try:
        return _scheme_for(quantization_config, extra_files, quantization, sm_major=sm_major)
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, AttributeError) as exc:
        raise ModelConfigError(f"quantization_config could not be read: {exc}",
                               hint="check the quant_method and its bits / group_size fields") from None


def _scheme_for(
    quantization_config: Mapping[str, Any] | None,
    extra_files: Mapping[str, Any] | None = None,
    quantization: str | None = None,
    *,
    sm_major: int | None = 9,
) -> QuantScheme | None:
    """The scheme that prices a checkpoint's quantized tensors, or None for 16-bit weights.

    ``quantization_config`` is config.json's (``ModelConfig.quantization_config``);
    ``extra_files`` maps file names the model source delivered (``hf_quant_config.json``) to
    their parsed JSON; ``quantization`` is ``--quantization``.  Online ``fp8`` on a 16-bit
    checkpoint quantizes per tensor.  Mirrors the dispatch of
    vllm/model_executor/layers/quantization/__init__.py::get_quantization_config and
    vllm/config/model.py::ModelConfig._verify_quantization (0.33.0).
    """
    qc: Mapping[str, Any] | None = quantization_config
    source = "config.json quantization_config"
    hf_quant = (extra_files or {}).get("hf_quant_config.json")
    if qc is None and isinstance(hf_quant, Mapping):
        qc = dict(hf_quant)
        qc.setdefault("quant_method", "modelopt")
        source = "hf_quant_config.json"
    flag = (quantization or "").lower() or None
    if qc is None:
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
    if not isinstance(qc, Mapping):
        raise ModelConfigError("quantization_config must be an object")
    inner = qc.get("quantization")
    method = str(qc.get("quant_method")
                 or (isinstance(inner, Mapping) and inner.get("quant_algo") and "modelopt") or "").lower()
    if method in ("fp8", "fbgemm_fp8"):
        block = qc.get("weight_block_size")
        excluded = _as_list(qc.get("modules_to_not_convert") or qc.get("ignored_layers"))
        static = str(qc.get("activation_scheme", "dynamic")) == "static"
        if method == "fbgemm_fp8":
            return Fp8Scheme(name="fbgemm fp8 (per-channel)", excluded=excluded, source=source, strategy="channel")
        if isinstance(block, Sequence) and len(block) == 2:
            return Fp8Scheme(name=f"fp8 block {block[0]}×{block[1]}", excluded=excluded, source=source,
                             strategy="block", block=(int(block[0]), int(block[1])), static_input=static,
                             match_mode="exact")
        return Fp8Scheme(name="fp8 per-tensor", excluded=excluded, source=source, strategy="tensor",
                         static_input=static, match_mode="exact")
    if method == "awq":
        bits = int(qc.get("bits", qc.get("w_bit", 4)))
        marlin = flag not in ("awq",)
        return WeightOnlyIntScheme(
            name=f"awq {bits}-bit g{qc.get('group_size', qc.get('q_group_size', 128))}"
            + (" (marlin)" if marlin else " (gemm)"),
            excluded=_as_list(qc.get("modules_to_not_convert")), source=source, bits=bits,
            group_size=int(qc.get("group_size", qc.get("q_group_size", 128))),
            zero_point=bool(qc.get("zero_point", True)), marlin=marlin, match_mode="substring",
        )
    if method == "gptq":
        bits = int(qc.get("bits", 4))
        desc = bool(qc.get("desc_act", False))
        marlin = flag not in ("gptq",) and bits in (4, 8)
        return WeightOnlyIntScheme(
            name=f"gptq {bits}-bit g{qc.get('group_size', 128)}" + (" act-order" if desc else "")
            + (" (marlin)" if marlin else ""),
            excluded=_as_list(qc.get("modules_to_not_convert")), source=source, bits=bits,
            group_size=int(qc.get("group_size", 128)), zero_point=not bool(qc.get("sym", True)),
            act_order=desc, marlin=marlin, gptq_legacy=not marlin,
            quantize_lm_head=bool(qc.get("lm_head", False)),
        )
    if method == "compressed-tensors":
        return _compressed_tensors(qc, source, sm_major)
    if method in ("modelopt", "modelopt_fp4"):
        return _modelopt(qc, source)
    if method == "mxfp4":
        # Blackwell datacenter parts (sm 10) run FlashInfer's native FP4 MoE; the others
        # (Hopper, Ampere, and sm 12 parts such as GB10 / RTX 50, as log 037 shows) Marlin.
        backend = "flashinfer" if sm_major == 10 else "marlin"
        return Mxfp4Scheme(name=f"mxfp4 experts ({backend})", source=source, backend=backend,
                           excluded=_as_list(qc.get("modules_to_not_convert")))
    if method == "bitsandbytes":
        eight = bool(qc.get("load_in_8bit", qc.get("_load_in_8bit", False)))
        return BitsAndBytesScheme(
            name="bitsandbytes " + ("8-bit" if eight else f"4-bit {qc.get('bnb_4bit_quant_type', 'nf4')}"),
            excluded=_as_list(qc.get("llm_int8_skip_modules")), source=source, bits=8 if eight else 4,
            double_quant=bool(qc.get("bnb_4bit_use_double_quant", False)), match_mode="substring",
        )
    raise ModelConfigError(
        f"quantization method {method or '(missing)'} is not supported by vmemplan",
        hint="supported: fp8, fbgemm_fp8, awq, gptq, compressed-tensors, modelopt, mxfp4, bitsandbytes",
    )
