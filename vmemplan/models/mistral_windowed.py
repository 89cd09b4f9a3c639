"""Mistral with a model-level sliding window (``MistralForCausalLM`` with ``sliding_window`` set).

Every layer is a window layer; checkpoints with ``sliding_window`` null (Mistral v0.3,
Mistral-Small) stay full attention, exactly as the dense Llama adapter sizes them.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.windowed import (
    _window,
)

__all__ = ["MistralWindowed"]


@register
class MistralWindowed(LlamaLike):
    """``MistralForCausalLM`` (vllm/model_executor/models/mistral.py, a LlamaForCausalLM).

    The weights are the Llama ones.  The window: ``EngineArgs.create_engine_config`` sets
    ``CacheConfig.sliding_window`` to the config's ``sliding_window`` when the config has
    no ``layer_types`` (or only window layers), and ``Attention.__init__`` gives that
    window to every layer without its own (vllm/engine/arg_utils.py,
    vllm/model_executor/layers/attention/attention.py, 0.33.0).  So Mistral-7B-v0.1
    (window 4096) caches every layer as a ``SlidingWindowSpec``; v0.3 / Mistral-Small
    (``sliding_window`` null) stay full attention.
    """

    architectures = ("MistralForCausalLM",)

    def sliding_window_for_layer(self, index: int) -> int | None:
        text = self.config.text
        layer_types = text.get("layer_types")
        window = _window(text)
        if isinstance(layer_types, list) and layer_types:
            if all(t == "sliding_attention" for t in layer_types):
                return window
            return window if index < len(layer_types) and layer_types[index] == "sliding_attention" else None
        return window

    def notes(self) -> tuple[str, ...]:
        w = _window(self.config.text)
        if w is None:
            return ()
        return (f"sliding window of {w} tokens on every layer (model-level sliding_window)",)
