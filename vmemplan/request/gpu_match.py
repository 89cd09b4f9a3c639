"""Find a registry GPU from any name people or tools print for it.

``nvidia-smi`` prints "NVIDIA H100 80GB HBM3", ``torch.cuda.get_device_name()`` prints
"NVIDIA A100-SXM4-80GB", people write "a100-80gb", "RTX 4090" or "h100".  Names are compared
case- and punctuation-insensitively, with the vendor words (NVIDIA, GeForce, Tesla, AMD,
Instinct) dropped and "80GB" read as "80G".  One exact match wins; otherwise a name that
starts only one GPU's names is that GPU; a name that fits several (``a100``: four A100s of two
sizes) is an error listing them, never a guess.  Pure: the registry's GPUs are the only input.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from vmemplan.core.errors import UnknownGpu

__all__ = ["normalise_gpu_name", "find_gpu", "AmbiguousGpu"]

_VENDOR_WORDS = ("nvidia", "geforce", "tesla", "amd", "instinct", "radeon")


class AmbiguousGpu(UnknownGpu):
    """A ``--gpu`` name that fits several registry GPUs (exit 4, like an unknown one)."""


def normalise_gpu_name(name: str) -> str:
    """Lower case, vendor words dropped, ``80GB``/``80 GiB`` read as ``80g``, punctuation and
    spaces dropped: "NVIDIA A100-SXM4-80GB" -> "a100sxm480g"."""
    text = name.lower()
    text = re.sub(r"(\d)\s*gi?b\b", r"\1g", text)
    words = [w for w in re.split(r"[^a-z0-9.]+", text) if w and w not in _VENDOR_WORDS]
    return re.sub(r"[^a-z0-9]", "", "".join(words))


def _names(gpu: Any) -> Iterable[str]:
    yield gpu.id
    yield from gpu.aliases
    yield gpu.name
    yield from getattr(gpu, "name_variants", ()) or ()


def find_gpu(gpus: Iterable[Any], key: str, *, ambiguous: dict[str, list[str]] | None = None) -> Any:
    """The registry GPU ``key`` names; raises UnknownGpu (or AmbiguousGpu, listing the
    candidates) otherwise.  ``ambiguous`` maps family names (``a100``) to the GPUs they may mean."""
    gpus = list(gpus)
    want = normalise_gpu_name(key)
    if not want:
        raise UnknownGpu(f"unknown GPU {key!r}", hint="run `vmemplan gpus` for the known GPUs")
    by_id = {g.id: g for g in gpus}
    for family, ids in (ambiguous or {}).items():
        if normalise_gpu_name(family) == want:
            raise AmbiguousGpu(
                f"GPU {key!r} is ambiguous: it may be {', '.join(ids)}",
                hint=f"name one of them, e.g. --gpu {ids[0]} (memory differs between them)")
    exact = [g for g in gpus if any(normalise_gpu_name(n) == want for n in _names(g))]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        ids = [g.id for g in exact]
        raise AmbiguousGpu(f"GPU {key!r} is ambiguous: it may be {', '.join(ids)}",
                           hint=f"name one of them, e.g. --gpu {ids[0]}")
    starts = [g for g in gpus if any(normalise_gpu_name(n).startswith(want) for n in _names(g))]
    if len(starts) == 1:
        return starts[0]
    if len(starts) > 1:
        ids = sorted({g.id for g in starts}, key=lambda i: list(by_id).index(i))
        raise AmbiguousGpu(f"GPU {key!r} is ambiguous: it may be {', '.join(ids[:8])}"
                           + (", ..." if len(ids) > 8 else ""),
                           hint=f"name one of them, e.g. --gpu {ids[0]}")
    keys = {n.lower(): g.id for g in gpus for n in (g.id, *g.aliases)}
    close = difflib.get_close_matches(key.lower(), list(keys), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise UnknownGpu(
        f"unknown GPU {key!r}",
        hint=f"{hint}run `vmemplan gpus` for the {len(gpus)} known GPUs, or give its memory with "
             "--gpu-total-memory (e.g. 24G)")


def select_gpu(registry: Any, key: str | None, total_memory: int | str | None) -> tuple[Any, tuple[str, ...]]:
    """The GPU a request plans for, and the warnings that go with it.

    ``--gpu`` alone: the registry GPU.  ``--gpu-total-memory`` over a registry GPU: that GPU
    with the given CUDA total (a WSL or MIG device reports less).  ``--gpu-total-memory`` alone:
    a GPU known only by its memory, with Hopper's kernels and dtypes assumed (said in a warning).
    """
    from vmemplan.core.errors import UsageError
    from vmemplan.request.refusals import parse_size_flag

    total = parse_size_flag("--gpu-total-memory", total_memory)
    if total is not None and total <= 0:
        raise UsageError(f"--gpu-total-memory {total_memory!r} must be positive", hint="e.g. --gpu-total-memory 24G")
    if key is None and total is None:
        raise UsageError("no GPU given", hint="--gpu NAME (see `vmemplan gpus`), or --gpu-total-memory SIZE")
    if key is not None:
        gpu = registry.gpu(key)
        if total is None:
            if " MIG " in gpu.name and gpu.total_memory_evidence == "estimate":
                return gpu, (f"{gpu.id}: the MIG slice's memory is nominal (its fraction of the full GPU, NVIDIA's MIG "
                             "user guide); the CUDA-reported total is somewhat smaller: give it with "
                             "--gpu-total-memory",)
            return gpu, ()
        from vmemplan.core.units import format_gib

        return replace(gpu, total_memory_bytes=total, total_memory_evidence="given"), (
            f"--gpu-total-memory: {format_gib(total)} GiB instead of the registry's "
            f"{format_gib(gpu.total_memory_bytes)} GiB for {gpu.id}",)
    template = registry.gpu("h100")
    from vmemplan.core.units import format_gib

    gpu = replace(template, **{
        "id": "custom", "aliases": (), "name_variants": (), "name": f"GPU with {format_gib(total)} GiB",
        "marketing_memory_gb": round(total / 1e9, 1), "total_memory_bytes": total, "total_memory_mib": None,
        "total_memory_gib": None, "total_memory_evidence": "given", "total_memory_observed_mib": (),
        "nvml_total_mib": None, "nvml_total_bytes": None, "nvml_total_gib": None, "nvml_total_evidence": None,
        "memory_bandwidth_tbps": None, "bf16_tflops": None, "fp16_tflops": None, "fp8_tflops": None,
        "fp4_tflops": None, "interconnect": None, "vllm_batch_default_tier": None,
        "notes": "given by --gpu-total-memory", "sm_count": None,
    })
    return gpu, (f"--gpu-total-memory without --gpu: a GPU of {format_gib(total)} GiB with Hopper (sm_90) kernels "
                 "and dtypes assumed; give --gpu for its architecture",)
