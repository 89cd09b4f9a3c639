"""Link a parsed startup log to a model config, and compute what the model says the log should show.

A log names its model the way the user passed it: a Hub id (``Qwen/Qwen2.5-7B-Instruct``), a bare
name (``Qwen2-7B-Instruct``) or a path on the serving machine (``/model-cache/models/Qwen/Qwen2.5-7B``).
:func:`link_model` tries, in order and never over the network unless ``allow_hub`` is set:

1. the reference itself (a local path that exists here, a bundled id or alias, the HF cache);
2. for a path that does not exist here: its last two components as ``org/name`` (bundled or cached);
3. for a bare name: the one bundled id whose name part equals it (case-insensitive).

:func:`model_figures` then computes, at the log's tensor-parallel size, KV-cache dtype and block size,
the KV bytes one token needs on one rank (the adapter's KV specs grouped by the pool law) and the
weights one rank holds (``weight_bytes_per_rank`` over the adapter's tensors).  Those feed
:func:`vmemplan.explain.explain`'s ``tokens_vs_available_bytes`` and ``weights_vs_model`` checks.

Pure apart from :func:`link_model`, which reads config files through
:func:`vmemplan.sources.load_model_source`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import VmemplanError

if TYPE_CHECKING:
    from vmemplan.model_config import ModelConfig
    from vmemplan.models.base import Adapter
    from vmemplan.sources import ModelSource

__all__ = ["ModelLink", "ModelFigures", "link_model", "model_figures", "model_dtype_name", "kv_dtype_bytes"]


@dataclass(frozen=True)
class ModelLink:
    """A model reference from a log (or ``--model``) resolved to a config.

    ``how`` says in words which config was used and why (shown next to every check that used it).
    """

    reference: str
    model_id: str
    how: str
    source: ModelSource
    config: ModelConfig
    adapter: Adapter

    @property
    def quantized(self) -> bool:
        return bool(self.config.quantization_config)


@dataclass(frozen=True)
class ModelFigures:
    """What the model's shapes say one rank holds: KV bytes per token (``None`` where no single
    per-token figure exists: sliding windows, recurrent state, several block sizes) and weights."""

    bytes_per_token: int | None
    weights_bytes: int
    block_bytes: int | None
    tensor_parallel_size: int
    kv_cache_dtype: str
    block_size: int
    model_dtype: str
    note: str


def _candidates(ref: str) -> list[tuple[str, str]]:
    """(reference to try, how it was derived) in the order :func:`link_model` tries them."""
    ref = ref.strip().strip("'\"")
    out: list[tuple[str, str]] = [(ref, "as written in the log")]
    path_like = ref.startswith(("/", "~", "./", "../")) or "\\" in ref or ref.count("/") >= 2
    if path_like:
        parts = [p for p in (PureWindowsPath(ref).parts if "\\" in ref else PurePosixPath(ref).parts)
                 if p not in ("/", "\\", "~", ".", "..", "")]
        if len(parts) >= 2:
            out.append((f"{parts[-2]}/{parts[-1]}", f"the last two components of the path {ref!r}"))
    return out


def _bundled_by_name(name: str, models_dir: Any) -> str | None:
    from vmemplan.sources import bundled_aliases, list_bundled_models

    ids = list(list_bundled_models(models_dir)) + list(bundled_aliases(models_dir))
    hits = sorted({i for i in ids if i.split("/")[-1].lower() == name.lower()})
    return hits[0] if len(hits) == 1 else None


def link_model(ref: str | None, *, allow_hub: bool = False, registry: Any = None,
               strict: bool = False) -> tuple[ModelLink | None, str]:
    """Resolve a log's model reference to a config; returns ``(link or None, note)``.

    ``note`` says which config was used, or why none could be.  With ``strict`` (the user passed
    ``--model``) a reference that cannot be resolved raises the loader's error instead.
    ``allow_hub=False`` keeps this offline: bundled registry, local paths and the HF cache only.
    """
    if not ref or not ref.strip():
        return None, "the log does not name its model (pass --model ID_OR_PATH for model checks)"
    from vmemplan.model_config import ModelConfig
    from vmemplan.models import adapter_for
    from vmemplan.sources import load_model_source

    if registry is None:
        from vmemplan.registry import load_registry

        registry = load_registry()
    models_dir = registry.models_dir
    tried: list[str] = []
    first_error: VmemplanError | None = None
    cands = _candidates(ref)
    name = ref.strip().strip("'\"")
    last = name.replace("\\", "/").rstrip("/").split("/")[-1]
    if last and (("/" not in name and "\\" not in name) or len(cands) > 1):
        found = _bundled_by_name(last, models_dir)
        if found is not None and found not in [c for c, _ in cands]:
            cands.append((found, f"the only bundled model named {last!r}"))
    for cand, derived in cands:
        tried.append(cand)
        try:
            source = load_model_source(cand, bundled_dir=models_dir, allow_hub=allow_hub)
            config = ModelConfig.from_dict(source.config)
            adapter = adapter_for(config)
        except VmemplanError as error:
            first_error = error  # the last one tried says the most
            continue
        where = {"bundled": "the bundled registry", "local": "a local file", "cache": "the Hugging Face cache",
                 "hub": "the Hugging Face Hub"}.get(str(source.source), str(source.source))
        how = f"config of {source.model_id} from {where}"
        if cand != name:
            how += f" ({derived})"
        return ModelLink(reference=ref, model_id=source.model_id, how=how, source=source, config=config,
                         adapter=adapter), how
    if strict and first_error is not None:
        raise first_error
    reason = first_error.message if first_error is not None else "not found"
    return None, (f"model {ref!r} could not be resolved offline (tried {', '.join(repr(t) for t in tried)}:"
                  f" {reason}); pass --model ID_OR_PATH" + ("" if allow_hub else " or --online"))


def model_dtype_name(log_dtype: str | None, config: ModelConfig) -> str:
    """The activation / weight dtype: the log's resolved dtype, else the config's (fp32 checkpoints
    are cast to bfloat16, as ``--dtype auto`` does on current GPUs)."""
    for text in (log_dtype, config.torch_dtype):
        if not text:
            continue
        name = str(text).lower().removeprefix("torch.")
        name = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(name, name)
        if name in ("bfloat16", "float16"):
            return name
        if name in ("float32",):
            return "bfloat16"
    return "bfloat16"


def kv_dtype_bytes(kv_cache_dtype: str | None, model_dtype: str) -> int:
    """Bytes per KV element: fp8 variants (and int8 per-token-head) take 1, ``auto`` the model dtype."""
    from vmemplan.core.units import dtype_bytes

    k = (kv_cache_dtype or "auto").lower()
    if k.startswith("fp8") or k.startswith("int8"):
        return 1
    if k in ("bfloat16", "float16", "half"):
        return 2
    if k == "nvfp4":
        return 1  # priced as a byte here; the adapter's specs give the exact page size
    return dtype_bytes(model_dtype)


def model_figures(link: ModelLink, *, tensor_parallel_size: int, kv_cache_dtype: str, block_size: int,
                  model_dtype: str, max_model_len: int, max_num_batched_tokens: int, max_num_seqs: int,
                  pool_context: Any, pipeline_parallel_size: int = 1) -> ModelFigures:
    """KV bytes per token and weights for one rank at the given settings.

    ``bytes_per_token`` is the pool law's figure for the grouped KV specs
    (vllm/v1/core/kv_cache_utils.py::get_kv_cache_config_from_groups, 0.33.0): page bytes of
    every group / block size.  ``weights_bytes`` sums the adapter's tensors at the model dtype
    (vllm/model_executor/models/*; "Model loading took" measures the same allocations).
    """
    from vmemplan.core.graph import GraphContext
    from vmemplan.laws.kv_pool import UngroupableSpecs, plan_pool, plan_pool_ungrouped
    from vmemplan.laws.weights import weight_bytes_per_rank

    ctx = GraphContext(tensor_parallel_size=tensor_parallel_size, pipeline_parallel_size=pipeline_parallel_size,
                       block_size=block_size, cache_dtype=kv_cache_dtype, model_dtype=model_dtype,
                       max_model_len=max_model_len, max_num_batched_tokens=max_num_batched_tokens,
                       max_num_seqs=max_num_seqs)
    weights = weight_bytes_per_rank(link.adapter.weight_tensors(ctx), model_dtype=model_dtype).total_bytes
    specs = link.adapter.kv_cache_specs(ctx)
    try:
        pool = plan_pool(specs, 1 << 40, pool_context)
    except UngroupableSpecs:
        pool = plan_pool_ungrouped(specs, 1 << 40, pool_context)
    note = (f"{link.model_id} at tp={tensor_parallel_size}, kv_cache_dtype={kv_cache_dtype}, block size {block_size},"
            f" {model_dtype}")
    return ModelFigures(bytes_per_token=pool.bytes_per_token, weights_bytes=weights,
                        block_bytes=pool.block_bytes or None, tensor_parallel_size=tensor_parallel_size,
                        kv_cache_dtype=kv_cache_dtype, block_size=block_size, model_dtype=model_dtype, note=note)
