"""Speculative decoding: the ``--speculative-config`` flag, the drafter's weights and KV cache
layers, and the speculative tokens a step carries.

Rules mirror vLLM 0.33.0:

* parsing and method inference: vllm/config/speculative.py::SpeculativeConfig.__post_init__
  (``method`` defaults to ``draft_model``, or ``ngram`` when ``model`` is "ngram"; the MTP
  aliases such as ``deepseek_mtp`` become ``mtp``; a model name containing "eagle-" / "eagle3"
  selects those methods; ngram defaults ``prompt_lookup_min = max = 5``);
* drafter weights: vllm/model_executor/models/llama_eagle.py (EAGLE: decoder layers, the first
  without its input norm, and ``fc`` Linear(2h → h)), llama_eagle3.py (EAGLE-3: the first
  layer's qkv reads 2h, an extra ``hidden_norm`` per layer, ``fc`` Linear(aux·h_target → h), a
  final norm and an own ``lm_head`` of ``draft_vocab_size`` rows plus the draft→target id map);
  the embedding (and EAGLE-1's head) is shared with the target when the checkpoint has none or
  the same one (vllm/v1/spec_decode/llm_base_proposer.py::_maybe_share_embeddings, PP = 1);
* drafter KV: its attention layers are ordinary layers of the forward context, so they get
  specs and join the KV pool (one EAGLE layer on Llama-3.1-8B gives 33 full-attention layers);
  ngram, suffix and custom proposers add none; MTP layers are the target adapter's own
  (``GraphContext.speculative_method``);
* tokens in flight: ``uniform_decode_query_len = 1 + k`` (CUDA-graph sizes);
  ``max_num_new_slots_for_drafting`` (vllm/config/speculative.py) and
  ``max_num_scheduled_tokens`` (vllm/config/vllm.py::VllmConfig._set_max_num_scheduled_tokens).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vmemplan.errors import UsageError

if TYPE_CHECKING:
    from vmemplan.model_config import ModelConfig
    from vmemplan.models.base import GraphContext, WeightTensor

__all__ = [
    "KV_FREE_METHODS",
    "TARGET_BUILT_METHODS",
    "MTP_ALIASES",
    "SpeculativeConfig",
    "drafter_kv_specs",
    "drafter_weight_tensors",
    "max_num_new_slots_for_drafting",
    "max_num_scheduled_tokens",
    "parse_speculative_config",
    "uniform_decode_query_len",
]

#: methods whose drafter holds no weights and no KV cache on the GPU
KV_FREE_METHODS = frozenset({"ngram", "ngram_gpu", "suffix", "custom_class"})
#: method names vLLM 0.33.0 maps to "mtp" (MTPModelTypes in vllm/config/speculative.py)
MTP_ALIASES = frozenset({
    "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
    "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
    "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
    "bailing_hybrid_mtp", "mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp",
    "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp",
})
#: methods whose drafter layers the target adapter lists itself (``Adapter.builds_drafter``):
#: MTP layers, and DeepSeek-V4.1's DSpark (its weights ship in the target checkpoint and its
#: config is the target's: vllm/config/speculative.py::SpeculativeConfig.__post_init__, 0.33.0)
TARGET_BUILT_METHODS = frozenset({"mtp", "dspark"})
METHODS = frozenset({"ngram", "ngram_gpu", "draft_model", "suffix", "custom_class", "eagle", "eagle3",
                     "extract_hidden_states", "dflash", "dspark", "mtp"})
_KNOWN_KEYS = frozenset({
    "method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "prompt_lookup_min",
    "prompt_lookup_max", "parallel_drafting", "quantization", "max_model_len", "revision",
    "enforce_eager", "kv_cache_dtype", "disable_padded_drafter_batch", "attention_backend",
    "code_revision", "moe_backend", "tensor_parallel_size", "draft_lm_head_quantization",
    "use_local_argmax_reduction", "use_heterogeneous_vocab", "rejection_sample_method",
    "draft_sample_method", "disable_eagle_block_drop", "disable_lookahead_block_hashes",
    "index_share_for_mtp_iteration", "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "speculative_token_tree",
})


@dataclass(frozen=True)
class SpeculativeConfig:
    """A parsed ``--speculative-config``."""

    method: str
    num_speculative_tokens: int
    model: str | None = None
    draft_tensor_parallel_size: int | None = None
    parallel_drafting: bool = False
    prompt_lookup_min: int | None = None
    prompt_lookup_max: int | None = None

    @property
    def adds_kv(self) -> bool:
        """Whether the drafter's layers join the KV pool (EAGLE, EAGLE-3, MTP, draft models)."""
        return self.method not in KV_FREE_METHODS

    @property
    def uses_draft_model(self) -> bool:
        return self.method == "draft_model"


def parse_speculative_config(value: str | Mapping[str, Any] | None, *,
                             target_num_nextn_layers: int | None = None) -> SpeculativeConfig | None:
    """Parse ``--speculative-config`` (a JSON object) as vLLM 0.33.0 does.

    ``target_num_nextn_layers`` (the target's ``num_nextn_predict_layers``) is the default
    ``num_speculative_tokens`` for MTP.  Raises :class:`UsageError` where vLLM raises.
    Mirrors vllm/config/speculative.py::SpeculativeConfig.__post_init__ (0.33.0).
    """
    if value is None:
        return None
    data: Any = value
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--speculative-config is not valid JSON: {exc.msg}",
                             hint='e.g. --speculative-config \'{"method": "eagle3", "model": "...", '
                                  '"num_speculative_tokens": 3}\'') from None
    if not isinstance(data, Mapping):
        raise UsageError("--speculative-config must be a JSON object")
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise UsageError(f"--speculative-config: unknown key(s) {', '.join(unknown)}")
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise UsageError("--speculative-config: model must be a string")
    method = data.get("method")
    if method is not None and not isinstance(method, str):
        raise UsageError("--speculative-config: method must be a string")
    if method is None:
        if model in ("ngram", "[ngram]"):
            method = "ngram"
        elif model is not None and "eagle-" in model.lower():
            method = "eagle"
        elif model is not None and "eagle3" in model.lower():
            method = "eagle3"
        else:
            method = "draft_model"
    method = method.lower()
    if method == "[ngram]":
        method = "ngram"
    if method in MTP_ALIASES:
        method = "mtp"
    if method not in METHODS:
        raise UsageError(f"--speculative-config: unknown method {method!r}",
                         hint="one of " + ", ".join(sorted(METHODS)))
    k = data.get("num_speculative_tokens")
    if k is None and method == "mtp" and target_num_nextn_layers:
        k = target_num_nextn_layers
    if k is None:
        raise UsageError("--speculative-config needs num_speculative_tokens"
                         + (" (the target has no MTP layers to default it from)" if method == "mtp" else ""))
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise UsageError(f"--speculative-config: num_speculative_tokens must be a positive whole number, got {k!r}")
    if model is None and method in ("eagle", "eagle3", "draft_model", "dflash"):
        raise UsageError(f"--speculative-config: method {method} needs a model (the drafter)")
    if method == "mtp" and target_num_nextn_layers and k > target_num_nextn_layers and k % target_num_nextn_layers:
        raise UsageError(f"--speculative-config: num_speculative_tokens {k} must be divisible by the "
                         f"{target_num_nextn_layers} MTP layers")
    lo, hi = data.get("prompt_lookup_min"), data.get("prompt_lookup_max")
    if method in ("ngram", "ngram_gpu"):
        if lo is None and hi is None:
            lo = hi = 5
        elif lo is None:
            lo = hi
        elif hi is None:
            hi = lo
        if lo > hi:
            raise UsageError(f"--speculative-config: prompt_lookup_min {lo} must be <= prompt_lookup_max {hi}")
    dtp = data.get("draft_tensor_parallel_size")
    if dtp is not None and (isinstance(dtp, bool) or not isinstance(dtp, int) or dtp < 1):
        raise UsageError("--speculative-config: draft_tensor_parallel_size must be a positive whole number")
    return SpeculativeConfig(method=method, num_speculative_tokens=int(k), model=model,
                             draft_tensor_parallel_size=dtp, parallel_drafting=bool(data.get("parallel_drafting", False)),
                             prompt_lookup_min=lo, prompt_lookup_max=hi)


# --------------------------------------------------------------------------------------
# Tokens in flight
# --------------------------------------------------------------------------------------


def uniform_decode_query_len(num_speculative_tokens: int) -> int:
    """Query tokens of one decoding request: ``1 + k`` (the sampled token plus k drafts).

    Sets the FULL-graph decode sizes and the default max capture size
    (vllm/v1/cudagraph_dispatcher.py, vllm/config/vllm.py::_set_cudagraph_sizes, 0.33.0)."""
    return 1 + max(0, num_speculative_tokens)


def max_num_new_slots_for_drafting(spec: SpeculativeConfig | None) -> int:
    """Extra query slots per request the drafter adds to the batch: 0 for serial EAGLE-type,
    MTP and ngram; 1 for a draft model; ``k - 1`` for parallel (P-EAGLE) drafting, ``k`` for
    parallel draft models (PARD); 0 for DFlash / DSpark.

    Mirrors vllm/config/speculative.py::SpeculativeConfig.max_num_new_slots_for_drafting (0.33.0)."""
    if spec is None:
        return 0
    k = spec.num_speculative_tokens
    if spec.method in ("dflash", "dspark"):
        return 0
    if spec.parallel_drafting:
        return k if spec.uses_draft_model else k - 1
    return 1 if spec.uses_draft_model else 0


def _ver(v: str | tuple[int, ...] | None) -> tuple[int, ...]:
    if v is None:
        return (0, 33, 0)
    if isinstance(v, tuple):
        return v
    parts = []
    for p in v.split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def max_num_scheduled_tokens(*, max_num_batched_tokens: int, max_num_seqs: int,
                             spec: SpeculativeConfig | None, vllm_version: str | tuple[int, ...] | None = None) -> int:
    """Tokens the scheduler may put in one step.

    * 0.21 – 0.27: ``mnbt − max_num_new_slots_for_drafting × max_num_seqs`` (the worst case
      reserved up front);
    * 0.28 and later (0.33.0): ``mnbt``; the scheduler instead charges each scheduled request
      its drafting slots against the input budget (vllm/v1/core/sched/scheduler.py::schedule,
      ``input_budget - draft_slots``).

    Raises :class:`UsageError` when nothing could be scheduled, as vLLM does.  Mirrors
    vllm/config/vllm.py::VllmConfig._set_max_num_scheduled_tokens.
    """
    if spec is None:
        return max_num_batched_tokens
    slots = max_num_new_slots_for_drafting(spec)
    value = max_num_batched_tokens
    if (0, 21) <= _ver(vllm_version)[:2] < (0, 28):
        value = max_num_batched_tokens - slots * max_num_seqs
    if value <= 0:
        raise UsageError(f"max_num_scheduled_tokens would be {value}: the speculative settings leave no tokens "
                         "to schedule", hint="raise --max-num-batched-tokens or lower num_speculative_tokens / "
                                             "--max-num-seqs")
    if max_num_batched_tokens <= slots:
        raise UsageError("--max-num-batched-tokens leaves no slot for a token beside the draft slots")
    return value


# --------------------------------------------------------------------------------------
# Drafter weights and KV
# --------------------------------------------------------------------------------------


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
    from vmemplan.models.base import GraphContext as _Ctx
    from vmemplan.models.base import WeightTensor
    from vmemplan.models.dense import pad_vocab

    if spec is None or spec.method in KV_FREE_METHODS or spec.method in TARGET_BUILT_METHODS:
        return []
    if ctx.pipeline_rank != ctx.pipeline_parallel_size - 1:
        return []
    tp = ctx.tensor_parallel_size
    if spec.method == "draft_model":
        from vmemplan.models.base import adapter_for

        d = _draft_cfg(spec, target, draft)
        dtp = spec.draft_tensor_parallel_size or tp
        dctx = _Ctx(tensor_parallel_size=dtp, model_dtype=ctx.model_dtype, block_size=ctx.block_size,
                    cache_dtype=ctx.cache_dtype, max_model_len=ctx.max_model_len)
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
    from vmemplan.laws.kv_specs import FullAttentionSpec, kv_dtype_bytes
    from vmemplan.model_config import dtype_bytes

    if spec is None or not spec.adds_kv or spec.method in TARGET_BUILT_METHODS:
        return {}
    if ctx.pipeline_rank != ctx.pipeline_parallel_size - 1:
        return {}
    if spec.method == "draft_model":
        from vmemplan.models.base import GraphContext as _Ctx
        from vmemplan.models.base import adapter_for

        d = _draft_cfg(spec, target, draft)
        dtp = spec.draft_tensor_parallel_size or ctx.tensor_parallel_size
        dctx = _Ctx(tensor_parallel_size=dtp, model_dtype=ctx.model_dtype, block_size=ctx.block_size,
                    cache_dtype=ctx.cache_dtype, max_model_len=ctx.max_model_len)
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
