"""Issue 15: the context length vLLM 0.33 derives when --max-model-len is unset, for every bundled model.

Each figure follows vllm/config/model.py::_get_and_verify_max_len (0.33.0), applied to the
text config (vLLM passes hf_text_config):

* the rope-scaling factor multiplies the length except for rope types that already state the
  extended length (su, longrope, llama3, yarn, deepseek_yarn, deepseek_llama_scaling) -- and
  never for Gemma-3: "gemma3" not in hf_config.model_type ("Gemma3's max_model_len (128K) is
  already scaled by RoPE scaling").  google/gemma-3-27b-it (linear, factor 8) is 131,072, not
  1,048,576;
* with a longrope rope type the default is original_max_position_embeddings (Phi-3 and
  Phi-3.5-MoE: 4,096).
"""

from __future__ import annotations

import pytest

from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.sources import list_bundled_models, load_model_source

EXPECTED = {
    "ai21labs/Jamba-v0.1": 262144,
    "baidu/ERNIE-Image.text_encoder-Mistral3-3B": 262144,
    "deepseek-ai/DeepSeek-Coder-V2-Lite-Base": 163840,
    "deepseek-ai/DeepSeek-R1": 163840,
    "deepseek-ai/DeepSeek-V3": 163840,
    "deepseek-ai/DeepSeek-V3.2": 163840,
    "deepseek-ai/DeepSeek-V4-Flash": 1048576,
    "deepseek-ai/DeepSeek-V4-Pro": 1048576,
    "deepseek-ai/DeepSeek-V4.1-Flash": 1048576,
    "gaianet/phi-4-GGUF": 16384,
    "google/gemma-2-9b": 8192,
    "google/gemma-3-1b-it": 32768,
    "google/gemma-3-27b-it": 131072,
    "google/gemma-4-26B-A4B": 262144,
    "LDCC/Qwen2.5-72B-Instruct-ko-AWQ": 32768,
    "meta-llama/Llama-3.1-405B": 131072,
    "meta-llama/Llama-3.1-405B-Instruct-FP8": 131072,
    "meta-llama/Llama-3.1-70B": 131072,
    "meta-llama/Llama-3.1-70B-Instruct": 131072,
    "meta-llama/Llama-3.1-8B": 131072,
    "meta-llama/Llama-3.2-1B-Instruct": 131072,
    "meta-llama/Llama-3.2-3B-Instruct": 131072,
    "meta-llama/Llama-3.3-70B-Instruct": 131072,
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": 1048576,
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8": 1048576,
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": 10485760,
    "meta-llama/Llama-4-Scout-17B-16E-Instruct:aiconfigurator-trimmed": 10485760,
    "microsoft/Phi-3-mini-128k-instruct": 4096,
    "microsoft/Phi-3.5-MoE-instruct": 4096,
    "MiniMaxAI/MiniMax-M2.5": 196608,
    "mistralai/Mistral-7B-v0.1": 32768,
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": 131072,
    "mistralai/Mixtral-8x7B-v0.1": 32768,
    "mlx-community/gemma-3-4b-pt-4bit": 131072,
    "moonshotai/Kimi-K2-Instruct": 131072,
    "moonshotai/Kimi-Linear-48B-A3B-Instruct": 1048576,
    "nvidia/Gemma-4-31B-IT-NVFP4": 262144,
    "nvidia/Llama-3.1-70B-Instruct-FP8": 131072,
    "nvidia/Nemotron-H-56B-Base-8K": 8192,
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": 262144,
    "openai/gpt-oss-120b": 131072,
    "openai/gpt-oss-20b": 131072,
    "PrimeIntellect/INTELLECT-3-Base": 131072,
    "Qwen/Qwen2.5-72B": 131072,
    "Qwen/Qwen2.5-7B": 131072,
    "Qwen/Qwen2.5-VL-7B-Instruct": 128000,
    "Qwen/Qwen3-235B-A22B": 40960,
    "Qwen/Qwen3-235B-A22B-FP8": 40960,
    "Qwen/Qwen3-30B-A3B": 40960,
    "Qwen/Qwen3-30B-A3B-FP8": 40960,
    "Qwen/Qwen3-32B": 40960,
    "Qwen/Qwen3-32B-FP8": 40960,
    "Qwen/Qwen3-8B": 40960,
    "Qwen/Qwen3-8B-FP8": 40960,
    "Qwen/Qwen3-Next-80B-A3B-Thinking": 262144,
    "Qwen/Qwen3.5-27B": 262144,
    "Qwen/Qwen3.5-35B-A3B": 262144,
    "TheBloke/Llama-2-7B-GPTQ": 4096,
    "unknown/Meta-Llama-3.1-8B-Instruct-FP8-compressed-tensors": 131072,
    "unsloth/Mistral-Small-24B-Instruct-2501-GGUF": 32768,
    "zai-org/GLM-4.5-Air": 131072,
    "zai-org/GLM-4.7": 202752,
    "zai-org/GLM-5": 202752,
}
NOT_PLANNED = {"MiniMaxAI/MiniMax-M1", "tiiuae/Falcon-H1-0.5B"}


def _default(model: str) -> int:
    return adapter_for(ModelConfig.from_dict(load_model_source(model).config)).default_max_model_len()


def test_every_bundled_model_is_listed():
    assert set(list_bundled_models()) - NOT_PLANNED == set(EXPECTED)


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_default_context(model):
    assert _default(model) == EXPECTED[model]


def test_gemma3_27b_starts_on_an_h100_by_default():
    from tests.hostile.conftest import cli

    run = cli("size", "google/gemma-3-27b-it", "--gpu", "h100", "--format", "json")
    assert '"max_model_len": 131072,' in run.stdout
    assert "max_model_len 1048576" not in run.stdout
