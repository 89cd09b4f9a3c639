"""Rotary BERT encoders (vmemplan/models/bert_rope.py): GTE-v1.5 / arctic-embed-v2 and Nomic-BERT,
worked by hand against vLLM 0.33.0's bert_with_rope.py and model_executor/models/config.py."""

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


def _bytes(adapter, tp: int = 1, max_model_len: int = 2048) -> int:
    ctx = GraphContext(model_dtype="float16", tensor_parallel_size=tp, max_model_len=max_model_len)
    return weight_bytes_per_rank(adapter.weight_tensors(ctx), model_dtype="float16",
                                 allocator_rounding=False).unrounded_bytes


def test_gte_new_weights_by_hand():
    """gte-base-en-v1.5 shape (h 768, 12 layers, 12 heads, ff 3072, vocab 30528, no token types),
    fp16, TP 1: word embeddings 30528*768 + LayerNorm 2*768; a layer: qkv 2304*768 + 2304,
    out_proj 768*768 + 768, gate_up 6144*768 with NO bias (GteNewModel.__init__ drops it; gelu
    became geglu), down 768*3072 + 768, attn_ln + mlp_ln 4*768 = 9,444,096; 136,776,192 elements
    * 2 B = 273,552,384 B, + the rotary table 8192 positions x 64 x 2 B (1,048,576 B) + 12 x 16 B
    attention scales = 274,601,152 B (vLLM 0.33's own figure, fixture
    Alibaba-NLP-gte-base-en-v1.5.synthetic.oracle-gte.tp1)."""
    gte = _adapter("Alibaba-NLP--gte-base-en-v1.5.synthetic.json")
    assert gte.derived_max_model_len() == 8192
    assert _bytes(gte) == 274_601_152
    assert gte.kv_cache_specs(GraphContext(model_dtype="float16")) == {}  # EncoderOnlyAttention
    copy = _adapter("Alibaba-NLP--gte-base-en-v1.5.synthetic.oracle-gte.json")  # GteModel: same modules
    assert _bytes(copy) == _bytes(gte)


def test_nomic_swiglu_table_follows_max_model_len():
    """nomic-embed-text-v1.5 shape: swiglu -> silu (gated), no biases, 2 token types (64 rows);
    136,779,264 elements * 2 B = 273,558,528 B; the rotary table is sized by max_model_len
    (NomicBertModelConfig's rotary_kwargs), 2048 x 64 x 2 B, + 192 B of scales = 273,820,864 B.
    The context is the smaller of max_position_embeddings (absent: NomicBertConfig's 2048) and
    n_positions (8192)."""
    nomic = _adapter("nomic-ai--nomic-embed-text-v1.5.synthetic.json")
    assert nomic.derived_max_model_len() == 2048
    assert _bytes(nomic) == 273_820_864
    assert _bytes(nomic, max_model_len=1024) == 273_820_864 - 1024 * 64 * 2


def test_nomic_moe_odd_layers_hold_every_expert():
    """nomic-embed-text-v2-moe shape: gelu (ungated, biased), vocab 250048, 8 experts top 2 on the
    layers with i % 2 == 1.  A MoE layer: router 8*768, w1 and w2 8*3072*768 each, bias 768 =
    37,755,648 elements; a dense layer's MLP 3072*768 + 3072 + 768*3072 + 768 = 4,722,432; attention
    and norms 2,365,440 a layer; embeddings 250048*768 + 64*768 + 2*768: 475,341,312 elements =
    950,682,624 B + 262,144 B rotary + 192 B = 950,944,960 B.  At TP 2 the experts split their
    intermediate size (w1 [8, 1536, 768]), the router and bias stay whole."""
    moe = _adapter("nomic-ai--nomic-embed-text-v2-moe.synthetic.json")
    assert moe.moe_layers() == [1, 3, 5, 7, 9, 11]
    assert _bytes(moe) == 950_944_960
    half_experts = 6 * 2 * 8 * 1536 * 768 * 2
    assert _bytes(moe) - _bytes(moe, tp=2) > half_experts
