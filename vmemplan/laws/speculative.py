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

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = [
    "KV_FREE_METHODS",
    "TARGET_BUILT_METHODS",
    "METHODS",
    "MTP_ALIASES",
    "SpeculativeConfig",
    "max_num_new_slots_for_drafting",
    "max_num_scheduled_tokens",
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
@frozen
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
