"""Gemma-4 (``Gemma4ForCausalLM`` / ``Gemma4ForConditionalGeneration``): per-layer-type head size
and KV heads, KV-sharing tail layers that own no cache, optional MoE block parallel to the dense
MLP, optional per-layer embeddings (E-series), the vision tower and (gemma4_audio.py) the audio tower.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.laws.multimodal import limit_for
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.gemma4_audio import gemma4_mm_extras
from vmemplan.models.windowed import (
    _check_heads,
    _int,
    _window,
    _WindowedBase,
    gemma_layer_types,
    moe_shard,
    window_global_notes,
)

__all__ = ["Gemma4", "gemma4_vision_tensors"]


@register
class Gemma4(_WindowedBase):
    """Gemma-4 text model (vllm/model_executor/models/gemma4.py, 0.33.0).

    Per layer type (the ``per_layer_config`` view; 0.19.0 states it explicitly in
    ``Gemma4DecoderLayer.__init__``): window layers use ``head_dim`` and
    ``num_key_value_heads``; global layers ``global_head_dim`` and, when
    ``attention_k_eq_v``, ``num_global_key_value_heads``.  ``k_eq_v`` layers still build a
    full QKVParallelLinear (K is loaded into both the K and V slots) and cache K and V.
    The last ``num_kv_shared_layers`` layers read the cache of the last earlier layer of
    the same type: they build only ``q_proj`` and own no KV spec.  Each layer has q/k norms
    (v_norm has no weight), 4 norms, a dense gated MLP (doubled on KV-shared layers with
    ``use_double_wide_mlp``), and with ``num_experts`` a router (scale, per-expert scale,
    replicated projection) plus experts and three more norms.  E-series per-layer
    embeddings (``hidden_size_per_layer_input``) add a vocab-parallel table, a projection
    and per-layer gate/projection/norm.
    """

    architectures: tuple[str, ...] = ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration")

    @property
    def family(self) -> str:  # type: ignore[override]
        return "moe" if self.config.text.get("num_experts") else "dense"

    def layer_types(self) -> list[str]:
        """``layer_types`` (default: every 6th layer global), the last layer forced to
        ``full_attention`` as transformers' Gemma4TextConfig.__post_init__ does."""
        types = gemma_layer_types(self.config.text, default_pattern=6)
        return types[:-1] + ["full_attention"] if types else types

    def _layer_shape(self, index: int) -> tuple[int, int]:
        """(head_dim, total KV heads) of layer ``index``."""
        text = self.config.text
        cfg = self.config
        if self.layer_types()[index] == "full_attention":
            head_dim = _int(text, "global_head_dim", cfg.head_dim)
            if self.k_eq_v():
                return head_dim, _int(text, "num_global_key_value_heads", cfg.num_key_value_heads)
            return head_dim, cfg.num_key_value_heads
        return cfg.head_dim, cfg.num_key_value_heads

    def k_eq_v(self) -> bool:
        """Whether global layers take ``num_global_key_value_heads`` (``attention_k_eq_v``)."""
        return bool(self.config.text.get("attention_k_eq_v", False))

    def first_kv_shared_layer(self) -> int:
        n = self.config.num_hidden_layers
        return n - _int(self.config.text, "num_kv_shared_layers", 0)

    def kv_sharing_target(self, index: int) -> int | None:
        """The layer whose cache layer ``index`` reads, or None when it owns one."""
        first = self.first_kv_shared_layer()
        if index < first or first == self.config.num_hidden_layers:
            return None
        types = self.layer_types()
        prev = types[:first]
        want = types[index]
        if want not in prev:
            return None
        return len(prev) - 1 - prev[::-1].index(want)

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        for i in range(self.config.num_hidden_layers):
            _, kv = self._layer_shape(i)
            _check_heads(self.config.num_attention_heads, kv, tp)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        h = cfg.hidden_size
        start, end = self.layer_range(ctx)
        tied = bool(text.get("tie_word_embeddings", cfg.raw.get("tie_word_embeddings", True)))
        out = self._embedding_and_head(ctx, tied=tied)
        bias = bool(text.get("attention_bias", False))
        first_shared = self.first_kv_shared_layer()
        double_wide = bool(text.get("use_double_wide_mlp", False))
        num_experts = text.get("num_experts")
        # group identical layers so the tensor list stays short
        shapes: dict[tuple[int, int, bool, int], int] = {}
        for i in range(start, end):
            hd, kv = self._layer_shape(i)
            shared = self.kv_sharing_target(i) is not None and i >= first_shared
            inter = cfg.intermediate_size * (2 if double_wide and i >= first_shared > 0 else 1)
            key = (hd, kv, shared, inter)
            shapes[key] = shapes.get(key, 0) + 1
        for (hd, kv, shared, inter), count in shapes.items():
            tag = f"[hd{hd},kv{kv}{',shared' if shared else ''}]"
            out += self._attn_tensors(ctx, name=f"self_attn{tag}", num_heads=cfg.num_attention_heads,
                                      num_kv_heads=kv, head_dim=hd, count=count, qkv_bias=bias,
                                      o_bias=bias, q_only=shared)
            out.append(WeightTensor(f"self_attn{tag}.q_norm+k_norm", "norm", hd, 1,
                                    count * (1 if shared else 2)))
            if not shared:
                # v_norm = RMSNorm(head_dim, has_weight=False): its torch.ones(head_dim) stays a
                # plain device tensor in the model dtype (vllm/model_executor/layers/layernorm.py::RMSNorm)
                out.append(WeightTensor(f"self_attn{tag}.v_norm.weight(ones, not a parameter)", "buffer",
                                        hd, 1, count))
            out += self._mlp_tensors(ctx, name=f"mlp[{inter}]", intermediate=inter, count=count)
        n = end - start
        if n:
            out.append(WeightTensor("4 RMSNorms", "norm", h, 1, 4 * n))
            out.append(WeightTensor("layer_scalar", "buffer", 1, 1, n))
            # each Attention layer's _k/_v/_q/_prob_scale (KV-shared layers build one too)
            out.append(attention_scales("self_attn.attn", n))
            if isinstance(num_experts, int) and num_experts > 0:
                moe_inter = _int(text, "moe_intermediate_size", text.get("expert_intermediate_size"))
                local, inter = moe_shard(ctx, num_experts, moe_inter)
                out += [
                    WeightTensor("router.proj", "router", num_experts, h, n),
                    WeightTensor("router.scale", "norm", h, 1, n),
                    WeightTensor("router.per_expert_scale", "norm", num_experts, 1, n),
                    WeightTensor("experts.w13_weight", "expert", 2 * inter, h, n * local, True,
                                 in_features_full=h),
                    WeightTensor("experts.w2_weight", "expert", h, inter, n * local, True,
                                 in_features_full=moe_inter),
                    WeightTensor("3 MoE RMSNorms", "norm", h, 1, 3 * n),
                    # Gemma4Router: norm = RMSNorm(hidden, has_weight=False) keeps torch.ones(hidden)
                    # as a plain device tensor; root_size a scalar buffer (both in the model dtype)
                    WeightTensor("router.norm.weight(ones, not a parameter)", "buffer", h, 1, n),
                    WeightTensor("router.root_size", "buffer", 1, 1, n),
                ]
            hpl = _int(text, "hidden_size_per_layer_input", 0)
            if hpl > 0:
                out += [
                    WeightTensor("per_layer_input_gate", "linear", hpl, h, n, True, in_features_full=h),
                    WeightTensor("per_layer_projection", "linear", h, hpl, n, True, in_features_full=hpl),
                    WeightTensor("post_per_layer_input_norm", "norm", h, 1, n),
                ]
            out += self._rope_tensors()
        hpl = _int(text, "hidden_size_per_layer_input", 0)
        if hpl > 0:
            total = hpl * cfg.num_hidden_layers
            vocab_ple = _int(text, "vocab_size_per_layer_input", cfg.vocab_size)
            tp = ctx.tensor_parallel_size
            out += [
                WeightTensor("model.embed_tokens_per_layer", "embedding", pad_vocab(vocab_ple) // tp, total),
                # ColumnParallelLinear(gather_output=True): rows split by TP
                WeightTensor("model.per_layer_model_projection", "linear", total // tp, h, 1, True,
                             in_features_full=h),
                WeightTensor("model.per_layer_projection_norm", "norm", hpl, 1),
                # Gemma4Model's scalar buffers embed_scale_per_layer, per_layer_input_scale and
                # per_layer_projection_scale (read from the code; no E-series oracle fixture yet)
                WeightTensor("model.per-layer-input scalars", "buffer", 1, 1, 3),
            ]
        # Gemma4Model.normalizer: sqrt(hidden_size) as a scalar buffer in the model dtype
        out.append(WeightTensor("model.normalizer", "buffer", 1, 1))
        return out + self.multimodal_tensors(ctx)

    def multimodal_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """The vision tower, audio tower and PLE buffer of ``Gemma4ForConditionalGeneration`` (first stage)."""
        if ctx.pipeline_rank:
            return []
        raw, h = self.config.raw, self.config.hidden_size
        return gemma4_vision_tensors(raw, h, ctx) + gemma4_mm_extras(raw, h, ctx)

    def _rope_tensors(self) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        max_pos = cfg.max_position_embeddings
        types = set(self.layer_types())
        out = []
        if "sliding_attention" in types:
            out.append(WeightTensor("rotary_emb(sliding).cos_sin_cache", "buffer", max_pos, cfg.head_dim))
        if "full_attention" in types:
            # proportional rope builds its cache over the whole head (gemma4_rope.py)
            out.append(WeightTensor("rotary_emb(full).cos_sin_cache", "buffer", max_pos,
                                    _int(text, "global_head_dim", cfg.head_dim)))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """A spec for every layer that owns a cache; KV-shared layers add nothing
        (GPUModelRunner.get_kv_cache_spec skips ``kv_sharing_target_layer_name``), each with
        its layer type's head size and KV heads."""
        return self._window_specs(ctx, self.layer_types(), window=_window(self.config.text), shape=self._layer_shape,
                                  skip=lambda i: self.kv_sharing_target(i) is not None)

    def notes(self) -> tuple[str, ...]:
        out = window_global_notes(self.layer_types(), self.config.num_hidden_layers - self.first_kv_shared_layer())
        if self.config.architecture == "Gemma4ForConditionalGeneration":
            if isinstance(self.config.raw.get("vision_config"), dict):
                out.append("the vision tower (transformers' Gemma4VisionModel) is replicated on every rank")
        return tuple(out)


def gemma4_vision_tensors(raw: Mapping[str, Any], text_hidden: int, ctx: GraphContext) -> list[WeightTensor]:
    """The Gemma-4 vision tower and its embedder, as vLLM loads them.

    vllm/model_executor/models/gemma4_mm.py::Gemma4ForConditionalGeneration (0.33.0) builds
    the tower with ``AutoModel.from_config(config.vision_config)``: transformers'
    Gemma4VisionModel in plain ``nn.Linear`` layers, so every tensor-parallel rank holds all
    of it.  Per transformers 5.x modeling_gemma4.py: a patch embedder (``3·p² → h`` and a
    ``2 × position_embedding_size × h`` position table), layers of q/k/v/o (with q/k norms),
    a gated MLP (gate, up, down) and four RMSNorms, optional clipping buffers, and the
    ``std_bias``/``std_scale`` buffers.  The embedder is a ReplicatedLinear ``h → text
    hidden``.  None when the model has no vision config or ``--limit-mm-per-prompt`` turns
    images and video off.
    """
    vc = raw.get("vision_config")
    if not isinstance(vc, Mapping):
        return []

    if all(limit_for(ctx.limit_mm_per_prompt, m) == 0 for m in ("image", "video")):
        return []
    h = _int(vc, "hidden_size")
    inter = _int(vc, "intermediate_size")
    layers = _int(vc, "num_hidden_layers")
    heads = _int(vc, "num_attention_heads")
    kv = _int(vc, "num_key_value_heads", heads)
    hd = _int(vc, "head_dim", h // heads)
    patch = _int(vc, "patch_size")
    positions = _int(vc, "position_embedding_size", 10 * 1024)  # Gemma4VisionConfig default
    out = [
        WeightTensor("vision_tower.patch_embedder.input_proj", "encoder", h, 3 * patch * patch),
        WeightTensor("vision_tower.patch_embedder.position_embedding_table", "encoder", 2 * positions, h),
        WeightTensor("vision_tower.layers.q_proj+o_proj", "encoder", heads * hd, h, 2 * layers),
        WeightTensor("vision_tower.layers.k_proj+v_proj", "encoder", kv * hd, h, 2 * layers),
        WeightTensor("vision_tower.layers.q_norm+k_norm", "encoder", hd, 1, 2 * layers),
        WeightTensor("vision_tower.layers.gate_proj+up_proj", "encoder", inter, h, 2 * layers),
        WeightTensor("vision_tower.layers.down_proj", "encoder", h, inter, layers),
        WeightTensor("vision_tower.layers.4 RMSNorms", "encoder", h, 1, 4 * layers),
        WeightTensor("embed_vision.embedding_projection", "linear", text_hidden, h, 1, True, in_features_full=h),
        # gemma4_mm.py::Gemma4MultimodalEmbedder.embedding_pre_projection_norm = RMSNorm(h, has_weight=False):
        # torch.ones(h) kept as a plain device tensor
        WeightTensor("embed_vision.embedding_pre_projection_norm(ones, not a parameter)", "buffer", h, 1),
        # transformers Gemma4VisionRotaryEmbedding (2-D: head_dim / 2 a axis): fp32 inv_freq and
        # original_inv_freq of head_dim / 4 entries each
        WeightTensor("vision_tower.encoder.rotary_emb.inv_freq+original_inv_freq", "buffer", hd // 4, 1, 2,
                     dtype="float32"),
    ]
    if vc.get("standardize"):
        out.append(WeightTensor("vision_tower.std_bias+std_scale", "buffer", h, 1, 2))
    if vc.get("use_clipped_linears"):
        # four scalar bounds per clippable linear (7 per layer)
        out.append(WeightTensor("vision_tower clipping bounds", "buffer", 1, 1, 4 * 7 * layers))
    return out
