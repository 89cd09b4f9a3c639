"""--max-model-len auto (or -1): the longest context one request can hold, as vLLM chooses it."""

from __future__ import annotations

from vmemplan.render.vllm_log import log_lines
from vmemplan.api import plan_from_flags
from vmemplan.request.engine import plan_auto_max_model_len

MODEL = "meta-llama/Llama-3.1-8B"


def test_auto_shortens_to_what_one_request_can_hold():
    """vllm/v1/core/kv_cache_planning.py::_auto_fit_max_model_len: the largest L with
    cdiv(L, 16) blocks x 16 tokens x 131,072 B/token (32 layers x 8 KV heads x 128 x K and V x
    2 B) <= the available KV bytes less the null block (one 2,097,152-byte block, which vLLM
    reserves before the search); the pool is the one profiled at the model's full length.
    By hand: L = ((available - 2,097,152) // 2,097,152) x 16."""
    plan = plan_auto_max_model_len(plan_from_flags, model=MODEL, gpu="l4")
    full = plan_from_flags(model=MODEL, gpu="l4")
    avail = full.per_rank.available_kv_cache_bytes
    assert full.kv_cache.bytes_per_token == 131_072 and full.kv_cache.block_size == 16
    block = 16 * 131_072
    assert full.kv_cache.page_size_bytes == block
    expected = ((avail - block) // block) * 16
    assert plan.engine.max_model_len == expected
    assert plan.per_rank.available_kv_cache_bytes == avail  # the pool does not change
    assert plan.verdict.starts
    assert log_lines(plan)[0] == (f"Auto-fit max_model_len: reduced from 131072 to {expected} to fit in available "
                                 f"KV cache memory ({round((avail - block) / 2**30, 2)} GiB GPU)")


def test_auto_keeps_the_full_length_when_it_fits():
    plan = plan_auto_max_model_len(plan_from_flags, model=MODEL, gpu="h100")
    assert plan.engine.max_model_len == 131_072
    assert log_lines(plan)[0].startswith("Auto-fit max_model_len: full model context length 131072 fits")


def test_auto_on_the_command_line(capsys):
    from tests.request._cli import run

    r = run(["size", MODEL, "--gpu", "l4", "--max-model-len", "auto", "-f", "log"], capsys)
    assert r.code == 0, r.stderr
    assert r.stdout.startswith("Auto-fit max_model_len: reduced from 131072 to ")
    assert run(["size", MODEL, "--gpu", "l4", "--max-model-len", "-1", "-f", "log"], capsys).stdout == r.stdout
