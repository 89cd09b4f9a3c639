"""--mamba-block-size: checked as vLLM 0.33.0 checks it; the pool does not move.

- Prefix caching on (the hybrid default, "align" mode): vllm/platforms/interface.py::
  Platform._align_hybrid_block_size sets ``mamba_block_size = block_size`` (the aligned attention block),
  whatever the user gave, and an "align" Mamba page count is fixed (2 + speculative + checkpoint pages,
  vllm/v1/kv_cache_interface.py::MambaSpec.max_memory_usage_bytes), so the plan is the default's.
- Prefix caching off: vllm/config/vllm.py::VllmConfig.validate_mamba_block_size raises "--mamba-block-size can
  only be set with --enable-prefix-caching" for any value but max_model_len, on any model.
"""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run

JAMBA = "ai21labs/Jamba-v0.1"


def _size(model, args, capsys, gpu="h200", code=0):
    r = run(["size", "--gpu", gpu, "--format", "json", "--", "vllm", "serve", model, *args], capsys)
    assert r.code == code, r.stderr
    return json.loads(r.stdout) if code == 0 else r


def test_hybrid_block_follows_the_attention_block(capsys):
    base = _size(JAMBA, [], capsys)
    d = _size(JAMBA, ["--mamba-block-size", "64"], capsys)
    assert d["kv_cache"] == base["kv_cache"]
    # every Mamba group keeps the attention block (80 tokens for Jamba, see test_mamba_cache_dtype.py)
    assert {g["block_size"] for g in d["kv_cache"]["groups"]} == {80}
    assert d["vllm_args"]["modelled"] == ["--mamba-block-size"]
    assert ("--mamba-block-size 64: vLLM 0.33.0 sets the Mamba block size to the attention block size (80 tokens) of "
            "a hybrid model in 'align' mode (Platform._align_hybrid_block_size), so the flag changes nothing"
            ) in d["warnings"]
    assert not any(w.startswith("not modelled:") for w in d["warnings"])
    same = _size(JAMBA, ["--mamba-block-size", "80"], capsys)
    assert same["kv_cache"] == base["kv_cache"] and same["warnings"] == base["warnings"]


def test_without_prefix_caching_is_vllms_refusal(capsys):
    r = _size(JAMBA, ["--no-enable-prefix-caching", "--mamba-block-size", "64"], capsys, code=2)
    error, hint = error_lines(r.stderr)
    assert error == "error: --mamba-block-size can only be set with --enable-prefix-caching"
    assert "max_model_len (262144)" in hint


def test_without_prefix_caching_max_model_len_is_accepted(capsys):
    off = _size(JAMBA, ["--no-enable-prefix-caching"], capsys)
    d = _size(JAMBA, ["--no-enable-prefix-caching", "--mamba-block-size", "262144"], capsys)
    assert d["kv_cache"] == off["kv_cache"]
    assert d["warnings"] == off["warnings"]


def test_any_model_refuses_it_without_prefix_caching(capsys):
    r = _size("meta-llama/Llama-3.1-8B", ["--no-enable-prefix-caching", "--mamba-block-size", "64"], capsys,
              gpu="h100", code=2)
    assert error_lines(r.stderr)[0] == "error: --mamba-block-size can only be set with --enable-prefix-caching"
    d = _size("meta-llama/Llama-3.1-8B", ["--mamba-block-size", "64"], capsys, gpu="h100")
    assert d["kv_cache"] == _size("meta-llama/Llama-3.1-8B", [], capsys, gpu="h100")["kv_cache"]
    assert any(w.startswith("--mamba-block-size 64: the model has no recurrent") for w in d["warnings"])


def test_zero_is_refused(capsys):
    r = _size(JAMBA, ["--mamba-block-size", "0"], capsys, code=2)
    assert error_lines(r.stderr)[0].startswith("error: --mamba-block-size")


def test_older_release_warns_and_does_not_refuse(capsys):
    r = run(["size", JAMBA, "--gpu", "h200", "--vllm-version", "0.17.1", "--no-enable-prefix-caching",
             "--mamba-block-size", "64", "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    assert any("vmemplan read the flag from vLLM 0.33.0" in w for w in json.loads(r.stdout)["warnings"])
