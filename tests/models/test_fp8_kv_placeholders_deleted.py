"""FP8 checkpoints: BaseKVCacheMethod.create_weights' q/k/v/prob_scale placeholders (one model-dtype
scalar each, quantization/kv_cache.py::KVCacheScaleParameter, vLLM 0.33.0) are deleted by
BaseKVCacheMethod.process_weights_after_loading, so a GPU after loading keeps only the Attention's
four fp32 _k/_v/_q/_prob_scale buffers.  DeepseekV3BidirectionalModel (EncoderOnlyAttention
under Fp8Config) used to count the placeholders (8 B a layer in bf16); the oracle, run with
bench/oracle/shims_pwal_meta.py, gives 85,161,103,832 B at construction and 85,161,103,344 B
after loading at TP 8: 61 layers x 8 B = 488 B fewer."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CONFIG = (Path(__file__).resolve().parents[1] / "fixtures/oracle/configs"
          / "deepseek-ai--DeepSeek-V3.as-DeepseekV3BidirectionalModel.derived.json")


def test_deepseek_v3_bidirectional_fp8_keeps_only_the_fp32_scales() -> None:
    raw = json.loads(CONFIG.read_text(encoding="utf-8"))
    assert raw["quantization_config"]["quant_method"] == "fp8"
    adapter = adapter_for(ModelConfig.from_dict(raw))
    ts = {t.name: t for t in adapter.weight_tensors(GraphContext(tensor_parallel_size=8))}
    scales = [n for n in ts if n.endswith("prob_scale")]
    assert scales == ["self_attn.mla_attn.k/v/q/prob_scale"]  # 4 fp32 a layer, 61 layers: 976 B
    assert ts[scales[0]].count == 4 * 61 and ts[scales[0]].dtype == "float32"
