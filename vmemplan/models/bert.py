"""BERT-style encoder-only embedding models (vLLM --runner pooling), which own no KV cache.

Mirrors vllm/model_executor/models/bert.py (0.33.0): ``BertModel`` is served as
``BertEmbeddingModel`` (registry.py, ``_EMBEDDING_MODELS``), ``BertForMaskedLM`` as
``BertForMaskedLM`` (a token-level pooling model with an MLM head).  One rank holds:

* ``BertEmbedding``: ``word_embeddings``, ``position_embeddings`` (max_position_embeddings rows)
  and ``token_type_embeddings`` (type_vocab_size rows), each a ``VocabParallelEmbedding``
  (rows padded to a multiple of 64, split over the ranks); a ``LayerNorm`` (weight and bias);
  the ``position_ids`` buffer, ``torch.arange(max_position_embeddings).unsqueeze(0)`` (int64);
* per ``BertLayer``: ``qkv_proj`` (QKVParallelLinear, bias; every head a KV head), the attention
  output ``dense`` (RowParallelLinear, full-width bias) and its LayerNorm, ``intermediate.dense``
  (ColumnParallelLinear, bias), ``output.dense`` (RowParallelLinear, bias) and its LayerNorm; the
  ``EncoderOnlyAttention``'s four fp32 scale scalars;
* ``BertForMaskedLM`` adds ``BertMLMHead``: ``dense`` (nn.Linear h x h, bias), ``layer_norm``,
  ``decoder`` (nn.Linear h -> vocab_size, bias), replicated and never quantized.

The pooler (``DispatchPooler.for_embedding`` / ``pooler_for_token_classify``) holds no parameters.
Every attention layer is an ``EncoderOnlyAttention``, whose get_kv_cache_spec returns None
(vllm/model_executor/layers/attention/encoder_only_attention.py): no KV cache, the pool holds
only the null block.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.dense_blocks import EncoderOnly

__all__ = ["BertEncoder"]


@register
class BertEncoder(EncoderOnly):
    """``BertModel`` / ``BertForMaskedLM`` (vllm/model_executor/models/bert.py, 0.33.0)."""

    architectures = ("BertModel", "BertForMaskedLM", "BertSpladeSparseEmbeddingModel")
    pp_refusal = "BERT-style models do not support pipeline parallelism in vLLM"
    #: the MLM head of BertForMaskedLM (bert.py::BertMLMHead)
    mlm_head: bool = False

    def _has_mlm_head(self) -> bool:
        # BertSpladeSparseEmbeddingModel builds a BertMLMHead for its SPLADESparsePooler (one is held:
        # __init__ replaces the one _build_pooler made during BertEmbeddingModel.__init__)
        return self.mlm_head or any(a in ("BertForMaskedLM", "BertSpladeSparseEmbeddingModel")
                                    for a in self.config.architectures[:1])

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h, n, inter = span.tp, span.hidden, cfg.num_hidden_layers, cfg.intermediate_size
        max_pos = int(cfg.max_position_embeddings)
        type_vocab = int(cfg.text.get("type_vocab_size", 2))
        out = [
            WeightTensor("embeddings.word_embeddings", "embedding", span.vocab_rows, h),
            WeightTensor("embeddings.position_embeddings", "embedding", pad_vocab(max_pos) // tp, h),
            WeightTensor("embeddings.token_type_embeddings", "embedding", pad_vocab(type_vocab) // tp, h),
            WeightTensor("embeddings.LayerNorm.weight+bias", "norm", h, 1, 2),
            WeightTensor("embeddings.position_ids", "buffer", 1, max_pos, dtype="int64"),
            WeightTensor("attention.self.qkv_proj", "linear", 3 * h // tp, h, n, True, in_features_full=h),
            WeightTensor("attention.self.qkv_proj.bias", "bias", 3 * h // tp, 1, n),
            WeightTensor("attention.output.dense", "linear", h, h // tp, n, True, in_features_full=h),
            WeightTensor("attention.output.dense.bias", "bias", h, 1, n),
            WeightTensor("intermediate.dense", "linear", inter // tp, h, n, True, in_features_full=h),
            WeightTensor("intermediate.dense.bias", "bias", inter // tp, 1, n),
            WeightTensor("output.dense", "linear", h, inter // tp, n, True, in_features_full=inter),
            WeightTensor("output.dense.bias", "bias", h, 1, n),
            WeightTensor("attention.output.LayerNorm+output.LayerNorm (weight+bias)", "norm", h, 1, 4 * n),
            # _k_scale/_v_scale/_q_scale/_prob_scale of each EncoderOnlyAttention (an Attention)
            attention_scales("attention.self.attn", n),
        ]
        if self._has_mlm_head():
            out += [
                WeightTensor("mlm_head.dense", "linear", h, h),
                WeightTensor("mlm_head.dense.bias", "bias", h, 1),
                WeightTensor("mlm_head.layer_norm.weight+bias", "norm", h, 1, 2),
                WeightTensor("mlm_head.decoder", "linear", cfg.vocab_size, h),
                WeightTensor("mlm_head.decoder.bias", "bias", cfg.vocab_size, 1),
            ]
        return out


@register
class RobertaEncoder(BertEncoder):
    """``RobertaModel``, ``RobertaForMaskedLM`` and ``XLMRobertaModel``: registry.py maps all three
    to roberta.RobertaEmbeddingModel (0.33.0), a BertEmbeddingModel whose RobertaEmbedding holds
    the same tables as BertEmbedding (max_position_embeddings rows, positions offset by
    padding_idx + 1 at run time) and whose _build_model is a BertModel for
    ``position_embedding_type: absolute`` (a rotary config builds JinaRobertaModel, not planned).
    No MLM head: RobertaEmbeddingModel drops ``lm_head.`` weights.  ``BgeM3EmbeddingModel`` adds
    to its pooler ``sparse_linear`` (nn.Linear h -> 1) and ``colbert_linear`` (nn.Linear h -> h),
    both with bias, in the head dtype (vllm/config/model.py::ModelConfig.head_dtype: float32 for a
    pooling model unless the config's ``head_dtype`` says otherwise)."""

    architectures = ("RobertaModel", "RobertaForMaskedLM", "XLMRobertaModel", "BgeM3EmbeddingModel")

    def _has_mlm_head(self) -> bool:
        return False

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        from vmemplan.core.errors import UnsupportedArchitecture

        text = self.config.text
        if str(text.get("position_embedding_type", "absolute")) != "absolute":
            raise UnsupportedArchitecture(
                f"{self.config.architectures[0]} with position_embedding_type "
                f"{text.get('position_embedding_type')!r} is vLLM's JinaRobertaModel (rotary), which "
                "vmemplan does not plan", hint="only absolute-position RoBERTa / XLM-R encoders are planned")
        out = super().weight_tensors(ctx)
        if "BgeM3EmbeddingModel" in self.config.architectures[:1]:
            h = self.config.hidden_size
            head = text.get("head_dtype")
            dtype = None if head == "model" else (str(head) if isinstance(head, str) else "float32")
            out += [
                WeightTensor("sparse_linear", "linear", 1, h, dtype=dtype),
                WeightTensor("sparse_linear.bias", "bias", 1, 1, dtype=dtype),
                WeightTensor("colbert_linear", "linear", h, h, dtype=dtype),
                WeightTensor("colbert_linear.bias", "bias", h, 1, dtype=dtype),
            ]
        return out
