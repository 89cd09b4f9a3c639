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


def test_redos_pattern_finishes(tmp_path):
    run = cli("size", _with_ignore(tmp_path, ["re:(a+)+$", "re:(.*a){30}"]), "--gpu", "h100", "--format", "json")
    assert run.code in (0, 3, 4), run.stderr
    assert "Traceback" not in run.stderr


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
