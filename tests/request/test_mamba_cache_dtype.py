"""--mamba-cache-dtype / --mamba-ssm-cache-dtype: the recurrent-state dtypes of hybrid models.

vLLM 0.33.0, vllm/model_executor/layers/mamba/mamba_utils.py::MambaStateDtypeCalculator._mamba_state_dtype:
the conv state takes --mamba-cache-dtype ("auto" = the model dtype, vllm/utils/torch_utils.py::
get_kv_cache_torch_dtype), the temporal (SSM) state --mamba-ssm-cache-dtype, which under "auto" follows the
conv state; Nemotron-H turns an "auto" SSM dtype into its config's or float32
(vllm/model_executor/models/config.py::NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype).  Allowed
values: vllm/config/cache.py::MambaDType (auto, float32, float16, bfloat16).

The page moves the attention block: vllm/platforms/interface.py::Platform._align_hybrid_block_size raises
it to ``align * cdiv(mamba_page, align * attention_page_per_token)`` and pads the Mamba page to
``block * attention_page_per_token``; prefix caching is on for hybrids, so "align" mode.
"""

from __future__ import annotations

import json

from tests.request._cli import run


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _size(model, args, capsys, gpu="h200", code=0):
    r = run(["size", "--gpu", gpu, "--format", "json", "--", "vllm", "serve", model, *args], capsys)
    assert r.code == code, r.stderr
    return json.loads(r.stdout) if code == 0 else r


def _groups(d):
    return [(g["kind"], g["layers"], g["block_size"], g["page_size_bytes"]) for g in d["kv_cache"]["groups"]]


def _state_page(model, args):
    """The unpadded per-layer state page, through the planner's own request."""
    from vmemplan.api import plan_with_request
    from vmemplan.pipeline import graph_context

    req, _ = plan_with_request(model=model, gpu="h200", **args)
    return req.adapter.mamba_page_bytes(graph_context(req, 0))


# Jamba-v0.1: Mamba-1, inner = mamba_expand 2 x hidden 4096 = 8,192, d_conv 4, d_state 16; 8 KV heads of
# 128: one attention token 2 x 8 x 128 x 2 B = 4,096 B; alignment 16 tokens (FLASH_ATTN), 4 attention layers.
JAMBA = "ai21labs/Jamba-v0.1"
ATTN_TOKEN = 2 * 8 * 128 * 2
CONV, SSM = 3 * 8192, 8192 * 16  # elements of the conv and SSM states


def _jamba_block(page: int) -> int:
    return 16 * cdiv(page, 16 * ATTN_TOKEN)


def test_jamba_ssm_float32_raises_the_page_and_the_block(capsys):
    bf16 = (CONV + SSM) * 2  # 311,296 B
    ssm32 = CONV * 2 + SSM * 4  # 573,440 B
    both32 = (CONV + SSM) * 4  # 622,592 B
    assert (_jamba_block(bf16), _jamba_block(ssm32), _jamba_block(both32)) == (80, 144, 160)
    assert _state_page(JAMBA, {}) == bf16
    assert _state_page(JAMBA, {"mamba_ssm_cache_dtype": "float32"}) == ssm32
    assert _state_page(JAMBA, {"mamba_cache_dtype": "float32"}) == both32  # the SSM state follows under auto

    base = _size(JAMBA, [], capsys)
    ssm = _size(JAMBA, ["--mamba-ssm-cache-dtype", "float32"], capsys)
    conv = _size(JAMBA, ["--mamba-cache-dtype", "float32"], capsys)
    for d, block in ((base, 80), (ssm, 144), (conv, 160)):
        kv = d["kv_cache"]
        assert kv["block_size"] == d["engine"]["block_size"] == block
        # every group (7 of Mamba layers, 1 of attention) holds 4 layers at the padded page block x 4,096 B
        assert {g[1:] for g in _groups(d)} == {(4, block, 4 * block * ATTN_TOKEN)}
        assert kv["page_size_bytes"] == 4 * block * ATTN_TOKEN
        avail = d["per_rank"]["available_kv_cache_bytes"]
        assert avail == base["per_rank"]["available_kv_cache_bytes"]  # the budget does not move
        assert kv["num_blocks"] == avail // (4 * block * ATTN_TOKEN)  # one block: a page of each of 4 layers
    assert ssm["kv_cache"]["num_blocks"] < base["kv_cache"]["num_blocks"]
    assert ssm["vllm_args"]["modelled"] == ["--mamba-ssm-cache-dtype"]
    assert conv["vllm_args"]["modelled"] == ["--mamba-cache-dtype"]
    assert not any(w.startswith("not modelled:") for w in ssm["warnings"] + conv["warnings"])


def test_same_width_leaves_the_plan_as_it_is(capsys):
    """float16 and bfloat16 are both 2 bytes, and an explicit auto is the default."""
    base = _size(JAMBA, [], capsys)
    assert _size(JAMBA, ["--mamba-cache-dtype", "float16"], capsys)["kv_cache"] == base["kv_cache"]
    assert _size(JAMBA, ["--mamba-cache-dtype", "auto", "--mamba-ssm-cache-dtype", "auto"],
                 capsys)["kv_cache"] == base["kv_cache"]


def test_vmemplans_own_flags_plan_the_same(capsys):
    r = run(["size", JAMBA, "--gpu", "h200", "--mamba-ssm-cache-dtype", "float32", "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["kv_cache"]["block_size"] == 144


# Nemotron-H-56B: Mamba-2, 256 heads of 64 (inner 16,384), 8 groups, state 256, conv kernel 4: conv channels
# 16,384 + 2 x 8 x 256 = 20,480; SSM state 256 x 64 x 256 elements, float32 under auto (the model's default).
NEMOTRON = "nvidia/Nemotron-H-56B-Base-8K"
N_CONV, N_SSM = 3 * 20_480, 256 * 64 * 256


def test_nemotron_h_auto_ssm_is_float32_and_bfloat16_halves_it(capsys):
    auto = N_CONV * 2 + N_SSM * 4  # 16,900,096 B
    ssm16 = (N_CONV + N_SSM) * 2  # 8,511,488 B
    conv32 = N_CONV * 4 + N_SSM * 4  # 17,022,976 B: auto SSM stays the model's float32
    assert _state_page(NEMOTRON, {}) == auto
    assert _state_page(NEMOTRON, {"mamba_ssm_cache_dtype": "bfloat16"}) == ssm16
    assert _state_page(NEMOTRON, {"mamba_cache_dtype": "float32"}) == conv32
    blocks = {name: 16 * cdiv(page, 16 * ATTN_TOKEN) for name, page in
              (("auto", auto), ("ssm16", ssm16), ("conv32", conv32))}
    assert blocks == {"auto": 4128, "ssm16": 2080, "conv32": 4160}
    base = _size(NEMOTRON, [], capsys)
    f32 = _size(NEMOTRON, ["--mamba-ssm-cache-dtype", "float32"], capsys)
    b16 = _size(NEMOTRON, ["--mamba-ssm-cache-dtype", "bfloat16"], capsys)
    c32 = _size(NEMOTRON, ["--mamba-cache-dtype", "float32"], capsys)
    assert base["kv_cache"] == f32["kv_cache"]
    for d, block in ((base, 4128), (b16, 2080), (c32, 4160)):
        assert d["kv_cache"]["block_size"] == block
        # 6 groups of 9 Mamba-2 layers and one of 10 attention layers, each layer's page block x 4,096 B
        assert [(k, n, p) for k, n, _, p in _groups(d)] == [("mamba", 9, 9 * block * ATTN_TOKEN)] * 6 + [
            ("full_attention", 10, 10 * block * ATTN_TOKEN)]
        kv = d["kv_cache"]
        assert kv["page_size_bytes"] == 10 * block * ATTN_TOKEN
        assert kv["num_blocks"] == d["per_rank"]["available_kv_cache_bytes"] // (10 * block * ATTN_TOKEN)
    assert b16["kv_cache"]["num_blocks"] > base["kv_cache"]["num_blocks"]


def test_qwen3_next_gated_delta_state_at_tp2(capsys):
    """Qwen3-Next-80B at -tp 2: per rank 8 key heads + 16 value heads of 128: conv channels
    (8 + 8) x 128 + 16 x 128 = 4,096, recurrent state 16 x 128 x 128; one attention token 1 KV head x 256 x
    2 x 2 = 1,024 B; FlashInfer's GDN prefill on SM 9.0 aligns to lcm(16, 64) = 64 tokens."""
    model = "Qwen/Qwen3-Next-80B-A3B-Thinking"
    conv, rec = 3 * 4096, 16 * 128 * 128
    for args, page in (([], (conv + rec) * 2), (["--mamba-ssm-cache-dtype", "float32"], conv * 2 + rec * 4)):
        d = _size(model, ["-tp", "2", *args], capsys)
        block = 64 * cdiv(page, 64 * 1024)
        assert d["kv_cache"]["block_size"] == block
        assert {(k, b, p) for k, _, b, p in _groups(d)} == {("mamba", block, 12 * block * 1024),
                                                           ("full_attention", block, 12 * block * 1024)}
    assert 64 * cdiv((conv + rec) * 2, 64 * 1024) == 576
    assert 64 * cdiv(conv * 2 + rec * 4, 64 * 1024) == 1088


def test_qwen3_5_override_of_the_config_dtype_is_vllms_warning(capsys):
    d = _size("Qwen/Qwen3.5-27B", ["--mamba-ssm-cache-dtype", "bfloat16"], capsys)
    assert ("Qwen3.5 model specifies mamba_ssm_dtype='float32' in its config, but --mamba-ssm-cache-dtype='bfloat16' "
            "was passed. Using the user-specified value.") in d["warnings"]


def test_a_model_without_recurrent_layers_is_unchanged(capsys):
    base = _size("meta-llama/Llama-3.1-8B", [], capsys, gpu="h100")
    d = _size("meta-llama/Llama-3.1-8B", ["--mamba-cache-dtype", "float32"], capsys, gpu="h100")
    assert d["kv_cache"] == base["kv_cache"]
    assert any(w.startswith("--mamba-cache-dtype float32: the model has no recurrent") for w in d["warnings"])


def test_a_dtype_vllm_does_not_take_is_exit_2(capsys):
    r = _size(JAMBA, ["--mamba-ssm-cache-dtype", "fp8"], capsys, code=2)
    assert "--mamba-ssm-cache-dtype" in r.stderr and "Traceback" not in r.stderr
    from vmemplan.api import resolve_request
    from vmemplan.core.errors import UsageError

    try:
        resolve_request(model=JAMBA, gpu="h200", mamba_cache_dtype="int8")
    except UsageError as exc:
        assert exc.message == "unknown --mamba-cache-dtype 'int8'"
    else:  # pragma: no cover
        raise AssertionError("int8 accepted")
