"""Gemma4ForCausalLM on a config that omits most keys: vmemplan fills transformers'
Gemma4TextConfig defaults (vmemplan/model_config.py::gemma4_text_defaults) as vLLM sees them,
and forces the last layer to full attention (Gemma4TextConfig.__post_init__).

The figure was checked against the vllm-oracle (vLLM 0.33.0 on the meta device, TP 1 and
TP 2: weights, blocks, tokens and concurrency exact); it is computed by hand here."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

MINIMAL = {"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text", "num_hidden_layers": 7,
           "dtype": "bfloat16"}


def _adapter(raw):
    return adapter_for(ModelConfig.from_dict(raw))


def test_defaults_and_last_layer_rule():
    a = _adapter(MINIMAL)
    text = a.config.text
    assert (text["global_head_dim"], text["hidden_size_per_layer_input"], text["sliding_window"]) == (512, 256, 512)
    # every 6th layer global, and the 7th (last) forced global
    assert a.layer_types() == ["sliding_attention"] * 5 + ["full_attention"] * 2


def test_window_halved_for_bidirectional_all():
    a = _adapter({**MINIMAL, "use_bidirectional_attention": "all"})
    assert a.config.text["sliding_window"] == 512 // 2 + 1


def test_weights_by_hand():
    # defaults: vocab 262,144, hidden 2,304, MLP 9,216, 8 heads, 4 KV heads, head 256 (global 512),
    # per-layer input 256, tied, max positions 131,072.  Elements (bf16):
    # window layer: qkv (8 + 2 × 4) × 256 × 2,304 = 9,437,184; o 2,304 × 2,048 = 4,718,592;
    #   q/k norms 512; v_norm ones 256; MLP 3 × 2,304 × 9,216 = 63,700,992; 4 norms 9,216;
    #   layer_scalar 1; per-layer gate/projection 2 × 589,824; its norm 2,304 → 79,048,705
    # global layer: qkv (8 + 8) × 512 × 2,304 = 18,874,368; o 2,304 × 4,096 = 9,437,184;
    #   q/k norms 1,024; v_norm ones 512; the rest as above → 93,205,249
    # model: embed 262,144 × 2,304 = 603,979,776; final norm 2,304; per-layer table
    #   262,144 × 1,792 = 469,762,048; its projection 1,792 × 2,304 = 4,128,768; its norm 256;
    #   3 per-layer scalars + the normalizer; rope caches 131,072 × (256 + 512) = 100,663,296
    #   → 1,178,536,452
    elements = 5 * 79_048_705 + 2 * 93_205_249 + 1_178_536_452
    # + the attention scales: 7 layers × 4 fp32 scalars = 112 B
    wb = weight_bytes_per_rank(_adapter(MINIMAL).weight_tensors(GraphContext()), model_dtype="bfloat16")
    assert wb.unrounded_bytes == 2 * elements + 112 == 3_520_381_062
