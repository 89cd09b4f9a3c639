"""Laguna (poolside): a sigmoid-routed MoE with per-layer head counts, interleaved sliding
windows and a rotary table per layer type.

Mirrors vllm/model_executor/models/laguna.py (0.33.0):

* ``LagunaAttention``: ``qkv_proj`` (QKVParallelLinear) and ``o_proj`` (RowParallelLinear)
  with the layer's own head count (``num_attention_heads_per_layer``), a softplus output gate
  ``g_proj`` (ColumnParallelLinear, ``num_heads`` outputs for ``gating: true`` / "per-head",
  ``num_heads × head_dim`` for "per-element"), per-head q/k RMSNorms, attention sinks on
  window layers when ``swa_attention_sink_enabled``, and ``get_rope`` with the layer type's
  sub-dict of ``rope_parameters`` (one cached table per distinct parameter set);
* ``LagunaMLP``: ``gate_proj`` and ``up_proj`` as two ColumnParallelLinear (not merged),
  ``down_proj``; the dense layers and the shared expert use it;
* ``LagunaMoE``: a ``GateLinear`` router at the model dtype, an fp32
  ``e_score_correction_bias [E]``, the routed experts as the fused pair
  (:class:`vmemplan.models.moe.MoEDecoder`), one shared expert of
  ``shared_expert_intermediate_size``; sparse where ``mlp_layer_types`` says "sparse";
* ``LagunaModel`` clears ``cache_config.sliding_window``: only ``sliding_attention`` layers
  get the window.

Compressed-tensors checkpoints (Laguna-XS.2-FP8): every Attention layer gets
``CompressedTensorsKVCacheMethod`` (vllm/model_executor/layers/quantization/compressed_tensors/
compressed_tensors.py::CompressedTensorsKVCacheMethod.create_weights): fp32 ``k/v/q_scale``
and model-dtype ``k/v/q_zero_point`` of one element each (``num_kv_heads`` under the
``attn_head`` strategy); a ``kv_cache_scheme`` turns ``--kv-cache-dtype auto`` into fp8
(vllm/model_executor/layers/attention/attention.py::Attention.__init__).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.moe import MoEDecoder, _int
from vmemplan.models.windowed import _attention_spec, _rope_positions, _window

__all__ = ["Laguna", "compressed_tensors_attention_tensors", "checkpoint_kv_cache_dtype", "split_shared_expert"]


def _compressed_tensors(config: Any) -> Mapping[str, Any] | None:
    qc = config.quantization_config
    if isinstance(qc, Mapping) and str(qc.get("quant_method", "")).lower() == "compressed-tensors":
        return qc
    return None


def checkpoint_kv_cache_dtype(config: Any, cache_dtype: str) -> str:
    """``--kv-cache-dtype auto`` becomes fp8 when a compressed-tensors checkpoint declares a
    ``kv_cache_scheme`` (vllm/model_executor/layers/attention/attention.py::Attention.__init__,
    0.33.0); any other choice stands."""
    qc = _compressed_tensors(config)
    if cache_dtype == "auto" and qc is not None and isinstance(qc.get("kv_cache_scheme"), Mapping):
        return "fp8"
    return cache_dtype


def compressed_tensors_attention_tensors(config: Any, layers: int, kv_heads: int,
                                         prefix: str = "self_attn.attn") -> list[WeightTensor]:
    """What a compressed-tensors checkpoint's KV-cache method leaves on each of ``layers`` Attention
    layers beyond the four fp32 scalar scales (:func:`attention_scales`), after loading.

    ``CompressedTensorsKVCacheMethod.create_weights`` registers k/v/q scale placeholders (fp32, one
    element each, ``kv_heads`` - the rank's KV heads - under the ``attn_head`` strategy) and zero
    points; its process_weights_after_loading re-registers ``_k/_v/_q_scale`` as those placeholders
    and deletes the placeholders and zero points (quantization/compressed_tensors/
    compressed_tensors.py, 0.33.0).  So a layer keeps ``3 x 4 x n + 4`` bytes of scales: nothing
    beyond the four scalars for one element (``tensor``), ``3 x 4 x (kv_heads - 1)`` more under
    ``attn_head``."""
    qc = _compressed_tensors(config)
    if qc is None or layers <= 0:
        return []
    scheme = qc.get("kv_cache_scheme")
    n = kv_heads if isinstance(scheme, Mapping) and scheme.get("strategy") == "attn_head" else 1
    if n <= 1:
        return []
    return [WeightTensor(f"{prefix}._k/_v/_q_scale(per head)", "buffer", n - 1, 1, 3 * layers, dtype="float32")]


def split_shared_expert(tensors: list[WeightTensor], name: str = "mlp.shared_expert") -> list[WeightTensor]:
    """The shared expert's merged ``gate_up_proj`` as two ColumnParallelLinear, ``gate_proj``
    and ``up_proj`` (each quantized and scaled on its own)."""
    out: list[WeightTensor] = []
    for t in tensors:
        if t.name == f"{name}.gate_up_proj":
            for leaf in ("gate_proj", "up_proj"):
                out.append(WeightTensor(f"{name}.{leaf}", t.kind, t.rows // 2, t.cols, t.count, t.quantizable,
                                        t.dtype, in_features_full=t.in_features_full,
                                        out_features_full=(t.out_features_full or 0) // 2 or None))
        else:
            out.append(t)
    return out


@register
class Laguna(MoEDecoder):
    """LagunaForCausalLM (vllm/model_executor/models/laguna.py, 0.33.0); see the module."""

    architectures = ("LagunaForCausalLM",)
    qk_norm = True
    router_correction_bias = True

    # -- config facts -------------------------------------------------------------------
    def heads(self, index: int) -> int:
        per_layer = self.config.text.get("num_attention_heads_per_layer")
        if isinstance(per_layer, list) and index < len(per_layer):
            return int(per_layer[index])
        return self.config.num_attention_heads

    def layer_types(self) -> list[str] | None:
        lt = self.config.text.get("layer_types")
        return [str(t) for t in lt] if isinstance(lt, list) else None

    def is_sliding(self, index: int) -> bool:
        lt = self.layer_types()
        return lt is not None and index < len(lt) and lt[index] == "sliding_attention"

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "shared_expert_intermediate_size")

    def is_moe_layer(self, index: int) -> bool:
        types = self.config.text.get("mlp_layer_types")
        if not isinstance(types, list):
            raise UsageError("this Laguna config has no mlp_layer_types",
                             hint="vLLM requires the LagunaConfig of transformers >= 5.17 (it lists them)")
        return index < len(types) and types[index] == "sparse" and self.num_experts() > 0

    def gate_rows(self, heads: int) -> int:
        """Output features of ``g_proj`` (whole model): one per head for ``gating: true`` or
        "per-head", one per channel otherwise; 0 without gating."""
        gating = self.config.text.get("gating", False)
        if not gating:
            return 0
        if gating is True or gating == "per-head":
            return heads
        return heads * self.config.head_dim

    def rope_params(self, index: int) -> dict[str, Any]:
        """The layer's rope parameters as LagunaAttention passes them to ``get_rope``."""
        text = self.config.text
        top = text.get("rope_parameters") or text.get("rope_scaling") or {}
        top = top if isinstance(top, Mapping) else {}
        lt = self.layer_types()
        kind = lt[index] if lt is not None and index < len(lt) else "full_attention"
        nested = any(isinstance(v, Mapping) for v in top.values())
        base = dict((top.get(kind) or top.get("full_attention") or {}) if nested else top)
        swa = text.get("swa_rope_parameters")
        params = dict(swa) if kind == "sliding_attention" and isinstance(swa, Mapping) else base
        partial = text.get("partial_rotary_factor")
        if partial is not None and "partial_rotary_factor" not in params:
            params["partial_rotary_factor"] = partial
        return params

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        for h in sorted({self.heads(i) for i in range(self.config.num_hidden_layers)}):
            if h % tp:
                raise UsageError(f"--tensor-parallel-size {tp} does not divide a layer's {h} attention heads",
                                 hint="LagunaAttention asserts num_heads % tp_size == 0")
        kv = self.config.num_key_value_heads
        if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
            raise UsageError(f"--tensor-parallel-size {tp} and the {kv} KV heads do not divide one another",
                             hint="vLLM splits or replicates whole KV heads")
        if tp > self.num_experts() > 0:
            raise UsageError(f"--tensor-parallel-size {tp} is greater than the {self.num_experts()} experts",
                             hint="LagunaMoE refuses it")

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        return checkpoint_kv_cache_dtype(self.config, cache_dtype)

    # -- weights ------------------------------------------------------------------------
    def moe_block_tensors(self, ctx: GraphContext, m: int) -> list[WeightTensor]:
        return split_shared_expert(super().moe_block_tensors(ctx, m))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        h, hd = cfg.hidden_size, cfg.head_dim
        tp = ctx.tensor_parallel_size
        start, end = self.layer_range(ctx)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        tied = self.head_tied()
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        kv_heads = self.kv_heads_per_rank(tp)
        kv_rows = kv_heads * hd
        out: list[WeightTensor] = []
        if first or (tied and last):
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        bias = bool(cfg.text.get("attention_bias", False))
        sinks = bool(cfg.text.get("swa_attention_sink_enabled", False))
        # attention by head count (layers with equal heads share one line)
        by_heads: dict[int, int] = {}
        for i in range(start, end):
            by_heads[self.heads(i)] = by_heads.get(self.heads(i), 0) + 1
        for heads, n in sorted(by_heads.items()):
            q_rows = heads // tp * hd
            out += [
                WeightTensor("self_attn.qkv_proj", "linear", q_rows + 2 * kv_rows, h, n, True,
                             in_features_full=h),
                WeightTensor("self_attn.o_proj", "linear", h, q_rows, n, True, in_features_full=heads * hd),
            ]
            if bias:
                out += [WeightTensor("self_attn.qkv_proj.bias", "bias", q_rows + 2 * kv_rows, 1, n),
                        WeightTensor("self_attn.o_proj.bias", "bias", h, 1, n)]
            g = self.gate_rows(heads)
            if g:
                out.append(WeightTensor("self_attn.g_proj", "linear", g // tp, h, n, True,
                                        in_features_full=h, out_features_full=g))
        if sinks:
            for i in range(start, end):
                if self.is_sliding(i):
                    out.append(WeightTensor("self_attn.sink", "norm", self.heads(i) // tp, 1))
        n = end - start
        if n:
            out += [
                WeightTensor("self_attn.q_norm+k_norm", "norm", hd, 1, 2 * n),
                WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n),
                attention_scales("self_attn.attn", n),
            ]
            out += compressed_tensors_attention_tensors(cfg, n, kv_heads)
        dense = sum(1 for i in range(start, end) if not self.is_moe_layer(i))
        if dense:
            di = self.dense_intermediate()
            out += [
                WeightTensor("mlp.gate_proj", "linear", di // tp, h, dense, True, in_features_full=h,
                             out_features_full=di),
                WeightTensor("mlp.up_proj", "linear", di // tp, h, dense, True, in_features_full=h,
                             out_features_full=di),
                WeightTensor("mlp.down_proj", "linear", h, di // tp, dense, True, in_features_full=di,
                             out_features_full=h),
            ]
        out += self.moe_block_tensors(ctx, n - dense)
        if last:
            out.append(WeightTensor("model.norm", "norm", h, 1))
            if not tied:
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        # one rotary table per distinct parameter set on this stage (get_rope's cache)
        tables: dict[str, tuple[int, int]] = {}
        for i in range(start, end):
            params = self.rope_params(i)
            partial = params.get("partial_rotary_factor") or 1.0
            rotary = int(params.get("rope_dim") or hd * float(partial))
            positions = _rope_positions(cfg.text, params, cfg.max_position_embeddings)
            tables.setdefault(repr(sorted(params.items())), (positions, rotary))
        for positions, rotary in tables.values():
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, rotary))
        return out

    # -- KV cache -----------------------------------------------------------------------
    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Full attention, or ``SlidingWindowSpec(sliding_window)`` on ``sliding_attention``
        layers (no model-level fallback: LagunaModel clears ``cache_config.sliding_window``)."""
        cfg = self.config
        heads = self.kv_heads_per_rank(ctx.tensor_parallel_size)
        window = None if ctx.disable_sliding_window else _window(cfg.text)
        start, end = self.layer_range(ctx)
        full = _attention_spec(ctx, num_kv_heads=heads, head_size=cfg.head_dim)
        swa = _attention_spec(ctx, num_kv_heads=heads, head_size=cfg.head_dim, window=window) if window else full
        return {f"model.layers.{i}.self_attn.attn": swa if self.is_sliding(i) else full for i in range(start, end)}

    def notes(self) -> tuple[str, ...]:
        lt = self.layer_types() or []
        n = sum(1 for t in lt[: self.config.num_hidden_layers] if t == "sliding_attention")
        out: tuple[str, ...] = ()
        if n:
            out += (f"{n} of {self.config.num_hidden_layers} layers use a {_window(self.config.text)}-token "
                    "sliding window",)
        if checkpoint_kv_cache_dtype(self.config, "auto") == "fp8":
            out += ("the checkpoint's compressed-tensors kv_cache_scheme makes --kv-cache-dtype auto an fp8 cache",)
        return out
