"""Inkling (``InklingForCausalLM`` / ``InklingForConditionalGeneration``): relative-position
attention (no rotary), short convolutions on K, V and both sublayer outputs whose state vLLM
keeps as a sliding-window KV cache, sliding/full layers with their own head shapes, and a
sigmoid-routed MoE with dense "sink" shared experts.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.moe import MoEDecoder

__all__ = ["Inkling"]


def _get(text: dict, key: str, default: Any) -> Any:
    value = text.get(key)
    return default if value is None else value


@register
class Inkling(MoEDecoder):
    """vllm/models/inkling/nvidia/model.py::InklingForCausalLM / InklingForConditionalGeneration
    (0.33.0; the text backbone ``_TmlForCausalLMBase._build``).  Config facts as
    vllm/models/inkling/configs.py::InklingModelConfig resolves them (HF-style
    ``moe_intermediate_size`` / ``conv_kernel_size`` spellings included).

    Weights of one rank: ``InklingReplicatedEmbedding [padded_vocab, hidden]`` on every rank
    (not vocab-parallel), ``embed_norm`` when ``use_embed_norm``, final ``norm``, a vocab-parallel
    ``ParallelLMHead`` over ``padded_vocab_size``.  Layer ``i`` is local (sliding) when in
    ``local_layer_ids``, with the ``swa_*`` head shapes, else global; its ``InklingAttention``
    holds a MergedColumnParallel ``qkvr`` (q ``heads·hd``, k and v ``max(kv, tp)·hd``, r
    ``heads·d_rel``; bias from ``q_bias``), a RowParallel ``wo_ud`` (bias from ``o_bias``),
    ``rel_logits_proj.proj [d_rel, extent]`` (extent = ``sliding_window_size`` local, else
    ``rel_extent``), ``q_norm``/``k_norm [hd]``, ``k_sconv``/``v_sconv [kv/tp·hd, 1, K]`` and two
    fp32 scalars ``k_scale``/``v_scale``; the layer adds ``attn_norm``, ``mlp_norm`` and
    ``attn_sconv``/``mlp_sconv [hidden/tp, 1, K]``.  Layers below ``dense_mlp_idx`` have
    ``InklingDenseMLP`` (column ``gate_up_proj``, row ``down_proj``, a model-dtype ``global_scale
    [1]`` when ``use_global_scale``); the others ``InklingMoE``: ``InklingGate`` (weight
    ``[E + S rounded up to 8, hidden]``, fp32 ``global_scale [1]`` and fp32 ``bias [E]`` by
    ``use_global_scale`` / ``use_gate_bias``), FusedMoE routed experts (E rounded up to the EP
    size) and ``InklingSinkExperts`` (``w13 [S, 2·I/tp, hidden]``, ``w2 [hidden, S·I/tp]``).

    KV cache per layer: ``model.layers.{i}.conv_state`` (``InklingConvState``: a
    ``SlidingWindowSpec`` with block size and window ``K``, ``kv/tp`` heads of the four packed
    conv streams, head size ``2·hd + 2·hidden/kv`` rounded up to a power of two, no V half)
    and ``model.layers.{i}.attn`` (``InklingAttention.get_kv_cache_spec``: sliding window
    ``sliding_window_size`` when local, else full; ``max(1, kv/tp)`` heads of ``hd``).
    """

    architectures = ("InklingForCausalLM", "InklingForConditionalGeneration")
    rotary = False

    # -- config facts (InklingModelConfig.__init__) -------------------------------------
    def _sizes(self) -> tuple[int, int]:
        """(routed-expert intermediate, dense intermediate)."""
        t = self.config.text
        inter, dense, moe = t.get("intermediate_size", 768), t.get("dense_intermediate_size"), t.get("moe_intermediate_size")
        if moe is not None and inter is not None and dense is None:
            dense, inter = inter, moe
        return inter, (inter if dense is None else dense)

    def kernel(self) -> int:
        t = self.config.text
        k = t.get("sconv_kernel_size")
        return int(k if k is not None else _get(t, "conv_kernel_size", 4))

    def padded_vocab(self) -> int:
        t = self.config.text
        return int(_get(t, "padded_vocab_size", t.get("vocab_size", 201024)))

    def layer_shape(self, index: int) -> tuple[bool, int, int, int]:
        """(local, heads, kv heads, head dim) of layer ``index``."""
        t = self.config.text
        heads = int(_get(t, "num_attention_heads", 12))
        kv = int(_get(t, "num_key_value_heads", 4))
        hd = int(_get(t, "head_dim", int(_get(t, "hidden_size", 1536)) // heads))
        local = index in (t.get("local_layer_ids") or [])
        if local:
            heads = int(_get(t, "swa_num_attention_heads", heads))
            kv = int(_get(t, "swa_num_key_value_heads", kv))
            hd = int(_get(t, "swa_head_dim", hd))
        return local, heads, kv, hd

    def num_experts(self) -> int:
        e = int(_get(self.config.text, "n_routed_experts", 0))
        ep = self.placement_ep_size()
        return e + (-e) % ep  # InklingMoE pads to a multiple of the EP size

    def placement_ep_size(self) -> int:
        return self.__dict__.get("_ep", 1)

    def expert_intermediate(self) -> int:
        return self._sizes()[0]

    def dense_intermediate(self) -> int:
        return self._sizes()[1]

    def is_moe_layer(self, index: int) -> bool:
        return index >= int(_get(self.config.text, "dense_mlp_idx", 0))

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        for i in range(self.config.num_hidden_layers):
            _, heads, kv, _ = self.layer_shape(i)
            if heads % tp or (kv >= tp and kv % tp) or (kv < tp and tp % kv):
                raise UsageError(f"--tensor-parallel-size {tp} does not divide layer {i}'s {heads} heads / {kv} KV heads",
                                 hint="InklingAttention splits whole heads")
            if tp > kv:
                raise UsageError(f"--tensor-parallel-size {tp} is above layer {i}'s {kv} KV heads",
                                 hint="vLLM's InklingConvState supports tp_size <= num_kv_heads only")

    def _check_towers(self) -> None:
        raw = self.config.raw
        for key in ("vision_config", "audio_config"):
            sub = raw.get(key)
            if isinstance(sub, dict) and sub.get("decoder_dmodel") is not None:
                raise UsageError(f"Inkling's {key.split('_')[0]} tower (config {key}.decoder_dmodel set) is not planned yet",
                                 hint="vmemplan plans the Inkling text backbone; a checkpoint with towers off works")

    def derived_max_model_len(self) -> int:
        """A ``model_max_length`` in the text config wins over the other length keys
        (vllm/transformers_utils/model_arch_config_convertor.py::derived_max_model_len_and_key,
        0.33.0); the tiny Inkling configs set it and no ``max_position_embeddings``."""
        value = self.config.text.get("model_max_length")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return super().derived_max_model_len()

    # -- weights ------------------------------------------------------------------
    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        self._check_towers()
        self.validate_parallel(ctx)
        cfg = self.config
        t = cfg.text
        tp = ctx.tensor_parallel_size
        self.__dict__["_ep"] = ctx.expert_parallel_size  # InklingMoE pads E to the EP size
        h = cfg.hidden_size
        span = self.rank_span(ctx)
        k = self.kernel()
        d_rel = int(_get(t, "d_rel", 16))
        out: list[WeightTensor] = []
        if span.first:
            out.append(WeightTensor("model.embed_tokens", "embedding", self.padded_vocab(), h))
            if t.get("use_embed_norm"):
                out.append(WeightTensor("model.embed_norm", "norm", h, 1))
        shapes: dict[tuple, int] = {}
        for i in range(span.start, span.end):
            local, heads, kv, hd = self.layer_shape(i)
            shapes[(local, heads, kv, hd)] = shapes.get((local, heads, kv, hd), 0) + 1
        window = int(_get(t, "sliding_window_size", 512))
        for (local, heads, kv, hd), n in shapes.items():
            tag = "swa" if local else "full"
            qkvr = (heads * hd + 2 * max(kv, tp) * hd + heads * d_rel) // tp
            out += [
                WeightTensor(f"attn.qkvr[{tag}]", "linear", qkvr, h, n, True, in_features_full=h),
                WeightTensor(f"attn.wo_ud[{tag}]", "linear", h, heads * hd // tp, n, True,
                             in_features_full=heads * hd),
                WeightTensor(f"attn.rel_logits_proj.proj[{tag}]", "norm", d_rel, window if local else int(_get(t, "rel_extent", 1024)), n),
                WeightTensor(f"attn.q_norm+k_norm[{tag}]", "norm", hd, 1, 2 * n),
                WeightTensor(f"attn.k_sconv+v_sconv[{tag}]", "norm", max(1, kv // tp) * hd, k, 2 * n),
            ]
            if t.get("q_bias"):
                out.append(WeightTensor(f"attn.qkvr.bias[{tag}]", "bias", qkvr, 1, n))
        n = span.layers
        if n:
            out += [
                WeightTensor("attn.k_scale+v_scale", "buffer", 1, 1, 2 * n, dtype="float32"),
                WeightTensor("attn_norm+mlp_norm", "norm", h, 1, 2 * n),
                WeightTensor("attn_sconv+mlp_sconv", "norm", h // tp, k, 2 * n),
            ]
            if t.get("o_bias"):
                out.append(WeightTensor("attn.wo_ud.bias", "bias", h, 1, n))
        dense = sum(1 for i in range(span.start, span.end) if not self.is_moe_layer(i))
        moe = n - dense
        use_global = bool(t.get("use_global_scale"))
        if dense:
            di = self.dense_intermediate()
            out += [
                WeightTensor("mlp.gate_up_proj", "linear", 2 * di // tp, h, dense, True, in_features_full=h,
                             out_features_full=2 * di),
                WeightTensor("mlp.down_proj", "linear", h, di // tp, dense, True, in_features_full=di,
                             out_features_full=h),
            ]
            if use_global:
                out.append(WeightTensor("mlp.global_scale", "norm", 1, 1, dense))
        if moe:
            e = int(_get(t, "n_routed_experts", 0))
            s = int(_get(t, "n_shared_experts", 0))
            inter = self.expert_intermediate()
            out.append(WeightTensor("mlp.gate", "router", e + s + (-(e + s)) % 8, h, moe))
            if use_global:
                out.append(WeightTensor("mlp.gate.global_scale", "router", 1, 1, moe, dtype="float32"))
            if t.get("use_gate_bias"):
                out.append(WeightTensor("mlp.gate.bias", "router", e, 1, moe, dtype="float32"))
            out += self._expert_tensors(self.placement(ctx), self.placement(ctx).local_logical, moe, "mlp.experts")
            out += [  # sink experts stay bf16 (the checkpoints exclude them from quantization)
                WeightTensor("mlp.sink_experts.w13_weight", "linear", 2 * inter // tp, h, s * moe,
                             allocations=moe),
                WeightTensor("mlp.sink_experts.w2_weight", "linear", h, s * inter // tp, moe),
            ]
        if span.last:
            out += [WeightTensor("model.norm", "norm", h, 1),
                    WeightTensor("lm_head", "lm_head", pad_vocab(self.padded_vocab()) // tp, h)]
        return out

    # -- KV cache -----------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        t = cfg.text
        tp = ctx.tensor_parallel_size
        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        width = dtype_bytes(ctx.model_dtype)
        k = self.kernel()
        window = int(_get(t, "sliding_window_size", 512))
        start, end = self.layer_range(ctx)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            local, _, kv, hd = self.layer_shape(i)
            raw = 2 * hd + 2 * (cfg.hidden_size // kv)
            specs[f"model.layers.{i}.conv_state"] = SlidingWindowSpec(
                block_size=k, num_kv_heads=kv // tp, head_size=1 << (raw - 1).bit_length(),
                cache_dtype=ctx.model_dtype, dtype_bytes=width, sliding_window=k, head_size_v=0)
            common = dict(block_size=ctx.block_size, num_kv_heads=max(1, kv // tp), head_size=hd,
                          cache_dtype=cache_dtype, dtype_bytes=nbytes)
            specs[f"model.layers.{i}.attn"] = (SlidingWindowSpec(sliding_window=window, **common) if local
                                               else FullAttentionSpec(**common))
        return specs

    def notes(self) -> tuple[str, ...]:
        return ("each layer keeps its short-conv state as a sliding-window cache of sconv_kernel_size "
                "tokens (vLLM's InklingConvState) beside its attention cache",)
