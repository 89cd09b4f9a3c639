"""Mistral Large 3 (``MistralLarge3ForCausalLM``): DeepSeek-V3's graph under Mistral's
tensor names.

Mirrors vllm/model_executor/models/mistral_large_3.py (0.33.0): MistralLarge3ForCausalLM
subclasses deepseek_v2.py::DeepseekV3ForCausalLM and changes only the checkpoint-name
mapping (hf_to_vllm_mapper).  vLLM builds its config from Mistral's ``params.json``
(vllm/transformers_utils/configs/mistral.py::adapt_config_dict: ``model_type``
``deepseek_v3``), so a config here is DeepSeek-V3-shaped; ``llama_4_scaling`` only scales
queries.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.mla_common import MlaDecoder

__all__ = ["MistralLarge3"]


@register
class MistralLarge3(MlaDecoder):
    """DeepSeek-V3 (MlaDecoder: with the MLA decode copies and scales)."""

    architectures = ("MistralLarge3ForCausalLM",)
