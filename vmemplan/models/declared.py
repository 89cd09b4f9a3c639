"""Architectures described as data: a planned family, switches, and config-key renames.

Most of vLLM's text-generation architectures are a family vmemplan already models with a
difference in names and switches (biases, a tied head, LayerNorm for RMSNorm, a plain MLP, a
parallel attention+MLP block).  Such an architecture is one entry of
a file of ``registry/architectures/`` (one file per family)::

    ApertusForCausalLM:
      base: LlamaForCausalLM            # the planned architecture whose graph it shares
      source: vllm/model_executor/models/apertus.py::ApertusForCausalLM (0.33.0)
      switches: {mlp_kind: plain, qk_norm: true}
      keys: {intermediate_size: ffn_hidden_size}   # read intermediate_size from ffn_hidden_size
      config: tests/fixtures/oracle/configs/swiss-ai--Apertus-8B.json   # the real config it is checked on

The entry becomes a subclass of the base family's adapter with the switches as class
attributes; a switch must name a class attribute of the base (not a method) and keep its type,
so a typo is a registry error, not a silently ignored key.  New mechanisms (a cache kind, a
recurrent state, a tower) stay code in a family module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import RegistryInvalid

if TYPE_CHECKING:
    from vmemplan.model_config import ModelConfig
    from vmemplan.models.base import Adapter

__all__ = ["declared_adapters", "remap_config"]


def remap_config(config: ModelConfig, keys: Mapping[str, str]) -> ModelConfig:
    """``config`` with each ``target`` key read from its ``source`` key (when the source is
    present), in the language-model part of the config."""
    from vmemplan.model_config import ModelConfig

    if not keys:
        return config
    text = dict(config.text)
    for target, source in keys.items():
        if source in text:
            text[target] = text[source]
    raw = dict(config.raw)
    if config.text is config.raw:
        raw = text
    else:
        for key in ("text_config", "llm_config", "language_config"):
            if raw.get(key) is config.text:
                raw[key] = text
    return ModelConfig.from_dict(raw)


def _switch_ok(base: type, name: str, value: Any) -> str | None:
    if name.startswith("_") or not hasattr(base, name) or callable(getattr(base, name)):
        return f"{name!r} is not a switch of {base.__name__}"
    default = getattr(base, name)
    if default is None:
        return None if isinstance(value, (bool, int, str)) else f"{name!r} must be a bool, number or string"
    if type(value) is not type(default) and not (isinstance(default, int) and type(value) is int):
        return f"{name!r} must be a {type(default).__name__} like {base.__name__}'s {default!r}"
    return None


def declared_adapters(entries: Mapping[str, Mapping[str, Any]],
                      planned: Mapping[str, type[Adapter]]) -> dict[str, type[Adapter]]:
    """One adapter class per entry, built on the planned architecture it names as ``base``."""
    out: dict[str, type[Adapter]] = {}
    errors: list[str] = []
    for arch, entry in entries.items():
        base = planned.get(str(entry["base"]))
        if base is None:
            errors.append(f"{arch}: base {entry['base']!r} is not an architecture vmemplan plans")
            continue
        switches = dict(entry.get("switches") or {})
        bad = [msg for name, value in switches.items() if (msg := _switch_ok(base, name, value))]
        if bad:
            errors.append(f"{arch}: " + "; ".join(bad))
            continue
        keys = dict(entry.get("keys") or {})

        def __init__(self: Any, config: ModelConfig, _keys: dict[str, str] = keys,
                     _base: type = base) -> None:
            _base.__init__(self, remap_config(config, _keys))

        attrs: dict[str, Any] = {**switches, "architectures": (arch,), "declared_source": str(entry["source"]),
                                 "declared_config": entry.get("config"), "__doc__": str(entry["source"])}
        if keys:
            attrs["__init__"] = __init__
        out[arch] = type(f"Declared[{arch}]", (base,), attrs)
    if errors:
        raise RegistryInvalid("invalid registry: architectures.yaml: " + "; ".join(errors),
                              hint="a switch is a class attribute of the base family's adapter "
                                   "(vmemplan/models/dense.py::LlamaLike lists Llama's)")
    return out
