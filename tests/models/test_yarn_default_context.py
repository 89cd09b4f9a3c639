"""The default context of a YaRN-scaled config (vmemplan/models/base.py::derived_max_model_len).

vLLM 0.33.0 does not multiply ``max_position_embeddings`` by the factor of the YaRN family
(yarn, deepseek_yarn, deepseek_llama_scaling: vllm/config/model.py::_get_and_verify_max_len,
"YaRN variants leave max_position_embeddings already scaled"), and it rewrites TeleChat3's
"telechat3-yarn" to "yarn" on load (vllm/transformers_utils/config.py::patch_rope_parameters).
"""

from __future__ import annotations

import pytest

from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for


def _llama(arch: str, rope: dict, max_pos: int) -> dict:
    return {
        "architectures": [arch], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024,
        "max_position_embeddings": max_pos, "rope_scaling": rope,
    }


@pytest.mark.parametrize(
    ("arch", "rope", "max_pos", "expected"),
    [
        # Tele-AI/TeleChat3-36B-Thinking's rope block: 32,768 positions, not 32,768 x 4
        ("TeleChat3ForCausalLM", {"factor": 4.0, "original_max_position_embeddings": 8192,
                                  "rope_type": "telechat3-yarn", "type": "telechat3-yarn"}, 32768, 32768),
        # a YaRN config whose max_position_embeddings is not original x factor (sarvam-105b's
        # shape: 4,096 x 40 = 163,840, but vLLM keeps the stated 131,072)
        ("LlamaForCausalLM", {"factor": 40.0, "original_max_position_embeddings": 4096,
                              "rope_type": "yarn"}, 131072, 131072),
        # a type outside the family is still multiplied: linear x 2
        ("LlamaForCausalLM", {"factor": 2.0, "rope_type": "linear"}, 4096, 8192),
    ],
)
def test_yarn_family_is_not_scaled_again(arch, rope, max_pos, expected):
    adapter = adapter_for(ModelConfig.from_dict(_llama(arch, rope, max_pos)))
    assert adapter.default_max_model_len() == expected
