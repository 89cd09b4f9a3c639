"""Step 3.5 (StepFun Step-3.5-Flash): a sigmoid-routed MoE with more query heads on its
sliding-window layers than on its full-attention layers, and a rotary table per layer type.

Mirrors vllm/model_executor/models/step3p5.py (0.33.0):

* ``Step3p5Attention``: ``qkv_proj`` (QKVParallelLinear, bias with ``attention_bias``) and
  ``o_proj`` (RowParallelLinear, no bias) with the layer's own head count
  (``_get_num_attention_heads``: ``num_sliding_attention_heads``, or the remote-code
  ``attention_other_setting``, on ``sliding_attention`` layers; ``num_attention_heads``
  elsewhere), ``num_attention_groups`` KV heads, per-head GemmaRMSNorm ``q_norm`` / ``k_norm``,
  a ColumnParallel ``g_proj [heads, H]`` with ``use_head_wise_attn_gate``, and ``get_rope``
  with the layer's parameters (``_get_rope_parameters``: the layer type's sub-dict of
  ``rope_parameters``, or the remote-code per-layer ``rope_theta`` / ``partial_rotary_factors``
  lists with ``rope_scaling`` only on ``yarn_only_types``); the window ``sliding_window`` only
  on ``sliding_attention`` layers (Step3p5DecoderLayer clears ``cache_config.sliding_window``);
* ``Step3p5MLP``: merged ``gate_up_proj`` and ``down_proj`` without biases, for the dense
  layers (``intermediate_size``) and the shared expert (``share_expert_dim``);
* ``FusedMoEBlock`` on the layers ``_is_moe_layer`` names (``mlp_layer_types`` "sparse", or
  the remote-code ``moe_layers_enum``, else every layer but the first): a GateLinear router in
  fp32 ``[E, H]``, an fp32 ``router_bias [E]``, ``moe_num_experts`` routed experts of
  ``moe_intermediate_size``, the shared expert;
* ``Step3p5Model``: ``embed_tokens`` on the first stage (and the last when tied), GemmaRMSNorm
  input / post-attention / final norms; ``Step3p5ForCausalLM``: its own ``lm_head`` on the last
  stage, tied or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.laguna import Laguna
from vmemplan.models.moe import MoEDecoder, _int

__all__ = ["Step3p5"]


@register
class Step3p5(Laguna):
    """Step3p5ForCausalLM (vllm/model_executor/models/step3p5.py, 0.33.0); see the module."""

    architectures = ("Step3p5ForCausalLM",)
    router_dtype = "float32"
    router_correction_bias = True
    tied_head = False  # the LM head is always a ParallelLMHead of its own

    # -- config facts -------------------------------------------------------------------
    def num_experts(self) -> int:
        return _int(self.config.text, "moe_num_experts", "n_routed_experts", "num_local_experts")

    def top_k(self) -> int:
        return _int(self.config.text, "moe_top_k", "num_experts_per_tok", default=1)

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "share_expert_dim", "share_expert_dims")

    def layer_types(self) -> list[str] | None:
        text = self.config.text
        lt = text.get("layer_types")
        if not isinstance(lt, list):
            return None
        mtp = text.get("mtp_layer_types")
        return [str(t) for t in lt + (mtp if isinstance(mtp, list) else [])]

    def heads(self, index: int) -> int:
        text = self.config.text
        if self.is_sliding(index):
            n = _int(text, "num_sliding_attention_heads")
            if n:
                return n
            other = text.get("attention_other_setting")
            if isinstance(other, Mapping) and other.get("attention_type") == "sliding_attention":
                return int(other["num_attention_heads"])
        return self.config.num_attention_heads

    def is_moe_layer(self, index: int) -> bool:
        text = self.config.text
        types = text.get("mlp_layer_types")
        if isinstance(types, list):
            mtp = text.get("mtp_mlp_layer_types")
            types = types + (mtp if isinstance(mtp, list) else [])
            return index < len(types) and types[index] == "sparse"
        enum = text.get("moe_layers_enum")
        if isinstance(enum, str):
            return index in {int(i) for i in enum.strip().split(",")}
        return 0 < index < self.config.num_hidden_layers

    def gate_rows(self, heads: int) -> int:
        return heads if self.config.text.get("use_head_wise_attn_gate", False) else 0

    def rope_params(self, index: int) -> dict[str, Any]:
        """The layer's rope parameters as ``_get_rope_parameters`` builds them."""
        text = self.config.text
        kind = "sliding_attention" if self.is_sliding(index) else "full_attention"
        lt = self.layer_types()
        if lt is not None and index < len(lt):
            kind = lt[index]
        top = text.get("rope_parameters") or {}
        if isinstance(top, Mapping) and isinstance(top.get(kind), Mapping):
            params = dict(top[kind])
            params.setdefault("partial_rotary_factor", 1.0)
            return params
        return layer_rope_params(text, index, kind, default_theta=10000)

    # -- weights ------------------------------------------------------------------------
    def moe_block_tensors(self, ctx: GraphContext, m: int) -> list[WeightTensor]:
        # the shared expert keeps its merged gate_up_proj (Step3p5MLP)
        return MoEDecoder.moe_block_tensors(self, ctx, m)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        # Laguna's dense MLP is gate_proj + up_proj; Step3p5MLP merges them
        merged: list[WeightTensor] = []
        for t in out:
            if t.name == "mlp.up_proj":
                continue
            if t.name == "mlp.gate_proj":
                full = (t.out_features_full or 0) * 2 or None
                t = WeightTensor("mlp.gate_up_proj", t.kind, 2 * t.rows, t.cols, t.count, t.quantizable,
                                 t.dtype, in_features_full=t.in_features_full, out_features_full=full)
            merged.append(t)
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        if last and ctx.pipeline_rank != 0 and self.config.tie_word_embeddings:
            # Step3p5Model keeps embed_tokens on the last stage when tied, beside lm_head
            rows = pad_vocab(self.config.vocab_size) // ctx.tensor_parallel_size
            merged.append(WeightTensor("model.embed_tokens", "embedding", rows, self.config.hidden_size))
        return merged


def layer_rope_params(text: Mapping[str, Any], index: int, kind: str, *, default_theta: float,
                      yarn_only_applies: bool = True) -> dict[str, Any]:
    """``get_rope``'s parameters for layer ``index`` of kind ``kind`` in the Step-3.5 / Step-5
    config style: ``rope_scaling`` (dropped for a kind outside ``yarn_only_types`` when
    ``yarn_only_applies``), a per-layer or single ``rope_theta`` and per-layer
    ``partial_rotary_factors`` (vllm/model_executor/models/step3p5.py and
    vllm/models/step5/nvidia/model.py, 0.33.0)."""
    scaling = text.get("rope_scaling")
    yarn_only = text.get("yarn_only_types")
    if yarn_only_applies and yarn_only and kind not in yarn_only:
        scaling = None
    params = dict(scaling) if isinstance(scaling, Mapping) else {}
    params.setdefault("rope_type", "default")
    theta = text.get("rope_theta", default_theta)
    params["rope_theta"] = theta[index] if isinstance(theta, list) else theta
    factors = text.get("partial_rotary_factors")
    params["partial_rotary_factor"] = float(factors[index]) if isinstance(factors, list) and factors else 1.0
    return params
