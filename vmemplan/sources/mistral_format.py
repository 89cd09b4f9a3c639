"""Mistral-format checkpoints: ``params.json`` read the way vLLM 0.33.0 reads it.

vLLM's ``--config-format auto`` (vllm/transformers_utils/config.py::get_config) first asks whether the
model is a Mistral repository: ``consolidated*.safetensors`` present
(transformers_utils/repo_utils.py::is_mistral_model_repo) and a ``params.json`` beside them.  Then
MistralConfigParser.parse builds the config from params.json, not config.json:

* ``max_position_embeddings``: params.json's, else config.json's text config's, else 128,000
  (config.py::_maybe_retrieve_max_pos_from_hf);
* ``dtype``: params.json's, else the common dtype of the ``consolidated*.safetensors`` tensors;
* transformers_utils/configs/mistral.py::adapt_config_dict remaps the keys (:func:`config_from_params`)
  and finally fills any top-level key it lacks from config.json (``defaults``).

A vision model becomes ``PixtralForConditionalGeneration`` (``text_config`` the remapped decoder,
``vision_config`` params.json's ``vision_encoder``), which vLLM builds with pixtral.py's own tower
and a replicated adapter, unlike the Mistral-3 class that config.json names.  Pure functions: the
caller (vmemplan/sources/local.py) reads the files.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError

__all__ = ["CONFIG_FORMATS", "DEFAULT_MAX_POSITIONS", "common_float_dtype", "config_from_params", "parse_params"]

#: vLLM's --config-format values (vllm/transformers_utils/config.py::ConfigFormat)
CONFIG_FORMATS = ("auto", "hf", "mistral")
#: config.py::_maybe_retrieve_max_pos_from_hf's fallback (0.33.0)
DEFAULT_MAX_POSITIONS = 128_000

#: _remap_general_mistral_args: Mistral key -> transformers key
_RENAMED = {"dim": "hidden_size", "norm_eps": "rms_norm_eps", "n_kv_heads": "num_key_value_heads",
            "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads", "hidden_dim": "intermediate_size"}
#: safetensors dtype -> torch dtype name, the float types common_broadcastable_dtype promotes
_FLOAT_DTYPES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}
_HINT = "point vmemplan at the model's transformers config.json instead (vLLM: --config-format hf)"


def common_float_dtype(safetensors_dtypes: Iterable[str]) -> str | None:
    """The dtype vLLM infers from the consolidated tensors' dtypes (torch's promotion of the
    16- and 32-bit float types they hold: one of them as is, float16 with bfloat16 to float32);
    None when they hold none."""
    found = {_FLOAT_DTYPES[d] for d in safetensors_dtypes if d in _FLOAT_DTYPES}
    if not found:
        return None
    return found.pop() if len(found) == 1 else "float32"


def _general(c: dict[str, Any]) -> None:
    for key, new in _RENAMED.items():
        if key in c:
            c[new] = c.pop(key)
    max_pos = c.get("max_position_embeddings", DEFAULT_MAX_POSITIONS)
    for new, (key, default) in {"model_type": ("model_type", "transformer"), "hidden_act": ("activation", "silu"),
                                "tie_word_embeddings": ("tied_embeddings", False),
                                "max_seq_len": ("max_seq_len", max_pos),
                                "max_position_embeddings": ("max_position_embeddings", DEFAULT_MAX_POSITIONS),
                                "dtype": ("dtype", c.get("dtype"))}.items():
        c[new] = c.pop(key, default)


def _sliding_window(c: dict[str, Any]) -> None:
    window = c.get("sliding_window")
    if not window:
        return
    if isinstance(window, list):
        repeats = int(c["num_hidden_layers"]) // len(window)
        c["layer_types"] = ["full_attention" if w is None else "sliding_attention" for w in window * repeats]
        sizes = {w for w in window if w is not None}
        if len(sizes) > 1:
            raise ModelConfigError(f"params.json: sliding_window lists several window sizes {sorted(sizes)}",
                                   hint="vLLM asserts one window size (configs/mistral.py)")
        c["sliding_window"] = next(iter(sizes), None)
    elif isinstance(window, int) and c.get("layer_types") is None:
        c["layer_types"] = ["sliding_attention"] * int(c["num_hidden_layers"])
    else:
        raise ModelConfigError(f"params.json: unsupported sliding_window {window!r}", hint=_HINT)


def _quantization(c: dict[str, Any]) -> None:
    q = c.pop("quantization", None) or {}
    if not q:
        return
    if q.get("qformat_weight") == "fp8_e4m3":
        if q.get("qscheme_act") not in ("NO_SCALES", "TENSOR", None):
            raise ModelConfigError("params.json: fp8 quantization with qscheme_act "
                                   f"{q.get('qscheme_act')!r}", hint="vLLM accepts NO_SCALES and TENSOR only")
        c["quantization_config"] = {"quant_method": "fp8",
                                    "activation_scheme": "dynamic" if q.get("qscheme_act") == "NO_SCALES" else "static"}
    elif str(q.get("quant_method", "")).lower().replace("_", "-") == "compressed-tensors":
        c["quantization_config"] = {**q, "quant_method": "compressed-tensors"}
    else:
        raise ModelConfigError(f"params.json: unknown quantization {q!r}",
                               hint="vLLM refuses it too (configs/mistral.py::_remap_mistral_quantization_args)")


def _yarn(c: dict[str, Any]) -> None:
    yarn = dict(c.get("yarn") or {})
    if not yarn:
        return
    rope: dict[str, Any] = {"rope_type": "yarn", "mscale_all_dim": 1}
    theta = c.pop("rope_theta", None)
    if theta:
        rope["rope_theta"] = theta
    for old, (new, cast) in {"factor": ("factor", float), "original_max_position_embeddings":
                             ("original_max_position_embeddings", int), "beta": ("beta_fast", float),
                             "alpha": ("beta_slow", float)}.items():
        if old in yarn:
            value = yarn.pop(old)
            try:
                rope[new] = cast(value)
            except (TypeError, ValueError):
                raise ModelConfigError(f"params.json: yarn.{old} must be a number, got {value!r}", hint=_HINT) from None
    if not yarn.pop("apply_scale", True):
        rope["attention_factor"] = 1.0
    if yarn:
        raise ModelConfigError(f"params.json: unparsed yarn keys {sorted(yarn)}", hint="vLLM asserts the same")
    c["rope_parameters"] = rope


#: the keys every params.json decoder states (the transformer's dimensions vLLM's remap renames)
_REQUIRED = ("dim", "n_layers", "n_heads", "vocab_size")
#: the sections the remap reads as objects
_SECTIONS = ("vision_encoder", "multimodal", "moe", "yarn", "quantization", "llama_4_scaling")


def _checked(params: Mapping[str, Any]) -> None:
    """One clear line for a params.json the remap cannot read (never a crash)."""
    for key in _REQUIRED:
        value = params.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ModelConfigError(f"params.json lacks a whole number {key!r}" if value is None else
                                   f"params.json: {key} must be a whole number above 0, got {value!r}",
                                   hint="is this a Mistral-format model's params.json? " + _HINT)
    for key in _SECTIONS:
        if params.get(key) not in (None, {}) and not isinstance(params.get(key), Mapping):
            raise ModelConfigError(f"params.json: {key} must be an object, got {type(params[key]).__name__}",
                                   hint=_HINT)
    window = params.get("sliding_window")
    if window and (isinstance(window, bool) or not isinstance(window, (int, list))):  # falsy: no window, as vLLM
        raise ModelConfigError(f"params.json: sliding_window must be a number or a list, got {window!r}", hint=_HINT)
    if isinstance(window, list) and (not window or not all(w is None or isinstance(w, int) for w in window)):
        raise ModelConfigError("params.json: sliding_window lists must hold window sizes or null", hint=_HINT)


def config_from_params(params: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config vLLM builds from ``params`` (adapt_config_dict, 0.33.0): renamed keys, sliding
    window, quantization, yarn, the architecture (MistralForCausalLM, or MixtralForCausalLM with a
    ``moe`` block), a vision encoder wrapped as PixtralForConditionalGeneration, then ``defaults``
    (config.json's top level) for every key still missing.  Mistral Large 3 (latent attention and
    shared experts), Mamba and audio params.json are refused: vmemplan does not remap them yet."""
    _checked(params)
    c = copy.deepcopy(dict(params))
    _general(c)
    _sliding_window(c)
    _quantization(c)
    moe = c.get("moe") or {}
    if c.get("qk_nope_head_dim") or (moe and (moe.get("num_shared_experts") or 0) > 0) or c["model_type"] == "mamba":
        raise ModelConfigError("params.json describes a Mistral Large 3 or Mamba model, which vmemplan does not "
                               "remap from params.json yet", hint=_HINT)
    c["architectures"] = ["MixtralForCausalLM" if moe else "MistralForCausalLM"]
    _yarn(c)
    mm = c.get("multimodal") or {}
    if (mm.get("whisper_model_args") or {}).get("encoder_args"):
        raise ModelConfigError("params.json describes an audio model (Voxtral), which vmemplan does not remap "
                               "from params.json yet", hint=_HINT)
    vision = c.pop("multimodal") if mm.get("vision_encoder_args") else c.pop("vision_encoder", None)
    if vision:
        quant = c.get("quantization_config")
        c = {"model_type": "pixtral", "architectures": ["PixtralForConditionalGeneration"], "text_config": c,
             "vision_config": dict(vision), **({"quantization_config": quant} if quant else {})}
    for key, value in (defaults or {}).items():
        c.setdefault(key, value)
    return c


def parse_params(params: Mapping[str, Any], hf: Mapping[str, Any], dtype: str | None) -> dict[str, Any]:
    """MistralConfigParser.parse (0.33.0) on a params.json already read: ``max_position_embeddings``
    from params.json, else config.json's text config (``hf``, ``{}`` when there is none), else
    128,000; ``dtype`` from params.json, else ``dtype`` (what the consolidated tensors hold); then
    :func:`config_from_params` with config.json's top level as the defaults."""
    if params.get("max_position_embeddings") is None:
        text = hf.get("text_config") if isinstance(hf.get("text_config"), Mapping) else hf
        params = {**params, "max_position_embeddings": text.get("max_position_embeddings") or DEFAULT_MAX_POSITIONS}
    if params.get("dtype") is None and dtype is not None:
        params = {**params, "dtype": dtype}
    return config_from_params(params, defaults=hf)
