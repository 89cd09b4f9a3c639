"""Schemas of the config.json fields the laws read, per model family, and of quantization configs.

A config that reaches the laws has been checked here first: every field a law reads, when it is
present, has the type and range vLLM's own code would need (positive whole numbers for counts and
dimensions, bounded so that no loop walks a million experts, booleans that are booleans, finite
floats).  A value outside its schema is a :class:`~vmemplan.core.errors.ModelConfigError` (exit 4)
naming the field, never a plan built from garbage.

The schemas are a small declarative table (no pydantic at run time): :data:`FIELDS` gives each
field's kind and range, :data:`FAMILIES` lists the fields each family's adapter and laws read,
keyed by ``model_type`` prefixes (the text config's and the top-level one's).  The common
fields apply to every family.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.patterns import lazy

__all__ = ["FIELDS", "FAMILIES", "TRANSFORMERS_DEFAULTS", "with_transformers_defaults", "validate_config", "validate_quantization", "check_quantization_flag"]

_DIM = 1 << 20  # hidden sizes are ~2^14; ~1M is beyond any model
_COUNT = 1 << 16  # heads, experts, layers: real models stay below 1,024


@frozen
class Field:
    """``kind``: "int" (whole number, bool refused), "float" (finite), "bool", "ints" (a list of ints)."""

    kind: str
    minimum: float = 1
    maximum: float = _DIM
    nullable: bool = False
    per_layer: bool = False  # a list, one value a layer, is accepted in PER_LAYER_MODEL_TYPES


#: Every field a law reads, with its kind and range.
FIELDS: dict[str, Field] = {
    # the transformer (ModelConfig reads these; see also model_config._MAXIMA)
    "hidden_size": Field("int", 1, _DIM),
    "num_hidden_layers": Field("int", 1, 4096),
    "num_attention_heads": Field("int", 1, _COUNT),
    "num_key_value_heads": Field("int", 1, _COUNT),
    "head_dim": Field("int", 1, _COUNT, nullable=True),
    "intermediate_size": Field("int", 0, 1 << 24, per_layer=True),
    "vocab_size": Field("int", 1, 1 << 24),
    "max_position_embeddings": Field("int", 1, 1 << 34),
    "tie_word_embeddings": Field("bool"),
    "sliding_window": Field("int", 0, 1 << 34, nullable=True),  # 0 means none (vLLM ModelConfig)
    "attention_chunk_size": Field("int", 1, 1 << 34, nullable=True),
    "partial_rotary_factor": Field("float", 0, 1),
    "rotary_dim": Field("int", 1, _COUNT),
    "attention_bias": Field("bool"),
    "mlp_bias": Field("bool"),
    # mixture of experts
    "num_local_experts": Field("int", 1, _COUNT),
    "num_experts": Field("int", 0, _COUNT, nullable=True),
    "n_routed_experts": Field("int", 1, _COUNT, nullable=True),
    "num_experts_per_tok": Field("int", 1, _COUNT),
    "num_experts_per_token": Field("int", 1, _COUNT),
    "moe_intermediate_size": Field("int", 1, 1 << 24),
    "n_shared_experts": Field("int", 0, _COUNT, nullable=True),
    "num_shared_experts": Field("int", 0, _COUNT, nullable=True),
    "moe_shared_expert_intermediate_size": Field("int", 0, 1 << 24),
    "first_k_dense_replace": Field("int", 0, 4096),
    "moe_layer_freq": Field("int", 1, 4096, per_layer=True),
    "expert_layer_period": Field("int", 1, 4096),
    "expert_layer_offset": Field("int", 0, 4096),
    "expert_intermediate_size": Field("int", 1, 1 << 24),
    # multi-head latent attention (DeepSeek, Kimi)
    "q_lora_rank": Field("int", 1, _DIM, nullable=True),
    "kv_lora_rank": Field("int", 1, _DIM),
    "qk_nope_head_dim": Field("int", 0, _COUNT),
    "qk_rope_head_dim": Field("int", 0, _COUNT),
    "v_head_dim": Field("int", 1, _COUNT),
    "num_nextn_predict_layers": Field("int", 0, 64),
    # hybrids
    "attn_layer_period": Field("int", 1, 4096),
    "attn_layer_offset": Field("int", 0, 4096),
    "mamba_expand": Field("int", 1, 64),
    "short_conv_kernel_size": Field("int", 1, 1024),
    # vision towers
    "spatial_merge_size": Field("int", 1, 64),
    "temporal_patch_size": Field("int", 1, 64),
    "patch_size": Field("int", 1, 4096),
    "image_size": Field("int", 1, 1 << 16),
    "num_channels": Field("int", 1, 64),
    "in_chans": Field("int", 1, 64),
    "in_channels": Field("int", 1, 64),
    "depth": Field("int", 1, 4096),
    "num_heads": Field("int", 1, _COUNT),
}

_COMMON = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
           "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings",
           "sliding_window", "partial_rotary_factor", "rotary_dim")
_MOE = ("num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "num_experts_per_token",
        "moe_intermediate_size", "n_shared_experts", "num_shared_experts", "moe_shared_expert_intermediate_size",
        "first_k_dense_replace", "moe_layer_freq", "expert_intermediate_size")
_MLA = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
        "num_nextn_predict_layers")
_VISION = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads", "num_heads", "depth",
           "patch_size", "image_size", "spatial_merge_size", "temporal_patch_size", "num_channels", "in_chans",
           "in_channels")

#: model_type prefix -> the fields its adapter and laws read (beyond the common ones).
FAMILIES: dict[str, tuple[str, ...]] = {
    "llama": ("attention_chunk_size", "attention_bias", "mlp_bias") + _MOE,  # llama4 is MoE
    "mistral": ("attention_bias",), "ministral": ("attention_bias",),
    "mixtral": _MOE, "phimoe": _MOE, "gpt_oss": _MOE, "qwen2_moe": _MOE, "qwen3_moe": _MOE,
    "qwen3_next": _MOE, "qwen3_5": _MOE, "glm4_moe": _MOE, "minimax": _MOE, "gemma4": _MOE, "olmoe": _MOE,
    "deepseek": _MOE + _MLA, "kimi": _MOE + _MLA, "glm_moe_dsa": _MOE + _MLA,
    "jamba": _MOE + ("attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset",
                     "mamba_expand"),
    "nemotron_h": _MOE + ("mamba_expand",), "falcon_h1": ("mamba_expand",),
    "qwen2": ("attention_bias",), "qwen3": ("attention_bias",), "gemma": (), "phi3": (),
}

#: transformers' config-class defaults (configuration_<family>.py, __init__ keyword defaults) for
#: the fields the laws read, by exact ``model_type``: vLLM reads config.json through these
#: classes, so a field a config omits takes this value.  transformers is not a dependency;
#: the values are those of its MixtralConfig, DeepseekV3Config, Qwen3MoeConfig, Qwen3NextConfig,
#: LlamaConfig, MistralConfig, Qwen3Config and GptOssConfig.
TRANSFORMERS_DEFAULTS: dict[str, dict[str, int]] = {
    "mixtral": {"num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 14336},
    "deepseek_v3": {"n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
                    "intermediate_size": 18432, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                    "v_head_dim": 128, "kv_lora_rank": 512, "n_shared_experts": 1, "first_k_dense_replace": 3},
    "qwen3_moe": {"num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                  "intermediate_size": 6144},
    "qwen3_next": {"num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
                   "intermediate_size": 5632},
    # LlamaConfig (5.20.2): OpenVLA's text_config keeps only vocab_size (vLLM's OpenVLAConfig builds a
    # LlamaConfig from it)
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "max_position_embeddings": 2048},
    # MistralConfig: LLaVA-NeXT keeps only the keys that differ in its text_config
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072},
    "qwen3": {"intermediate_size": 22016},
    "gpt_oss": {"num_local_experts": 128, "num_experts_per_tok": 4, "intermediate_size": 2880},
    # CohereConfig / Cohere2Config (5.20.2): a config without the length key (Command A Vision's
    # derived text_config) gets 8,192 positions, not the generic 2,048
    "cohere": {"max_position_embeddings": 8192},
    "cohere2": {"max_position_embeddings": 8192},
    # GemmaConfig / Gemma2Config (5.20.2): PaliGemma's text_config keeps only the keys that differ
    "gemma": {"max_position_embeddings": 8192},
    "gemma2": {"max_position_embeddings": 8192},
    # Qwen2Config (5.20.2): Qwen2-Audio's text_config keeps only the keys that differ
    "qwen2": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
              "num_attention_heads": 32, "max_position_embeddings": 32768, "use_sliding_window": False},
}


def with_transformers_defaults(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """``raw`` with the fields its family's transformers config class defaults filled in where the
    config omits them (an explicit null is left for :func:`validate_config` to refuse)."""

    def fill(part: Mapping[str, Any]) -> Mapping[str, Any]:
        defaults = TRANSFORMERS_DEFAULTS.get(str(part.get("model_type") or ""))
        if not defaults or all(k in part for k in defaults):
            return part
        return {**{k: v for k, v in defaults.items() if k not in part}, **part}

    out = fill(raw)
    for key in ("text_config", "llm_config", "language_config"):
        sub = out.get(key)
        if isinstance(sub, Mapping):
            filled = fill(sub)
            if filled is not sub:
                out = {**out, key: filled}
    return out


def _required(model_types: Sequence[str]) -> set[str]:
    """The fields whose explicit null vmemplan refuses: those the family's config class defaults
    (its laws always read them), and the latent-attention dimensions of MLA families."""
    names: set[str] = set()
    for mt in model_types:
        names.update(TRANSFORMERS_DEFAULTS.get(mt, {}))
        if mt.startswith(("deepseek", "kimi", "glm_moe_dsa")):
            names.update(("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
        if mt.startswith(("mixtral", "gpt_oss", "phimoe", "minimax")):
            names.add("num_local_experts")
        if mt.startswith(("qwen2_moe", "qwen3_moe", "qwen3_next", "olmoe")):
            names.add("num_experts")
    return names


_IDENT = lazy(r"^[A-Za-z_][A-Za-z0-9_.-]{0,199}$")
_HINT = "fix the value in config.json (vLLM reads it as {what}), or fetch a fresh copy of the file"


def _describe(field: Field) -> str:
    if field.kind == "int":
        top = f"{int(field.maximum):,}"
        return f"a whole number from {int(field.minimum)} to {top}"
    if field.kind == "float":
        return f"a finite number from {field.minimum:g} to {field.maximum:g}"
    if field.kind == "bool":
        return "true or false"
    return "a list of whole numbers"


#: Families whose config lists a per-layer value for a ``per_layer`` field (Gemma-3n's MatFormer
#: ``intermediate_size``, transformers' Gemma3nTextConfig; MiniMax-M3's 0/1 ``moe_layer_freq``,
#: vllm/transformers_utils/configs/minimax_m3.py).
PER_LAYER_MODEL_TYPES = ("gemma3n", "minimax_m3")


def _check(where: str, name: str, value: Any, field: Field) -> None:
    if value is None:  # transformers reads null as "use the default"; a required one is missing
        return
    if field.per_layer and isinstance(value, list) and 0 < len(value) <= 4096:
        for item in value:  # per-layer entries may be 0 (a 0/1 layer flag, an absent FFN)
            _check(where, name, item, replace(field, per_layer=False, minimum=min(field.minimum, 0)))
        return
    bad = False
    if field.kind == "bool":
        bad = not isinstance(value, bool)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        bad = True
    elif isinstance(value, float) and not math.isfinite(value):
        bad = True
    elif field.kind == "int":
        bad = isinstance(value, float) and not value.is_integer()
        bad = bad or not (field.minimum <= value <= field.maximum)
    else:
        bad = not (field.minimum <= value <= field.maximum)
    if bad:
        shown = repr(value) if not isinstance(value, str) else repr(value[:40])
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
            shown = f"a {len(str(abs(value)))}-digit number"
        raise ModelConfigError(f"config.json: {where}{name} must be {_describe(field)}, got {shown[:60]}",
                               hint=_HINT.format(what=_describe(field)))


def _families(*model_types: str) -> tuple[str, ...]:
    names: list[str] = list(_COMMON)
    for model_type in model_types:
        for prefix, fields in FAMILIES.items():
            if model_type.startswith(prefix):
                names.extend(fields)
    return tuple(dict.fromkeys(names))


def validate_config(raw: Mapping[str, Any], text: Mapping[str, Any]) -> None:
    """Check every field the laws read in ``text`` (the language model's part), ``raw`` (the whole
    config) and a ``vision_config``; raise ModelConfigError naming the first bad field."""
    archs = raw.get("architectures")
    if isinstance(archs, list):
        for i, arch in enumerate(archs[:16]):
            if isinstance(arch, str) and not _IDENT.match(arch):
                raise ModelConfigError(
                    f"config.json: architectures[{i}] is not a class name",
                    hint="architectures lists transformers class names such as LlamaForCausalLM",
                )
    model_types = []
    for part in (raw, text):
        mt = part.get("model_type")
        if mt is not None and (not isinstance(mt, str) or not _IDENT.match(mt)):
            raise ModelConfigError("config.json: model_type is not a plain name",
                                   hint="model_type names a transformers family such as llama")
        if isinstance(mt, str):
            model_types.append(mt)
    names = _families(*model_types)
    where_text = "" if text is raw else next(
        (f"{k}." for k in ("text_config", "llm_config", "language_config") if raw.get(k) is text), "")
    required = _required(model_types)
    for name in names:
        if name in text and text[name] is None and name in required:
            raise ModelConfigError(f"config.json: {where_text}{name} is null, and vLLM needs its value",
                                   hint=f"set {name} in config.json to the model's value (or drop the key for "
                                        "transformers' default), or fetch a fresh copy of the file")
        if name in text:
            field = FIELDS[name]
            if field.per_layer and not any(mt.startswith(PER_LAYER_MODEL_TYPES) for mt in model_types):
                field = replace(field, per_layer=False)
            _check(where_text, name, text[name], field)
        elif text is not raw and name in raw and name in _COMMON:
            _check("", name, raw[name], FIELDS[name])
    vision = raw.get("vision_config")
    if isinstance(vision, Mapping):
        for name in _VISION:
            if name in vision and vision[name] is not None:
                value = vision[name]
                if name == "image_size" and value == "dynamic":
                    continue  # Kanana-V's remote KananaVVisionConfig: native resolution, no fixed size
                # (height, width) pairs: transformers' InternVLVisionConfig image_size / patch_size
                pair = name in ("patch_size", "image_size") and isinstance(value, list) and 0 < len(value) <= 3
                for item in value if pair else [value]:
                    _check("vision_config.", name, item, FIELDS[name])
    _check_rope(text)


def _check_rope(text: Mapping[str, Any]) -> None:
    for key in ("rope_scaling", "rope_parameters"):
        rs = text.get(key)
        if not isinstance(rs, Mapping):
            continue
        for name in ("factor", "original_max_position_embeddings", "rope_theta"):
            value = rs.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ModelConfigError(f"config.json: {key}.{name} must be a positive finite number, got {value!r}"[:200],
                                       hint=_HINT.format(what="a positive finite number"))


# --------------------------------------------------------------------------------------------
# quantization configs


def _qfail(source: str, name: str, value: Any, want: str) -> ModelConfigError:
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return ModelConfigError(f"{source}: {name} must be {want}, got {shown}",
                            hint=f"fix {name} in the quantization config (vLLM reads it as {want})")


def _int_in(qc: Mapping[str, Any], name: str, source: str, allowed: Sequence[int] | None = None,
            minimum: int | None = None) -> None:
    if name not in qc or qc[name] is None:
        return
    value = qc[name]
    ok = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if ok and allowed is not None:
        ok = int(value) in allowed
    if ok and minimum is not None:
        ok = int(value) >= minimum
    if not ok:
        want = ("one of " + ", ".join(str(a) for a in allowed)) if allowed is not None else f"a whole number ≥ {minimum}"
        raise _qfail(source, name, value, want)


def validate_quantization(qc: Mapping[str, Any] | None, source: str = "quantization_config") -> None:
    """Check the fields vLLM's GPTQ / AWQ / fp8 / compressed-tensors configs read (0.33.0:
    gptq.py ``GPTQConfig.__init__`` allows bits 2, 3, 4, 8; awq.py ``AWQConfig`` only 4-bit;
    fp8.py ``Fp8Config`` needs a 2-element positive ``weight_block_size``)."""
    if not isinstance(qc, Mapping):
        return
    method = str(qc.get("quant_method") or "").lower()
    if method == "gptq":
        _int_in(qc, "bits", source, allowed=(2, 3, 4, 8))
    if method == "awq":
        _int_in(qc, "bits", source, allowed=(4,))
        _int_in(qc, "w_bit", source, allowed=(4,))
    if method in ("gptq", "awq"):
        for name in ("group_size", "q_group_size"):
            if name in qc and qc[name] is not None:
                value = qc[name]
                if not (isinstance(value, int) and not isinstance(value, bool) and (value == -1 or 0 < value <= 1 << 20)):
                    raise _qfail(source, name, value, "-1 or a positive whole number")
    if method in ("fp8", "fbgemm_fp8") and qc.get("weight_block_size") is not None:
        block = qc["weight_block_size"]
        if not (isinstance(block, list) and len(block) == 2 and all(
                isinstance(b, int) and not isinstance(b, bool) and 0 < b <= 1 << 16 for b in block)):
            raise _qfail(source, "weight_block_size", block, "two positive whole numbers")
    inner = qc.get("quantization") if isinstance(qc.get("quantization"), Mapping) else {}
    for holder in (qc, inner):
        for key in _EXCLUSION_KEYS:
            if holder.get(key) is not None:
                _check_exclusions(holder[key], f"{source}: {key}")
    if method == "compressed-tensors":
        groups = qc.get("config_groups")
        if isinstance(groups, Mapping):
            for name, group in list(groups.items())[:64]:
                weights = group.get("weights") if isinstance(group, Mapping) else None
                if isinstance(weights, Mapping):
                    _int_in(weights, "num_bits", f"{source} config_groups.{name}.weights", allowed=(2, 3, 4, 8, 16))
                    gs = weights.get("group_size")
                    if gs is not None and not (isinstance(gs, int) and not isinstance(gs, bool) and (gs == -1 or 0 < gs <= 1 << 20)):
                        raise _qfail(f"{source} config_groups.{name}.weights", "group_size", gs, "-1 or a positive whole number")


#: A group that repeats and itself holds a repetition or an alternation, e.g. ``(a+)+``,
#: ``(.*.*)*``, ``(a|a)*``: the shapes whose backtracking grows exponentially with the name.
_NESTED_REPEAT = lazy(r"\((?:[^()\\]|\\.)*(?:[*+?}|]|\{\d)(?:[^()\\]|\\.)*\)\s*(?:[*+]|\{\d+(?:,\d*)?\})")


#: The most unbounded repeats (``*``, ``+``, ``{n,}``) an ignore pattern may hold: a flat run of
#: ``.*.*.*…`` backtracks polynomially (n repeats: length^n), and real patterns hold one or two
#: (``.*lm_head``, ``.*layers.\d+.mlp.gate$``).
MAX_UNBOUNDED_REPEATS = 4
_REPEAT = lazy(r"[*+]|\{\d*,\}")


def _unbounded_repeats(pattern: str) -> int:
    text = re.sub(r"\\.", "", pattern)  # escaped characters repeat nothing
    text = re.sub(r"\[\^?\]?[^\]]*\]", "", text)  # nor does a character class's content
    return len(_REPEAT.findall(text))


def check_ignore_pattern(pattern: str, where: str) -> None:
    """Refuse a ``re:`` ignore pattern that does not compile, or whose shape backtracks
    catastrophically (a repeated group that holds a repetition or an alternation).  Real
    compressed-tensors patterns (``.*lm_head``, ``model.layers.\\d+.mlp.gate$``) are plain."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as error:
        raise ModelConfigError(f"{where} is not a valid regular expression ({error})",
                               hint="fix the re: pattern in the ignore list of the quantization config") from None
    repeats = _unbounded_repeats(pattern)
    if repeats > MAX_UNBOUNDED_REPEATS:
        raise ModelConfigError(
            f"{where} holds {repeats} unbounded repeats ({pattern[:60]!r}); more than {MAX_UNBOUNDED_REPEATS} "
            "make matching take polynomial time in the module name's length",
            hint="rewrite the re: pattern with one or two .* (e.g. .*mlp.gate$), or list the modules by name")
    depth_hint = pattern.count("(")
    if depth_hint > 32 or _NESTED_REPEAT.search(pattern) or re.search(r"\)\s*[*+][^()]*\)\s*[*+]", pattern):
        raise ModelConfigError(
            f"{where} repeats a group that itself repeats or alternates ({pattern[:60]!r}); matching it can take "
            "exponential time",
            hint="rewrite the re: pattern without a repeated group around a repetition, e.g. .*mlp.gate$",
        )


#: Exclusion lists (compressed-tensors ``ignore``, fp8 ``modules_to_not_convert``, ModelOpt
#: ``exclude_modules``, ...): real ones name every excluded module of up to ~100 layers (the
#: longest bundled one, Llama-4-Maverick-FP8's, has 569 entries).  Entries without a layer
#: index are matched against every layer, so they are capped more tightly.
MAX_IGNORE_ENTRIES = 10_000
MAX_GENERIC_ENTRIES = 1_000
MAX_PATTERN_CHARS = 1_000
_EXCLUSION_KEYS = ("ignore", "modules_to_not_convert", "ignored_layers", "exclude_modules", "llm_int8_skip_modules")
_LAYER_INDEX = lazy(r"layers\.(\d+)\.")


def _check_exclusions(entries: Any, where: str) -> None:
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list) or len(entries) > MAX_IGNORE_ENTRIES:
        size = f"{len(entries):,} entries" if isinstance(entries, list) else type(entries).__name__
        raise ModelConfigError(f"{where} holds {size}; vmemplan reads at most {MAX_IGNORE_ENTRIES:,} module names",
                               hint="an exclusion list names modules or re: patterns; is the quantization config corrupt?")
    generic = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or len(entry) > MAX_PATTERN_CHARS:
            raise _qfail(where.split(": ")[0], f"{where.split(': ')[-1]}[{i}]", entry,
                         f"a module name or re: pattern of at most {MAX_PATTERN_CHARS} characters")
        if not _LAYER_INDEX.search(entry):
            generic += 1
        if entry.startswith("re:"):
            check_ignore_pattern(entry[3:], f"{where}[{i}]")
    if generic > MAX_GENERIC_ENTRIES:
        raise ModelConfigError(
            f"{where} holds {generic:,} entries that name no layer; vmemplan reads at most {MAX_GENERIC_ENTRIES:,}",
            hint="an exclusion list names modules or re: patterns; is the quantization config corrupt?")

#: ``--quantization`` values that vLLM 0.33 accepts in place of a checkpoint's own method
#: (the kernels that override it: ``override_quantization_method`` in gptq_marlin.py,
#: awq_marlin.py, ... and the ModelOpt variants).
_COMPATIBLE: dict[str, frozenset[str]] = {
    "gptq": frozenset({"gptq", "gptq_marlin", "marlin", "gptq_bitblas", "bitblas"}),
    "awq": frozenset({"awq", "awq_marlin", "marlin"}),
    "fp8": frozenset({"fp8", "fbgemm_fp8"}),
    "fbgemm_fp8": frozenset({"fbgemm_fp8", "fp8"}),
    "compressed-tensors": frozenset({"compressed-tensors", "compressed_tensors"}),
    "modelopt": frozenset({"modelopt", "modelopt_fp4", "modelopt_mixed"}),
    "modelopt_fp4": frozenset({"modelopt_fp4", "modelopt"}),
    "mxfp4": frozenset({"mxfp4"}),
    "bitsandbytes": frozenset({"bitsandbytes"}),
}


def check_quantization_flag(checkpoint_method: str, flag: str | None) -> None:
    """Refuse ``--quantization`` that does not match a quantized checkpoint, as vLLM does:
    vllm/config/model.py::ModelConfig._verify_quantization (0.33.0) raises "Quantization method
    specified in the model config (…) does not match the quantization method specified in the
    `quantization` argument (…)."."""
    if not flag or not checkpoint_method:
        return
    method, wanted = checkpoint_method.lower(), flag.lower()
    if wanted in _COMPATIBLE.get(method, frozenset({method})):
        return
    raise UsageError(
        f"Quantization method specified in the model config ({method}) does not match the quantization "
        f"method specified in the `quantization` argument ({flag})",
        hint=f"drop --quantization (the checkpoint's {method} is used), or pass a checkpoint that is not quantized",
    )
