#!/usr/bin/env python
"""Emulation shim for the vllm-oracle: lets vLLM 0.33.0's ``process_weights_after_loading`` finish
on the meta device for compressed-tensors checkpoints (their Attention KV-cache method), for the
Attention KV-cache method of FP8 / ModelOpt / Quark checkpoints (``BaseKVCacheMethod``), and for
linears on the Machete kernel (AWQ, GPTQ, compressed-tensors WNA16 on SM 9.0).

    python bench/oracle/shims_pwal_meta.py <vllm-oracle>/oracle.py CONFIG --available-bytes N --tp T ...

``make_fixtures.py`` runs this instead of the oracle itself for the architectures listed in
its ``SHIMS`` table; the arguments are the oracle's, unchanged.

Why: without it the oracle's post-processing stops part-way and the fixture keeps the
construction-time tensors (``weights.stage`` "construction", a CAVEAT), which is not what a GPU
host holds:

* ``quantization/compressed_tensors/compressed_tensors.py::CompressedTensorsKVCacheMethod.
  process_weights_after_loading`` reads its k/v/q scale placeholders as Python floats with
  ``Tensor.item()`` (``_to_scalar``), which a meta tensor cannot do; the lines after it, which
  re-register ``_k/_v/_q_scale`` from the placeholders and delete the placeholders
  (``del layer.k_scale`` ... ``del layer.q_zero_point``), never run.
* ``quantization/kv_cache.py::BaseKVCacheMethod.process_weights_after_loading`` (the method of
  ``fp8.py::Fp8KVCacheMethod``, ``modelopt.py::ModelOptKVCacheMethod`` ...) tests its scale
  placeholders on the host: ``if layer.q_scale > 0.0`` / ``layer.prob_scale > 0.0`` (and, for a
  quantized KV cache, ``layer.k_scale > 0.0 and layer.v_scale > 0.0`` / ``< 0.0``), i.e.
  ``bool()`` of a meta tensor, which raises; the ``del layer.k_scale`` ... ``del
  layer.prob_scale`` at its end never run and the four construction-time placeholders stay.
* ``kernels/linear/mixed_precision/machete.py::MacheteLinearKernel.process_weights_after_loading``
  calls ``ops.machete_prepack_B``, a compiled op the oracle answers as a no-op returning None, so
  ``x.data = None`` raises and every later layer stays unprocessed (Machete's zero points are
  never turned into their pre-scaled 16-bit form).

What the shim does, and nothing else:

* while ``CompressedTensorsKVCacheMethod.process_weights_after_loading`` runs, ``Tensor.item()``
  of a meta tensor answers 1.0 (the value ``create_weights`` gives the placeholders,
  ``torch.ones``); the float only goes to ``layer._k/_v/_q_scale_float`` and ``fill_`` of the
  host copies, no shape depends on it;
* while ``BaseKVCacheMethod.process_weights_after_loading`` runs, ``<``, ``>``, ``<=`` and ``>=``
  of a one-element meta tensor against a number answer as the placeholder's initial value
  would: ``KVCacheScaleParameter.__new__`` makes it ``torch.tensor(-1.0)`` (kv_cache.py, "an
  invalid sentinel"; the meta-device oracle loads no checkpoint, so nothing overwrites it), and
  ``Tensor.item()`` of a meta tensor answers -1.0 for the same reason.  vLLM then takes its
  "no scales loaded" branches (q/prob scale 1.0, and k/v 1.0 for a quantized cache), ``copy_`` into
  the ``_q/_k/_v/_prob_scale`` buffers (meta, unchanged shape) and deletes the four
  placeholders, as on a GPU with a checkpoint that has no KV scales; the floats only go to the
  host attributes ``_q/_k/_v_scale_float``, no shape depends on them;
* ``vllm._custom_ops.machete_prepack_B`` answers as vLLM's own fake kernel for it
  (``_custom_ops.py::machete_prepack_B_fake``: ``torch.empty_like(b_q_weight,
  memory_format=torch.contiguous_format)``, same shape and dtype as the real op's result).

Neither allocates anything a GPU would not: the tensors the post-processing keeps are built by
vLLM's own code on the meta device.  The patches are recorded in the fixture's ``assumptions``.
"""

from __future__ import annotations

import sys

from _shim import shim_main  # bench/oracle/_shim.py

NOTE = ("shim bench/oracle/shims_pwal_meta.py: during compressed_tensors.py::CompressedTensorsKVCacheMethod."
        "process_weights_after_loading Tensor.item() of a meta tensor answers 1.0 (the placeholders' "
        "torch.ones value; only host floats depend on it); during kv_cache.py::BaseKVCacheMethod."
        "process_weights_after_loading a comparison (and .item()) of a one-element meta tensor answers as its "
        "placeholder's initial -1.0 (KVCacheScaleParameter; no checkpoint is loaded on meta), so vLLM's own "
        "branches delete q/k/v/prob_scale; and vllm._custom_ops.machete_prepack_B answers as "
        "vLLM's own fake kernel (machete_prepack_B_fake: empty_like, same shape and dtype), so vLLM's "
        "process_weights_after_loading runs to the end on meta")


def install(oracle) -> None:
    import functools

    import torch
    import vllm._custom_ops as ops
    from vllm.model_executor.layers.quantization.compressed_tensors import compressed_tensors as ct

    method = ct.CompressedTensorsKVCacheMethod
    original = method.process_weights_after_loading

    @functools.wraps(original)
    def process_weights_after_loading(self, layer):
        item = torch.Tensor.item

        def meta_item(t):
            return 1.0 if t.device.type == "meta" else item(t)

        torch.Tensor.item = meta_item
        try:
            return original(self, layer)
        finally:
            torch.Tensor.item = item

    method.process_weights_after_loading = process_weights_after_loading
    _patch_base_kv_cache_method(torch)

    def machete_prepack_B(b_q_weight, a_type, b_type, group_scales_type):  # noqa: N802 (vLLM's name)
        return torch.empty_like(b_q_weight, memory_format=torch.contiguous_format)

    ops.machete_prepack_B = machete_prepack_B
    oracle.ASSUMPTIONS.append(NOTE)


# the value KVCacheScaleParameter.__new__ gives each placeholder (quantization/kv_cache.py, 0.33.0)
PLACEHOLDER = -1.0
COMPARISONS = ("__lt__", "__gt__", "__le__", "__ge__")


def _patch_base_kv_cache_method(torch) -> None:
    """Host-side scalar reads of meta placeholders inside BaseKVCacheMethod.process_weights_after_loading
    answer as the placeholder's initial value; everything else is vLLM's own code."""
    import functools
    import operator

    from vllm.model_executor.layers.quantization.kv_cache import BaseKVCacheMethod

    original = BaseKVCacheMethod.process_weights_after_loading

    def is_meta_scalar(t) -> bool:
        return isinstance(t, torch.Tensor) and t.device.type == "meta" and t.numel() == 1

    def compare(name, real):
        op = getattr(operator, name.strip("_"))

        def wrapped(a, b):
            if is_meta_scalar(a) and isinstance(b, (int, float)):
                return op(PLACEHOLDER, b)
            if is_meta_scalar(a) and is_meta_scalar(b):
                return op(PLACEHOLDER, PLACEHOLDER)
            return real(a, b)

        return wrapped

    @functools.wraps(original)
    def process_weights_after_loading(self, layer):
        saved = {name: getattr(torch.Tensor, name) for name in COMPARISONS + ("item",)}
        item = saved["item"]
        for name in COMPARISONS:
            setattr(torch.Tensor, name, compare(name, saved[name]))
        torch.Tensor.item = lambda t: PLACEHOLDER if t.device.type == "meta" else item(t)
        try:
            return original(self, layer)
        finally:
            for name, fn in saved.items():
                setattr(torch.Tensor, name, fn)

    BaseKVCacheMethod.process_weights_after_loading = process_weights_after_loading


def main() -> int:
    return shim_main(install)


if __name__ == "__main__":
    sys.exit(main())
