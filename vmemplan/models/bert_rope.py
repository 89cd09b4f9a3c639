"""BERT encoders with rotary positions (vLLM --runner pooling): GTE-v1.5 / arctic-embed-v2 and
Nomic-BERT (dense and MoE), which own no KV cache.

Mirrors vllm/model_executor/models/bert_with_rope.py (0.33.0).  registry.py's
``_EMBEDDING_MODELS`` maps ``GteModel`` to ``SnowflakeGteNewModel``, ``GteNewModel`` to
``GteNewModel`` and ``NomicBertModel`` to ``NomicBertModel``; all three are ``BertWithRope``
built with ``add_pooling_layer=False`` (the pooler as_embedding_model adds holds no parameters).
Before the model is built, vllm/model_executor/models/config.py rewrites the config:

* ``SnowflakeGteNewModelConfig`` / ``GteNewModelConfig``: ``hidden_act`` gelu -> ``geglu`` (a gated
  MLP), ``rotary_kwargs`` = head_dim, ``max_position_embeddings`` and the rope parameters with
  ``partial_rotary_factor = rotary_emb_dim / head_dim``;
* ``NomicBertModelConfig``: GPT-2 key names (``n_embd``, ``n_layer``, ``n_inner``) become
  hidden_size / num_hidden_layers / intermediate_size, ``swiglu`` -> ``silu`` (gated), ``gelu``
  stays (ungated), ``bias = qkv_proj_bias``, and the rotary table is sized by the resolved
  ``max_model_len`` (not by max_position_embeddings).

One rank holds:

* ``BertWithRopeEmbedding``: ``word_embeddings`` (VocabParallelEmbedding: rows padded to 64 and
  split), ``token_type_embeddings`` only when ``type_vocab_size > 0``, ``LayerNorm`` (weight+bias);
  no position table;
* per ``BertWithRopeBlock``: ``attn.qkv_proj`` (QKVParallelLinear, every head a KV head),
  ``attn.out_proj`` (RowParallelLinear), both with a bias when ``bias``; the
  EncoderOnlyAttention's four fp32 scales; ``attn_ln`` and ``mlp_ln`` (LayerNorm, weight+bias);
  the MLP: gated (``silu``/``geglu``: ``gate_up_proj`` MergedColumnParallelLinear 2 x inter,
  ``down_proj``) or not (``up_proj`` ColumnParallelLinear, ``down_proj``), biases with ``bias``
  except that GteNewModel.__init__ drops ``gate_up_proj.bias``; on the MoE layers of Nomic v2
  (``moe_every_n_layers > 0`` and ``layer % every_n == 1``) a ``NomicMoE`` instead: ``router``
  (GateLinear = ReplicatedLinear h -> num_experts, no bias), ``w1`` [E, inter/tp, h], ``w2``
  [E, h, inter/tp] and ``bias`` [h], all in the model dtype, every rank holding every expert;
* one rotary ``cos_sin_cache`` [max_position, rotary_dim] in the model dtype, shared by every
  layer (get_rope caches by its arguments).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UnsupportedArchitecture, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.dense_blocks import EncoderOnly

__all__ = ["BertWithRope"]

_GATED = ("silu", "geglu")
# rope types whose vLLM class keeps a [max_position, rotary_dim] table
_PLAIN_TABLE_ROPE = ("default", "ntk", "dynamic")


@register
class BertWithRope(EncoderOnly):
    """``GteModel`` / ``GteNewModel`` / ``NomicBertModel`` (bert_with_rope.py::BertWithRope, 0.33.0)."""

    architectures = ("GteModel", "GteNewModel", "NomicBertModel")
    default_runner = "pooling"
    reads_max_model_len = True  # Nomic's rotary table has max_model_len rows
    pp_refusal = "BERT-style models do not support pipeline parallelism in vLLM"

    # -- config as vLLM rewrites it (model_executor/models/config.py) -----------------
    def _nomic(self) -> bool:
        return self.config.architecture == "NomicBertModel"

    def _hidden_act(self) -> str:
        text = self.config.text
        if self._nomic():
            act = str(text.get("activation_function", "gelu"))
            return "silu" if act == "swiglu" else act
        act = str(text.get("hidden_act", "gelu"))
        return "geglu" if act == "gelu" else act

    def _bias(self) -> bool:
        text = self.config.text
        if self._nomic():
            return bool(text.get("qkv_proj_bias", True))
        return bool(text.get("bias", True))

    def _max_positions(self) -> int:
        """``max_position_embeddings`` as the config class vLLM parses gives it: transformers'
        NomicBertConfig / GteConfig read that key (defaults 2048 / 8192) and not ``n_positions``."""
        text = self.config.text
        value = text.get("max_position_embeddings")
        if value is None:
            return 2048 if self._nomic() else 8192
        return int(value)

    def _rope(self) -> dict[str, Any]:
        text = self.config.text
        rope = text.get("rope_parameters")
        if isinstance(rope, dict):
            return dict(rope)
        rs = text.get("rope_scaling")
        out = dict(rs) if isinstance(rs, dict) else {}
        if "type" in out and "rope_type" not in out:
            out["rope_type"] = out.pop("type")
        return out

    def derived_max_model_len(self) -> int:
        """vllm/config/model.py::_get_and_verify_max_len: the smallest of the length keys the config
        holds (``max_position_embeddings``, ``n_positions``, ...)."""
        text = self.config.text
        lengths = [self._max_positions()]
        for key in ("n_positions", "max_seq_len", "seq_length", "max_sequence_length"):
            v = text.get(key)
            if isinstance(v, int) and not isinstance(v, bool):
                lengths.append(v)
        return min(lengths)

    def validate_parallel(self, ctx: GraphContext) -> None:
        """bert_with_rope.py::BertWithRopeAttention asserts ``total_num_heads % tp_size == 0``."""
        heads = self.config.num_attention_heads
        if heads % ctx.tensor_parallel_size:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} does not divide the {heads} "
                             "attention heads", hint=f"use a divisor of {heads}")
        inter = self.config.intermediate_size
        if self._moe_every() and inter % ctx.tensor_parallel_size:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} does not divide the experts' "
                             f"intermediate size {inter}", hint=f"use a divisor of {inter}")
        if ctx.pipeline_parallel_size != 1:
            raise UsageError("BERT-style models do not support pipeline parallelism in vLLM",
                             hint="use --pipeline-parallel-size 1")

    def _moe_every(self) -> int:
        return int(self.config.text.get("moe_every_n_layers", 0) or 0)

    def moe_layers(self) -> list[int]:
        """BertWithRopeEncoder: ``moe = every_n > 0 and layer_idx % every_n == 1``."""
        every = self._moe_every()
        return [i for i in range(self.config.num_hidden_layers) if every > 0 and i % every == 1]

    def _rotary_rows(self, ctx: GraphContext) -> int:
        # GTE: rotary_kwargs["max_position"] = max_position_embeddings; Nomic: model_config.max_model_len
        return int(ctx.max_model_len) if self._nomic() else self._max_positions()

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        tp = ctx.tensor_parallel_size
        h, n, inter = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size
        heads = cfg.num_attention_heads
        head_dim = h // heads
        bias = self._bias()
        gated = self._hidden_act() in _GATED
        gate_bias = bias and cfg.architecture == "NomicBertModel"  # GteNewModel.__init__ drops it
        type_vocab = int(text.get("type_vocab_size", 2 if self._nomic() else 1) or 0)
        rope = self._rope()
        rtype = str(rope.get("rope_type", "default"))
        if rtype not in _PLAIN_TABLE_ROPE:
            raise UnsupportedArchitecture(f"{cfg.architecture} with rope type {rtype!r}",
                                          hint="vmemplan plans default, ntk and dynamic rope for these encoders")
        rotary_dim = int(text.get("rotary_emb_dim", head_dim)) if not self._nomic() else head_dim
        moe = set(self.moe_layers())
        dense_n = n - len(moe)
        out = [
            WeightTensor("embeddings.word_embeddings", "embedding", pad_vocab(cfg.vocab_size) // tp, h),
            WeightTensor("embeddings.LayerNorm.weight+bias", "norm", h, 1, 2),
            WeightTensor("attn.qkv_proj", "linear", 3 * h // tp, h, n, True, in_features_full=h),
            WeightTensor("attn.out_proj", "linear", h, h // tp, n, True, in_features_full=h),
            WeightTensor("attn_ln+mlp_ln (weight+bias)", "norm", h, 1, 4 * n),
            attention_scales("attn.attn", n),
            WeightTensor("rotary_emb.cos_sin_cache", "buffer", self._rotary_rows(ctx), rotary_dim),
        ]
        if type_vocab > 0:
            out.append(WeightTensor("embeddings.token_type_embeddings", "embedding", pad_vocab(type_vocab) // tp, h))
        if bias:
            out += [WeightTensor("attn.qkv_proj.bias", "bias", 3 * h // tp, 1, n),
                    WeightTensor("attn.out_proj.bias", "bias", h, 1, n)]
        if dense_n:
            up_rows = (2 if gated else 1) * inter // tp
            name = "mlp.gate_up_proj" if gated else "mlp.up_proj"
            out += [
                WeightTensor(name, "linear", up_rows, h, dense_n, True, in_features_full=h),
                WeightTensor("mlp.down_proj", "linear", h, inter // tp, dense_n, True, in_features_full=inter),
            ]
            if bias:
                if gate_bias or not gated:
                    out.append(WeightTensor(name + ".bias", "bias", up_rows, 1, dense_n))
                out.append(WeightTensor("mlp.down_proj.bias", "bias", h, 1, dense_n))
        if moe:
            experts = int(text.get("num_experts", 0))
            m = len(moe)
            out += [
                WeightTensor("mlp.router", "router", experts, h, m),
                # NomicMoE's w1/w2 are plain nn.Parameters (never quantized): [E, inter/tp, h], [E, h, inter/tp]
                WeightTensor("mlp.w1", "expert", inter // tp, h, experts * m, allocations=m),
                WeightTensor("mlp.w2", "expert", h, inter // tp, experts * m, allocations=m),
                WeightTensor("mlp.bias", "bias", h, 1, m),
            ]
        return out
