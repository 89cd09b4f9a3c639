"""Classic decoders that build their embeddings, final norm and LM head on every pipeline stage: Gemma, Falcon and OPT (GPT-2, GPT-J and BLOOM are entries of registry/architectures/classic.yaml on Gemma's adapter).

vLLM 0.33.0's older model files (vllm/model_executor/models/gpt2.py, gpt_j.py, opt.py,
bloom.py, falcon.py, gemma.py, commandr.py, chatglm.py) construct the token embedding, the
final norm and the LM head unconditionally, without ``PPMissingLayer``: a pipeline stage holds
all three whatever its layers.  A tied head (``tie_weights``, or the embedding used directly)
shares the embedding's storage on every stage.  :class:`ClassicLike` is :class:`LlamaLike`'s
layer body with those ends, plus the switches the classic files need (a tie default of True as
their transformers config classes have it, an LM-head bias, a rotary dimension read from a
config key or a fixed fraction, a feed-forward width of 4 x hidden, Gemma's ``normalizer``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import LlamaLike, pad_vocab

__all__ = ["ClassicLike", "Gemma", "Falcon", "OPT"]


#: The keys vllm/transformers_utils/model_arch_config_convertor.py::derive_max_model_len_and_key
#: reads the context length from (0.33.0)
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
_UNBOUNDED = 1 << 34


def _is_end(t: WeightTensor) -> bool:
    """The tensors :meth:`LlamaLike.weight_tensors` puts on the first or last stage only (and its
    rotary cache, which :class:`ClassicLike` sizes itself)."""
    return t.kind in ("embedding", "lm_head") or t.name.startswith("model.") or t.name == "rotary_emb.cos_sin_cache"


class ClassicLike(LlamaLike):
    """LlamaLike's decoder layers; embedding, final norm and head on every stage."""

    architectures = ()
    #: tie_word_embeddings when the config omits it (True in the GPT-2, OPT, BLOOM, Falcon, Gemma
    #: and Cohere transformers config classes)
    tied_head_default: bool = True
    #: a bias on the LM head (GPT-J's ``ParallelLMHead(bias=True)``)
    head_bias: bool = False
    #: the config key that gives the rotary dimension itself (GPT-J's ``rotary_dim``); "" = none
    rotary_dim_key: str = ""
    #: a fixed fraction of the head that rotates (ChatGLM's 0.5); 0.0 = as the config says
    rotary_fraction: float = 0.0
    #: feed-forward width in multiples of hidden_size whatever the config says (BLOOM and
    #: Falcon build ``4 * hidden_size``); 0 = the config's intermediate size
    mlp_hidden_multiple: int = 0
    #: Gemma's ``normalizer`` buffer: one scalar in the model dtype
    normalizer: bool = False
    #: ALiBi: each attention layer's backend holds its heads' slopes as an fp32 tensor
    #: (vllm/v1/attention/backends/flash_attn.py::FlashAttentionImpl: ``torch.tensor(alibi_slopes,
    #: dtype=torch.float32)``, built on the model's device)
    alibi: bool = False
    #: False where the transformers config class has none of vLLM's length keys (BloomConfig):
    #: a config without them takes any --max-model-len and defaults to 2,048
    #: (vllm/config/model.py::_get_and_verify_max_len)
    config_class_has_length: bool = True
    #: the one config key that puts a bias on every linear (qkv, o and the MLP: Falcon's
    #: ``bias``, OPT's ``enable_bias``) and its default when absent; "" = LlamaLike's own keys
    bias_key: str = ""
    bias_default: bool = False

    def __init__(self, config: Any) -> None:
        super().__init__(self.normalize_config(config))
        if self.bias_key:
            bias = bool(self.config.text.get(self.bias_key, self.bias_default))
            self.attn_qkv_bias = self.attn_o_bias = self.mlp_has_bias = bias

    def normalize_config(self, config: Any) -> Any:
        """The config with the dimensions vLLM's model file reads in place of the generic ones."""
        if self.mlp_hidden_multiple:
            config = dataclasses.replace(config, intermediate_size=self.mlp_hidden_multiple * config.hidden_size)
        return config

    def head_tied(self) -> bool:
        if self.tied_head is not None:
            return self.tied_head
        text, raw = self.config.text, self.config.raw
        value = text.get("tie_word_embeddings", raw.get("tie_word_embeddings"))
        return self.tied_head_default if value is None else bool(value)

    def _no_length_key(self) -> bool:
        return not self.config_class_has_length and not any(
            self.config.text.get(k) is not None for k in _LENGTH_KEYS)

    def derived_max_model_len(self) -> int:
        return _UNBOUNDED if self._no_length_key() else super().derived_max_model_len()

    def default_max_model_len(self) -> int:
        return 2048 if self._no_length_key() else super().default_max_model_len()

    # -- hooks ----------------------------------------------------------------------
    def embedding_width(self) -> int:
        """Columns of the token embedding and the LM head (OPT's ``word_embed_proj_dim``)."""
        return self.config.hidden_size

    def has_final_norm(self) -> bool:
        return True

    def rotary_positions(self) -> int:
        return rope_cache_positions(self.config)[0]

    def rotary_dim(self) -> int:
        cfg = self.config
        if self.rotary_dim_key:
            value = cfg.text.get(self.rotary_dim_key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        if self.rotary_fraction:
            return int(cfg.head_dim * self.rotary_fraction)
        return rope_cache_positions(cfg)[1]

    def extra_end_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """Further tensors every stage holds (OPT's projections)."""
        return []

    # -- weights ----------------------------------------------------------------------
    def end_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """Embedding, learned positions, embedding norm, final norm, LM head (unless tied) and
        the normalizer buffer: built on every pipeline stage."""
        cfg = self.config
        h = cfg.hidden_size
        vocab_rows = pad_vocab(cfg.vocab_size) // ctx.tensor_parallel_size
        width = self.embedding_width()
        out = [WeightTensor("model.embed_tokens", "embedding", vocab_rows, width)]
        if self.learned_positions_offset is not None:
            # a plain nn.Embedding (GPT-2's wpe, OPT's embed_positions): replicated, unpadded
            out.append(WeightTensor("model.embed_positions", "embedding",
                                    cfg.max_position_embeddings + self.learned_positions_offset, h))
        if self.embedding_norm:
            out += self._norm("model.embed_layernorm", h)
        if self.has_final_norm():
            out += self._norm("model.norm", h)
        if not self.head_tied():
            out.append(WeightTensor("lm_head", "lm_head", vocab_rows, width))
        if self.head_bias:
            out.append(WeightTensor("lm_head.bias", "bias", vocab_rows, 1))
        if self.normalizer:
            out.append(WeightTensor("model.normalizer", "buffer", 1, 1))
        return out + self.extra_end_tensors(ctx)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        body = [t for t in super().weight_tensors(ctx) if not _is_end(t)]
        start, end = self.layer_range(ctx)
        out = self.end_tensors(ctx) + body
        if end > start and self.alibi:
            heads = self.config.num_attention_heads // ctx.tensor_parallel_size
            out.append(WeightTensor("self_attn.attn.alibi_slopes", "buffer", heads, 1, end - start, dtype="float32"))
        if end > start and self.rotary:
            # one get_rope instance per model (cached), built by the attention layers
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", self.rotary_positions(), self.rotary_dim()))
        return out


@register
class Gemma(ClassicLike):
    """Gemma (vllm/model_executor/models/gemma.py::GemmaForCausalLM, 0.33.0).

    Llama's layer (fused ``qkv_proj``, gated GeLU ``gate_up_proj``, two GemmaRMSNorms, weight
    only), ``head_dim`` from the config, a rotary cache ``[max_position_embeddings, head_dim]``;
    ``GemmaModel`` registers a ``normalizer`` buffer (``torch.tensor(hidden_size ** 0.5)`` in the
    model dtype) and the ``ParallelLMHead`` is tied to ``embed_tokens`` when
    ``tie_word_embeddings`` (GemmaConfig's default).
    """

    architectures = ("GemmaForCausalLM",)
    normalizer = True
    attn_qkv_bias = False
    attn_o_bias = False
    mlp_has_bias = False


@register
class Falcon(ClassicLike):
    """Falcon (vllm/model_executor/models/falcon.py::FalconForCausalLM, 0.33.0).

    ``query_key_value`` (QKVParallelLinear over the KV heads below) and ``dense``, biases when
    ``bias``; MLP ``dense_h_to_4h`` / ``dense_4h_to_h`` of ``4 * hidden_size`` (ffn_hidden_size is
    not read), biases when ``bias``; LayerNorms (weight and bias): two per layer
    (``input_layernorm`` + ``post_attention_layernorm``) without ``parallel_attn``, else
    ``ln_attn`` + ``ln_mlp`` when ``num_ln_in_parallel_attn`` is 2 (the default with
    ``new_decoder_architecture``), else one ``input_layernorm``; ``word_embeddings`` and
    ``ln_f`` on every stage, the head tied unless ``tie_word_embeddings`` is false.  A rotary
    cache ``[max_position_embeddings, head_dim]`` unless ``alibi`` (ALiBi slopes are a Python
    list, no tensor).

    KV heads as vllm/transformers_utils/model_arch_config_convertor.py::
    FalconModelArchConfigConvertor.get_total_num_kv_heads and FalconAttention count them:
    ``num_kv_heads`` (``n_head_kv``) with ``new_decoder_architecture``, else 1 with
    ``multi_query`` (FalconConfig's default), else ``num_attention_heads``.
    """

    architectures = ("FalconForCausalLM",)
    norm_kind = "layer"
    mlp_kind = "plain"
    mlp_hidden_multiple = 4
    bias_key = "bias"

    def normalize_config(self, config: Any) -> Any:
        config = super().normalize_config(config)
        text = config.text
        heads = config.num_attention_heads
        if _new_decoder_architecture(config):
            kv = text.get("num_kv_heads", text.get("n_head_kv"))
            if kv is None:
                kv = 1 if _rw(text) else heads
        elif text.get("multi_query", True):
            kv = 1
        else:
            kv = heads
        return dataclasses.replace(config, num_key_value_heads=int(kv), head_dim=config.hidden_size // heads)

    @property
    def rotary(self) -> bool:  # type: ignore[override]
        return not self.config.text.get("alibi", False)

    @property
    def alibi(self) -> bool:  # type: ignore[override]
        return bool(self.config.text.get("alibi", False))

    @property
    def norms_per_layer(self) -> int:  # type: ignore[override]
        text = self.config.text
        if not text.get("parallel_attn", not _rw(text)):
            return 2
        n_ln = text.get("num_ln_in_parallel_attn")
        if n_ln is None and _new_decoder_architecture(self.config):
            n_ln = 2
        return 2 if n_ln == 2 else 1

    def rotary_dim(self) -> int:
        return self.config.head_dim


def _rw(text: Any) -> bool:
    """The legacy RefinedWeb configs (vllm/transformers_utils/configs/falcon.py::RWConfig, which
    vLLM registers for them): ``n_head_kv`` defaults to 1, ``parallel_attn`` to false, and a hidden
    size of 8192 forces the new decoder architecture."""
    return str(text.get("model_type", "")) in ("RefinedWeb", "RefinedWebModel")


def _new_decoder_architecture(config: Any) -> bool:
    text = config.text
    return bool(text.get("new_decoder_architecture", False)) or (_rw(text) and config.hidden_size == 8192)


@register
class OPT(ClassicLike):
    """OPT (vllm/model_executor/models/opt.py::OPTForCausalLM, 0.33.0).

    ``qkv_proj`` / ``out_proj``, ``fc1`` (ColumnParallelLinear to ``ffn_dim``) / ``fc2``, all with
    a bias when ``enable_bias`` (the default); ``self_attn_layer_norm`` and ``final_layer_norm``
    per layer, LayerNorms with weight and bias when ``layer_norm_elementwise_affine`` (else no
    parameters).  On every stage: ``embed_tokens`` ``[vocab, word_embed_proj_dim]``,
    ``embed_positions`` (OPTLearnedPositionalEmbedding: ``max_position_embeddings + 2`` rows,
    replicated), ``project_in`` / ``project_out`` (ReplicatedLinear, no bias) when
    ``word_embed_proj_dim`` differs from ``hidden_size``, the decoder's ``final_layer_norm``
    only with ``do_layer_norm_before`` and not ``_remove_final_layer_norm``, and the head
    ``[vocab, word_embed_proj_dim]`` tied unless ``tie_word_embeddings`` is false.  No rotary.
    """

    architectures = ("OPTForCausalLM",)
    norm_kind = "layer"
    mlp_kind = "plain"
    rotary = False
    learned_positions_offset = 2
    bias_key, bias_default = "enable_bias", True

    def normalize_config(self, config: Any) -> Any:
        ffn = config.text.get("ffn_dim")
        if isinstance(ffn, int) and not isinstance(ffn, bool):
            config = dataclasses.replace(config, intermediate_size=ffn)
        return config

    def _affine(self) -> bool:
        return bool(self.config.text.get("layer_norm_elementwise_affine", True))

    def _norm(self, name: str, width: int, count: int = 1) -> list[WeightTensor]:
        return super()._norm(name, width, count) if self._affine() else []

    def embedding_width(self) -> int:
        proj = self.config.text.get("word_embed_proj_dim")
        return proj if isinstance(proj, int) and not isinstance(proj, bool) else self.config.hidden_size

    def has_final_norm(self) -> bool:
        text = self.config.text
        return bool(text.get("do_layer_norm_before", True)) and not text.get("_remove_final_layer_norm", False)

    def extra_end_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        h, proj = self.config.hidden_size, self.embedding_width()
        if proj == h:
            return []
        return [WeightTensor("model.decoder.project_out", "linear", proj, h, 1, True, in_features_full=h),
                WeightTensor("model.decoder.project_in", "linear", h, proj, 1, True, in_features_full=proj)]
