"""PLaMo-3 (``Plamo3ForCausalLM``): window layers with every ``sliding_window_pattern``-th layer
global, per-head q/k norms, four sandwich norms a layer, and two rotary caches whose rows are
capped by the context length.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.gemma2 import Gemma2
from vmemplan.models.windowed import _attention_spec, _int, _kv_heads

__all__ = ["Plamo3", "plamo3_windows"]


def plamo3_windows(text: Mapping[str, Any]) -> list[int | None]:
    """Per-layer window: ``interleaved_sliding_window`` when the config carries it, else what
    the checkpoint's ``Plamo3Config.__init__`` (remote code, configuration_plamo3.py) derives:
    layer ``i`` is global (None) when ``(i + 1) % sliding_window_pattern == 0`` (default 8),
    else windowed by ``window_size`` (default 2048)."""
    n = _int(text, "num_hidden_layers", 32)
    given = text.get("interleaved_sliding_window")
    if isinstance(given, list) and len(given) >= n:
        return [int(w) if isinstance(w, int) and not isinstance(w, bool) else None for w in given[:n]]
    pattern = _int(text, "sliding_window_pattern", 8) or 8
    window = _int(text, "window_size", 2048)
    return [None if (i + 1) % pattern == 0 else window for i in range(n)]


@register
class Plamo3(Gemma2):
    """PLaMo-3 (vllm/model_executor/models/plamo3.py, 0.33.0).

    ``Plamo3AttentionMixer``: ``qkv_proj`` (QKVParallelLinear, no bias), ``o_proj``, per-head
    ``q_norm``/``k_norm`` (RMSNorm ``[head_dim]``), ``Attention(per_layer_sliding_window=
    interleaved_sliding_window[i])``; ``DenseMLP`` (gated SiLU); four RMSNorms a layer
    (``pre_mixer_norm``, ``post_mixer_norm``, ``pre_mlp_norm``, ``post_mlp_norm``).
    ``Plamo3Model`` builds ``embed_tokens`` and the final norm on every pipeline stage (no
    ``PPMissingLayer``), and ``Plamo3ForCausalLM`` a ``ParallelLMHead`` of
    ``ceil(vocab / 16) · 16`` rows padded to 64, tied to the embedding when
    ``tie_word_embeddings`` (default true).  Rotary: ``get_rope(head_dim,
    max_position=min(max_position_embeddings, max_model_len))`` — global layers with the
    config's ``rope_theta`` (YaRN over ``initial_context_length × rope_scaling_factor`` when
    the factor is not 1), window layers default RoPE at ``rope_local_theta``: two caches
    unless both keys coincide.  No ``normalizer`` buffer.
    """

    architectures = ("Plamo3ForCausalLM",)
    qk_norm = True
    no_head_module = False
    reads_max_model_len = True  # the rotary caches are capped by it

    def layer_types(self) -> list[str]:
        return ["full_attention" if w is None else "sliding_attention" for w in plamo3_windows(self.config.text)]

    def _tied(self) -> bool:
        return bool(self.config.text.get("tie_word_embeddings", True))

    def _rope_rows(self, ctx: GraphContext | None) -> tuple[int, tuple[Any, ...], tuple[Any, ...]]:
        text = self.config.text
        rows = _int(text, "max_position_embeddings", 2048)
        if ctx is not None and ctx.max_model_len:
            rows = min(rows, int(ctx.max_model_len))
        local = ("default", text.get("rope_local_theta", 10000))
        factor = text.get("rope_scaling_factor", 1)
        if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor != 1:
            glob: tuple[Any, ...] = ("yarn", text.get("rope_theta", 1000000), factor,
                                     _int(text, "initial_context_length", rows))
        else:
            glob = ("default", text.get("rope_theta", 1000000))
        return rows, glob, local

    def _rope_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        rows, glob, local = self._rope_rows(ctx)
        hd = self.config.head_dim
        types = set(self.layer_types()[slice(*self.layer_range(ctx))])
        keys: dict[tuple[Any, ...], int] = {}
        if "full_attention" in types:
            # YaRN builds its cache over original_max_position × factor rows
            keys[glob] = int(glob[3] * glob[2]) if glob[0] == "yarn" else rows
        if "sliding_attention" in types:
            keys.setdefault(local, rows)
        return [WeightTensor(f"rotary_emb[{k[0]}:{k[1]}].cos_sin_cache", "buffer", r, hd)
                for k, r in keys.items()]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        n = self.rank_span(ctx).layers
        vocab = -(-cfg.vocab_size // 16) * 16
        out = self._embedding_and_head(ctx, tied=self._tied(), vocab=vocab)
        out += self._attn_tensors(ctx, name="mixer", num_heads=cfg.num_attention_heads,
                                  num_kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, count=n)
        out += self._mlp_tensors(ctx, name="mlp", intermediate=cfg.intermediate_size, count=n)
        if n:
            out += [
                WeightTensor("pre/post_mixer_norm+pre/post_mlp_norm", "norm", cfg.hidden_size, 1, 4 * n),
                WeightTensor("mixer.q_norm+k_norm", "norm", cfg.head_dim, 1, 2 * n),
                attention_scales("mixer.attn", n),
            ]
            out += self._rope_tensors(ctx)
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """``SlidingWindowSpec(window)`` on window layers, ``FullAttentionSpec`` on global ones."""
        cfg = self.config
        windows = plamo3_windows(cfg.text)
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        return {f"model.layers.layers.{i}.mixer.attn": _attention_spec(
                    ctx, num_kv_heads=heads, head_size=cfg.head_dim, window=windows[i])
                for i in range(*self.layer_range(ctx))}

    def notes(self) -> tuple[str, ...]:
        windows = plamo3_windows(self.config.text)
        w = [x for x in windows if x is not None]
        if not w:
            return ()
        return (f"{len(w)} of {len(windows)} layers use a {w[0]}-token sliding window",)
