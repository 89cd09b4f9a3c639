"""Model-level sliding windows read from ``config.sliding_window`` (no ``layer_types``).

Expected figures derived from vLLM 0.33.0's formulas:

* which layers: vllm/engine/arg_utils.py::EngineArgs.create_engine_config sets
  ``CacheConfig.sliding_window = ModelConfig.get_sliding_window()`` when the config has no
  ``layer_types``; vllm/model_executor/layers/attention/attention.py::Attention.__init__ gives it
  to every layer without its own, so Attention.get_kv_cache_spec returns a SlidingWindowSpec;
* pages a request: vllm/v1/kv_cache_interface.py::SlidingWindowSpec.max_admission_blocks_per_request
  ``cdiv(min(window - 1 + in_flight, L), block) + 1``;
* page: ``block x 2 x kv_heads/tp x head_dim x 2`` bytes (AttentionSpec.page_size_bytes);
* pool: vllm/v1/core/kv_cache_utils.py::get_num_blocks ``avail // (page x layers)``,
  get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity ``int(concurrency x L)``.

The figures equal vLLM 0.33.0's own functions on the meta device (oracle fixtures
``microsoft-Phi-3-mini-128k-instruct.tp{1,2}``, ``microsoft-Phi-3.5-MoE-instruct.tp{1,2}``).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import CONFIGS
from vmemplan.api import plan
from vmemplan.core.errors import UsageError
from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import GraphContext, adapter_for
from vmemplan.models.sliding import (
    cache_config_sliding_window,
    config_layer_types,
    layer_sliding_window,
    without_sliding_windows,
)

AVAIL = 40 * 2**30
L = 32768
MNBT = 8192


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _cfg(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize("name, tp, oracle", [
    ("microsoft--Phi-3-mini-128k-instruct", 1, (6_826, 109_162)),
    ("microsoft--Phi-3-mini-128k-instruct", 2, (13_653, 218_341)),
    ("microsoft--Phi-3.5-MoE-instruct", 1, (20_480, 327_520)),
    ("microsoft--Phi-3.5-MoE-instruct", 2, (40_960, 655_040)),
])
def test_phi3_layers_are_sliding_window(name, tp, oracle):
    cfg = _cfg(name)
    window = cfg["sliding_window"]
    layers = cfg["num_hidden_layers"]
    head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    page = 16 * 2 * (cfg["num_key_value_heads"] // tp) * head_dim * 2
    in_flight = 2 * MNBT  # async scheduling: two batches in flight (VllmConfig.max_in_flight_tokens)
    per_request = cdiv(min(window - 1 + in_flight, L), 16) + 1
    num_blocks = AVAIL // (page * layers)
    tokens = int(num_blocks / per_request * L)

    adapter = adapter_for(ModelConfig.from_dict(cfg))
    specs = adapter.kv_cache_specs(GraphContext(tensor_parallel_size=tp, max_model_len=L))
    assert len(specs) == layers and {s.kind for s in specs.values()} == {"sliding_window"}
    assert {s.sliding_window for s in specs.values()} == {window}
    p = plan_pool(specs, AVAIL, PoolContext(max_model_len=L, max_num_batched_tokens=MNBT, async_scheduling=True))
    assert (p.num_blocks, p.blocks_per_request, p.kv_cache_tokens) == (num_blocks, per_request, tokens)
    assert (p.num_blocks, p.kv_cache_tokens) == oracle  # vLLM 0.33.0's functions


def test_disable_sliding_window_gives_full_attention():
    adapter = adapter_for(ModelConfig.from_dict(_cfg("microsoft--Phi-3.5-MoE-instruct")))
    specs = without_sliding_windows(adapter.kv_cache_specs(GraphContext(max_model_len=L)))
    assert {s.kind for s in specs.values()} == {"full_attention"}
    p = plan_pool(specs, AVAIL, PoolContext(max_model_len=L, max_num_batched_tokens=MNBT, async_scheduling=True))
    assert p.blocks_per_request == L // 16  # FullAttentionSpec: cdiv(L, block)


def test_cli_flag_reaches_the_plan_and_caps_the_context():
    on = plan("microsoft/Phi-3.5-MoE-instruct", gpu="h100", tensor_parallel_size=2, max_model_len=L)
    off = plan("microsoft/Phi-3.5-MoE-instruct", gpu="h100", tensor_parallel_size=2, max_model_len=L,
               disable_sliding_window=True)
    assert {g.kind for g in on.kv_cache.groups} == {"sliding_window"}
    assert {g.kind for g in off.kv_cache.groups} == {"full_attention"}
    # vllm/config/model.py::_get_and_verify_max_len: the derived length is capped to the window
    m = plan("mistralai/Mistral-7B-v0.1", gpu="h100", disable_sliding_window=True)
    assert m.engine.max_model_len == 4096
    with pytest.raises(UsageError):
        plan("mistralai/Mistral-7B-v0.1", gpu="h100", disable_sliding_window=True, max_model_len=8192)


def test_use_sliding_window_false_keeps_qwen2_full():
    text = _cfg("Qwen--Qwen2.5-7B")
    assert text["sliding_window"] and text["use_sliding_window"] is False
    assert cache_config_sliding_window(text, 28) is None
    adapter = adapter_for(ModelConfig.from_dict(text))
    assert {s.kind for s in adapter.kv_cache_specs(GraphContext(max_model_len=L)).values()} == {"full_attention"}


def test_max_window_layers():
    # transformers Qwen2Config: window on layers i >= max_window_layers when use_sliding_window
    text = {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 0}
    assert config_layer_types(text, 4) == ["sliding_attention"] * 4
    assert cache_config_sliding_window(text, 4) == 4096
    assert layer_sliding_window(text, 3, 4) == 4096
    mixed = {**text, "max_window_layers": 2}
    assert config_layer_types(mixed, 4) == ["full_attention"] * 2 + ["sliding_attention"] * 2
    assert cache_config_sliding_window(mixed, 4) is None  # not all window layers
    assert layer_sliding_window(mixed, 0, 4) is None and layer_sliding_window(mixed, 3, 4) == 4096
    assert layer_sliding_window({"sliding_window": 0}, 0, 4) is None  # 0 means none
    assert layer_sliding_window({"sliding_window": 512}, 0, 4, disable_sliding_window=True) is None


def test_qwen2_partial_window_is_refused_like_vllm():
    cfg = {**_cfg("Qwen--Qwen2.5-7B"), "use_sliding_window": True, "max_window_layers": 14}
    adapter = adapter_for(ModelConfig.from_dict(cfg))
    with pytest.raises(UsageError):
        adapter.kv_cache_specs(GraphContext(max_model_len=L))


@pytest.mark.parametrize("paste", [False, True])
def test_disable_sliding_window_on_the_command_line(capsys, paste):
    """Typed or pasted, the flag reaches the plan (it was parsed and then dropped as not modelled):
    Mistral-7B's 32 windowed layers become full attention and the derived context is capped to
    the 4,096-token window, so a request holds cdiv(4096, 16) = 256 blocks of 16 tokens."""
    import json

    from tests.request._cli import run

    args = (["size", "--gpu", "h100", "--format", "json", "--", "vllm", "serve", "mistralai/Mistral-7B-v0.1",
             "--disable-sliding-window"] if paste else
            ["size", "mistralai/Mistral-7B-v0.1", "--gpu", "h100", "--disable-sliding-window", "--format", "json"])
    r = run(args, capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert "--disable-sliding-window" in d["vllm_args"]["modelled"]
    assert d["engine"]["max_model_len"] == 4096
    assert {g["kind"] for g in d["kv_cache"]["groups"]} == {"full_attention"}
    assert d["kv_cache"]["max_concurrency"] == d["kv_cache"]["tokens"] / 4096
