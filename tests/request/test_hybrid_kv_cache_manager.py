"""--disable-hybrid-kv-cache-manager / --enable-hybrid-kv-cache-manager.

vLLM 0.33.0, vllm/config/vllm.py::VllmConfig.__post_init__: an explicit disable is always
respected; unset, vLLM turns the manager off itself for chunked local attention with EAGLE
(or VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0); an explicit enable there raises.
With the manager off, vllm/v1/core/kv_cache_planning.py::unify_hybrid_kv_cache_specs promotes
window and chunked layers to full attention, so every layer lands in one group.

gpt-oss-20b on one H100: 24 layers, 8 KV heads of 64 at bf16, a page of 16 x 8 x 2 x 64 x 2 =
32,768 B.  Manager on: 12 window + 12 full layers in two groups of 12, a pool block of 12 pages;
off: one group of 24 layers, a block of 24 pages, and a request holds cdiv(131072, 16) blocks.
"""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run

PAGE = 16 * 8 * 2 * 64 * 2


def _size(model, args, capsys, gpu="h100", code=0):
    r = run(["size", "--gpu", gpu, "--format", "json", "--", "vllm", "serve", model, *args], capsys)
    assert r.code == code, r.stderr
    return json.loads(r.stdout) if code == 0 else r


def test_disabled_manager_allocates_windows_as_full_attention(capsys):
    on = _size("openai/gpt-oss-20b", [], capsys)
    off = _size("openai/gpt-oss-20b", ["--disable-hybrid-kv-cache-manager"], capsys)
    assert on["kv_cache"]["page_size_bytes"] == 12 * PAGE
    assert off["kv_cache"]["page_size_bytes"] == 24 * PAGE == 786_432
    avail = off["per_rank"]["available_kv_cache_bytes"]
    assert avail == on["per_rank"]["available_kv_cache_bytes"]  # the budget does not move
    blocks = avail // (24 * PAGE)
    per_request = -(-131_072 // 16)
    assert off["kv_cache"]["num_blocks"] == blocks
    assert [(g["kind"], g["layers"], g["blocks_per_request"]) for g in off["kv_cache"]["groups"]] == [
        ("full_attention", 24, per_request)]
    assert off["kv_cache"]["max_concurrency"] == blocks / per_request
    assert off["kv_cache"]["tokens"] == int(blocks / per_request * 131_072)
    assert off["kv_cache"]["tokens"] < on["kv_cache"]["tokens"]
    assert off["vllm_args"]["modelled"] == ["--disable-hybrid-kv-cache-manager"]
    assert not any(w.startswith("not modelled:") for w in off["warnings"])


def test_enable_keeps_the_default_where_vllm_keeps_it(capsys):
    on = _size("openai/gpt-oss-20b", [], capsys)
    enabled = _size("openai/gpt-oss-20b", ["--enable-hybrid-kv-cache-manager"], capsys)
    assert enabled["kv_cache"] == on["kv_cache"]


def test_enable_with_chunked_attention_and_eagle_is_vllms_refusal(capsys):
    r = _size("meta-llama/Llama-4-Scout-17B-16E-Instruct",
              ["-tp", "4", "--max-model-len", "32k", "--enable-hybrid-kv-cache-manager", "--speculative-config",
               '{"method": "eagle3", "model": "x/y", "num_speculative_tokens": 3}'], capsys, gpu="h200", code=2)
    error, hint = error_lines(r.stderr)
    assert error == ("error: Hybrid KV cache manager was explicitly enabled but is not supported in this "
                     "configuration. Consider omitting the --enable-hybrid-kv-cache-manager flag to let vLLM decide "
                     "automatically.")
    assert "drop --enable-hybrid-kv-cache-manager" in hint


def test_disabled_manager_on_llama4_chunked_layers(capsys):
    """Llama-4-Scout at -tp 4, 32,000 tokens: 36 chunked + 12 global layers; off, all 48 are full
    attention in one group holding cdiv(32000, 16) = 2,000 blocks a request."""
    d = _size("meta-llama/Llama-4-Scout-17B-16E-Instruct",
              ["-tp", "4", "--max-model-len", "32k", "--disable-hybrid-kv-cache-manager"], capsys, gpu="h200")
    assert [(g["kind"], g["layers"], g["blocks_per_request"]) for g in d["kv_cache"]["groups"]] == [
        ("full_attention", 48, 2000)]
    assert d["kv_cache"]["num_blocks"] == d["per_rank"]["available_kv_cache_bytes"] // d["kv_cache"]["page_size_bytes"]
