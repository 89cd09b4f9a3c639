"""Fuzz the flags: 10,000+ combinations through the public API (``vmemplan.api.plan_from_flags``).

Values are the ones a person or a script could pass: every GPU id and alias plus typos, the
bundled models plus ids that are not bundled (HF_HUB_OFFLINE=1, so those fail fast with exit 6),
and for each vLLM flag nothing, a sensible value, zero, a negative, a huge number, NaN, a string
or a value of the wrong type.  The rule (see ``_harness``): a plan, or a VmemplanError.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _harness import must_be_vmemplan_error, plan_flags, registry, time_limit

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("VMEMPLAN_FUZZ_EXAMPLES", "1500"))

MODELS = (
    "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen2.5-7B", "Qwen/Qwen3-8B-FP8",
    "Qwen/Qwen3-30B-A3B", "google/gemma-3-1b-it", "google/gemma-2-9b", "mistralai/Mistral-7B-v0.1",
    "openai/gpt-oss-20b", "microsoft/Phi-3-mini-128k-instruct", "meta-llama/Llama-3.1-70B",
    "deepseek-ai/DeepSeek-Coder-V2-Lite-Base", "Qwen/Qwen3-Next-80B-A3B-Thinking",
    "TheBloke/Llama-2-7B-GPTQ", "META-LLAMA/llama-3.1-8b",
)
NOT_BUNDLED = ("acme/not-a-model", "x", "", "   ", "a/b/c", "../x", "/", "hf_SENTINEL/x", "org/" + "n" * 200)


def _gpus() -> list[str]:
    keys = set()
    for g in registry().gpus:
        keys.add(g.id)
        keys.update(g.aliases)
    return sorted(keys)


def weird(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly unset or a good value; about one time in eight an edge case or a wrong type."""
    edge = st.one_of(
        st.sampled_from([0, -1, 1, 2**31, 2**40, 2**63, 10**30]),
        st.integers(), st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=10), st.booleans(), st.lists(st.integers(), max_size=2),
    )
    return st.integers(0, 15).flatmap(lambda n: st.none() if n < 8 else good if n < 14 else edge)


FLAG_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "gpu_memory_utilization": weird(st.floats(0.05, 1.0)),
    "max_model_len": weird(st.integers(1, 262144)),
    "max_num_seqs": weird(st.integers(1, 4096)),
    "max_num_batched_tokens": weird(st.integers(1, 65536)),
    "block_size": weird(st.sampled_from([1, 8, 16, 32, 64, 128, 256, 3, 17])),
    "kv_cache_dtype": weird(st.sampled_from(["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "int8", "nvfp4"])),
    "dtype": weird(st.sampled_from(["auto", "bfloat16", "float16", "half", "float32", "float", "fp8"])),
    "tensor_parallel_size": weird(st.sampled_from([1, 2, 3, 4, 8, 16, 64])),
    "pipeline_parallel_size": weird(st.sampled_from([1, 2, 3, 4, 200])),
    "enforce_eager": weird(st.booleans()),
    "enable_prefix_caching": weird(st.booleans()),
    "kv_cache_memory": weird(st.sampled_from(["32G", "1g", "0", "34359738368", "1.5GiB", "-5G", "1e9", "G",
                                              "999999999999999999999T", "32 GiB"])),
    "vllm_version": weird(st.sampled_from(["0.33.0", "0.10.1.1", "0.5.5", "0.8.6", "0.6.3.post1", "1.0",
                                           "0.0.1", "banana", "v0.11.0", "0.11.0rc1"])),
    "request_tokens": weird(st.integers(1, 10**7)),
}


@st.composite
def flag_sets(draw: st.DrawFn) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "model": draw(st.sampled_from(MODELS) | st.sampled_from(NOT_BUNDLED) if draw(st.integers(0, 9)) == 0
                      else st.sampled_from(MODELS)),
        "gpu": draw(st.sampled_from(_gpus()) | st.text(max_size=8) if draw(st.integers(0, 9)) == 0
                    else st.sampled_from(_gpus())),
    }
    for name, values in FLAG_VALUES.items():
        value = draw(values)
        if value is not None:
            flags[name] = value
    return flags


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(flags=flag_sets())
def test_flag_combinations_plan_or_raise_vmemplan_error(flags: dict[str, Any]) -> None:
    try:
        with time_limit():
            plan_flags(**flags)
    except Exception as error:  # noqa: BLE001 - the property under test
        must_be_vmemplan_error(error, flags)


def test_unknown_keyword_is_a_vmemplan_error() -> None:
    try:
        plan_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", gpu_memory_utilisation=0.9)
    except Exception as error:  # noqa: BLE001
        must_be_vmemplan_error(error, "gpu_memory_utilisation")
