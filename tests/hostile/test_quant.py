"""Issue 15: compressed-tensors ignore lists and -q on a checkpoint that is already quantized."""

from __future__ import annotations

import pytest

from tests.hostile.conftest import check_contract, cli, model_json, write_config

CT = "unknown--Meta-Llama-3.1-8B-Instruct-FP8-compressed-tensors.json"


def _with_ignore(tmp_path, ignore):
    config = model_json(CT)
    config["quantization_config"]["ignore"] = ignore
    return str(write_config(tmp_path, config))


def test_invalid_regex_names_the_field(tmp_path):
    run = cli("size", _with_ignore(tmp_path, ["re:("]), "--gpu", "h100")
    check_contract(run, 4)
    assert "ignore" in run.stderr


@pytest.mark.parametrize("pattern", ["re:(.*.*)*z", "re:(a+)+$", "re:(.*a){30}", "re:((.|.)*)*z"])
def test_catastrophic_pattern_is_refused(tmp_path, pattern):
    # re.match("(.*.*)*z", "model.layers.10.mlp.gat") alone runs for minutes
    run = cli("size", _with_ignore(tmp_path, ["lm_head", pattern]), "--gpu", "h100")
    check_contract(run, 4)
    assert "ignore[1]" in run.stderr


def test_plain_patterns_still_work(tmp_path):
    run = cli("size", _with_ignore(tmp_path, ["lm_head", "re:.*mlp.gate$", "re:model\\.layers\\.(\\d+)\\.mlp"]),
              "--gpu", "h100", "--format", "json")
    assert run.code == 0, run.stderr


def test_generic_entries_are_capped(tmp_path):
    run = cli("size", _with_ignore(tmp_path, [f"re:.*proj{i}$" for i in range(5000)]), "--gpu", "h100")
    check_contract(run, 4)


def test_huge_ignore_list_is_refused(tmp_path):
    run = cli("size", _with_ignore(tmp_path, [f"model.layers.{i}.mlp" for i in range(200_000)]), "--gpu", "h100")
    check_contract(run, 4)
    assert "ignore" in run.stderr


def test_overlong_pattern_is_refused(tmp_path):
    run = cli("size", _with_ignore(tmp_path, ["re:" + "a" * 5000]), "--gpu", "h100")
    check_contract(run, 4)


@pytest.mark.parametrize("method", ["awq", "gguf", "bogus"])
def test_mismatched_quantization_flag_on_an_fp8_checkpoint(method):
    run = cli("size", "Qwen/Qwen3-8B-FP8", "-q", method, "--gpu", "h100")
    check_contract(run, 2)
    assert "fp8" in run.stderr.lower()
