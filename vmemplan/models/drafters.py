"""The drafter's tensors and KV cache on one rank, for speculative decoding.

The drafter is a model graph like any other: an EAGLE / EAGLE-3 head built here from the
target's (or the head's own) config, or a whole draft model priced by its own adapter.
Which methods add a drafter is stated in :mod:`vmemplan.laws.speculative`.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import FullAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.laws.speculative import KV_FREE_METHODS, TARGET_BUILT_METHODS, SpeculativeConfig
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.dense import pad_vocab

__all__ = ["drafter_kv_specs", "drafter_weight_tensors"]


def _draft_cfg(spec: SpeculativeConfig, target: ModelConfig, draft: ModelConfig | None) -> ModelConfig:
    if draft is not None:
        return draft
    if spec.method in ("eagle", "eagle3"):
        # No drafter config at hand: an EAGLE head is one decoder layer of the target's width.
        return target
    raise UsageError(f"speculative method {spec.method} needs the drafter's config.json",
                     hint="pass the draft model's config (it is resolved like the target)")


def _head_layers(spec: SpeculativeConfig, target: ModelConfig, draft: ModelConfig | None) -> int:
    if draft is None:
        return 1
    return draft.num_hidden_layers


def drafter_weight_tensors(spec: SpeculativeConfig | None, target: ModelConfig, ctx: GraphContext,
                           draft: ModelConfig | None = None, *, share_embeddings: bool = True) -> list[WeightTensor]:
    """Tensors the drafter adds to one rank (they count in "Model loading took").

    * EAGLE (llama_eagle.py): per layer the Llama decoder layer (the first without
      ``input_layernorm``), plus ``fc`` Linear(2h → h) replicated; embedding shared with the
      target unless ``share_embeddings`` is False; the LM head is always the target's.
    * EAGLE-3 (llama_eagle3.py): as EAGLE but the first layer's qkv reads 2h, each layer has a
      ``hidden_norm``, ``fc`` reads ``num_aux_hidden_states (3) × target_hidden``, a final norm,
      its own ``lm_head`` of ``draft_vocab_size`` rows and, when that differs from the target
      vocabulary, an int64 ``draft_id_to_target_id`` map.
    * draft model: the drafter's own adapter at ``draft_tensor_parallel_size`` (default the
      target's tp).
    * MTP, DSpark, ngram, suffix, custom: none here (MTP layers and DeepSeek-V4.1's DSpark
      drafter belong to the target adapter).
    Only the last pipeline stage holds a drafter (vLLM runs it with the sampler).
    """

    if spec is None or spec.method in KV_FREE_METHODS or spec.method in TARGET_BUILT_METHODS:
        return []
    if ctx.pipeline_rank != ctx.pipeline_parallel_size - 1:
        return []
    tp = ctx.tensor_parallel_size
    if spec.method == "draft_model":
        d = _draft_cfg(spec, target, draft)
        dtp = spec.draft_tensor_parallel_size or tp
        dctx = GraphContext(tensor_parallel_size=dtp, model_dtype=ctx.model_dtype, block_size=ctx.block_size,
                            cache_dtype=ctx.cache_dtype, max_model_len=ctx.max_model_len, sm_major=ctx.sm_major,
                            vllm_version=ctx.vllm_version)
        return [WeightTensor(f"draft_model.{t.name}", t.kind, t.rows, t.cols, t.count, t.quantizable, t.dtype,
                             t.in_features_full, t.allocations, t.out_features_full)
                for t in adapter_for(d).weight_tensors(dctx)]
    if spec.method not in ("eagle", "eagle3"):
        raise UsageError(f"drafter weights for method {spec.method} are not modelled",
                         hint="supported: eagle, eagle3, mtp and dspark (target adapters), draft_model, ngram")
    d = _draft_cfg(spec, target, draft)
    n = _head_layers(spec, target, draft)
    h, hd = d.hidden_size, d.head_dim
    heads_q = d.num_attention_heads // tp
    kv = max(1, d.num_key_value_heads // tp)
    inter = d.intermediate_size // tp
    qkv_rows = (heads_q + 2 * kv) * hd
    out: list[WeightTensor] = []
    eagle3 = spec.method == "eagle3"
    first_in = 2 * h if eagle3 else h
    out.append(WeightTensor("drafter.layers.0.self_attn.qkv_proj", "linear", qkv_rows, first_in, 1, True,
                            in_features_full=first_in))
    if n > 1:
        out.append(WeightTensor("drafter.layers.self_attn.qkv_proj", "linear", qkv_rows, h, n - 1, True,
                                in_features_full=h))
    out += [
        WeightTensor("drafter.layers.self_attn.o_proj", "linear", h, heads_q * hd, n, True,
                     in_features_full=d.num_attention_heads * hd),
        WeightTensor("drafter.layers.mlp.gate_up_proj", "linear", 2 * inter, h, n, True, in_features_full=h),
        WeightTensor("drafter.layers.mlp.down_proj", "linear", h, inter, n, True, in_features_full=d.intermediate_size),
    ]
    # norms: EAGLE drops the first layer's input_layernorm; EAGLE-3 adds hidden_norm per layer
    norms = 2 * n - 1 if not eagle3 else 3 * n
    out.append(WeightTensor("drafter.layers.norms", "norm", h, 1, norms))
    raw = d.raw if draft is not None else {}
    if eagle3:
        aux = int(raw.get("num_aux_hidden_states") or len((raw.get("eagle_config") or {}).get(
            "eagle_aux_hidden_state_layer_ids") or []) or 3)
        target_h = int(raw.get("target_hidden_size") or target.hidden_size)
        out.append(WeightTensor("drafter.fc", "linear", h, aux * target_h, 1, True, in_features_full=aux * target_h))
        out.append(WeightTensor("drafter.norm", "norm", h, 1))
        dv = int(raw.get("draft_vocab_size") or d.vocab_size)
        out.append(WeightTensor("drafter.lm_head", "lm_head", pad_vocab(dv) // tp, h))
        if dv != target.vocab_size:
            # an int64 id per draft token: priced as two fp32-wide elements (8 bytes)
            out.append(WeightTensor("drafter.draft_id_to_target_id", "buffer", dv, 2, dtype="float32"))
    else:
        out.append(WeightTensor("drafter.fc", "linear", h, 2 * h, 1, True, in_features_full=2 * h))
    if not share_embeddings:
        out.append(WeightTensor("drafter.embed_tokens", "embedding", pad_vocab(d.vocab_size) // tp, h))
    return out


def drafter_kv_specs(spec: SpeculativeConfig | None, target: ModelConfig, ctx: GraphContext,
                     draft: ModelConfig | None = None) -> dict[str, Any]:
    """KV cache specs of the drafter's attention layers (named after the target's last layer,
    as vLLM numbers them: ``model.layers.{L + i}``).  Empty for ngram / suffix / custom, and for
    MTP (the target adapter lists its MTP layers).  A draft model contributes its own adapter's
    specs under a ``draft_model.`` prefix.
    """

    if spec is None or not spec.adds_kv or spec.method in TARGET_BUILT_METHODS:
        return {}
    if ctx.pipeline_rank != ctx.pipeline_parallel_size - 1:
        return {}
    if spec.method == "draft_model":
        d = _draft_cfg(spec, target, draft)
        dtp = spec.draft_tensor_parallel_size or ctx.tensor_parallel_size
        dctx = GraphContext(tensor_parallel_size=dtp, model_dtype=ctx.model_dtype, block_size=ctx.block_size,
                            cache_dtype=ctx.cache_dtype, max_model_len=ctx.max_model_len, sm_major=ctx.sm_major,
                            vllm_version=ctx.vllm_version)
        return {f"draft_model.{k}": v for k, v in adapter_for(d).kv_cache_specs(dctx).items()}
    d = _draft_cfg(spec, target, draft)
    n = _head_layers(spec, target, draft)
    heads = max(1, d.num_key_value_heads // ctx.tensor_parallel_size)
    nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
    cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
    base = target.num_hidden_layers
    return {
        f"model.layers.{base + i}.self_attn.attn": FullAttentionSpec(
            block_size=ctx.block_size, num_kv_heads=heads, head_size=d.head_dim,
            cache_dtype=cache_dtype, dtype_bytes=nbytes)
        for i in range(n)
    }
