"""Hunyuan V3 (Tencent Hy3): GLM-4.5's MoE layout under Hunyuan's key names, with the
embedding, final norm and LM head built on every pipeline stage.

Mirrors vllm/model_executor/models/hy_v3.py (0.33.0):

* ``HYV3Attention``: ``qkv_proj`` and ``o_proj`` without biases, per-head RMSNorm ``q_norm`` /
  ``k_norm`` when ``qk_norm``, one rotary table over ``max_position_embeddings``; without the
  HPC attention backend (``HpcRopeNorm.support``) the table and the q/k norms are at the model
  dtype;
* ``HYV3FeedForward`` (merged ``gate_up_proj``, ``down_proj``) on the first
  ``first_k_dense_replace`` layers; ``HYV3MoEFused`` on the others: a GateLinear router in fp32,
  an fp32 ``expert_bias [E]``, experts of ``expert_hidden_dim`` and a ``shared_mlp`` of
  ``expert_hidden_dim × num_shared_experts``;
* ``HYV3Model`` builds ``embed_tokens`` and ``norm`` unconditionally (no PPMissingLayer) and
  ``HYV3ForCausalLM`` its ``lm_head`` on every stage, tied to the embedding when
  ``tie_word_embeddings``.  The MTP layer (``HYV3MTP``, vllm/model_executor/models/hy_v3_mtp.py) is
  counted as Glm4Moe counts its MTP layers: only while speculating with it.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.moe import Glm4Moe, _int

__all__ = ["HYV3"]


@register
class HYV3(Glm4Moe):
    """HYV3ForCausalLM (vllm/model_executor/models/hy_v3.py, 0.33.0); see the module."""

    architectures = ("HYV3ForCausalLM",)

    @property
    def qk_norm(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("qk_norm", False))

    def expert_intermediate(self) -> int:
        return _int(self.config.text, "expert_hidden_dim", "moe_intermediate_size",
                    default=self.config.intermediate_size)

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "num_shared_experts") * self.expert_intermediate()

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        cfg = self.config
        names = {t.name for t in out}
        rows = pad_vocab(cfg.vocab_size) // ctx.tensor_parallel_size
        if "model.embed_tokens" not in names:
            out.append(WeightTensor("model.embed_tokens", "embedding", rows, cfg.hidden_size))
        if "model.norm" not in names:
            out.append(WeightTensor("model.norm", "norm", cfg.hidden_size, 1))
        if "lm_head" not in names and not cfg.tie_word_embeddings:
            out.append(WeightTensor("lm_head", "lm_head", rows, cfg.hidden_size))
        if "lm_head" in names and cfg.tie_word_embeddings:
            # tied on a last stage: the head is the embedding this stage already holds
            out = [t for t in out if t.name != "lm_head"]
        return out
