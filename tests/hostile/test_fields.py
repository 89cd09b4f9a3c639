"""Issue 15: garbage in the fields the laws read is refused, naming the field (exit 4)."""

from __future__ import annotations

import json

import pytest

from tests.hostile.conftest import check_contract, cli, model_json, write_config

BAD_VALUES = [-1, "abc", 1e30, 10**30, 2.5, True, [8], None]  # 0 is valid for some (qk_nope_head_dim)

CASES = [
    ("mistralai--Mixtral-8x7B-v0.1.json", None, "num_local_experts"),
    ("mistralai--Mixtral-8x7B-v0.1.json", None, "num_experts_per_tok"),
    ("deepseek-ai--DeepSeek-V3.json", None, "n_routed_experts"),
    ("deepseek-ai--DeepSeek-V3.json", None, "qk_nope_head_dim"),
    ("deepseek-ai--DeepSeek-V3.json", None, "kv_lora_rank"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json", None, "num_experts"),
    ("Qwen--Qwen3-30B-A3B.json", None, "moe_intermediate_size"),
    ("meta-llama--Llama-3.1-8B.json", None, "num_hidden_layers"),
    ("meta-llama--Llama-3.1-8B.json", None, "hidden_size"),
    ("meta-llama--Llama-3.1-8B.json", None, "max_position_embeddings"),
    ("Qwen--Qwen2.5-VL-7B-Instruct.json", "vision_config", "hidden_size"),
    ("openai--gpt-oss-20b.json", None, "num_local_experts"),
]


def _set(config: dict, section: str | None, key: str, value: object) -> dict:
    target = config if section is None else config[section]
    if value is None:
        target.pop(key, None)
        target[key] = None
    else:
        target[key] = value
    return config


def _nullable(case: tuple) -> bool:
    # an explicit null max_position_embeddings is what vLLM reads as "no length key": it assumes
    # 2,048 (ModelConfig._get_and_verify_max_len), so that one plans; every other null is refused
    return case[2] == "max_position_embeddings"


VALUE_CASES = [(case, value) for case in CASES for value in BAD_VALUES if not (value is None and _nullable(case))]


@pytest.mark.parametrize("name,section,key,value", [(*c, v) for c, v in VALUE_CASES],
                         ids=[f"{c[0].split('--')[1][:20]}-{c[2]}-{v!r}"[:60] for c, v in VALUE_CASES])
def test_bad_field_value_is_refused_naming_the_field(tmp_path, name, section, key, value):
    config = _set(model_json(name), section, key, value)
    run = cli("size", str(write_config(tmp_path, config)), "--gpu", "h100")
    check_contract(run, 4)
    assert key in run.stderr.split("hint:")[0], run.stderr


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_in_a_read_field(tmp_path, token):
    text = json.dumps(model_json("Qwen--Qwen3-Next-80B-A3B-Thinking.json"))[:-1] + f', "num_experts": {token}' + "}"
    run = cli("size", str(write_config(tmp_path, text)), "--gpu", "h100", "--format", "json")
    check_contract(run, 4)
    assert "num_experts" in run.stderr


def test_a_million_local_experts_refused_before_any_loop(tmp_path):
    config = model_json("mistralai--Mixtral-8x7B-v0.1.json")
    config["num_local_experts"] = 10**6
    check_contract(cli("size", str(write_config(tmp_path, config)), "--gpu", "h100"), 4)


@pytest.mark.parametrize("qc,field", [
    ({"quant_method": "gptq", "bits": -4, "group_size": 128}, "bits"),
    ({"quant_method": "gptq", "bits": 5, "group_size": 128}, "bits"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 0}, "group_size"),
    ({"quant_method": "gptq", "bits": 1e30, "group_size": 128}, "bits"),
    ({"quant_method": "awq", "bits": 3.5, "group_size": 128, "zero_point": True}, "bits"),
    ({"quant_method": "awq", "w_bit": 3.5, "q_group_size": 128, "zero_point": True}, "w_bit"),
    ({"quant_method": "fp8", "weight_block_size": [-128, 128], "activation_scheme": "dynamic"}, "weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [0, 128], "activation_scheme": "dynamic"}, "weight_block_size"),
])
def test_bad_quantization_values(tmp_path, qc, field):
    config = model_json("meta-llama--Llama-3.1-8B.json")
    config["quantization_config"] = qc
    run = cli("size", str(write_config(tmp_path, config)), "--gpu", "h100")
    check_contract(run, 4)
    assert field in run.stderr, run.stderr


def test_table_with_astronomical_weights_does_not_overflow(tmp_path):
    config = model_json("meta-llama--Llama-3.1-8B.json")
    config["vocab_size"] = 10**30
    check_contract(cli("size", str(write_config(tmp_path, config)), "--gpu", "h100"), 4)


DEFAULTED = [
    ("mistralai--Mixtral-8x7B-v0.1.json", "num_local_experts", 8),  # MixtralConfig
    ("deepseek-ai--DeepSeek-V3.json", "n_routed_experts", 256),  # DeepseekV3Config
    ("Qwen--Qwen3-30B-A3B.json", "num_experts", 128),  # Qwen3MoeConfig
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json", "num_experts", 512),  # Qwen3NextConfig
    ("Qwen--Qwen3-30B-A3B.json", "moe_intermediate_size", 768),  # Qwen3MoeConfig
    ("meta-llama--Llama-3.1-8B.json", "intermediate_size", 11008),  # LlamaConfig
    ("openai--gpt-oss-20b.json", "num_local_experts", 128),  # GptOssConfig
]


@pytest.mark.parametrize("name,key,default", DEFAULTED, ids=[f"{d[0][:14]}-{d[1]}" for d in DEFAULTED])
def test_an_absent_field_takes_the_transformers_default(tmp_path, name, key, default):
    # vLLM reads config.json through transformers' config class: an omitted field is its default
    config = model_json(name)
    config.pop(key)
    absent = cli("size", str(write_config(tmp_path, config, "absent.json")), "--gpu", "b200", "--format", "json")
    config[key] = default
    given = cli("size", str(write_config(tmp_path, config, "given.json")), "--gpu", "b200", "--format", "json")
    assert absent.code == given.code and absent.code in (0, 3), absent.stderr
    assert json.loads(absent.stdout)["per_rank"]["weights_bytes"] == json.loads(given.stdout)["per_rank"]["weights_bytes"]
