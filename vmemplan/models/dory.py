"""Dory (``DoryForCausalLM``): a normalized (nGPT) latent-recurrent transformer whose physical
layers are attention-only or MLP-only, with a KV cache per recurrent loop.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.windowed import _attention_spec, _int, _rope_positions, _window, _WindowedBase

__all__ = ["Dory"]


@register
class Dory(_WindowedBase):
    """vllm/model_executor/models/dory.py::DoryForCausalLM (0.33.0).

    Layer ``i`` is ``layer_types[i]``: ``mlp`` or an attention type (DoryConfig's default
    layout: odd layers MLP, even layers attention, full on ``i % 8 == 6``, else a
    ``sliding_window`` window).  ``DoryAttention``: QKVParallel ``qkv_proj``, ColumnParallel
    ``g_proj`` ``h → heads · head_dim``, RowParallel ``o_proj``, the ``sqk`` and ``s_gate``
    vectors ``[heads · head_dim]``, a rotary cache per layer type (``get_rope`` shares one when
    the types' parameters agree) and the layer's ``attn_alpha`` ``[h]``.  ``DoryMLP``: merged
    ``gate_up_proj``, ``down_proj``, ``suv_gate``/``suv_up`` ``[intermediate]``, and ``mlp_alpha``.
    No final norm; an untied ``ParallelLMHead`` with an extra ``logit_scale`` ``[vocab]``.

    A recurrent attention layer (``n_input_layers <= i < n_input_layers + n_recurrent_layers``)
    with ``recurrent_kv_cache_mode == "per_loop"`` builds one ``Attention`` per loop, named
    ``backbone.layers.{loop · L + i}.mixer.attn``; each owns a cache and four fp32 scales.
    vLLM runs Dory at ``tensor_parallel_size`` 1 only.
    """

    architectures = ("DoryForCausalLM",)
    modules_on_every_stage = False

    def layer_types(self) -> list[str]:
        n = self.config.num_hidden_layers
        lt = self.config.text.get("layer_types")
        if isinstance(lt, list) and len(lt) == n:
            return [str(x) for x in lt]
        return ["mlp" if i % 2 else "full_attention" if i % 8 == 6 else "sliding_attention" for i in range(n)]

    def loops_of(self, index: int) -> int:
        """Attention modules (and caches) layer ``index`` builds."""
        text = self.config.text
        n_in = _int(text, "n_input_layers", 0)
        n_out = _int(text, "n_output_layers", 0)
        n_rec = _int(text, "n_recurrent_layers", self.config.num_hidden_layers - n_in - n_out)
        loops = _int(text, "n_recurrent_loops", 1)
        per_loop = text.get("recurrent_kv_cache_mode", "per_loop") == "per_loop"
        return loops if per_loop and n_in <= index < n_in + n_rec else 1

    def validate_parallel(self, ctx: GraphContext) -> None:
        if ctx.tensor_parallel_size != 1:
            raise UsageError("vLLM runs Dory at --tensor-parallel-size 1 only "
                             "(DoryForCausalLM.__init__ raises otherwise)", hint="use --tensor-parallel-size 1")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        h = cfg.hidden_size
        hd = cfg.head_dim
        q = cfg.num_attention_heads * hd
        kv = cfg.num_key_value_heads * hd
        inter = cfg.intermediate_size
        types = self.layer_types()
        start, end = self.layer_range(ctx)
        attn = [i for i in range(start, end) if types[i] != "mlp"]
        mlp = (end - start) - len(attn)
        first, last = self._stage_flags(ctx)
        rows = pad_vocab(cfg.vocab_size)
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("backbone.embeddings", "embedding", rows, h))
        if last:
            out += [WeightTensor("lm_head", "lm_head", rows, h),
                    WeightTensor("lm_head.logit_scale", "norm", cfg.vocab_size, 1)]
        a = len(attn)
        if a:
            out += [
                WeightTensor("mixer.qkv_proj", "linear", q + 2 * kv, h, a, True, in_features_full=h),
                WeightTensor("mixer.g_proj", "linear", q, h, a, True, in_features_full=h),
                WeightTensor("mixer.o_proj", "linear", h, q, a, True, in_features_full=q),
                WeightTensor("mixer.sqk+s_gate", "norm", q, 1, 2 * a),
                WeightTensor("attn_alpha", "norm", h, 1, a),
                attention_scales("mixer.attn", sum(self.loops_of(i) for i in attn)),
            ]
            out += self._rope_tensors({types[i] for i in attn})
        if mlp:
            out += [
                WeightTensor("mixer.gate_up_proj", "linear", 2 * inter, h, mlp, True, in_features_full=h),
                WeightTensor("mixer.down_proj", "linear", h, inter, mlp, True, in_features_full=inter),
                WeightTensor("mixer.suv_gate+suv_up", "norm", inter, 1, 2 * mlp),
                WeightTensor("mlp_alpha", "norm", h, 1, mlp),
            ]
        return out

    def _rope_tensors(self, kinds: set[str]) -> list[WeightTensor]:
        """One cache per distinct set of rope parameters (``get_rope`` caches instances)."""
        cfg = self.config
        rope = cfg.text.get("rope_parameters")
        seen: dict[str, str] = {}
        out = []
        for kind in sorted(kinds):
            params = rope.get(kind) if isinstance(rope, dict) and isinstance(rope.get(kind), dict) else {}
            key = repr(sorted(params.items()))
            if key in seen:
                continue
            seen[key] = kind
            out.append(WeightTensor(f"rotary_emb({kind}).cos_sin_cache", "buffer",
                                    _rope_positions(cfg.text, params, cfg.max_position_embeddings), cfg.head_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        window = _window(cfg.text)
        types = self.layer_types()
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            if types[i] == "mlp":
                continue
            w = window if types[i] == "sliding_attention" else None
            for loop in range(self.loops_of(i)):
                specs[f"backbone.layers.{loop * cfg.num_hidden_layers + i}.mixer.attn"] = _attention_spec(
                    ctx, num_kv_heads=cfg.num_key_value_heads, head_size=cfg.head_dim, window=w)
        return specs

    def notes(self) -> tuple[str, ...]:
        types = self.layer_types()
        loops = _int(self.config.text, "n_recurrent_loops", 1)
        return (f"{sum(t != 'mlp' for t in types)} attention-only and {sum(t == 'mlp' for t in types)} "
                f"MLP-only layers; the recurrent block runs {loops} time(s), a KV cache per loop",)
