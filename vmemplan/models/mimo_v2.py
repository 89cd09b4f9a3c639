"""MiMo-V2 (``MiMoV2FlashForCausalLM``, ``MiMoV2ForCausalLM``): full and sliding-window layers
with their own head counts, K heads wider than V heads, attention sinks on the window layers,
and sigmoid-routed MoE.

Mirrors vllm/model_executor/models/mimo_v2.py (0.33.0):

* ``MiMoV2FlashDecoderLayer``: ``hybrid_layer_pattern[i] == 1`` makes layer ``i`` a window
  ("compressed softmax") layer built from the ``swa_*`` keys (``swa_num_attention_heads``,
  ``swa_num_key_value_heads``, ``swa_head_dim``, ``swa_v_head_dim``,
  ``sliding_window_size``, ``swa_rope_theta``); any other layer is full attention from
  ``num_attention_heads`` / ``num_key_value_heads`` / ``head_dim`` / ``v_head_dim``.
  ``moe_layer_freq[i]`` (a list) makes layer ``i`` a ``MiMoV2MoE``, else a ``MiMoV2MLP`` of
  ``intermediate_size``.
* ``MiMoV2Attention``: ``QKVParallelLinear(..., v_head_size=v_head_dim)`` — rows
  ``heads/tp·hd + kv/tp·hd + kv/tp·v_hd`` with ``kv/tp = max(1, kv // tp)`` — and an
  ``o_proj`` over ``heads·v_hd`` inputs.  With ``attention_projection_layout: fused_qkv`` and
  a block-quantized checkpoint the projection is a ``MergedColumnParallelLinear`` of
  ``[heads·hd, chunks·kv_chunk_rows]`` instead (``_fused_qkv_kv_chunk_rows``).  Window
  layers with ``add_swa_attention_sink_bias`` hold ``attention_sink_bias [heads/tp]``
  (``make_attention_sink``, model dtype).  One rotary cache per distinct
  ``(head_dim, theta)`` (``get_rope`` caches instances): default RoPE over
  ``max_position_embeddings`` rows and ``int(head_dim · partial_rotary_factor)`` columns.
* ``Attention(..., head_size_v=v_head_dim, per_layer_sliding_window=...)``: the KV spec
  carries ``head_size_v``, so a page is ``block · kv · (hd + v_hd) · bytes``
  (``FullAttentionSpec`` / ``SlidingWindowSpec`` in vllm/v1/kv_cache_interface.py); the
  layer sets ``cache_config.sliding_window = None``, so full layers never get a window.
* ``MiMoV2MoE``: ``GateLinear [E, H]`` in ``moe_router_dtype`` (default float32) with an fp32
  ``e_score_correction_bias [E]``, and the routed experts (``FusedMoEFactory``); no shared
  experts.
* Untied ``lm_head`` unless ``tie_word_embeddings``; the MTP layers are not built here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int
from vmemplan.models.moe_blocks import gated_mlp_tensors, stage_embedding, stage_head

__all__ = ["MiMoV2", "mimo_attention_kinds", "fused_qkv_kv_chunk_rows"]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def fused_qkv_kv_chunk_rows(num_heads: int, num_kv_heads: int, head_dim: int, v_head_dim: int,
                            tp: int, ckpt_tp: int, block: int = 128) -> int:
    """Padded ``K | V`` rows per checkpoint chunk, or 0 for the plain ``[Q | K | V]`` layout.

    Mirrors vllm/model_executor/models/mimo_v2.py::_fused_qkv_kv_chunk_rows (0.33.0)."""
    if ckpt_tp <= tp or ckpt_tp % tp or num_heads % ckpt_tp or num_kv_heads % ckpt_tp:
        return 0
    q_rows = num_heads // ckpt_tp * head_dim
    k_rows = num_kv_heads // ckpt_tp * head_dim
    v_rows = num_kv_heads // ckpt_tp * v_head_dim
    if q_rows % block or (k_rows % block == 0 and v_rows % block == 0):
        return 0
    return _cdiv(k_rows + v_rows, block) * block


def mimo_attention_kinds(text: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The two attention kinds of a MiMo-V2 config: ``{"full": {...}, "swa": {...}}`` with
    ``heads``, ``kv_heads``, ``head_dim``, ``v_head_dim``, ``theta``, ``window``, ``sinks``
    as ``MiMoV2FlashDecoderLayer.__init__`` passes them to ``MiMoV2Attention``."""
    n = _int(text, "num_hidden_layers")
    heads = _int(text, "num_attention_heads")
    kv = _int(text, "num_key_value_heads", default=heads)
    hd = _int(text, "head_dim", default=_int(text, "hidden_size") // max(1, heads))
    theta = text.get("rope_theta", 1000000)
    full = dict(heads=heads, kv_heads=kv, head_dim=hd,
                v_head_dim=_int(text, "v_head_dim", default=hd), theta=theta, window=None, sinks=False)
    out = {"full": full}
    pattern = text.get("hybrid_layer_pattern")
    if isinstance(pattern, list) and any(pattern[:n]):
        swa_hd = _int(text, "swa_head_dim")
        window = text.get("sliding_window_size", -1)
        out["swa"] = dict(
            heads=_int(text, "swa_num_attention_heads"),
            kv_heads=_int(text, "swa_num_key_value_heads"),
            head_dim=swa_hd,
            v_head_dim=_int(text, "swa_v_head_dim", default=swa_hd),
            theta=text.get("swa_rope_theta", theta),
            window=int(window) if isinstance(window, int) and window > -1 else None,
            sinks=bool(text.get("add_swa_attention_sink_bias", False)),
        )
    return out


@register
class MiMoV2(MoEDecoder):
    """MiMo-V2-Flash and MiMo-V2 (Pro): see the module docstring."""

    architectures = ("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM")
    router_correction_bias = True

    @property
    def router_dtype(self) -> str:  # type: ignore[override]
        return str(self.config.text.get("moe_router_dtype", "float32"))

    # -- config facts -------------------------------------------------------------
    def _kinds(self) -> dict[str, dict[str, Any]]:
        kinds = self.__dict__.get("_mimo_kinds")
        if kinds is None:
            kinds = self.__dict__["_mimo_kinds"] = mimo_attention_kinds(self.config.text)
        return kinds

    def layer_kind(self, index: int) -> str:
        pattern = self.config.text.get("hybrid_layer_pattern")
        if isinstance(pattern, list) and index < len(pattern) and pattern[index] == 1:
            return "swa"
        return "full"

    def is_moe_layer(self, index: int) -> bool:
        freq = self.config.text.get("moe_layer_freq")
        return isinstance(freq, list) and index < len(freq) and bool(freq[index])

    def num_experts(self) -> int:
        return _int(self.config.text, "n_routed_experts")

    def shared_intermediate(self) -> int:
        return 0

    def _fused_qkv_chunks(self) -> int:
        """``config.num_key_value_heads`` for the Pro ``fused_qkv`` layout of a block-quantized
        checkpoint, else 0 (MiMoV2FlashDecoderLayer.__init__)."""
        text = self.config.text
        q = text.get("quantization_config")
        blocked = isinstance(q, Mapping) and q.get("weight_block_size")
        if text.get("attention_projection_layout") == "fused_qkv" and blocked:
            return self.config.num_key_value_heads
        return 0

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        for kind in self._kinds().values():
            heads, kv = kind["heads"], kind["kv_heads"]
            if heads % tp:
                raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads",
                                 hint=f"use a divisor of {heads}")
            if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
                raise UsageError(f"--tensor-parallel-size {tp} and the {kv} KV heads do not divide one another",
                                 hint="vLLM splits or replicates whole KV heads")
        if tp > self.num_experts():
            raise UsageError(f"--tensor-parallel-size {tp} is greater than the {self.num_experts()} experts",
                             hint="vLLM's MiMoV2MoE refuses it")

    # -- weights ------------------------------------------------------------------
    def _attn_tensors(self, ctx: GraphContext, kind: str, n: int) -> list[WeightTensor]:
        k = self._kinds()[kind]
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        heads, kv, hd, vhd = k["heads"], k["kv_heads"], k["head_dim"], k["v_head_dim"]
        chunks = self._fused_qkv_chunks()
        chunk_rows = fused_qkv_kv_chunk_rows(heads, kv, hd, vhd, tp, chunks) if chunks else 0
        tag = f"[{kind}]"
        if chunk_rows:
            # MergedColumnParallelLinear([heads·hd, chunks·kv_chunk_rows]) split over tp
            qkv = WeightTensor(f"self_attn.qkv_proj{tag}.q+kv_chunks", "linear",
                               (heads * hd + chunks * chunk_rows) // tp, h, n, True, in_features_full=h)
        else:
            rows = heads // tp * hd + max(1, kv // tp) * (hd + vhd)
            qkv = WeightTensor(f"self_attn.qkv_proj{tag}", "linear", rows, h, n, True, in_features_full=h)
        out = [
            qkv,
            WeightTensor(f"self_attn.o_proj{tag}", "linear", h, heads // tp * vhd, n, True,
                         in_features_full=heads * vhd),
            # Attention's _k_scale/_v_scale/_q_scale/_prob_scale: four fp32 scalars
            attention_scales(f"self_attn.attn{tag}", n),
        ]
        if self.qkv_bias():
            out.append(WeightTensor(f"self_attn.qkv_proj{tag}.bias", "bias", qkv.rows, 1, n))
        if k["sinks"]:
            out.append(WeightTensor(f"self_attn.attention_sink_bias{tag}", "norm", heads // tp, 1, n))
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        tied = bool(self.config.tie_word_embeddings)
        out = stage_embedding(span, tied=tied)
        layers = range(span.start, span.end)
        counts = {kind: sum(1 for i in layers if self.layer_kind(i) == kind) for kind in ("full", "swa")}
        for kind, count in counts.items():
            if count:
                out += self._attn_tensors(ctx, kind, count)
        if n:
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
        dense = sum(1 for i in layers if not self.is_moe_layer(i))
        di = self.dense_intermediate()
        if dense and di % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the FFN width {di}")
        out += gated_mlp_tensors("mlp", di, h, dense, tp)
        out += self.moe_block_tensors(ctx, n - dense)
        return out + stage_head(span, head=not tied) + self._rotary_tensors(counts)

    def _rotary_tensors(self, counts: Mapping[str, int]) -> list[WeightTensor]:
        """One ``[max_position_embeddings, rotary_dim]`` cache (model dtype) per distinct
        ``get_rope`` key among the kinds present on this stage."""
        text = self.config.text
        positions = _int(text, "max_position_embeddings", default=32768)
        partial = text.get("partial_rotary_factor", 1.0)
        if isinstance(partial, bool) or not isinstance(partial, (int, float)):
            partial = 1.0
        keys: dict[tuple[Any, ...], str] = {}
        for kind, n in counts.items():
            if n:
                k = self._kinds()[kind]
                keys.setdefault((k["head_dim"], int(k["head_dim"] * partial), k["theta"]), kind)
        return [WeightTensor(f"rotary_emb[{kind}].cos_sin_cache", "buffer", positions, rdim)
                for (_, rdim, _), kind in keys.items()]

    # -- KV cache -----------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Full layers ``FullAttentionSpec``, window layers ``SlidingWindowSpec``, each with
        its kind's per-rank KV heads, ``head_size`` and ``head_size_v``
        (Attention.get_kv_cache_spec with ``head_size_v``, 0.33.0)."""
        tp = ctx.tensor_parallel_size
        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        specs_by_kind: dict[str, Any] = {}
        for kind, k in self._kinds().items():
            common = dict(block_size=ctx.block_size, num_kv_heads=max(1, k["kv_heads"] // tp),
                          head_size=k["head_dim"], head_size_v=k["v_head_dim"],
                          cache_dtype=cache_dtype, dtype_bytes=nbytes)
            if k["window"] is not None:
                specs_by_kind[kind] = SlidingWindowSpec(sliding_window=k["window"], **common)
            else:
                specs_by_kind[kind] = FullAttentionSpec(**common)
        start, end = self.layer_range(ctx)
        return {f"model.layers.{i}.self_attn.attn": specs_by_kind[self.layer_kind(i)] for i in range(start, end)}

    def notes(self) -> tuple[str, ...]:
        kinds = self._kinds()
        n = self.config.num_hidden_layers
        swa = sum(1 for i in range(n) if self.layer_kind(i) == "swa")
        if not swa or "swa" not in kinds:
            return ()
        return (f"{swa} of {n} layers use a {kinds['swa']['window']}-token sliding window with "
                f"{kinds['swa']['kv_heads']} KV heads (full layers: {kinds['full']['kv_heads']}); "
                f"K heads {kinds['full']['head_dim']} wide, V heads {kinds['full']['v_head_dim']}",)
