"""A validated, normalised view of a Hugging Face ``config.json``.

Configs differ in spelling (``num_hidden_layers`` vs ``n_layer``), nesting (multimodal models
keep the language model under ``text_config``) and defaults (``head_dim`` is often absent).
:class:`ModelConfig` resolves these once, the way vLLM's ``ModelConfig`` does, so the laws
read one set of names.  Pure: it takes a ``dict``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.frozen import frozen

__all__ = ["ModelConfig", "config_value_guard"]

#: Code that reads config.json values.  An arithmetic or type error raised there is a config
#: value vmemplan cannot use (a list where a number belongs, zero, infinity), not a bug.
_CONFIG_READERS = ("/vmemplan/models/", "/vmemplan/model_config.py", "/vmemplan/laws/moe.py",
                   "/vmemplan/laws/quant.py", "/vmemplan/laws/multimodal.py", "/vmemplan/laws/speculative.py")
_VALUE_ERRORS = (TypeError, ValueError, OverflowError, ZeroDivisionError, KeyError, IndexError, AttributeError)


@contextlib.contextmanager
def config_value_guard(model_id: str) -> Iterator[None]:
    """Turn an error raised while reading config.json values into :class:`ModelConfigError`.

    Only errors whose traceback passes through the code that reads config values (adapters
    and the config-driven laws) are converted; any other error is a bug and propagates, and
    ``VMEMPLAN_DEBUG=1`` lets everything through with its traceback.
    """
    try:
        yield
    except _VALUE_ERRORS as exc:
        if os.environ.get("VMEMPLAN_DEBUG") or isinstance(exc, ModelConfigError):
            raise
        tb = exc.__traceback__
        readers = False
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
            readers = readers or any(part in name for part in _CONFIG_READERS)
            tb = tb.tb_next
        if not readers:
            raise
        detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ModelConfigError(
            f"config.json of {model_id} has a value vmemplan cannot use ({type(exc).__name__}: {detail})",
            hint="check the model's dimensions in config.json: vmemplan reads them as positive whole numbers",
        ) from None


# transformers' Gemma3TextConfig defaults, for the keys the short Gemma-3 configs omit
# (transformers/models/gemma3/configuration_gemma3.py::Gemma3TextConfig.__init__).
_GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131_072,
    "query_pre_attn_scalar": 256,
    "sliding_window": 4096,
    "sliding_window_pattern": 6,
    "rope_theta": 1_000_000.0,
    "rope_local_base_freq": 10_000.0,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "hidden_activation": "gelu_pytorch_tanh",
}


def gemma3_text_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a Gemma-3 config with the transformers defaults filled into its text part.

    The official Gemma-3 multimodal configs omit ``vocab_size``, the head counts (4B), the
    window pattern and the rope bases; transformers fills them from
    ``Gemma3TextConfig``'s defaults, so vLLM sees them.  Keys present are kept.
    """
    out = dict(raw)
    if isinstance(raw.get("text_config"), Mapping):
        text = dict(raw["text_config"])
        for k, v in _GEMMA3_TEXT_DEFAULTS.items():
            text.setdefault(k, v)
        out["text_config"] = text
    else:
        for k, v in _GEMMA3_TEXT_DEFAULTS.items():
            out.setdefault(k, v)
    return out


# transformers' Gemma4TextConfig defaults (transformers 5.20.2, the oracle's
# transformers/models/gemma4/configuration_gemma4.py::Gemma4TextConfig: its field defaults, and
# ``global_head_dim`` 512 popped in ``__post_init__``), for the keys a cut-down Gemma-4 config
# omits: vLLM's gemma4.py reads them off that class.
_GEMMA4_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_144,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 30,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "global_head_dim": 512,
    "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "sliding_window": 512,
    "vocab_size_per_layer_input": 262_144,
    "hidden_size_per_layer_input": 256,
    "attention_k_eq_v": False,
    "num_kv_shared_layers": 0,
    "use_double_wide_mlp": False,
    "hidden_activation": "gelu_pytorch_tanh",
}


def gemma4_text_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a Gemma-4 config with Gemma4TextConfig's defaults filled into its text part
    (keys present are kept), and the window as ``Gemma4TextConfig.__post_init__`` leaves it:
    with ``use_bidirectional_attention == "all"`` it is ``sliding_window // 2 + 1``."""

    def fill(part: Mapping[str, Any]) -> dict[str, Any]:
        out = {**{k: v for k, v in _GEMMA4_TEXT_DEFAULTS.items() if k not in part}, **part}
        if out.get("use_bidirectional_attention") == "all" and isinstance(out.get("sliding_window"), int):
            out["sliding_window"] = out["sliding_window"] // 2 + 1
        return out

    if isinstance(raw.get("text_config"), Mapping):
        return {**raw, "text_config": fill(raw["text_config"])}
    return fill(raw)


def _with_library_defaults(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """Fill the keys that transformers' config classes default and some released configs
    omit (Gemma-3's multimodal configs leave out vocab_size and the window pattern), so vmemplan
    sees what vLLM sees.  Only families with such omissions are listed."""
    from vmemplan.config_schema import with_transformers_defaults

    raw = with_transformers_defaults(raw)
    text = raw.get("text_config") if isinstance(raw.get("text_config"), Mapping) else raw
    model_type = str(text.get("model_type") or raw.get("model_type") or "")
    if model_type.startswith("gemma3"):
        return gemma3_text_defaults(raw)
    if model_type in ("gemma4", "gemma4_text"):
        return gemma4_text_defaults(raw)
    if model_type == "dbrx":
        return dbrx_flat(raw)
    if raw.get("model_type") == "moondream3":
        return moondream3_flat(raw)
    if raw.get("model_type") == "deepseek_vl_v2":
        return deepseek_vl2_defaults(raw)
    if raw.get("model_type") == "alpamayo2_super" and isinstance(raw.get("vlm_config"), Mapping):
        return qwen3_vl_vision_defaults(_with_library_defaults(alpamayo2_super_flat(raw)))
    if raw.get("model_type") == "cosmos3_omni":
        return qwen3_vl_vision_defaults(raw)
    if raw.get("model_type") in ("qwen2_5_omni", "qwen3_asr", "qwen3_omni_moe") and isinstance(raw.get("thinker_config"), Mapping):
        # vLLM builds the thinker only, on hf_config.thinker_config (qwen2_5_omni_thinker.py /
        # qwen3_asr.py); the talker and token2wav are not loaded (their weights map to None)
        rest = {k: v for k, v in raw.items() if k != "thinker_config"}
        return _with_library_defaults({**rest, **raw["thinker_config"], "architectures": raw.get("architectures")})
    if raw.get("model_type") == "whisper":
        return whisper_decoder_view(raw)
    if raw.get("model_type") == "deepseek_v4":
        return deepseek_v4_vision_arch(raw)
    if raw.get("model_type") == "cohere_asr" and isinstance(raw.get("transf_decoder"), Mapping):
        return cohere_asr_decoder_view(raw)
    if raw.get("model_type") == "nemotron_parse" and isinstance(raw.get("decoder"), Mapping):
        return nemotron_parse_decoder_view(raw)
    if raw.get("model_type") == "colpali" and isinstance(raw.get("vlm_config"), Mapping):
        # ColPali builds PaliGemma on its vlm_config (colpali.py: vllm_config.with_hf_config(config.vlm_config))
        return _with_library_defaults({**raw["vlm_config"], **{k: v for k, v in raw.items() if k != "vlm_config"}})
    return raw


def whisper_decoder_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A Whisper config seen through its decoder, the part vLLM's WhisperForConditionalGeneration
    caches and generates with (vllm/model_executor/models/whisper.py::WhisperDecoderLayer reads
    ``d_model``, ``decoder_attention_heads``, ``decoder_ffn_dim``; WhisperDecoder has
    ``decoder_layers`` and ``max_target_positions`` positions, the length vLLM derives from the
    config).  transformers' WhisperConfig maps ``num_attention_heads`` to the *encoder* heads and
    the released configs set ``num_hidden_layers`` to the encoder depth: both are replaced."""
    out = dict(raw)
    for key, src in (("hidden_size", "d_model"), ("num_hidden_layers", "decoder_layers"),
                     ("num_attention_heads", "decoder_attention_heads"),
                     ("num_key_value_heads", "decoder_attention_heads"), ("intermediate_size", "decoder_ffn_dim"),
                     ("max_position_embeddings", "max_target_positions")):
        if raw.get(src) is not None:
            out[key] = raw[src]
    return out


def deepseek_v4_vision_arch(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """DeepSeek-V4-Flash-Vision-Exp ships the text model's ``architectures`` and ``model_type``;
    vLLM routes a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0`` to
    ``DeepseekV4ForConditionalGeneration`` (vllm/transformers_utils/model_arch_config_convertor.py,
    DeepseekV4ModelArchConfigConvertor.__init__, 0.33.0): so does vmemplan."""
    layers = raw.get("vision_n_layers")
    if isinstance(layers, int) and layers > 0 and raw.get("architectures") == ["DeepseekV4ForCausalLM"]:
        return {**raw, "architectures": ["DeepseekV4ForConditionalGeneration"]}
    return raw


def cohere_asr_decoder_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A Cohere ASR config seen through its decoder (vllm/model_executor/models/cohere_asr.py::
    CohereASRDecoder / CohereASRDecoderLayer read ``transf_decoder["config_dict"]``'s
    ``hidden_size``, ``inner_size``, ``num_attention_heads``, ``num_layers``; the vocabulary is
    ``head["num_classes"]``).  The context length vLLM derives is the top-level
    ``max_position_embeddings``, which transformers' CohereAsrConfig defaults to 1024."""
    dec = raw["transf_decoder"].get("config_dict") or {}
    head = raw.get("head") or {}
    out = {**raw, "max_position_embeddings": raw.get("max_position_embeddings", 1024), "tie_word_embeddings": False}
    for key, src in (("hidden_size", "hidden_size"), ("num_hidden_layers", "num_layers"),
                     ("num_attention_heads", "num_attention_heads"), ("num_key_value_heads", "num_attention_heads"),
                     ("intermediate_size", "inner_size")):
        if dec.get(src) is not None:
            out[key] = dec[src]
    if head.get("num_classes") is not None:
        out["vocab_size"] = head["num_classes"]
    return out


#: the published NemotronParseTextConfig's defaults (the checkpoint's remote configuration code)
_NEMOTRON_PARSE_TEXT_DEFAULTS = {"vocab_size": 250027, "d_model": 1024, "decoder_layers": 12,
                                 "decoder_attention_heads": 16, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096}


def nemotron_parse_decoder_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A Nemotron Parse config seen through its mBART decoder, the remote NemotronParseTextConfig
    that vLLM's nemotron_parse.py / nemotron_parse3_5.py build MBartDecoderNoPos on (``d_model``,
    ``decoder_layers``, ``decoder_attention_heads``; the MLP width is ``encoder_ffn_dim``, as
    nemotron_parse.py's BartDecoderLayer reads it, ``decoder_ffn_dim`` in Parse 3.5's
    (RadioMBartPrefixForCausalLM) MBartDecoderLayer, whose self attention has
    ``self_attention_kv_heads`` KV heads when set).  vLLM derives the context from that text config's
    ``max_sequence_length``, which NemotronParseConfig copies from the top level (default 9000);
    the LM head is tied when the top level or the decoder says so."""
    dec = {**_NEMOTRON_PARSE_TEXT_DEFAULTS, **{k: v for k, v in raw["decoder"].items() if v is not None}}
    tie = bool(raw.get("tie_word_embeddings") or dec.get("tie_word_embeddings"))
    prefix_lm = "RadioMBartPrefixForCausalLM" in (raw.get("architectures") or ())
    return {**raw, "hidden_size": dec["d_model"], "num_hidden_layers": dec["decoder_layers"],
            "num_attention_heads": dec["decoder_attention_heads"],
            "num_key_value_heads": (dec.get("self_attention_kv_heads") if prefix_lm else None)
            or dec["decoder_attention_heads"],
            "intermediate_size": dec["decoder_ffn_dim" if prefix_lm else "encoder_ffn_dim"],
            "vocab_size": dec["vocab_size"], "max_position_embeddings": raw.get("max_sequence_length", 9000),
            "tie_word_embeddings": tie}


def deepseek_vl2_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    """DeepSeek-VL2 / DeepSeek-OCR configs carry no ``architectures``: vLLM's DeepseekVLV2Config
    defaults it to ``["DeepseekVLV2ForCausalLM"]`` (vllm/transformers_utils/configs/deepseek_vl2.py,
    0.33.0).  Their multi-head-attention language models (both qk head dims 0) set
    ``kv_lora_rank`` null and ``v_head_dim`` 0, which vLLM never reads on that path
    (deepseek_v2.py::DeepseekAttention): both are dropped."""
    out = dict(raw)
    out.setdefault("architectures", ["DeepseekVLV2ForCausalLM"])
    lc = raw.get("language_config")
    if isinstance(lc, Mapping) and lc.get("kv_lora_rank", 0) is None and not lc.get("qk_nope_head_dim") \
            and not lc.get("qk_rope_head_dim"):
        out["language_config"] = {k: v for k, v in lc.items()
                                  if not (k == "kv_lora_rank" or (k == "v_head_dim" and not v))}
    return out


#: transformers' Qwen3VLVisionConfig defaults (models/qwen3_vl/configuration_qwen3_vl.py, 5.20) for
#: the tower keys vmemplan reads: the vision config of Cosmos3OmniConfig (model_type forced to
#: qwen3_vl_vision) and of Alpamayo2SuperConfig (a Qwen3VLConfig)
QWEN3_VL_VISION_DEFAULTS: dict[str, Any] = {
    "depth": 27, "hidden_size": 1152, "hidden_act": "gelu_pytorch_tanh", "intermediate_size": 4304,
    "num_heads": 16, "in_channels": 3, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
    "out_hidden_size": 3584, "num_position_embeddings": 2304, "deepstack_visual_indexes": [8, 16, 24],
}


def qwen3_vl_vision_defaults(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """``raw`` with the Qwen3-VL vision config's omitted keys at transformers' defaults."""
    vc = raw.get("vision_config")
    vc = vc if isinstance(vc, Mapping) else {}
    if all(k in vc for k in QWEN3_VL_VISION_DEFAULTS):
        return raw
    return {**raw, "vision_config": {**QWEN3_VL_VISION_DEFAULTS, **vc}}


def alpamayo2_super_flat(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Alpamayo 2 Super's config with its Qwen3-VL sub-configs at the top level, as
    vllm/transformers_utils/configs/alpamayo2_super.py::Alpamayo2SuperConfig exposes them (0.33.0):
    ``text_config`` / ``vision_config`` taken from ``vlm_config``, the image-token ids copied up
    unless set, and the wrapper's own keys kept (``vlm_config`` stays, as the class keeps it)."""
    nested = raw["vlm_config"]
    out = dict(raw)
    for key in ("text_config", "vision_config", "image_token_id", "video_token_id",
                "vision_start_token_id", "vision_end_token_id"):
        if key in nested:
            out.setdefault(key, nested[key])
    out["model_type"] = "qwen3_vl"  # the class is a Qwen3VLConfig: its sub-config defaults apply
    return out


def dbrx_flat(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A DBRX config with its nested dimensions under the names vmemplan reads (keys present are
    kept): vllm/model_executor/models/dbrx.py (0.33.0) reads ``d_model``, ``n_heads``,
    ``n_layers``, ``max_seq_len``, ``attn_config.kv_n_heads`` / ``rope_theta`` and
    ``ffn_config.ffn_hidden_size`` / ``moe_num_experts`` / ``moe_top_k``."""
    out = dict(raw)
    attn = raw.get("attn_config") if isinstance(raw.get("attn_config"), Mapping) else {}
    ffn = raw.get("ffn_config") if isinstance(raw.get("ffn_config"), Mapping) else {}
    for target, value in (("hidden_size", raw.get("d_model")), ("num_attention_heads", raw.get("n_heads")),
                          ("num_hidden_layers", raw.get("n_layers")),
                          ("max_position_embeddings", raw.get("max_seq_len")),
                          ("num_key_value_heads", attn.get("kv_n_heads")), ("rope_theta", attn.get("rope_theta")),
                          ("intermediate_size", ffn.get("ffn_hidden_size")),
                          ("num_local_experts", ffn.get("moe_num_experts")),
                          ("num_experts_per_tok", ffn.get("moe_top_k"))):
        if value is not None and target not in out:
            out[target] = value
    return out


def moondream3_flat(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Moondream 3's config (its sizes nested under ``config.text`` / ``config.vision`` in the
    checkpoint's own names) with a ``text_config`` and a ``vision_config`` in the names vmemplan
    reads, filled with the defaults of vllm/transformers_utils/configs/moondream3.py::
    Moondream3TextConfig / Moondream3VisionConfig (0.33.0).  As there, the MoE keys are read as
    ``moe.n_experts`` / ``moe.n_experts_per_tok`` / ``moe.start_layer`` / ``moe.expert_inner_dim``
    (a checkpoint's ``num_experts`` / ``experts_per_token`` are not read: the defaults 64 and 8 stand)."""
    nested = raw.get("config") if isinstance(raw.get("config"), Mapping) else {}
    t = nested.get("text") if isinstance(nested.get("text"), Mapping) else {}
    v = nested.get("vision") if isinstance(nested.get("vision"), Mapping) else {}
    moe = t.get("moe") if isinstance(t.get("moe"), Mapping) else {}
    heads = t.get("n_heads", 32)
    text = {"model_type": "moondream3_text", "hidden_size": t.get("dim", 2048), "intermediate_size": t.get("ff_dim", 8192),
            "num_hidden_layers": t.get("n_layers", 24), "vocab_size": t.get("vocab_size", 51200),
            "max_position_embeddings": t.get("max_context", 4096), "num_attention_heads": heads,
            "num_key_value_heads": t.get("n_kv_heads", 32), "rope_theta": t.get("rope_theta", 1500000.0),
            "moe_start_layer": moe.get("start_layer", 4), "moe_num_experts": moe.get("n_experts", 64),
            "moe_experts_per_token": moe.get("n_experts_per_tok", 8),
            "moe_expert_inner_dim": moe.get("expert_inner_dim", 1024), "tie_word_embeddings": False,
            "num_local_experts": moe.get("n_experts", 64), "num_experts_per_tok": moe.get("n_experts_per_tok", 8),
            "moe_intermediate_size": moe.get("expert_inner_dim", 1024)}
    vision = {"model_type": "moondream3_vision", "hidden_size": v.get("enc_dim", 1152),
              "patch_size": v.get("enc_patch_size", 14), "num_hidden_layers": v.get("enc_n_layers", 27),
              "intermediate_size": v.get("enc_ff_dim", 4304), "num_attention_heads": v.get("enc_n_heads", 16),
              "proj_inner_dim": v.get("proj_inner_dim", 8192), "image_size": v.get("crop_size", 378),
              "max_crops": v.get("max_crops", 12), "overlap_margin": v.get("overlap_margin", 4)}
    return {**raw, "text_config": text, "vision_config": vision}


#: model types of attention-free state-space models, whose configs carry no attention heads
#: (transformers MambaConfig / FalconMambaConfig; vllm/model_executor/models/mamba.py, 0.33.0)
_ATTENTION_FREE_MODEL_TYPES = ("mamba", "falcon_mamba")


def _first(d: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return None


#: Bounds no real model comes near (the largest served models have ~130 layers, hidden sizes
#: ~20k and vocabularies ~260k); beyond them a config is corrupt, and planning would walk
#: millions of layers.
_MAXIMA = {"num_hidden_layers": 4096, "hidden_size": 1 << 20, "num_attention_heads": 1 << 16,
           "num_key_value_heads": 1 << 16, "head_dim": 1 << 16, "intermediate_size": 1 << 24,
           "vocab_size": 1 << 24, "max_position_embeddings": 1 << 34}


def _as_int(value: Any, key: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelConfigError(f"config.json: {key} must be a number, got {value!r}"[:200], hint="fix the value in config.json, or fetch a fresh copy of the file")
    if isinstance(value, float):
        if not value.is_integer():
            raise ModelConfigError(f"config.json: {key} must be a whole number, got {value!r}", hint="fix the value in config.json, or fetch a fresh copy of the file")
        value = int(value)
    if value < minimum:
        raise ModelConfigError(f"config.json: {key} must be at least {minimum}, got {value}", hint="fix the value in config.json, or fetch a fresh copy of the file")
    if value > _MAXIMA.get(key, 1 << 40):
        raise ModelConfigError(f"config.json: {key} is implausibly large ({value})",
                               hint="no served model comes near it; is the config corrupt?")
    return int(value)


def _head_dim(text: Mapping[str, Any], hidden: int, heads: int) -> int:
    """``head_dim`` (or ``hidden_size_per_head``), else ``hidden_size // num_attention_heads``."""
    hd_raw = _first(text, "head_dim")
    if hd_raw is None:
        hd_raw = _first(text, "hidden_size_per_head")
    if hd_raw is not None:
        return _as_int(hd_raw, "head_dim")
    if hidden % heads:
        raise ModelConfigError(
            f"config.json: hidden_size {hidden} is not a multiple of num_attention_heads {heads} and head_dim is absent",
            hint="add head_dim to config.json, or check hidden_size and num_attention_heads"
        )
    return hidden // heads


def _intermediate_size(text: Mapping[str, Any], hidden: int) -> int:
    """The MLP width: the largest of per-layer sizes (Gemma-3n), else ``4 x hidden`` when absent."""
    inter_raw = _first(text, "intermediate_size", "ffn_hidden_size", "n_inner")
    if isinstance(inter_raw, list) and inter_raw:
        return max(_as_int(v, "intermediate_size", minimum=0) for v in inter_raw)
    return 4 * hidden if inter_raw is None else _as_int(inter_raw, "intermediate_size", minimum=0)


def _max_position_embeddings(text: Mapping[str, Any], raw: Mapping[str, Any]) -> int:
    max_pos_raw = _first(text, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    if max_pos_raw is None:
        max_pos_raw = _first(raw, "max_position_embeddings")
    return 2048 if max_pos_raw is None else _as_int(max_pos_raw, "max_position_embeddings")


def _torch_dtype(text: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    dtype = _first(text, "torch_dtype", "dtype") or _first(raw, "torch_dtype", "dtype") or "float32"
    if not isinstance(dtype, str):
        raise ModelConfigError(f"config.json: torch_dtype must be a string, got {dtype!r}"[:200], hint="use a dtype name such as \"bfloat16\"")
    return dtype.removeprefix("torch.")


@frozen
class ModelConfig:
    """The language model's dimensions, resolved as vLLM resolves them.

    ``raw`` is the whole config as read; ``text`` is the language-model part (``text_config``
    for multimodal wrappers, else ``raw``).  Adapters may read further keys from ``text``.
    """

    raw: Mapping[str, Any]
    text: Mapping[str, Any]
    architecture: str
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    torch_dtype: str
    quantization_config: Mapping[str, Any] | None = None
    extra_notes: tuple[str, ...] = field(default=())

    @property
    def architectures(self) -> tuple[str, ...]:
        archs = self.raw.get("architectures") or ()
        return tuple(a for a in archs if isinstance(a, str))

    @classmethod
    def from_dict(cls, raw: Any) -> ModelConfig:
        """Validate and normalise.  Raises :class:`ModelConfigError` naming the missing key."""
        if not isinstance(raw, Mapping):
            raise ModelConfigError("config.json must be a JSON object", hint="pass the model's config.json, one JSON object")
        raw = _with_library_defaults(raw)
        archs = raw.get("architectures")
        if archs is not None and (
            not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)
        ):
            raise ModelConfigError("config.json: architectures must be a list of strings", hint="architectures lists class names such as [\"LlamaForCausalLM\"]")
        text: Mapping[str, Any] = raw
        for key in ("text_config", "llm_config", "language_config"):
            sub = raw.get(key)
            if isinstance(sub, Mapping) and sub.get("hidden_size") is not None:
                text = sub
                break
        from vmemplan.config_schema import validate_config, validate_quantization

        validate_config(raw, text)
        architecture = archs[0] if archs else ""
        model_type = str(text.get("model_type") or raw.get("model_type") or "")

        def need(*keys: str, minimum: int = 1) -> int:
            value = _first(text, *keys)
            if value is None:
                value = _first(raw, *keys)
            if value is None:
                raise ModelConfigError(
                    f"config.json lacks {keys[0]!r}",
                    hint="is this the model's config.json? vmemplan needs the transformer's dimensions",
                )
            return _as_int(value, keys[0], minimum=minimum)

        hidden = need("hidden_size", "n_embd", "d_model")
        layers = need("num_hidden_layers", "n_layer", "num_layers")
        if model_type in _ATTENTION_FREE_MODEL_TYPES and _first(text, "num_attention_heads", "n_head", "num_heads") is None:
            heads = 1  # an attention-free state-space model has no heads (MambaConfig has no such field)
        else:
            heads = need("num_attention_heads", "n_head", "num_heads")
        kv_raw = _first(
            text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
            "num_attention_groups",
        )
        kv_heads = heads if kv_raw is None else _as_int(kv_raw, "num_key_value_heads")
        head_dim = _head_dim(text, hidden, heads)
        intermediate = _intermediate_size(text, hidden)
        vocab = need("vocab_size", "padded_vocab_size")
        max_pos = _max_position_embeddings(text, raw)
        tie = text.get("tie_word_embeddings", raw.get("tie_word_embeddings", False))
        dtype = _torch_dtype(text, raw)
        qc = raw.get("quantization_config") or text.get("quantization_config")
        if qc is not None and not isinstance(qc, Mapping):
            raise ModelConfigError("config.json: quantization_config must be an object",
                                   hint="quantization_config holds an object with quant_method and its settings")
        validate_quantization(qc, "config.json quantization_config")
        return cls(raw=raw, text=text, architecture=architecture, model_type=model_type,
                   hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                   num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=intermediate,
                   vocab_size=vocab, max_position_embeddings=max_pos, tie_word_embeddings=bool(tie),
                   torch_dtype=dtype, quantization_config=qc)

    def rope_scaling(self) -> Mapping[str, Any] | None:
        rs = self.text.get("rope_scaling") or self.text.get("rope_parameters")
        return rs if isinstance(rs, Mapping) else None
