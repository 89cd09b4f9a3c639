"""Embedding (pooling) architectures whose backbone is a decoder family vmemplan plans.

vLLM 0.33.0 lists these under ``_EMBEDDING_MODELS`` (vllm/model_executor/models/registry.py).
Two kinds:

* names mapped to a model class that is no text-generation model (gemma3.Gemma3Model,
  llama.LlamaBidirectionalModel, voyage.py): vllm/config/model.py::try_match_architecture_defaults
  matches the ``Model`` suffix, runner "pooling", convert "embed", and
  vllm/model_executor/models/adapters.py::as_embedding_model builds the class without an LM
  head (its pooler holds no parameters);
* names mapped to a ``*ForCausalLM`` class (LlamaModel, MistralModel, Qwen2Model, Gemma2Model):
  registry inspection finds a text-generation model, so vLLM's default is runner "generate",
  the causal class as it is, LM head included; ``--runner pooling`` converts it.

**Bidirectional attention** where the config asks for it: llama.py::LlamaDecoderLayer,
  qwen2.py / qwen3.py and gemma3.py build an ``EncoderOnlyAttention`` when
  ``getattr(config, "is_causal", True)`` is false, and
  vllm/model_executor/layers/attention/encoder_only_attention.py::EncoderOnlyAttention.get_kv_cache_spec
  returns ``None``, so GPUModelRunner.get_kv_cache_spec lists no layer: the model owns no KV
  cache and the pool holds only the null block (as for an attention-free model).  vLLM's
  vllm/model_executor/models/config.py sets ``is_causal`` itself for some architectures
  (LlamaBidirectionalConfig: always false; Gemma3TextModelConfig: ``not
  use_bidirectional_attention``; VoyageQwen3BidirectionalEmbedModelConfig: always false).

The attention layers keep their four fp32 scale scalars (EncoderOnlyAttention is an Attention).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import Adapter, register
from vmemplan.models.deepseek import DeepseekMLA
from vmemplan.models.dense import Llama, Qwen2, Qwen3
from vmemplan.models.gemma2 import Gemma2
from vmemplan.models.gemma3 import Gemma3
from vmemplan.models.lfm2 import Lfm2

__all__ = ["PoolingBackbone"]


class PoolingBackbone(Adapter):
    """Mixin: the causal family's graph without the LM head, and without a KV cache when the
    attention is bidirectional.  ``causal_rule`` says how vLLM decides:
    "config" (``is_causal``, default true), "bidirectional" (always encoder-only),
    "gemma3" (``not use_bidirectional_attention``)."""

    causal_rule: str = "config"
    #: vLLM picks runner "pooling" for these (config/model.py::_get_default_runner_type, 0.33.0)
    default_runner: str | None = "pooling"

    def is_causal(self) -> bool:
        text = self.config.text
        if self.causal_rule == "bidirectional":
            return False
        if self.causal_rule == "gemma3":
            return not bool(text.get("use_bidirectional_attention", False))
        return bool(text.get("is_causal", True))

    #: whether this class lists each Attention layer's four fp32 scale scalars itself (the Gemma
    #: adapters leave them out; LlamaLike lists them)
    own_attention_scales: bool = False

    #: whether vLLM builds the class through as_embedding_model (convert "embed"), whose
    #: _create_pooling_model_cls leaves the LM head out (adapters.py, 0.33.0)
    drops_lm_head: bool = True

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = list(super().weight_tensors(ctx))  # type: ignore[misc]
        if self.drops_lm_head:
            out = [t for t in out if t.kind != "lm_head"]
        start, end = self.layer_range(ctx) if self.own_attention_scales else (0, 0)  # type: ignore[attr-defined]
        if end > start:
            # _k_scale/_v_scale/_q_scale/_prob_scale of every (EncoderOnly)Attention
            # (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales)
            out.append(attention_scales("self_attn.attn", (end - start)))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        if not self.is_causal():
            return {}  # EncoderOnlyAttention.get_kv_cache_spec -> None for every layer
        return super().kv_cache_specs(ctx)  # type: ignore[misc]

    def notes(self) -> tuple[str, ...]:
        own: tuple[str, ...] = ()
        if self.default_runner == "pooling":
            own = ("embedding model (vLLM --runner pooling): no LM head",)
        if not self.is_causal():
            own += ("bidirectional attention (EncoderOnlyAttention): no KV cache, vLLM allocates "
                    "only the null block",)
        return tuple(super().notes()) + own  # type: ignore[misc]


@register
class LlamaEmbedding(PoolingBackbone, Llama):
    """``LlamaModel`` and ``MistralModel``: vllm/model_executor/models/registry.py maps both to
    llama.LlamaForCausalLM (0.33.0), served as an embedding model (as_embedding_model)."""

    architectures = ("LlamaModel", "MistralModel")

    # registry.py maps the name to a *ForCausalLM class, which registry inspection finds a text-
    # generation model, not a pooling one: vllm/config/model.py::_get_default_runner_type returns
    # "generate" and _get_default_convert_type "none", so vLLM builds the causal class unchanged,
    # LM head included (an untied one is held: the oracle on Mistral-7B / Qwen2.5-7B shows it);
    # with --runner pooling it converts ("embed") and vmemplan's pipeline drops the head.
    default_runner = None
    drops_lm_head = False


@register
class LlamaBidirectionalEmbedding(PoolingBackbone, Llama):
    """``LlamaBidirectionalModel`` (llama.py::LlamaBidirectionalModel = as_embedding_model(
    LlamaForCausalLM)); vllm/model_executor/models/config.py::LlamaBidirectionalConfig sets
    ``is_causal = False``: every layer an EncoderOnlyAttention, no KV cache."""

    architectures = ("LlamaBidirectionalModel",)
    causal_rule = "bidirectional"


@register
class Qwen2Embedding(PoolingBackbone, Qwen2):
    """``Qwen2Model``: registry.py maps it to qwen2.Qwen2ForCausalLM (0.33.0); qwen2.py's
    decoder layer is encoder-only when the config says ``is_causal: false``."""

    architectures = ("Qwen2Model",)

    # registry.py maps the name to a *ForCausalLM class, which registry inspection finds a text-
    # generation model, not a pooling one: vllm/config/model.py::_get_default_runner_type returns
    # "generate" and _get_default_convert_type "none", so vLLM builds the causal class unchanged,
    # LM head included (an untied one is held: the oracle on Mistral-7B / Qwen2.5-7B shows it);
    # with --runner pooling it converts ("embed") and vmemplan's pipeline drops the head.
    default_runner = None
    drops_lm_head = False


@register
class Gemma2Embedding(PoolingBackbone, Gemma2):
    """``Gemma2Model`` (e.g. BAAI/bge-multilingual-gemma2): registry.py maps it to
    gemma2.Gemma2ForCausalLM (0.33.0); gemma2.py always builds causal Attention layers."""

    architectures = ("Gemma2Model",)

    # registry.py maps the name to a *ForCausalLM class, which registry inspection finds a text-
    # generation model, not a pooling one: vllm/config/model.py::_get_default_runner_type returns
    # "generate" and _get_default_convert_type "none", so vLLM builds the causal class unchanged,
    # LM head included (an untied one is held: the oracle on Mistral-7B / Qwen2.5-7B shows it);
    # with --runner pooling it converts ("embed") and vmemplan's pipeline drops the head.
    default_runner = None
    drops_lm_head = False
    own_attention_scales = True


@register
class Gemma3TextEmbedding(PoolingBackbone, Gemma3):
    """``Gemma3TextModel`` (EmbeddingGemma): registry.py maps it to gemma3.Gemma3Model, the
    backbone without a head; vllm/model_executor/models/config.py::Gemma3TextModelConfig sets
    ``is_causal = not use_bidirectional_attention`` (true for google/embeddinggemma-300m)."""

    architectures = ("Gemma3TextModel",)
    causal_rule = "gemma3"
    own_attention_scales = True


@register
class VoyageQwen3Embedding(PoolingBackbone, Qwen3):
    """``VoyageQwen3BidirectionalEmbedModel`` (vllm/model_executor/models/voyage.py, 0.33.0): a
    Qwen3Model (no LM head) plus ``linear``, an ``nn.Linear(hidden_size, num_labels, bias=False)``
    replicated on every rank in the model dtype;
    config.py::VoyageQwen3BidirectionalEmbedModelConfig sets ``is_causal = False``."""

    architectures = ("VoyageQwen3BidirectionalEmbedModel",)
    causal_rule = "bidirectional"

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if ctx.pipeline_rank == ctx.pipeline_parallel_size - 1:
            labels = self.config.text.get("num_labels")
            if not isinstance(labels, int) or isinstance(labels, bool):
                id2label = self.config.text.get("id2label")
                labels = len(id2label) if isinstance(id2label, dict) and id2label else 2  # PretrainedConfig's default
            out.append(WeightTensor("linear", "linear", labels, self.config.hidden_size))  # nn.Linear: never quantized
        return out



@register
class Lfm2BidirectionalEmbedding(PoolingBackbone, Lfm2):
    """``Lfm2BidirectionalModel`` (vllm/model_executor/models/lfm2.py, 0.33.0): the Lfm2Model
    backbone (no LM head) with ``bidirectional=True``: its attention layers are
    EncoderOnlyAttention and its short-conv layers ``Lfm2BidirectionalShortConv`` (the same
    conv / in_proj / out_proj tensors, run as a non-causal convolution), no IsHybrid interface:
    no KV cache and no conv state, the pool holds only the null block."""

    architectures = ("Lfm2BidirectionalModel",)
    causal_rule = "bidirectional"


@register
class DeepseekV3Bidirectional(PoolingBackbone, DeepseekMLA):
    """``DeepseekV3BidirectionalModel``: registry.py maps it to deepseek_v2.DeepseekV3ForCausalLM
    (0.33.0), a text-generation class, so vLLM's default runner is "generate" with the LM head.
    With ``is_causal: false`` vllm/config/model.py::ModelConfig.use_mla is off ("the MLA kernels
    only support causal attention") and deepseek_v2.py builds DeepseekV2Attention (the same
    q_a/q_b/kv_a/kv_b/o projections, replicated q_a and kv_a) with an EncoderOnlyAttention: no
    KV cache and no MLA decode copies (W_UK_T / W_UV)."""

    architectures = ("DeepseekV3BidirectionalModel",)
    default_runner = None
    drops_lm_head = False

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if not self.is_causal():
            # the MLA-only decode copies.  (Under Fp8Config the EncoderOnlyAttention also gets
            # BaseKVCacheMethod.create_weights' q/k/v/prob_scale placeholders, but
            # quantization/kv_cache.py::BaseKVCacheMethod.process_weights_after_loading deletes
            # them after loading: nothing to count.)
            out = [t for t in out if t.copy_of is None]
        return out


class _JinaV5Encoder(PoolingBackbone, Llama):
    """jina.py::JinaEmbeddingsV5EncoderModel: LlamaForCausalLM built without its LM head (no_init_weights
    swaps ParallelLMHead for StageMissingLayer); config.py::JinaEmbeddingsV5ModelConfig sets
    ``is_causal = False``, so every layer is an EncoderOnlyAttention: no KV cache."""

    architectures = ("JinaEmbeddingsV5Model",)
    causal_rule = "bidirectional"


@register
class JinaEmbeddingsV5(PoolingBackbone, Qwen3):
    """``JinaEmbeddingsV5Model`` (vllm/model_executor/models/jina.py, 0.33.0): a pooling model
    (``is_pooling_model``) that is jina.py::JinaEmbeddingsV5DecoderModel, a Qwen3ForCausalLM
    without its LM head and with its causal KV cache (the -small checkpoints), unless the config
    says ``is_decoder: false`` (the -nano EuroBERT encoders): then JinaEmbeddingsV5EncoderModel
    (:class:`_JinaV5Encoder`).  The task LoRA adapters are merged into the weights at load time
    (no extra bytes); the pooler holds no parameters."""

    architectures = ("JinaEmbeddingsV5Model",)

    def __new__(cls, config: Any) -> Any:
        if cls is JinaEmbeddingsV5 and not bool(config.text.get("is_decoder", True)):
            return _JinaV5Encoder(config)
        return super().__new__(cls)
