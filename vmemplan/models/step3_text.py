"""Step3 text (StepFun): multi-query attention with a shared low-rank query, and MoE layers
listed by ``moe_layers_enum``.

Mirrors vllm/model_executor/models/step3_text.py (0.33.0) with the config class
vllm/transformers_utils/configs/step3_vl.py::Step3TextConfig:

* ``Step3TextAttention``: one KV head (``num_kv_heads`` must be 1) replicated on every rank; a
  ReplicatedLinear ``qkv_proj [share_q_dim + 2·head_dim, H]``, an RMSNorm ``inter_norm
  [share_q_dim]`` on the shared query, a ColumnParallel ``wq [heads·head_dim, share_q_dim]``,
  a RowParallel ``o_proj``; one rotary table ``[max_position_embedding, head_dim]``;
* ``Step3TextDecoderLayer``: on the layers ``moe_layers_enum`` lists (comma-separated; every
  layer but the first when absent) a ``GateLinear`` router at the model dtype, ``moe_num_experts``
  experts of ``moe_intermediate_size`` (top ``moe_top_k``) and a ``share_expert`` MLP of
  ``share_expert_dim``; elsewhere a gated MLP of ``intermediate_size``; two RMSNorms;
* ``Step3TextForCausalLM``: its own LM head on the last stage (never tied).

vLLM derives the context from ``max_seq_len`` (the config has no ``max_position_embeddings``).
"""

from __future__ import annotations

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import register
from vmemplan.models.declared import remap_config
from vmemplan.models.moe import MoEDecoder, _int

__all__ = ["Step3Text"]

_ATTN = ("self_attn.qkv_proj", "self_attn.o_proj", "self_attn.qkv_proj.bias", "self_attn.o_proj.bias",
         "rotary_emb.cos_sin_cache")


@register
class Step3Text(MoEDecoder):
    """Step3TextForCausalLM (vllm/model_executor/models/step3_text.py, 0.33.0); see the module."""

    architectures = ("Step3TextForCausalLM",)
    tied_head = False
    attn_qkv_bias = attn_o_bias = mlp_has_bias = False

    def __init__(self, config: ModelConfig) -> None:
        if "max_position_embeddings" not in config.text and "max_seq_len" in config.text:
            config = remap_config(config, {"max_position_embeddings": "max_seq_len"})
        super().__init__(config)

    def num_experts(self) -> int:
        return _int(self.config.text, "moe_num_experts")

    def top_k(self) -> int:
        return _int(self.config.text, "moe_top_k", default=1)

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "share_expert_dim")

    def is_moe_layer(self, index: int) -> bool:
        listed = self.config.text.get("moe_layers_enum")
        if isinstance(listed, str):
            try:
                return index in {int(i) for i in listed.strip().split(",")}
            except ValueError as exc:
                raise UsageError(f"moe_layers_enum {listed!r} is not a comma-separated list of layers") from exc
        if isinstance(listed, list):
            raise UsageError("moe_layers_enum is a list; vLLM's Step3TextDecoderLayer reads a comma-separated string",
                             hint="vLLM fails on it (moe_layers_enum.strip())")
        return index >= 1

    def kv_heads_per_rank(self, tp: int) -> int:
        return 1

    def q_size(self) -> int:
        return _int(self.config.text, "share_q_dim") or self.config.head_dim

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        if heads % tp:
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads",
                             hint=f"use a divisor of {heads}")
        if _int(self.config.text, "num_attention_groups", default=1) != 1:
            raise UsageError("Step3TextAttention requires one KV head (num_attention_groups 1)")
        if tp > self.num_experts() > 0:
            raise UsageError(f"--tensor-parallel-size {tp} is greater than the {self.num_experts()} experts",
                             hint="Step3's FusedMoEBlock refuses it")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = [t for t in super().weight_tensors(ctx) if t.name not in _ATTN]
        cfg = self.config
        h, hd = cfg.hidden_size, cfg.head_dim
        tp = ctx.tensor_parallel_size
        start, end = self.layer_range(ctx)
        n = end - start
        if n:
            q = self.q_size()
            heads = cfg.num_attention_heads
            out += [
                WeightTensor("self_attn.qkv_proj", "linear", q + 2 * hd, h, n, True, in_features_full=h),
                WeightTensor("self_attn.inter_norm", "norm", q, 1, n),
                WeightTensor("self_attn.wq", "linear", heads // tp * hd, q, n, True, in_features_full=q,
                             out_features_full=heads * hd),
                WeightTensor("self_attn.o_proj", "linear", h, heads // tp * hd, n, True, in_features_full=heads * hd),
                WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                             _int(cfg.text, "max_position_embedding", default=8192), hd),
            ]
        return out
