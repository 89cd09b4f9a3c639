"""gpt-oss: each ``Attention`` layer's four fp32 scale scalars (_k/_v/_q/_prob_scale,
vllm/model_executor/layers/attention/attention.py::set_default_quant_scales, 0.33.0).

``quantization/mxfp4.py::Mxfp4Config.get_quant_method`` gives the attention no KV-cache method,
so nothing replaces them: 4 x 4 B a layer on every rank.  They were the whole gap to vLLM 0.33's
loader (the oracle's dump: ``model.layers.*.attn.attn._k_scale`` ... ``[]`` float32, 24 each at
gpt-oss-20b), 384 B at 20b (24 layers) and 576 B at 120b (36 layers), at any TP."""

from __future__ import annotations

import pytest

from vmemplan.core.graph import GraphContext
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for


@pytest.mark.parametrize(("name", "layers"), (("openai--gpt-oss-20b.json", 24), ("openai--gpt-oss-120b.json", 36)))
@pytest.mark.parametrize("tp", (1, 2, 8))
def test_gpt_oss_counts_four_fp32_attention_scales_a_layer(config_dict, name, layers, tp):
    a = adapter_for(ModelConfig.from_dict(config_dict(name)))
    (scales,) = [t for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp))
                 if t.name == "attn.attn.k/v/q/prob_scale"]
    assert scales.elements == 4 * layers
    assert weight_bytes_per_rank([scales], model_dtype="bfloat16").total_bytes == 16 * layers  # 384 / 576 B
