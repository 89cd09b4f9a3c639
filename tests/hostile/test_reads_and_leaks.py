"""Issue 15: --config reads only a bounded regular file; no credential in HF_ENDPOINT's query
string is printed; a flat polynomial ReDoS in an ignore pattern is refused before matching."""

from __future__ import annotations

import os

import pytest

from tests.hostile.conftest import check_contract, cli, hub_env, model_json, write_config

LLAMA = ("size", "meta-llama/Llama-3.1-8B", "--gpu", "h100")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge", "digits", "not-utf8", "missing"])
def test_config_file_is_a_bounded_regular_file(tmp_path, kind):
    path = tmp_path / "flags.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        path.write_bytes(b"#" * (2 << 20))
    elif kind == "digits":
        path.write_text("max_model_len: " + "9" * 5000 + "\n")
    elif kind == "not-utf8":
        path.write_bytes(b"max_model_len: \xff\xfe\n")
    run = cli(*LLAMA, "--config", str(path))
    check_contract(run, 2)
    assert "config" in run.stderr.split("hint:")[0]


def test_config_file_still_works(tmp_path):
    path = tmp_path / "flags.yaml"
    path.write_text("max_model_len: 4096\n")
    run = cli(*LLAMA, "--config", str(path))
    assert run.code == 0 and "4,096-token requests" in run.stdout, run.stderr


@pytest.mark.parametrize("query", ["?token=abcdefSECRET", "?x=1&api_key=abcdefSECRET", "?sig=abcdefSECRET&a=b",
                                   "?access_token=abcdefSECRET", "/hf_abcdefSECRET/"])
def test_credential_in_the_endpoint_query_is_not_printed(tmp_path, query):
    from tests.hostile.conftest import free_port

    endpoint = f"http://127.0.0.1:{free_port()}{query}"  # nothing listens: connection refused
    run = cli("size", "someorg/somemodel", "--gpu", "h100", env=hub_env(tmp_path, endpoint))
    check_contract(run, 6, secrets=("abcdefSECRET", "hf_SENTINELsecret123"))


def test_scrubber_keeps_harmless_parameters():
    from vmemplan.sources._io import scrub_secrets

    assert scrub_secrets("https://h/?keyboard=1&monkey=2&revision=main") == "https://h/?keyboard=1&monkey=2&revision=main"
    assert scrub_secrets("https://h/x?a=1&X-Amz-Signature=abc&b=2") == "https://h/x?a=1&X-Amz-Signature=***&b=2"


@pytest.mark.parametrize("pattern", ["re:" + ".*" * 12 + "=z", "re:" + ".+" * 6 + "x", "re:a*b*c*d*e*f"])
def test_flat_polynomial_redos_in_an_ignore_pattern_is_refused(tmp_path, pattern):
    config = model_json("meta-llama--Llama-3.1-8B.json")
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head", pattern],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False}}}}
    run = cli("size", str(write_config(tmp_path, config)), "--gpu", "h100")
    check_contract(run, 4)
    assert "ignore[1]" in run.stderr, run.stderr


def test_a_plain_ignore_pattern_still_plans(tmp_path):
    config = model_json("meta-llama--Llama-3.1-8B.json")
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "ignore": ["lm_head", "re:.*layers\\.\\d+\\.mlp\\.down_proj$"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False}}}}
    run = cli("size", str(write_config(tmp_path, config)), "--gpu", "h100")
    assert run.code == 0, run.stderr
