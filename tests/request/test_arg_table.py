"""The generated argument table of vLLM 0.33.0 and the hand-curated memory-effect overlay."""

from __future__ import annotations

from pathlib import Path

import yaml

from vmemplan.request.vllm_args import EFFECTS, available_tables, load_arg_table

ARGS = Path(__file__).resolve().parents[2] / "registry" / "vllm" / "args"


def test_the_0_33_table_has_every_serve_argument():
    data = yaml.safe_load((ARGS / "0.33.0.yaml").read_text(encoding="utf-8"))
    assert data["vllm_version"] == "0.33.0"
    assert data["count"] == len(data["arguments"]) == 321  # `vllm serve --help=all` of 0.33.0
    assert "0.33.0" in available_tables()
    for arg in data["arguments"]:
        assert arg["source"], arg["dest"]


def test_every_argument_has_exactly_one_memory_effect_with_a_reason():
    effects = yaml.safe_load((ARGS / "memory_effects.yaml").read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for cls in EFFECTS:
        for dest, reason in effects[cls].items():
            assert dest not in seen, f"{dest} is both {seen[dest]} and {cls}"
            assert isinstance(reason, str) and reason.strip(), dest
            seen[dest] = cls
    every: set[str] = set()
    for version in available_tables():
        data = yaml.safe_load((ARGS / f"{version}.yaml").read_text(encoding="utf-8"))
        dests = {a["dest"] for a in data["arguments"]}
        assert dests <= set(seen), (version, dests - set(seen))
        every |= dests
    assert every == set(seen), set(seen) - every


def test_aliases_negations_and_value_parsers_come_from_vllm():
    t = load_arg_table("0.33.0")
    assert t.by_string["-tp"].dest == "tensor_parallel_size"
    assert t.by_string["-pp"].dest == "pipeline_parallel_size"
    lora = t.by_dest["enable_lora"]
    assert lora.value == "bool_optional" and {"--disable-lora", "--no-enable-lora"} <= set(lora.negations)
    assert "--no-enable-prefix-caching" in t.by_dest["enable_prefix_caching"].negations
    assert t.by_dest["max_model_len"].type == "human_readable_int_or_auto"
    assert t.by_dest["max_num_batched_tokens"].type == "human_readable_int"
    assert t.by_dest["kv_cache_memory_bytes"].type == "human_readable_int"
    assert t.by_dest["compilation_config"].type == "json"
    assert t.by_dest["cudagraph_capture_sizes"].value == "list"
    assert t.by_dest["chat_template_content_format"].choices == ("auto", "openai", "string")
    assert t.by_dest["port"].effect == "none" and t.by_dest["enable_sleep_mode"].effect == "not_modelled"
    assert t.by_dest["max_model_len"].effect == "modelled"


def test_the_0_17_table_and_older_releases():
    """0.10.1.1, 0.13.0 and 0.17.1 have their own tables (generated from their wheels); other releases use
    the nearest newer table plus the flags removed since (registry/vllm/args/removed.yaml)."""
    assert "0.17.1" in available_tables()
    assert "--swap-space" not in load_arg_table("0.33.0").by_string
    t17 = load_arg_table("0.17.1")
    assert t17.by_string["--swap-space"].type == "float" and t17.note is None
    old = load_arg_table("0.10.1")
    assert old.vllm_version == "0.10.1.1" and old.note and "0.10.1.1" in old.note
    assert load_arg_table("0.11.0").vllm_version == "0.13.0"
    assert load_arg_table("0.14.0").vllm_version == "0.17.1"
    assert load_arg_table("0.13.0").by_string["--disable-log-requests"].effect == "none"
    assert "--swap-space" in old.by_string
    assert "--enable-reasoning" not in old.by_string  # removed in 0.10.0
    assert load_arg_table("0.8.5").by_string["--enable-reasoning"].effect == "none"
    assert load_arg_table("0.24.0").vllm_version == "0.33.0"
