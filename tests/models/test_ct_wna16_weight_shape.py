"""compressed-tensors WNA16: the int64[2] ``weight_shape`` each quantized linear keeps (hand-computed).

vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16.py::
CompressedTensorsWNA16.create_weights registers ``weight_shape`` (torch.empty(2, dtype=int64)) and no
process_weights_after_loading drops it (0.33.0).  EXAONE-4.0-1.2B W4A16: 30 layers x 4 linears
(qkv, o, gate_up, down) x 16 B = 1,920 B per rank at any TP; lm_head is in ``ignore``.
"""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import WeightTensor
from vmemplan.laws.quant_config import scheme_for

CFG = Path(__file__).resolve().parents[1] / "fixtures" / "oracle" / "configs" / "his0si--EXAONE-4.0-1.2B-w4a16.json"


def test_each_wna16_linear_holds_a_16_byte_weight_shape():
    qc = json.loads(CFG.read_text())["quantization_config"]
    scheme = scheme_for(qc, sm_major=9)
    qkv = WeightTensor("self_attn.qkv_proj", "linear", 3072, 2048, 30, True, in_features_full=2048)
    parts = dict(scheme.unit_parts(qkv, 1, 2))
    assert parts["weight_shape"] == 2 * 8
    # qweight 3072 x 2048 x 4 bit = 3,145,728 B; scales 3072 x 16 groups x 2 B = 98,304 B
    assert parts["qweight"] == 3_145_728 and parts["scales"] == 98_304
    assert 30 * 4 * parts["weight_shape"] == 1_920
