"""Which configs vmemplan may size as a generic decoder (the request layer).

vLLM's own list of the architectures it serves, by category (registry/vllm_architectures.yaml,
generated from the wheel's vllm/model_executor/models/registry.py), decides what an architecture
without a vmemplan family is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vmemplan.core.errors import UnsupportedArchitecture

__all__ = ["refuse_non_decoder", "refuse_removed"]


#: What each vLLM registry category means for a config vmemplan has no adapter for.
_CATEGORY_WORDS = {
    "embedding": "an embedding model vLLM serves with --runner pooling",
    "late_interaction": "a late-interaction (ColBERT-style) model vLLM serves with --runner pooling",
    "reward": "a reward model vLLM serves with --runner pooling",
    "token_classification": "a token-classification model vLLM serves with --runner pooling",
    "sequence_classification": "a sequence-classification (scoring) model vLLM serves with --runner pooling",
    "multimodal": "a multimodal model (vision or audio encoder in front of the decoder)",
    "speculative_decoding": "a speculative-decoding drafter, not a model vLLM serves on its own",
}
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def refuse_non_decoder(config: Any, vllm_archs: Mapping[str, Sequence[str]]) -> None:
    """Refuse to size, as a generic decoder, a config that is not one (exit 4).

    The generic fallback is for a causal decoder vmemplan has no family for: one vLLM lists as
    text generation, or one vLLM does not list but whose architecture names a causal LM (vLLM's
    Transformers backend serves those).  An encoder (BERT-style), a pooling, multimodal or
    encoder-decoder architecture would be planned with a KV cache and a head it does not have.
    """
    archs = list(config.architectures)
    text = config.text if isinstance(getattr(config, "text", None), Mapping) else {}
    for arch in archs:
        cats = tuple(vllm_archs.get(arch, ()))
        if "text_generation" in cats:
            return
        if not cats and arch.endswith(_CAUSAL_SUFFIXES) and not text.get("is_encoder_decoder"):
            return
    if not archs and not text.get("is_encoder_decoder"):
        return  # no architectures key: the warning says it was sized as a generic decoder
    name = archs[0] if archs else str(config.model_type or "?")
    cats = tuple(vllm_archs.get(name, ()))
    what = next((_CATEGORY_WORDS[c] for c in cats if c in _CATEGORY_WORDS), None)
    if what is None:
        what = ("an encoder-decoder model" if text.get("is_encoder_decoder") else
                "not a causal decoder (its architecture names no *ForCausalLM / *LMHeadModel class)")
        if vllm_archs and not cats:
            what += ("; vLLM's model registry does not list it either (only its Transformers backend could "
                     "try it, else vLLM stops with \"Model architectures [...] are not supported for now\")")
    raise UnsupportedArchitecture(
        f"{name} is {what}: vmemplan has no model graph for it and will not size it as a decoder "
        "(its KV cache, head and weights would be wrong)",
        hint="plan a causal decoder (vmemplan models lists the families), or pass a config whose "
             "architectures name a *ForCausalLM class vmemplan or vLLM knows",
    )


def refuse_removed(config: Any, removed: Mapping[str, str], release: tuple[int, ...] | None) -> None:
    """vLLM's own refusal of an architecture its registry no longer serves (exit 4), for a planned
    release after the last one that served it.  Mirrors vllm/model_executor/models/registry.py::
    _ModelRegistry._raise_for_unsupported and ``_PREVIOUSLY_SUPPORTED_MODELS`` (0.33.0)."""
    from vmemplan.core.version import version_tuple_or_none

    for arch in config.architectures:
        last = removed.get(arch)
        last_t = version_tuple_or_none(last) if last else None
        if last_t is not None and (release is None or tuple(release) > tuple(last_t)):
            raise UnsupportedArchitecture(
                f"Model architecture {arch} was supported in vLLM until v{last}, and is not supported anymore "
                "(vLLM's own refusal)",
                hint=f"vLLM {last} or older serves it (--vllm-version {last} plans for that release, if vmemplan "
                     "has a family for it)")
