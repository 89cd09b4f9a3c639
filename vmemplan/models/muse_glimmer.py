"""MuseGlimmer (``MuseGlimmerForCausalLM``, text decoder): a Gemma-2 derivative with a per-head
sigmoid output gate, weightless QK norms, sandwich norms, RoPE window layers and NoPE full ones.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.windowed import _rope_positions, _window, _WindowedBase

__all__ = ["MuseGlimmer"]


@register
class MuseGlimmer(_WindowedBase):
    """vllm/model_executor/models/muse_glimmer.py::MuseGlimmerForCausalLM (0.33.0), text part.

    Per layer (``MuseGlimmerDecoderLayer``): QKVParallel ``qkv_proj``, RowParallel ``o_proj``,
    a ColumnParallel ``output_gate_proj`` ``h → heads · head_dim``, weightless QK norms (no
    tensor), the Attention's four fp32 scales, a SiLU-gated MLP and four MuseGlimmerRMSNorms
    ``[h]``.  A layer uses RoPE when ``layer_rope_theta[i]`` is non-zero (one shared
    ``get_rope`` cache ``[max_position_embeddings, head_dim]``) and a ``sliding_window``
    window when ``layer_types[i]`` is ``sliding_attention``.  Model: vocab-parallel
    embedding with a weightless ``embed_norm``, final norm, an untied ``lm_head``.  The vision
    encoder and adapter of a config with ``vision_config`` are not included.
    """

    architectures = ("MuseGlimmerForCausalLM",)
    modules_on_every_stage = False

    def layer_types(self) -> list[str]:
        n = self.config.num_hidden_layers
        lt = self.config.text.get("layer_types")
        return [str(x) for x in lt] if isinstance(lt, list) and len(lt) >= n else ["full_attention"] * n

    def _uses_rope(self, index: int) -> bool:
        thetas = self.config.text.get("layer_rope_theta")
        if isinstance(thetas, list) and index < len(thetas):
            return bool(thetas[index])
        return True

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        h, n = span.hidden, span.layers
        # embed_tokens on the first stage, the final norm and the untied lm_head on the last
        out = self._embedding_and_head(ctx, tied=False)
        out += self._attn_tensors(ctx, name="self_attn", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n)
        out += self._mlp_tensors(ctx, name="mlp", intermediate=cfg.intermediate_size, count=n)
        if n:
            q_local = cfg.num_attention_heads // span.tp * cfg.head_dim
            out += [
                WeightTensor("self_attn.output_gate_proj", "linear", q_local, h, n, True, in_features_full=h),
                attention_scales("self_attn.attn", n),
                WeightTensor("4 MuseGlimmerRMSNorms", "norm", h, 1, 4 * n),
            ]
            if any(self._uses_rope(i) for i in range(span.start, span.end)):
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                                        _rope_positions(cfg.text, cfg.rope_scaling(), cfg.max_position_embeddings),
                                        cfg.head_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        return self._window_specs(ctx, self.layer_types(), window=_window(self.config.text))

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        out = [f"{types.count('sliding_attention')} sliding-window (RoPE) and "
               f"{types.count('full_attention')} full-attention layers"]
        if isinstance(self.config.raw.get("vision_config"), dict):
            out.append("the vision encoder and adapter are not included in the weights figure")
        return tuple(out)
