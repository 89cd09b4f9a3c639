"""Which attention layers vLLM gives a sliding window, for models that read the window from the
text config (the Llama path: Llama, Phi-3, Mistral, Qwen2/Qwen3 and their MoE siblings,
Phi-3.5-MoE, Mixtral, ...).

vLLM 0.33.0 reads the window in three steps:

1. the text config's ``sliding_window`` as transformers leaves it: the Qwen2 / Qwen2-MoE /
   Qwen3 / Qwen3-MoE config classes keep it only when ``use_sliding_window`` is true and then
   derive ``layer_types`` with the window on layers ``i >= max_window_layers``
   (transformers/models/qwen2/configuration_qwen2.py::Qwen2Config.__init__, 4.57); a window of
   0 means none (vllm/config/model.py::ModelConfig.__post_init__), and
   ``--disable-sliding-window`` clears it (the same function sets
   ``hf_text_config.sliding_window = None``);
2. the model-level window: vllm/engine/arg_utils.py::EngineArgs.create_engine_config sets
   ``CacheConfig.sliding_window`` to ModelConfig.get_sliding_window() (the text config's
   ``sliding_window``) only when the config has no ``layer_types`` or only window layers;
3. per layer: the model passes ``per_layer_sliding_window`` for a ``sliding_attention`` entry
   of ``layer_types`` (vllm/model_executor/models/llama.py::LlamaAttention.__init__), and
   vllm/model_executor/layers/attention/attention.py::Attention.__init__ falls back to
   ``CacheConfig.sliding_window`` for every other layer.

So Phi-3-mini-128k (window 262,144) and Phi-3.5-MoE (131,072), whose configs have no
``layer_types``, cache every layer as a ``SlidingWindowSpec``; Qwen2.5 (``use_sliding_window``
false) stays full attention.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["config_sliding_window", "config_layer_types", "cache_config_sliding_window",
           "layer_sliding_window", "without_sliding_windows", "disabled_window_max_len"]


def config_sliding_window(text: Mapping[str, Any], *, disable_sliding_window: bool = False) -> int | None:
    """The text config's window after transformers and ModelConfig: None when absent, 0,
    switched off by ``use_sliding_window: false`` or by ``--disable-sliding-window``."""
    if disable_sliding_window:
        return None
    w = text.get("sliding_window")
    if isinstance(w, bool) or not isinstance(w, (int, float)) or int(w) <= 0:
        return None
    if "use_sliding_window" in text and not text.get("use_sliding_window"):
        return None
    return int(w)


def config_layer_types(text: Mapping[str, Any], num_layers: int) -> list[str] | None:
    """``layer_types`` as the config object holds it: the config's own list, else (configs with
    ``use_sliding_window``: the Qwen2 family) one derived from ``max_window_layers``, else None."""
    types = text.get("layer_types")
    if isinstance(types, list) and types:
        return [str(t) for t in types]
    if "use_sliding_window" in text:
        window = config_sliding_window(text)
        first = text.get("max_window_layers")
        first = int(first) if isinstance(first, int) and not isinstance(first, bool) else num_layers
        return ["sliding_attention" if window is not None and i >= first else "full_attention"
                for i in range(num_layers)]
    return None


def cache_config_sliding_window(text: Mapping[str, Any], num_layers: int, *,
                                disable_sliding_window: bool = False) -> int | None:
    """``CacheConfig.sliding_window``: the config's window when it has no ``layer_types`` or only
    window layers (EngineArgs.create_engine_config, 0.33.0)."""
    types = config_layer_types(text, num_layers)
    if types is None or all(t == "sliding_attention" for t in types):
        return config_sliding_window(text, disable_sliding_window=disable_sliding_window)
    return None


def layer_sliding_window(text: Mapping[str, Any], index: int, num_layers: int, *,
                         disable_sliding_window: bool = False) -> int | None:
    """Layer ``index``'s window: its own from a ``sliding_attention`` entry of ``layer_types``,
    else the model-level ``CacheConfig.sliding_window`` (Attention.__init__, 0.33.0)."""
    types = config_layer_types(text, num_layers)
    if types is not None and index < len(types) and types[index] == "sliding_attention":
        own = config_sliding_window(text, disable_sliding_window=disable_sliding_window)
        if own is not None:
            return own
    return cache_config_sliding_window(text, num_layers, disable_sliding_window=disable_sliding_window)


def without_sliding_windows(specs: Mapping[str, Any]) -> dict[str, Any]:
    """The specs under ``--disable-sliding-window``: ModelConfig.__post_init__ clears
    ``hf_text_config.sliding_window``, so every layer that took its window from the config
    (``SlidingWindowSpec``) caches full attention with the same heads and page
    (vllm/config/model.py::ModelConfig.__post_init__,
    vllm/model_executor/layers/attention/attention.py::Attention.get_kv_cache_spec, 0.33.0).
    Windows that are part of a layer's structure (DeepSeek-V4's ``SlidingWindowMLASpec``
    compressor rings) are not config windows and stay."""
    from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec

    out: dict[str, Any] = {}
    converted: dict[int, Any] = {}
    for name, spec in specs.items():
        if type(spec) is SlidingWindowSpec:
            full = converted.get(id(spec))
            if full is None:
                full = FullAttentionSpec(
                    block_size=spec.block_size, num_kv_heads=spec.num_kv_heads, head_size=spec.head_size,
                    cache_dtype=spec.cache_dtype, dtype_bytes=spec.dtype_bytes, head_size_v=spec.head_size_v,
                    page_size_padded=spec.page_size_padded, tokens_per_state=spec.tokens_per_state,
                    state_content_bytes=spec.state_content_bytes, num_head_slots=spec.num_head_slots,
                    dcp_sharded=spec.dcp_sharded, block_stride_alignment=spec.block_stride_alignment)
                converted[id(spec)] = full
            out[name] = full
        else:
            out[name] = spec
    return out


def disabled_window_max_len(text: Mapping[str, Any], derived_max_model_len: int) -> int:
    """The derived context length under ``--disable-sliding-window``: capped to the config's
    window when that is shorter (vllm/config/model.py::_get_and_verify_max_len, 0.33.0)."""
    window = config_sliding_window(text)
    return window if window is not None and window < derived_max_model_len else derived_max_model_len
