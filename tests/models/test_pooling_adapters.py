"""Embedding (pooling) architectures: BERT encoders (vmemplan/models/bert.py) and decoder
backbones (vmemplan/models/pooling_decoders.py), worked by hand against vLLM 0.33.0's files."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs"


def _adapter(name: str, **changes):
    raw = json.loads((CONFIGS / name).read_text())
    raw.update(changes)
    return adapter_for(ModelConfig.from_dict(raw))


def _bytes(adapter, tp: int = 1) -> int:
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=tp)
    return weight_bytes_per_rank(adapter.weight_tensors(ctx), model_dtype="bfloat16",
                                 allocator_rounding=False).unrounded_bytes


def test_bert_minilm_weights_by_hand():
    """all-MiniLM-L6-v2 (h 384, 6 layers, ff 1536, vocab 30522 -> 30528 rows, 512 positions,
    2 token types -> 64 rows), bf16, TP 1 (bert.py::BertEmbedding / BertLayer):
    embeddings 30528*384 + 512*384 + 64*384 + LayerNorm 2*384 = 11,944,704 elements;
    a layer: qkv 1152*384 + 1152, out 384*384 + 384, intermediate 1536*384 + 1536,
    output 384*1536 + 384, two LayerNorms 4*384 = 1,774,464; 6 layers 10,646,784;
    22,591,488 elements * 2 B = 45,182,976 B, + position_ids 512 int64 (4,096 B) + 24 fp32
    attention scales (96 B) = 45,187,168 B (vLLM 0.33's own figure, fixture
    sentence-transformers-all-MiniLM-L6-v2.tp1)."""
    bert = _adapter("sentence-transformers--all-MiniLM-L6-v2.json")
    assert _bytes(bert) == 45_187_168
    assert bert.kv_cache_specs(GraphContext(model_dtype="bfloat16")) == {}  # EncoderOnlyAttention: no spec


def test_bert_masked_lm_adds_the_mlm_head():
    """BertMLMHead: dense 384*384 + 384, LayerNorm 2*384, decoder 30522*384 + 30522 (nn.Linear,
    unpadded) = 11,899,578 elements = 23,799,156 B on top of the encoder."""
    mlm = _adapter("sentence-transformers--all-MiniLM-L6-v2.json", architectures=["BertForMaskedLM"])
    assert _bytes(mlm) == 45_187_168 + 23_799_156


def test_bidirectional_decoder_backbone_owns_no_kv_cache():
    """LlamaBidirectionalConfig sets is_causal False: every layer an EncoderOnlyAttention, no KV
    spec; a LlamaModel of the same config keeps its causal cache (16 layers)."""
    ctx = GraphContext(model_dtype="bfloat16")
    bidir = _adapter("meta-llama--Llama-3.2-1B-Instruct.as-LlamaBidirectionalModel.derived.json")
    causal = _adapter("meta-llama--Llama-3.2-1B-Instruct.as-LlamaModel.derived.json")
    assert bidir.kv_cache_specs(ctx) == {}
    assert len(causal.kv_cache_specs(ctx)) == 16
    assert _bytes(bidir) == _bytes(causal)  # tied head: no LM head bytes either way


def test_generate_runner_backbones_keep_an_untied_head():
    """MistralModel maps to llama.LlamaForCausalLM, which vLLM serves with runner "generate" by
    default: the untied 32000 x 4096 head (262,144,000 B bf16) stays; EmbeddingGemma's Gemma3Model
    has none."""
    mistral = _adapter("mistralai--Mistral-7B-v0.1.as-MistralModel.derived.json")
    assert any(t.kind == "lm_head" and t.rows * t.cols * 2 == 262_144_000
               for t in mistral.weight_tensors(GraphContext(model_dtype="bfloat16")))
    gemma = _adapter("google--embeddinggemma-300m.transcribed.json")
    assert not any(t.kind == "lm_head" for t in gemma.weight_tensors(GraphContext(model_dtype="bfloat16")))
    assert gemma.kv_cache_specs(GraphContext(model_dtype="bfloat16")) == {}
