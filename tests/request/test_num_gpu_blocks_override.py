"""--num-gpu-blocks-override N: the pool gets N blocks, whatever the budget left.

vLLM 0.33.0, vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs: it logs "Overriding
num_gpu_blocks=%d with num_gpu_blocks_override=%d" (the profiled available memory // bytes per
block, then N), replaces the available memory with ``N x bytes per block`` before auto-fit and
the one-request check (both against that less the null block), and allocates N blocks.

Llama-3.1-8B at bf16 on one rank: a block is 2 (K, V) x 8 KV heads x 128 head dim x 2 B x 16
tokens x 32 layers = 2,097,152 B.
"""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run

MODEL = "meta-llama/Llama-3.1-8B"
BLOCK = 2 * 8 * 128 * 2 * 16 * 32
GIB = 1 << 30


def _size(args, capsys, code=0):
    r = run(["size", "--gpu", "h100", "--format", "json", "--", "vllm", "serve", MODEL, *args], capsys)
    assert r.code == code, r.stderr
    return json.loads(r.stdout), r


def test_block_bytes_by_hand():
    assert BLOCK == 2_097_152


def test_pasted_override_sets_blocks_tokens_and_concurrency(capsys):
    d, _ = _size(["--num-gpu-blocks-override", "20000", "--max-model-len", "32k"], capsys)
    kv = d["kv_cache"]
    assert kv["page_size_bytes"] == BLOCK
    assert kv["num_blocks"] == 20_000
    per_request = -(-32_000 // 16)  # cdiv(max_model_len, block_size) = 2,000 blocks
    assert kv["max_concurrency"] == 20_000 / per_request == 10.0
    # 0.33.0's "GPU KV cache size": int(concurrency x max_model_len)
    assert kv["tokens"] == int(10.0 * 32_000) == 320_000
    assert kv["num_blocks_range"] == [20_000, 20_000]  # the flag's blocks, no band
    assert d["verdict"]["starts"] is True
    assert "--num-gpu-blocks-override" in d["vllm_args"]["modelled"]
    assert not any(w.startswith("not modelled:") for w in d["warnings"])
    prov = {p["figure"]: p for p in d["provenance"]}
    assert prov["kv_cache.num_blocks"]["kind"] == "given"
    assert "may_override_num_blocks" in prov["kv_cache.num_blocks"]["source"]
    # the log line, with the budget's own blocks first
    budget_blocks = d["per_rank"]["available_kv_cache_bytes"] // BLOCK
    assert f"Overriding num_gpu_blocks={budget_blocks} with num_gpu_blocks_override=20000" in d["log_lines"]
    assert d["log_lines"][-1] == ("GPU KV cache size: 320,000 tokens, Maximum concurrency for 32,000 tokens per "
                                  "request: 10.00x")


def test_override_same_from_vmemplans_own_flags(capsys):
    r = run(["size", MODEL, "--gpu", "h100", "--num-gpu-blocks-override", "20000", "--max-model-len", "32000",
             "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["kv_cache"]["num_blocks"] == 20_000


def test_too_few_blocks_for_one_request_is_vllms_refusal(capsys):
    """131,072 tokens need cdiv(131072, 16) = 8,192 blocks = 16 GiB; 1,000 blocks less the null
    block hold 999 x 2 MiB = 1.95 GiB; the binary search keeps cdiv(L, 16) <= 999: L = 15,984."""
    d, r = _size(["--num-gpu-blocks-override", "1000"], capsys, code=3)
    assert d["kv_cache"]["num_blocks"] == 1000
    assert d["verdict"]["max_model_len_that_fits"] == 999 * 16 == 15_984
    error, hint = error_lines(r.stderr)
    assert "16.0 GiB" in error and "1.95 GiB" in error
    assert hint == "hint: --max-model-len 15984 would fit"
    assert any(line.startswith(
        "To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which "
        "is larger than the available KV cache memory (1.95 GiB). Based on the available memory, the estimated "
        "maximum model length is 15984.") for line in d["log_lines"])


def test_one_block_is_no_available_memory(capsys):
    """1 block less the null block is 0 bytes: "No available memory for the cache blocks"; one
    4,096-token request needs 256 blocks, so 257 with the null block."""
    d, r = _size(["--num-gpu-blocks-override", "1", "--max-model-len", "4096"], capsys, code=3)
    error, hint = error_lines(r.stderr)
    assert "No available memory for the cache blocks" in error
    assert hint == "hint: --num-gpu-blocks-override 257 or more (one request's 256 blocks and the null block)"
    assert any(line.startswith("No available memory for the cache blocks.") for line in d["log_lines"])


def test_override_beyond_the_device_runs_out_of_memory(capsys):
    d, r = _size(["--num-gpu-blocks-override", "60000", "--max-model-len", "32k"], capsys, code=3)
    rank = d["per_rank"]
    non_kv = (rank["weights_bytes"] + rank["activation_peak_bytes"] + rank["cuda_graph_bytes"]
              + rank["non_torch_bytes"])
    free = d["gpu"]["total_memory_bytes"] - rank["pre_budget_bytes"]
    assert 60_000 * BLOCK + non_kv > free
    error, hint = error_lines(r.stderr)
    assert error.startswith("error: vLLM would not start: num_gpu_blocks_override (60000 blocks, 117.19 GiB)")
    assert "torch.OutOfMemoryError" in error
    assert hint == f"hint: --num-gpu-blocks-override {(free - non_kv) // BLOCK} or fewer"


def test_override_past_the_budget_that_fits_warns(capsys):
    d, _ = _size(["--num-gpu-blocks-override", "30000", "--max-model-len", "32k"], capsys)
    assert d["kv_cache"]["num_blocks"] == 30_000
    assert d["per_rank"]["available_kv_cache_bytes"] < 30_000 * BLOCK
    assert any("beyond --gpu-memory-utilization" in w for w in d["warnings"])


def test_auto_max_model_len_fits_the_override(capsys):
    d, _ = _size(["--num-gpu-blocks-override", "1000", "--max-model-len", "auto"], capsys)
    assert d["engine"]["max_model_len"] == 15_984
    assert d["log_lines"][0] == ("Auto-fit max_model_len: reduced from 131072 to 15984 to fit in available KV "
                                 f"cache memory ({round(999 * BLOCK / GIB, 2)} GiB GPU)")


def test_older_release_says_the_check_order_is_0_33s(capsys):
    r = run(["size", MODEL, "--gpu", "h100", "--vllm-version", "0.13.0", "--num-gpu-blocks-override", "3000",
             "--max-model-len", "4096", "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["kv_cache"]["num_blocks"] == 3000
    assert any("releases before 0.33 checked the profiled memory first" in w for w in d["warnings"])
