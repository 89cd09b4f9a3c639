"""Parsers of the structured engine flags, as vLLM 0.33.0 reads them.

Each turns the user's text (or mapping) into the plain value the laws take, raising
:class:`~vmemplan.core.errors.UsageError` where vLLM would refuse the flag.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.laws.multimodal import DEFAULT_MM_LIMIT, Limits
from vmemplan.laws.speculative import METHODS, MTP_ALIASES, SpeculativeConfig
from vmemplan.sources._io import loads_json

__all__ = ["loads_flag_json", "parse_limit_mm_per_prompt", "parse_speculative_config"]

#: the keys vLLM 0.33.0's SpeculativeConfig accepts (vllm/config/speculative.py)
_KNOWN_KEYS = frozenset({
    "method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "prompt_lookup_min",
    "prompt_lookup_max", "parallel_drafting", "quantization", "max_model_len", "revision",
    "enforce_eager", "kv_cache_dtype", "disable_padded_drafter_batch", "attention_backend",
    "code_revision", "moe_backend", "tensor_parallel_size", "draft_lm_head_quantization",
    "use_local_argmax_reduction", "use_heterogeneous_vocab", "rejection_sample_method",
    "draft_sample_method", "disable_eagle_block_drop", "disable_lookahead_block_hashes",
    "index_share_for_mtp_iteration", "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "speculative_token_tree",
})


def loads_flag_json(flag: str, text: str, example: str) -> Any:
    """``text``, the value of a JSON flag, parsed; or the :class:`UsageError` vmemplan gives for
    text that is not JSON (the decoder's message) or that it refuses (4,300+ digits,
    20,000-deep nesting), hinting ``e.g. FLAG EXAMPLE``."""
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not valid JSON: {exc.msg}", hint=f"e.g. {flag} {example}") from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{flag} is not valid JSON: {exc}", hint=f"e.g. {flag} {example}") from None


def parse_speculative_config(value: str | Mapping[str, Any] | None, *,
                             target_num_nextn_layers: int | None = None) -> SpeculativeConfig | None:
    """Parse ``--speculative-config`` (a JSON object) as vLLM 0.33.0 does.

    ``target_num_nextn_layers`` (the target's ``num_nextn_predict_layers``) is the default
    ``num_speculative_tokens`` for MTP.  Raises :class:`UsageError` where vLLM raises.
    Mirrors vllm/config/speculative.py::SpeculativeConfig.__post_init__ (0.33.0).
    """
    if value is None:
        return None
    data: Any = value
    if isinstance(value, str):
        if not value.strip():
            return None
        data = loads_flag_json("--speculative-config", value,
                               '\'{"method": "eagle3", "model": "...", "num_speculative_tokens": 3}\'')
    if not isinstance(data, Mapping):
        raise UsageError("--speculative-config must be a JSON object")
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise UsageError(f"--speculative-config: unknown key(s) {', '.join(unknown)}")
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise UsageError("--speculative-config: model must be a string")
    method = data.get("method")
    if method is not None and not isinstance(method, str):
        raise UsageError("--speculative-config: method must be a string")
    if method is None:
        if model in ("ngram", "[ngram]"):
            method = "ngram"
        elif model is not None and "eagle-" in model.lower():
            method = "eagle"
        elif model is not None and "eagle3" in model.lower():
            method = "eagle3"
        else:
            method = "draft_model"
    method = method.lower()
    if method == "[ngram]":
        method = "ngram"
    if method in MTP_ALIASES:
        method = "mtp"
    if method not in METHODS:
        raise UsageError(f"--speculative-config: unknown method {method!r}",
                         hint="one of " + ", ".join(sorted(METHODS)))
    k = data.get("num_speculative_tokens")
    if k is None and method == "mtp" and target_num_nextn_layers:
        k = target_num_nextn_layers
    if k is None:
        raise UsageError("--speculative-config needs num_speculative_tokens"
                         + (" (the target has no MTP layers to default it from)" if method == "mtp" else ""))
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise UsageError(f"--speculative-config: num_speculative_tokens must be a positive whole number, got {k!r}")
    if model is None and method in ("eagle", "eagle3", "draft_model", "dflash"):
        raise UsageError(f"--speculative-config: method {method} needs a model (the drafter)")
    if method == "mtp" and target_num_nextn_layers and k > target_num_nextn_layers and k % target_num_nextn_layers:
        raise UsageError(f"--speculative-config: num_speculative_tokens {k} must be divisible by the "
                         f"{target_num_nextn_layers} MTP layers")
    lo, hi = data.get("prompt_lookup_min"), data.get("prompt_lookup_max")
    if method in ("ngram", "ngram_gpu"):
        if lo is None and hi is None:
            lo = hi = 5
        elif lo is None:
            lo = hi
        elif hi is None:
            hi = lo
        if lo > hi:
            raise UsageError(f"--speculative-config: prompt_lookup_min {lo} must be <= prompt_lookup_max {hi}")
    dtp = data.get("draft_tensor_parallel_size")
    if dtp is not None and (isinstance(dtp, bool) or not isinstance(dtp, int) or dtp < 1):
        raise UsageError("--speculative-config: draft_tensor_parallel_size must be a positive whole number")
    return SpeculativeConfig(method=method, num_speculative_tokens=int(k), model=model,
                             draft_tensor_parallel_size=dtp, parallel_drafting=bool(data.get("parallel_drafting", False)),
                             prompt_lookup_min=lo, prompt_lookup_max=hi)


#: The modalities vLLM 0.33.0's models take (their get_supported_mm_limits keys: image, video
#: and audio everywhere, vision_chunk in Kimi-K2.5).  vLLM keeps a limit for any other name and
#: then never reads it, so a misspelt modality silently changes nothing: vmemplan refuses it.
MODALITIES = ("image", "video", "audio", "vision_chunk")


def parse_limit_mm_per_prompt(value: str | Mapping[str, object] | None) -> Limits:
    """Parse ``--limit-mm-per-prompt`` as vLLM does: a JSON object of modality → count, where a
    value is an integer or an object with a ``count`` (and dummy-size options that do not change
    the count).  ``image=2,video=0`` is accepted too.  Returns sorted ``(modality, count)`` pairs.

    Mirrors vllm/config/multimodal.py::MultiModalConfig._validate_limit_per_prompt (0.33.0).
    """
    if value is None:
        return ()
    data: object = value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ()
        if text.startswith("{"):
            data = loads_flag_json("--limit-mm-per-prompt", text, '\'{"image": 2, "video": 0}\'')
        else:
            pairs: dict[str, object] = {}
            for part in text.split(","):
                key, sep, num = part.partition("=")
                if not sep or not key.strip():
                    raise UsageError(f"--limit-mm-per-prompt: cannot read {part!r}",
                                     hint='use JSON, e.g. \'{"image": 2, "video": 0}\'')
                try:
                    pairs[key.strip()] = int(num)
                except ValueError:
                    raise UsageError(f"--limit-mm-per-prompt: {num!r} is not a whole number") from None
            data = pairs
    if not isinstance(data, Mapping):
        raise UsageError("--limit-mm-per-prompt must be a JSON object of modality: count")
    out: dict[str, int] = {}
    for modality, raw in data.items():
        if modality not in MODALITIES:
            raise UsageError(f"--limit-mm-per-prompt: unknown modality {str(modality)[:60]!r}; "
                             f"the modalities are {', '.join(MODALITIES)}",
                             hint="vLLM never reads a limit for another name, so it would change nothing: "
                                  "fix the name, e.g. '{\"image\": 2, \"video\": 0}'")
        count = raw.get("count", DEFAULT_MM_LIMIT) if isinstance(raw, Mapping) else raw
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise UsageError(f"--limit-mm-per-prompt: the count for {modality!r} must be a whole number >= 0, "
                             f"got {count!r}")
        out[str(modality)] = count
    return tuple(sorted(out.items()))
