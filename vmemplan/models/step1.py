"""Step1 (vllm/model_executor/models/step1.py::Step1ForCausalLM, vLLM 0.33.0).

``StepDecoderModel`` is Llama's body: ``VocabParallelEmbedding`` on the first stage (and the last
when tied), per layer a ``QKVParallelLinear`` over ``num_attention_groups`` KV heads and a
``RowParallelLinear`` ``o_proj`` (biases when ``attention_bias``), a gated ``gate_up_proj`` /
``down_proj`` (biases when ``mlp_bias``), two ``RMSNorm``, a final ``RMSNorm`` and a
``ParallelLMHead`` tied to the embedding when ``tie_word_embeddings`` (the default there is
True).  No rotary embedding: ``StepAttention`` gives its ``Attention`` this rank's ALiBi slopes
(``_get_step_alibi_slopes(total_heads)[rank slice].tolist()``) with ``use_alibi_sqrt=True``, and
the attention implementation keeps them as an fp32 tensor of ``heads / tp`` values per layer
(vllm/v1/attention/backends/triton_attn.py::TritonAttentionImpl:
``torch.tensor(alibi_slopes, dtype=torch.float32)``, built on the model's device).

``use_alibi_sqrt`` is supported by TRITON_ATTN only:
vllm/model_executor/layers/attention/attention.py::Attention raises "use_alibi_sqrt is not
supported by backend FLASH_ATTN" for the backend vLLM picks by default on Hopper, so Step1 is
served with ``--attention-backend TRITON_ATTN`` (vmemplan refuses the plan otherwise, with
vLLM's message: :meth:`Step1.required_attention_backend`); its KV cache pages (block 16,
``[2, block, kv_heads, head]``) are those of FLASH_ATTN, so the plan does not change.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.declared import remap_config
from vmemplan.models.dense import LlamaLike

__all__ = ["Step1"]

#: Step1Config's names for the keys LlamaLike reads
_KEYS = {"num_key_value_heads": "num_attention_groups", "max_position_embeddings": "max_seq_len"}


@register
class Step1(LlamaLike):
    """Llama's layers without a rotary cache, plus each layer's fp32 ALiBi slopes."""

    architectures = ("Step1ForCausalLM",)
    rotary = False

    def __init__(self, config: Any) -> None:
        super().__init__(remap_config(config, _KEYS))

    def head_tied(self) -> bool:
        if self.tied_head is not None:
            return self.tied_head
        value = self.config.text.get("tie_word_embeddings", self.config.raw.get("tie_word_embeddings"))
        return True if value is None else bool(value)  # step1.py: getattr(config, "tie_word_embeddings", True)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        start, end = self.layer_range(ctx)
        if end > start:
            heads = self.config.num_attention_heads // ctx.tensor_parallel_size
            out.append(WeightTensor("self_attn.attn.alibi_slopes", "buffer", heads, 1, end - start, dtype="float32"))
        return out

    def required_attention_backend(self) -> tuple[str, str] | None:
        """TRITON_ATTN, the only backend whose ``supports_alibi_sqrt()`` is True
        (vllm/v1/attention/backends/triton_attn.py::TritonAttentionBackend; the base
        AttentionBackend answers False): Attention.__init__ raises vLLM's message below for any
        other (vllm/model_executor/layers/attention/attention.py, 0.33.0), and vLLM's backend
        selection does not pick Triton for that reason (checked in
        vmemplan/request/attention_backend.py::check_required_backend)."""
        return ("TRITON_ATTN", "use_alibi_sqrt is not supported by backend {got}.")

    def notes(self) -> tuple[str, ...]:
        return ("Step1's ALiBi attention (use_alibi_sqrt) runs on TRITON_ATTN only: vLLM 0.33.0 refuses the "
                "default FLASH_ATTN backend, so serve it with --attention-backend TRITON_ATTN (same KV pages)",)
