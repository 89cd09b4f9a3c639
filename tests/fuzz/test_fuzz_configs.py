"""Fuzz config.json: 10,000+ generated dicts through ModelConfig, adapter_for and the planner.

Each example starts from a real config (bundled registry or test fixture) and applies a few
mutations -- drop a key, add an unknown key, set a key to zero / a negative / a huge number /
a value of the wrong type, wrap everything in ``text_config``, replace the architectures --
or is built from nothing.  The rule (see ``_harness``): it plans, or it raises a VmemplanError.

``VMEMPLAN_FUZZ_EXAMPLES`` overrides the example count (default 1,500 per test in the suite; the long
campaign is ``VMEMPLAN_FUZZ_EXAMPLES=10000 python -m pytest tests/fuzz``, see the README).
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _harness import (
    EXPERT_CAP, EXPERT_KEYS, LAYER_CAP, LAYER_KEYS, base_configs, gpu_ids, must_be_vmemplan_error, plan_config, time_limit,
)

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("VMEMPLAN_FUZZ_EXAMPLES", "1500"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

#: Keys the laws read, so that mutations land where they matter.
KEYS = (
    "architectures", "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings",
    "torch_dtype", "dtype", "tie_word_embeddings", "quantization_config", "text_config", "rope_scaling",
    "rope_parameters", "rope_theta", "sliding_window", "use_sliding_window", "max_window_layers",
    "layer_types", "num_experts", "num_local_experts", "n_routed_experts", "n_shared_experts",
    "num_experts_per_tok", "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    "index_topk", "index_head_dim", "index_n_heads", "partial_rotary_factor", "attention_chunk_size",
    "interleave_moe_layer_step", "no_rope_layers", "full_attention_interval", "linear_num_value_heads",
    "linear_num_key_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
    "mamba_d_state", "ssm_state_size", "mamba_n_heads", "mamba_head_dim", "mamba_n_groups", "n_groups",
    "conv_kernel", "hybrid_override_pattern", "attn_layer_period", "attn_layer_offset",
    "expert_layer_period", "global_head_dim", "num_global_key_value_heads", "sliding_window_pattern",
    "block_configs", "kv_cache_scheme", "original_max_position_embeddings", "vision_config",
    "llm_config", "language_config", "auto_map", "n_embd", "n_layer", "n_head", "padded_vocab_size",
)
ARCHITECTURES = (
    "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MistralForCausalLM", "Gemma2ForCausalLM",
    "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma4ForCausalLM", "GptOssForCausalLM",
    "DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM", "Qwen3NextForCausalLM",
    "Qwen3_5ForCausalLM", "Llama4ForConditionalGeneration", "Phi3ForCausalLM", "MixtralForCausalLM",
    "Qwen3MoeForCausalLM", "JambaForCausalLM", "NemotronHForCausalLM", "KimiLinearForCausalLM",
    "FalconH1ForCausalLM", "DeciLMForCausalLM", "GptForCausalLM", "", "x" * 300, "LlamaForCausalLM\x00",
)

scalars = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 7, 64, 128, 4096, 2**31, 2**40, 2**41, 2**63, -(2**63), 10**30]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-4, max_value=256),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1.5, -0.0, 1e308, float("inf"), float("nan"), 4096.0, 1e-300]),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.sampled_from(["bfloat16", "float16", "float32", "fp8", "int4", "auto", "", "torch.bfloat16", "yarn",
                     "llama3", "linear", "dynamic", "sliding_attention", "full_attention", "fp8_e4m3", "M*-"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8),
                                                               inner, max_size=5),
    max_leaves=12,
)


def _tame(config: Any) -> Any:
    """Clamp layer and expert counts (see _harness.LAYER_CAP, EXPERT_CAP) anywhere in the dict, so
    that the work per example is bounded; leave the rest alone."""
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            cap = LAYER_CAP if key in LAYER_KEYS else EXPERT_CAP if key in EXPERT_KEYS else None
            if cap is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                if isinstance(value, float) and not math.isfinite(value):
                    out[key] = value
                    continue
                if value > cap:
                    value = cap if isinstance(value, int) else float(cap)
            out[key] = _tame(value)
        return out
    if isinstance(config, list):
        return [_tame(v) for v in config]
    return config


@st.composite
def mutated_configs(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 19)) == 0:  # 5 %: from nothing
        return _tame(draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=12) | values))
    config = dict(draw(st.sampled_from(base_configs())))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["drop", "set", "set", "set", "extra", "arch", "wrap", "nest-set", "scale"]))
        present = sorted(k for k in config if isinstance(k, str))
        if op == "drop" and present:
            config.pop(draw(st.sampled_from(present)), None)
        elif op == "set":
            config[draw(st.sampled_from(KEYS + tuple(present)))] = draw(values)
        elif op == "extra":
            config[draw(st.text(min_size=1, max_size=20))] = draw(values)
        elif op == "arch":
            config["architectures"] = draw(st.one_of(
                st.lists(st.sampled_from(ARCHITECTURES), max_size=3), values))
        elif op == "wrap":  # a multimodal wrapper around the language model's keys
            config = {"architectures": draw(st.lists(st.sampled_from(ARCHITECTURES), max_size=2)),
                      "model_type": draw(st.text(max_size=10)), "text_config": config}
        elif op == "nest-set":
            sub = config.get("text_config")
            if isinstance(sub, dict):
                sub = dict(sub)
                sub[draw(st.sampled_from(KEYS))] = draw(values)
                config["text_config"] = sub
        elif op == "scale" and present:  # a real key, scaled to zero / negative / huge
            key = draw(st.sampled_from(present))
            if isinstance(config[key], int) and not isinstance(config[key], bool):
                config[key] = config[key] * draw(st.sampled_from([0, -1, 2, 1000, 2**20]))
    return _tame(config)


def _check(config: Any, **flags: Any) -> None:
    try:
        with time_limit():
            plan_config(config, **flags)
    except Exception as error:  # noqa: BLE001 - the property under test
        must_be_vmemplan_error(error, config)


@FUZZ
@given(config=mutated_configs())
def test_mutated_configs_plan_or_raise_vmemplan_error(config: Any) -> None:
    _check(config)


@settings(FUZZ, max_examples=max(EXAMPLES // 5, 10))
@given(config=mutated_configs(), gpu=st.sampled_from(gpu_ids()),
       tp=st.sampled_from([None, 1, 2, 3, 4, 8]), kv=st.sampled_from([None, "auto", "fp8", "fp8_e5m2"]),
       length=st.sampled_from([None, 1, 17, 4096, 131072]))
def test_mutated_configs_on_other_gpus_and_layouts(config: Any, gpu: str, tp: int | None, kv: str | None,
                                                   length: int | None) -> None:
    flags = {k: v for k, v in {"tensor_parallel_size": tp, "kv_cache_dtype": kv, "max_model_len": length}.items()
             if v is not None}
    _check(config, gpu=gpu, **flags)


def test_the_seed_configs_are_many_and_mostly_plannable() -> None:
    # guards the fuzzer's own input: if the seeds stopped loading, the fuzz would test nothing
    seeds = base_configs()
    assert len(seeds) >= 40
    ok = 0
    for config in seeds:
        try:
            plan_config(config)
            ok += 1
        except Exception as error:  # noqa: BLE001
            must_be_vmemplan_error(error, config)
    assert ok >= len(seeds) // 2
