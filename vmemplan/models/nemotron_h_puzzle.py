"""Nemotron-H "Puzzle" (NemotronHPuzzleForCausalLM): Nemotron-H whose layers each carry their own
block config.

vLLM 0.33.0 maps the architecture to vllm/model_executor/models/nemotron_h.py::
NemotronHForCausalLM (registry.py).  Its MLP, MoE and attention decoder layers
(NemotronHMLPDecoderLayer, NemotronHMoEDecoderLayer, NemotronHAttentionDecoderLayer) build their
mixer from ``config.get_nemotron_h_config_for_layer(layer_idx)`` when the config has it, which
the checkpoint's NemotronHPuzzleConfig (model_type "nemotron_h_puzzle", remote code) defines as
the model-level config with ``block_configs[layer_idx]``'s non-null entries set over it: a MoE
layer's ``n_routed_experts``, ``moe_intermediate_size``, ``num_experts_per_tok``, shared-expert
width and latent size, an MLP layer's ``intermediate_size`` (indexed by its MLP number when a
list, as NemotronHMLPDecoderLayer does) may differ from layer to layer.  The Mamba layers
(NemotronHMambaDecoderLayer) and every layer's ``norm`` read the model-level config.

The attention layers are planned from the model-level config (their KV cache specs are the
base family's); a block config that changed an attention layer's heads or window would not be
modelled, and is refused.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import register
from vmemplan.models.hybrid_mamba import NemotronH

__all__ = ["NemotronHPuzzle"]

#: attention-block keys whose per-layer value would change the KV cache spec
_ATTENTION_KEYS = frozenset({"num_attention_heads", "num_key_value_heads", "head_dim", "sliding_window",
                             "attention_head_dim"})


@register
class NemotronHPuzzle(NemotronH):
    """Nemotron-H with per-layer ``block_configs`` over the model-level config."""

    architectures = ("NemotronHPuzzleForCausalLM",)

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        blocks = self.config.text.get("block_configs")
        if blocks is not None:
            if not isinstance(blocks, list) or len(blocks) != len(self.pattern()):
                raise ModelConfigError(
                    f"block_configs has {len(blocks) if isinstance(blocks, list) else '?'} entries for "
                    f"{len(self.pattern())} layers of hybrid_override_pattern",
                    hint="a Puzzle config has one block config per layer")
            for i, letter in enumerate(self.pattern()):
                if letter == "*" and any((blocks[i] or {}).get(k) is not None for k in _ATTENTION_KEYS):
                    raise ModelConfigError(
                        f"block_configs[{i}] changes an attention layer's heads or window",
                        hint="per-layer attention shapes are not modelled for NemotronHPuzzleForCausalLM")

    def _block(self, layer: int) -> dict[str, Any]:
        blocks = self.config.text.get("block_configs") or []
        block = blocks[layer] if layer < len(blocks) else None
        return {k: v for k, v in (block or {}).items() if v is not None}

    def _layer_adapter(self, layer: int) -> NemotronH:
        """The model-level adapter with layer ``layer``'s block config set over it."""
        block = self._block(layer)
        if not block:
            return self
        cache = self.__dict__.setdefault("_layer_adapters", {})
        key = tuple(sorted((k, repr(v)) for k, v in block.items()))
        if key not in cache:
            cache[key] = self._build_layer_adapter(block)
        return cache[key]

    def _build_layer_adapter(self, block: dict[str, Any]) -> NemotronH:
        raw = dict(self.config.raw)
        text = dict(self.config.text)
        text.update(block)
        if self.config.text is self.config.raw:
            raw = text
        else:
            for key in ("text_config", "llm_config", "language_config"):
                if raw.get(key) is self.config.text:
                    raw[key] = text
        return NemotronH(ModelConfig.from_dict(raw))

    def _mlp_intermediate(self, mlp_index: int) -> int:
        layers = [i for i, c in enumerate(self.pattern()) if c == "-"]
        if mlp_index < len(layers) and self._block(layers[mlp_index]):
            return NemotronH._mlp_intermediate(self._layer_adapter(layers[mlp_index]), mlp_index)
        return super()._mlp_intermediate(mlp_index)

    def _moe_tensors(self, ctx: GraphContext, n_moe: int) -> list[WeightTensor]:
        """Each E layer's MoE block from its own layer config (layers with equal blocks merged)."""
        span = self.rank_span(ctx)
        pat = self.pattern()
        groups: dict[tuple, list[int]] = {}
        for i in range(span.start, span.end):
            if pat[i] == "E":
                groups.setdefault(tuple(sorted((k, repr(v)) for k, v in self._block(i).items())), []).append(i)
        out: list[WeightTensor] = []
        for layers in groups.values():
            adapter = self._layer_adapter(layers[0])
            out += NemotronH._moe_tensors(adapter, ctx, len(layers))
        return out
