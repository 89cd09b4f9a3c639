"""``--hf-overrides``: edits to config.json, applied as vLLM applies them.

vllm/config/model.py::ModelConfig.__post_init__ and ``_apply_dict_overrides`` (0.33.0): a flat
value replaces the attribute; a mapping for a nested config (``text_config``, ``vision_config``)
updates it key by key; any other mapping (``rope_scaling``) replaces the attribute whole.
"""

from __future__ import annotations

import copy
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.request.flags import loads_flag_json

__all__ = ["apply_hf_overrides", "parse_hf_overrides"]


def parse_hf_overrides(value: str | dict[str, Any] | None) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return value
    data = loads_flag_json("--hf-overrides", value, '\'{"max_position_embeddings": 65536}\'')
    if not isinstance(data, dict):
        raise UsageError("--hf-overrides must be a JSON object", hint='e.g. {"rope_scaling": {...}}')
    return data


def _update_nested(target: dict[str, Any], updates: dict[str, Any]) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict) and key.endswith("_config"):
            _update_nested(target[key], value)
        else:
            target[key] = value


def apply_hf_overrides(config: dict[str, Any], overrides: str | dict[str, Any] | None) -> dict[str, Any]:
    """``config`` (a config.json mapping) with ``overrides`` applied; the input is not changed."""
    edits = parse_hf_overrides(overrides)
    if not edits:
        return config
    out = copy.deepcopy(config)
    for key, value in edits.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict) and key.endswith("_config"):
            _update_nested(current, value)  # a nested config: key by key
        else:
            out[key] = value  # a flat or dict-valued attribute: replaced whole
    return out
