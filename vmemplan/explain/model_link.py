"""Link a parsed startup log to a model config, and compute what the model says the log should show.

A log names its model the way the user passed it: a Hub id (``Qwen/Qwen2.5-7B-Instruct``), a bare
name (``Qwen2-7B-Instruct``) or a path on the serving machine (``/model-cache/models/Qwen/Qwen2.5-7B``).
:func:`link_model` tries, in order and never over the network unless ``allow_hub`` is set:

1. the reference itself (a local path that exists here, a bundled id or alias, the HF cache); a path
   that exists here is a path: when it cannot be read, its load error is the answer;
2. for a path that does not exist here: its last two components as ``org/name`` (bundled, an alias of
   a bundled id, or cached);
3. for a path or a bare name: the one bundled id (or alias) whose name part equals its last component
   (case-insensitive);
4. for a name from the log (not ``--model``): the bundled ``-Instruct`` / base sibling of any of these
   (an ``-Instruct`` model and its base share every layer shape; the note says which config was used,
   since the context length, and with it the rotary cache, may differ).

What the linked model says the log should show is computed by the plan's own pipeline steps
(:func:`vmemplan.explain.whatif.model_check_inputs`, :mod:`vmemplan.pipeline`), never here.

Pure apart from :func:`link_model`, which reads config files through
:func:`vmemplan.sources.load_model_source`.
"""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import VmemplanError
from vmemplan.core.frozen import frozen

if TYPE_CHECKING:
    from vmemplan.model_config import ModelConfig
    from vmemplan.models.base import Adapter
    from vmemplan.sources import ModelSource

__all__ = ["ModelLink", "link_model", "model_dtype_name", "kv_dtype_bytes"]


@frozen
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
    #: the config is a bundled -Instruct / base sibling's, not the model's own
    sibling: bool = False

    @property
    def quantized(self) -> bool:
        return bool(self.config.quantization_config)


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


_INSTRUCT = "-instruct"


def _sibling(model_id: str) -> str:
    """The ``-Instruct`` model's base, or the base model's ``-Instruct`` (same org)."""
    if model_id.lower().endswith(_INSTRUCT):
        return model_id[: -len(_INSTRUCT)]
    return model_id + "-Instruct"


def _bundled_ids(models_dir: Any) -> list[str]:
    from vmemplan.sources import bundled_aliases, list_bundled_models

    return list(list_bundled_models(models_dir)) + list(bundled_aliases(models_dir))


def _bundled_by_name(name: str, models_dir: Any) -> str | None:
    hits = sorted({i for i in _bundled_ids(models_dir) if i.split("/")[-1].lower() == name.lower()})
    return hits[0] if len(hits) == 1 else None


def _sibling_candidates(cands: list[tuple[str, str]], models_dir: Any) -> list[tuple[str, str]]:
    """Bundled ``-Instruct`` / base siblings of the references tried so far (never a guess that is not
    bundled: with the Hub on, the reference itself is what the Hub is asked for)."""
    bundled = {i.lower(): i for i in _bundled_ids(models_dir)}
    tried = {c.lower() for c, _ in cands}
    out: list[tuple[str, str]] = []
    for cand, _ in cands:
        if cand.startswith(("/", "~", ".")) or "\\" in cand:
            continue
        sib = _sibling(cand)
        found = bundled.get(sib.lower()) or _bundled_by_name(sib.split("/")[-1], models_dir)
        if found is not None and found.lower() not in tried:
            tried.add(found.lower())
            kind = "base model" if cand.lower().endswith(_INSTRUCT) else "-Instruct sibling"
            out.append((found, f"the bundled {kind} of {cand!r}, which is not bundled: same layer shapes,"
                               " but its max_position_embeddings may differ, and with it the rotary cache"
                               " vLLM counts with the weights"))
    return out


def _exists_locally(ref: str) -> bool:
    from pathlib import Path

    try:
        return Path(ref.strip().strip("'\"")).expanduser().exists()
    except (OSError, ValueError, RuntimeError):
        return False


def link_model(ref: str | None, *, allow_hub: bool = False, registry: Any = None,
               strict: bool = False, config_format: str = "auto") -> tuple[ModelLink | None, str]:
    """Resolve a log's model reference to a config; returns ``(link or None, note)``.

    ``note`` says which config was used, or why none could be.  With ``strict`` (the user passed
    ``--model``) a reference that cannot be resolved raises the loader's error instead.
    ``allow_hub=False`` keeps this offline: bundled registry, local paths and the HF cache only.
    ``config_format`` is the log's ``--config-format`` (a Mistral release is read from params.json
    unless ``hf``, as vLLM read it).
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
    if _exists_locally(name):
        cands = cands[:1]  # a path that exists here is a path: its own load error is the answer
    else:
        last = name.replace("\\", "/").rstrip("/").split("/")[-1]
        if last and (("/" not in name and "\\" not in name) or len(cands) > 1):
            found = _bundled_by_name(last, models_dir)
            if found is not None and found not in [c for c, _ in cands]:
                cands.append((found, f"the only bundled model named {last!r}"))
        if not strict:  # --model names exactly the model the user wants checked
            cands += _sibling_candidates(cands, models_dir)
    for cand, derived in cands:
        tried.append(cand)
        try:
            source = load_model_source(cand, bundled_dir=models_dir, allow_hub=allow_hub, config_format=config_format)
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
        sibling = derived.startswith("the bundled ") and " of " in derived and "which is not bundled" in derived
        return ModelLink(reference=ref, model_id=source.model_id, how=how, source=source, config=config,
                         adapter=adapter, sibling=cand != name and sibling), how
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
