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
import functools
import math
import re
from collections.abc import Sequence
from dataclasses import field

from vmemplan.core.frozen import frozen
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
    "marlin_padded_nk",
    "mxfp4_moe_backend",
    "mxfp4_padding",
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


@frozen
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
        # Units with no layer-specific pattern share one answer when no generic pattern can
        # tell one layer number from another (:func:`_layer_free`): evaluate it once, so a
        # plan's cost does not grow with layers x experts.  Otherwise every unit is checked.
        shared: bool | None = None
        if not generic:
            shared = False
        elif all(_layer_free(p, self.match_mode) for p in generic):
            shared = self._module_skipped(t.name, 0, generic, self.match_mode)
        for i in range(units) if shared is None else sorted(k for k in specific if k < units):
            pats = generic + specific.get(i, [])
            if pats and self._module_skipped(t.name, i, pats, self.match_mode):
                n += 1
        if shared:
            n += units - len([k for k in specific if k < units])
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


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    """A ``re:`` ignore pattern, compiled once; an invalid or catastrophic one is an input error
    (config_schema.check_ignore_pattern refuses repeated groups that repeat or alternate)."""
    from vmemplan.config_schema import check_ignore_pattern

    check_ignore_pattern(pattern, "an ignore-list re: pattern")
    return re.compile(pattern)


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
        return _compiled(pattern[3:]).match(module) is not None
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
    return module == pattern or module.endswith("." + pattern)


def _layer_free(pattern: str, mode: str) -> bool:
    """Whether ``pattern`` matches ``model.layers.{L}.<module>`` alike for every layer number L.

    Conservative: only the layer's digit run differs between such names, so a pattern holding
    no digit can tell layers apart only through what may consume a digit - a glob's ``?`` or
    ``[``, a regex's ``.`` that is not ``.*``, a class (``[``, ``\\d``, ``\\w``) or a count
    (``{``).  A digit-free pattern without those answers the same for every L: its literals
    never match a digit, and ``.*`` / ``*`` absorb a digit run of any length.
    """
    if any(c.isdigit() for c in pattern):
        return False
    if mode in ("exact", "substring"):
        return True
    if pattern.startswith("re:"):
        body = pattern[3:]
        i = 0
        while i < len(body):
            c = body[i]
            if c == "\\":
                if i + 1 >= len(body) or body[i + 1].isalnum():
                    return False
                i += 2
                continue
            if c in "[{":
                return False
            if c == "." and body[i + 1:i + 2] != "*":
                return False
            i += 1
        return True
    return not any(c in pattern for c in "?[")


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
@frozen
class Fp8Scheme(QuantScheme):
    """fp8 e4m3 weights; ``strategy`` is "tensor", "channel" or "block"."""

    strategy: str = "block"
    block: tuple[int, int] = (128, 128)
    static_input: bool = False
    #: bytes of one block scale: fp32, or 1 where the config asks for e8m0 scales
    #: (Fp8LinearMethod.create_weights' ``scale_dtype`` from ``quant_config.is_scale_e8m0``)
    scale_bytes: int = 4

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        n, k, e = t.rows, t.cols, experts
        parts = [("weight", e * n * k)]
        is_expert = t.kind == "expert" or ".experts." in t.name
        shards = _merged_shards(t.name)
        if self.strategy == "block":
            bn, bk = (self._moe_refined_block(t, n, k) if is_expert else None) or self.block
            rows = shards * _ceil(n // shards, bn) if n % shards == 0 else _ceil(n, bn)
            parts.append(("weight_scale_inv", e * rows * _ceil(k, bk) * self.scale_bytes))
        elif self.strategy == "channel":
            parts.append(("weight_scale", e * n * 4))
        else:  # one fp32 per merged shard (per expert for MoE)
            parts.append(("weight_scale", e * (shards if is_expert else 1) * 4))
        if self.static_input:
            parts.append(("input_scale", 4 * (e if is_expert else 1)))
        return parts

    def _moe_refined_block(self, t: WeightTensor, n: int, k: int) -> tuple[int, int] | None:
        """The finer scale grid vLLM puts a block-FP8 expert pair on when the per-rank expert
        intermediate size is not a multiple of the checkpoint block: ``[r, r]`` with ``r =
        gcd(block_n, block_k, I_local, hidden)`` if ``r >= 32`` (the default ``auto`` MoE
        backend; vllm/model_executor/layers/fused_moe/oracle/fp8.py::
        refine_fp8_moe_block_shape / resolve_fp8_moe_weight_block_shape, used by
        quantization/fp8.py::Fp8MoEMethod.create_weights for the scale shapes, 0.33.0).
        ``block_k`` only counts when the experts are split (full size known and larger)."""
        leaf = t.name.rsplit(".", 1)[-1]
        if leaf.startswith("w13"):
            local, hidden, full = n // 2, k, (t.out_features_full // 2 if t.out_features_full else None)
        elif leaf.startswith("w2"):
            local, hidden, full = k, n, t.in_features_full
        else:
            return None
        bn, bk = self.block
        split = full is not None and full != local
        if local % bn == 0 and (not split or local % bk == 0):
            return None
        r = math.gcd(bn, bk, local, hidden)
        return (r, r) if r >= 32 else None


@frozen
class WeightOnlyIntScheme(QuantScheme):
    """Integer weights with 16-bit group scales (AWQ, GPTQ, compressed-tensors WNA16)."""

    bits: int = 4
    group_size: int = 128
    zero_point: bool = False
    act_order: bool = False
    marlin: bool = True
    #: the non-Marlin GPTQ kernels keep packed zeros and ``g_idx`` even when symmetric
    gptq_legacy: bool = False
    #: SM 9.0 symmetric GPTQ linears whose shape Machete takes (see :meth:`_machete_parts`)
    machete: bool = False
    #: compressed-tensors WNA16: each linear also holds an int64[2] ``weight_shape`` parameter
    #: (compressed_tensors_wNa16.py::CompressedTensorsWNA16.create_weights registers it; neither
    #: its process_weights_after_loading nor the Machete/Marlin kernels' drop it, 0.33.0); fused
    #: experts hold ``[E, 2]`` of the default (model) dtype per w13 / w2 (CompressedTensorsWNA16MoEMethod)
    weight_shape: bool = False

    def _machete_parts(self, t: WeightTensor, e: int, width: int) -> list[tuple[str, int]] | None:
        """A linear (not fused-MoE) layer on SM 9.0 that vLLM's kernel chooser gives to Machete
        (vllm/model_executor/kernels/linear/__init__.py::_POSSIBLE_KERNELS: Machete before
        Marlin; mixed_precision/machete.py::MacheteLinearKernel.can_implement: symmetric
        uint4b8/uint8b128, group -1/64/128, per-rank K a multiple of 64 and N of 128,
        quantization/utils/machete_utils.py).  AutoGPTQLinearMethod.create_weights
        (quantization/auto_gptq.py, 0.33.0) registers ``qzeros`` ``[K/g, N/pack]`` int32 on
        every layer; Machete's process_weights_after_loading repacks qweight in place and,
        with zero_points False, leaves qzeros as they are (Marlin would swap them for an empty
        tensor): qweight ``K·N·bits/8``, scales ``[K/g, N]`` 16-bit, qzeros, no padding.
        With zero points (AWQ: quantization/auto_awq.py::AutoAWQMarlinLinearMethod, uint4/uint8)
        Machete's transform_w_zp unpacks them and pre-multiplies by the scales: ``[K/g, N]`` in the
        scales' 16-bit dtype, not the packed int32 ``[K/g, N/pack]``."""
        if not self.machete or t.kind == "expert" or ".experts." in t.name:
            return None
        n, k = t.rows, t.cols
        g = self.group_size if self.group_size and self.group_size > 0 else -1
        if self.bits not in (4, 8) or g not in (-1, 64, 128) or k % 64 or n % 128:
            return None
        groups = 1 if g == -1 else _ceil(k, g)
        zeros = e * groups * n * width if self.zero_point else e * groups * (n * self.bits // 32) * 4
        return [("qweight", e * k * n * self.bits // 8), ("scales", e * groups * n * width), ("qzeros", zeros)]

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        machete = self._machete_parts(t, experts, width)
        if machete is not None:
            return machete
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
        if self.weight_shape and t.kind != "expert" and ".experts." not in t.name:
            parts.append(("weight_shape", 2 * 8))
        elif self.weight_shape:  # fused MoE: ``w13/w2_weight_shape`` [E, 2] in the model dtype, kept after
            parts.append(("weight_shape", e * 2 * width))  # loading (compressed_tensors_moe_wna16.py::create_weights)
        return parts


@frozen
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


@frozen
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


def mxfp4_moe_backend(sm_major: int | None, vllm_version: tuple[int, ...] | None = None) -> str:
    """The MXFP4 MoE backend vLLM picks by default (no ``VLLM_MXFP4_USE_MARLIN`` /
    ``VLLM_USE_FLASHINFER_MOE_MXFP4_*`` overrides, FlashInfer installed), for a CUDA GPU:

    * SM 10.x (datacenter Blackwell): FlashInfer, "flashinfer" (``SM100_FI_MXFP4_BF16`` before
      0.19.0, ``FLASHINFER_TRTLLM_MXFP4_BF16`` from it);
    * SM 9.0 (Hopper): "triton" (OpenAI's triton_kernels) from 0.12.0, the first wheel that
      bundles ``vllm/third_party/triton_kernels`` (0.10.1.1 and 0.11.0 do not, so
      ``has_triton_kernels()`` is false there and Hopper runs "marlin", as corpus log 013 shows);
    * everything else (Ampere, Ada, SM 12.x consumer Blackwell): "marlin" (the Triton kernels
      need (9, 0) <= capability < (11, 0) through 0.31.0; 0.32.0+ accept SM 12.x but order
      Marlin first there).

    Mirrors vllm/model_executor/layers/quantization/mxfp4.py::get_mxfp4_backend (0.11.0 –
    0.18.0) and vllm/model_executor/layers/fused_moe/oracle/mxfp4.py::select_mxfp4_moe_backend
    with _get_priority_backends_for_gpt_oss (0.19.0 – 0.33.0).
    """
    version = tuple(vllm_version) if vllm_version is not None else (0, 33, 0)
    if sm_major == 10:
        return "flashinfer"
    if sm_major == 9 and version >= (0, 12):
        return "triton"
    return "marlin"


def mxfp4_padding(backend: str, vllm_version: tuple[int, ...] | None = None) -> tuple[int, int]:
    """``(intermediate-per-partition multiple, hidden multiple)`` the backend pads the expert
    weights to (1 = no padding):

    * "marlin": 128, 256 (every release);
    * "triton": 64, none;
    * "flashinfer" (TRT-LLM MXFP4 x BF16): 256, 256 through 0.26.0; 128, 256 from 0.27.0;
    * "flashinfer_cutlass" (``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8_CUTLASS`` / SM90 BF16): 128, 128.

    Mirrors Mxfp4MoEMethod.create_weights (vllm/model_executor/layers/quantization/mxfp4.py,
    0.11.0 – 0.18.0) and mxfp4_round_up_hidden_size_and_intermediate_size
    (vllm/model_executor/layers/fused_moe/oracle/mxfp4.py, 0.19.0 – 0.33.0), read from each wheel.
    """
    version = tuple(vllm_version) if vllm_version is not None else (0, 33, 0)
    if backend == "marlin":
        return 128, 256
    if backend == "flashinfer":
        return (128, 256) if version >= (0, 27) else (256, 256)
    if backend == "flashinfer_cutlass":
        return 128, 128
    return 64, 1


@frozen
class Mxfp4Scheme(QuantScheme):
    """MXFP4 experts (gpt-oss): everything but the routed experts stays 16-bit.

    ``backend`` (see :func:`mxfp4_moe_backend`) and the release (``vllm_version``) pick the
    padding of the expert intermediate size per partition and of the hidden size
    (:func:`mxfp4_padding`).  Mirrors Mxfp4MoEMethod.create_weights
    (vllm/model_executor/layers/quantization/mxfp4.py).
    """

    backend: str = "marlin"
    vllm_version: tuple[int, ...] | None = None

    def applies_to(self, tensor: WeightTensor) -> bool:
        return tensor.kind == "expert" or ".experts." in tensor.name

    def _pads(self) -> tuple[int, int]:
        return mxfp4_padding(self.backend, self.vllm_version)

    def describe(self) -> str:
        return super().describe() + f"; experts padded for the {self.backend} backend"

    def unit_parts(self, t: WeightTensor, experts: int, width: int) -> list[tuple[str, int]]:
        if self.backend == "triton":
            return self._triton_parts(t, experts)
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


    def _triton_parts(self, t: WeightTensor, experts: int) -> list[tuple[str, int]]:
        """The Triton (OpenAI triton_kernels) layout after loading, on Hopper.

        * intermediate per partition padded to 64, hidden unpadded (:func:`mxfp4_padding`);
        * expert biases cast to float32;
        * values swizzled into HopperMXValueLayout: ``[E, N, K/2]`` bytes with N padded to 16 and
          K/2 to 32 (the original is deleted);
        * scales swizzled into HopperMXScaleLayout (``num_warps`` 8): ``[E, N, K/32]`` with N
          padded to 256 and K/32 to 2 (from 0.26.0 first to 4: "pad K (num scale groups) to 0
          mod 4", utils/mxfp4_utils.py::_swizzle_mxfp4), held by the kernel's precision config;
          before 0.26.0 the unswizzled ``w13/w2_weight_scale`` Parameters also stay on the layer
          (0.26.0 deletes them; 0.21.0's oracle/mxfp4.py does not).

        Mirrors Mxfp4MoEMethod.process_weights_after_loading's TRITON branch
        (vllm/model_executor/layers/quantization/mxfp4.py, 0.15.0), convert_weight_to_mxfp4_moe_kernel_format
        (vllm/model_executor/layers/fused_moe/oracle/mxfp4.py, 0.26.0 – 0.33.0),
        utils/mxfp4_utils.py::_swizzle_mxfp4 and vllm/third_party/triton_kernels/tensor_details/
        layout_details/hopper_{value,scale}.py::swizzle_data.
        """
        pad_i, _ = self._pads()
        e = experts
        merged = _merged_shards(t.name) == 2
        if t.name.endswith("bias"):
            rows = 2 * _round_up(t.rows // 2, pad_i) if merged else t.rows
            return [("bias", e * rows * 4)]
        if merged:  # w13: [2·I, H]
            n, k = 2 * _round_up(t.rows // 2, pad_i), t.cols
        else:  # w2: [H, I]
            n, k = t.rows, _round_up(t.cols, pad_i)
        groups = _ceil(k, 32)
        version = tuple(self.vllm_version) if self.vllm_version is not None else (0, 33, 0)
        # from 0.26.0 _swizzle_mxfp4 first pads the scale groups to a multiple of 4 on SM90
        swizzled_groups = _round_up(groups, 4) if version >= (0, 26) else groups
        parts = [("weight", e * _round_up(n, 16) * _round_up(k // 2, 32)),
                 ("weight_scale", e * _round_up(n, 256) * _round_up(swizzled_groups, 2))]
        if version < (0, 26):
            parts.append(("weight_scale_unswizzled", e * n * groups))
        return parts


@frozen
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
