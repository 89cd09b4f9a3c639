"""DeciLM / Nemotron-NAS heterogeneous layers, on the synthetic fixture
tests/fixtures/configs/synthetic--decilm-nas-6layer.json (hidden 1024, 16 heads of 64,
vocab 32,000; blocks: 0 attn kv2 + ffn 2.625, 1 no attn + ffn 1.3125, 2 attn kv4 + no ffn,
3 attn kv1 + ffn 2.625, 4 all no-op, 5 attn kv2 + ffn 5.25)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from vmemplan.core.errors import UnsupportedArchitecture, UsageError
from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.core.kv_specs import FullAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.models.nemotron_nas import DeciLM, ffn_mult_to_intermediate_size

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "synthetic--decilm-nas-6layer.json"


@pytest.fixture
def raw() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _adapter(raw: dict) -> DeciLM:
    a = adapter_for(ModelConfig.from_dict(raw))
    assert isinstance(a, DeciLM)
    return a


def test_ffn_mult_rounding():
    # int(2 × 2.625 × 1024 / 3) = 1,792 (a multiple of 256); 1.3125 → 896 → 1,024; 5.25 → 3,584
    assert ffn_mult_to_intermediate_size(2.625, 1024) == 1792
    assert ffn_mult_to_intermediate_size(1.3125, 1024) == 1024
    assert ffn_mult_to_intermediate_size(5.25, 1024) == 3584
    # Super-49B-style width: int(2 × 2.625 × 8192 / 3) = 14,336
    assert ffn_mult_to_intermediate_size(2.625, 8192) == 14336


def test_block_shapes(raw):
    assert _adapter(raw).block_shapes() == [(2, 1792), (None, 1024), (4, None), (1, 1792), (None, None), (2, 3584)]


def test_parameters_by_hand(raw):
    # embed + untied head 2 × 32,000 × 1,024 = 65,536,000; final norm 1,024
    # attention kv2 (×2): qkv (16 + 4) × 64 = 1,280 × 1,024 = 1,310,720, o 1,048,576, norm 1,024 → 4,720,640
    # attention kv4: 1,536 × 1,024 = 1,572,864 + 1,048,576 + 1,024 = 2,622,464
    # attention kv1: 1,152 × 1,024 = 1,179,648 + 1,048,576 + 1,024 = 2,229,248
    # ffn 1,792 (×2): 3 × 1,024 × 1,792 + 1,024 = 5,506,048 → 11,012,096
    # ffn 1,024: 3,145,728 + 1,024 = 3,146,752; ffn 3,584: 11,010,048 + 1,024 = 11,011,072
    expected = 65_536_000 + 1_024 + 4_720_640 + 2_622_464 + 2_229_248 + 11_012_096 + 3_146_752 + 11_011_072
    assert expected == 100_279_296
    assert _adapter(raw).total_params() == expected


def test_kv_specs_skip_no_op_layers_tp1(raw):
    specs = _adapter(raw).kv_cache_specs(GraphContext(max_model_len=4096))
    assert sorted(specs) == [f"model.layers.{i}.self_attn.attn" for i in (0, 2, 3, 5)]
    assert [specs[f"model.layers.{i}.self_attn.attn"].num_kv_heads for i in (0, 2, 3, 5)] == [2, 4, 1, 2]
    assert all(type(s) is FullAttentionSpec for s in specs.values())
    # pages 16 × kv × 2 × 64 × 2 = 4,096 × kv: 8,192 + 16,384 + 4,096 + 8,192 = 36,864 in one
    # UniformTypeKVCacheSpecs group; 1 GiB // 36,864 = 29,127 blocks; a request at L 4,096
    # holds cdiv(4,096, 16) = 256 → 113.78x, tokens int(29,127 / 256 × 4,096) = 466,032
    plan = plan_pool(specs, 1 << 30, PoolContext(max_model_len=4096, max_num_batched_tokens=2048))
    assert (len(plan.groups), plan.block_bytes, plan.num_blocks) == (1, 36_864, 29_127)
    assert plan.blocks_per_request == 256
    assert plan.kv_cache_tokens == 466_032


def test_kv_specs_tp2(raw):
    # per rank max(1, kv // 2): 1, 2, 1, 1 → pages 4,096 + 8,192 + 4,096 + 4,096 = 20,480;
    # 1 GiB // 20,480 = 52,428 blocks
    a = _adapter(raw)
    a.validate_parallel(GraphContext(tensor_parallel_size=2))
    specs = a.kv_cache_specs(GraphContext(tensor_parallel_size=2, max_model_len=4096))
    plan = plan_pool(specs, 1 << 30, PoolContext(max_model_len=4096, max_num_batched_tokens=2048))
    assert (plan.block_bytes, plan.num_blocks) == (20_480, 52_428)


def test_tp_that_splits_no_width_is_rejected(raw):
    with pytest.raises(UsageError):  # 3 divides neither 16 heads nor the KV heads
        _adapter(raw).validate_parallel(GraphContext(tensor_parallel_size=3))


def test_pipeline_stages(raw):
    a = _adapter(raw)
    # 6 layers over 2 stages: [0, 3) and [3, 6); stage 0 owns layers 0 and 2's caches, stage 1 3 and 5
    s0 = a.kv_cache_specs(GraphContext(pipeline_parallel_size=2, pipeline_rank=0))
    s1 = a.kv_cache_specs(GraphContext(pipeline_parallel_size=2, pipeline_rank=1))
    assert sorted(s0) == ["model.layers.0.self_attn.attn", "model.layers.2.self_attn.attn"]
    assert sorted(s1) == ["model.layers.3.self_attn.attn", "model.layers.5.self_attn.attn"]
    kinds0 = {t.kind for t in a.weight_tensors(GraphContext(pipeline_parallel_size=2, pipeline_rank=0))}
    kinds1 = {t.kind for t in a.weight_tensors(GraphContext(pipeline_parallel_size=2, pipeline_rank=1))}
    assert "embedding" in kinds0 and "lm_head" not in kinds0
    assert "lm_head" in kinds1 and "embedding" not in kinds1


def test_replace_with_linear_is_rejected(raw):
    bad = copy.deepcopy(raw)
    bad["block_configs"][1]["attention"] = {"n_heads_in_group": None, "no_op": False, "replace_with_linear": True}
    with pytest.raises(UnsupportedArchitecture):
        _adapter(bad).block_shapes()


def test_missing_block_configs_is_a_usage_error(raw):
    bad = copy.deepcopy(raw)
    bad["block_configs"] = bad["block_configs"][:3]
    with pytest.raises(UsageError):
        _adapter(bad).kv_cache_specs(GraphContext())
