"""The explain-log gaps of issue 12, each on a small synthetic log built from vLLM's format strings:
the 0.6.5 development builds' "Memory profiling results:" block, V0's budget line, a model named
only by a local path, and pipeline stages of unequal size."""

from __future__ import annotations

import json

import pytest

from vmemplan.explain import explain, parse_log, report_to_json
from vmemplan.explain.model_link import link_model
from vmemplan.explain.parse import half_unit_bytes
from vmemplan.explain.runner import explain_startups
from vmemplan.registry import load_registry
from vmemplan.render.explain import render_text

GIB = 2**30


def _gib(text: str) -> int:
    return round(float(text) * GIB)


# --------------------------------------------------------------------------------------------
# 1. The 0.6.5 development builds' multi-line "Memory profiling results:" block
# --------------------------------------------------------------------------------------------

ROWS = (("duration", "1.23 seconds"), ("total_gpu_memory", "79.19GiB"), ("initial_memory_usage", "15.50GiB"),
        ("peak_torch_memory", "17.00GiB"), ("memory_usage_post_profile", "15.60GiB"),
        ("non_torch_memory", "0.50GiB"), ("kv_cache_size", "53.77GiB"), ("gpu_memory_utilization", "0.90"))


def _block_log(row) -> str:
    return "\n".join([
        "INFO 12-05 10:00:00 model_runner.py:1077] Loading model weights took 14.9888 GB",
        "INFO 12-05 10:00:03 worker.py:232] Memory profiling results:",
        *(row(name, value) for name, value in ROWS),
        "INFO 12-05 10:00:04 gpu_executor.py:113] # GPU blocks: 27530, # CPU blocks: 2048",
        "INFO 12-05 10:00:04 gpu_executor.py:117] Maximum concurrency for 32768 tokens per request: 13.44x",
        # a row-shaped line after the block has closed must not be read as a profiler figure
        "  kv_cache_size                  1.00GiB",
    ])


@pytest.mark.parametrize("style", ["spaces", "tabs", "prefixed", "spelled"])
def test_v065_profiling_block_reads_every_figure(style: str):
    row = {
        "spaces": lambda n, v: f"  {n:<30} {v}",
        "tabs": lambda n, v: f"\t{n}\t\t{v}",
        "prefixed": lambda n, v: f"INFO 12-05 10:00:03 worker.py:232]   {n:<28}{v}",
        "spelled": lambda n, v: f"    {n.replace('_', ' ')}:  {v}",
    }[style]
    s, = parse_log(_block_log(row))
    f = s.figures
    assert s.format == "v0.6.5-multiline"
    assert f.profile_seconds == 1.23
    assert f.total_memory_bytes == _gib("79.19")
    assert f.initial_memory_usage_bytes == _gib("15.50")
    assert f.peak_torch_bytes == _gib("17.00")
    assert f.post_profile_memory_bytes == _gib("15.60")
    assert f.non_torch_bytes == _gib("0.50")
    assert f.available_kv_cache_bytes == _gib("53.77")  # not the 1.00 after the block
    assert f.gpu_memory_utilization == 0.90
    assert f.num_gpu_blocks == 27530
    assert f.printed["available_kv_cache_bytes"] == "53.77"
    # 0.6.4 law: KV = total x util - peak_torch - non_torch = 79.19 x 0.9 - 17.00 - 0.50 = 53.771
    chk = next(c for c in explain(s).checks if c.name == "kv_vs_budget_breakdown")
    assert chk.ok and "53.771" in chk.detail
    rows = [ln for ln in s.lines if ln.kind == "profiling_row"]
    assert len(rows) == 7  # every memory row is shown and explained (the duration is not a memory row)
    assert all(r.explanation for r in explain(s).lines)


def test_one_line_064_summary_still_reads_as_before():
    line = ("INFO 11-20 10:00:00 worker.py:1] Memory profiling results: total_gpu_memory=79.19GiB "
            "initial_memory_usage=15.50GiB peak_torch_memory=17.00GiB memory_usage_post_profile=15.60Gib "
            "non_torch_memory=0.50GiB kv_cache_size=53.77GiB gpu_memory_utilization=0.90")
    s, = parse_log(line + "\n  kv_cache_size   9.99GiB\n")  # no block opens after a complete summary
    assert s.format == "v0.6.4-oneline"
    assert s.figures.available_kv_cache_bytes == _gib("53.77")


# --------------------------------------------------------------------------------------------
# 2. V0's budget line: total, util and requested
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "INFO 12-20 10:00:05 worker.py:265] the current vLLM instance can use total_gpu_memory (79.19GiB) x"
    " gpu_memory_utilization (0.90) = 71.27GiB",
    "the current vLLM instance can use total_gpu_memory (79.19 GiB) x gpu_memory_utilization (0.90) = 71.27 GiB",
    "(VllmWorkerProcess pid=7) INFO 12-20 10:00:05 worker.py:265] Memory profiling takes 5.23 seconds\\nthe"
    " current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\\n"
    "model weights take 14.99GiB; non_torch_memory takes 0.40GiB; PyTorch activation peak memory takes"
    " 1.20GiB; the rest of the memory reserved for KV Cache is 54.68GiB.",
])
def test_v0_budget_line_yields_total_util_requested(line: str):
    s, = parse_log(line + "\n")
    f = s.per_rank[s.ranks[-1]]
    assert f.total_memory_bytes == _gib("79.19")
    assert f.gpu_memory_utilization == 0.90
    assert f.requested_memory_bytes == _gib("71.27")
    # 79.19 x 0.90 = 71.271 -> printed 71.27
    rep = explain(s)
    assert any(c.name == "budget_vs_util_total" and c.ok for c in rep.checks)
    budget = next(ln for ln in rep.lines if ln.kind == "budget")
    assert "79.19 GiB x 0.9 = 71.27 GiB" in budget.explanation


# --------------------------------------------------------------------------------------------
# 3. A model named only by a local path
# --------------------------------------------------------------------------------------------

def test_local_path_links_to_the_bundled_base_model():
    link, note = link_model("/model-cache/models/Qwen/Qwen2.5-7B-Instruct", registry=load_registry())
    assert link is not None and link.model_id == "Qwen/Qwen2.5-7B"
    assert "base model of 'Qwen/Qwen2.5-7B-Instruct'" in note and "max_position_embeddings" in note
    # a bare name and a one-component path find the same sibling
    for ref in ("Qwen2.5-7B-Instruct", "/models/Qwen2.5-7B-Instruct"):
        link, _ = link_model(ref, registry=load_registry())
        assert link is not None and link.model_id == "Qwen/Qwen2.5-7B", ref


def test_path_that_exists_here_is_a_path(tmp_path):
    here = tmp_path / "Qwen" / "Qwen2.5-7B"
    here.mkdir(parents=True)  # exists, but holds no config.json
    link, note = link_model(str(here), registry=load_registry())
    assert link is None
    assert "without a config.json" in note
    assert f"(tried {str(here)!r}: " in note  # only the path itself: not its last two components


def test_explain_log_links_a_path_only_log_and_says_how():
    text = "\n".join([
        "INFO 03-01 10:00:00 [api_server.py:1] vLLM API server version 0.10.1.1",
        "INFO 03-01 10:00:00 [core.py:1] Initializing a V1 LLM engine (v0.10.1.1) with config:"
        " model='/model-cache/models/Qwen/Qwen2.5-7B-Instruct', dtype=torch.bfloat16, max_seq_len=8192,"
        " tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, enforce_eager=False,"
        " kv_cache_dtype=auto, device_config=cuda",
        "INFO 03-01 10:00:10 [gpu_model_runner.py:1] Model loading took 14.2488 GiB and 3.000000 seconds",
    ])
    s, = parse_log(text)
    rep, = explain_startups([s], registry=load_registry())
    # the link is said where it is used; the weights check itself is skipped, because the base
    # model's rotary cache (max_position_embeddings 131,072) is not the Instruct model's (32,768)
    assert not [c for c in rep.checks if c.name == "weights_vs_model"]
    said = " ".join([*(c.detail for c in rep.checks), *map(str, getattr(rep, "notes", ()))])
    assert "config of Qwen/Qwen2.5-7B from the bundled registry" in said or \
        "config of Qwen/Qwen2.5-7B from the bundled registry" in str(rep)
    assert "base model" in str(rep) and "weights check is skipped" in str(rep)


# --------------------------------------------------------------------------------------------
# 4. Pipeline stages of unequal size: the binding rank next to rank 0
# --------------------------------------------------------------------------------------------

def _pp_log(kv0: str, kv1: str) -> str:
    def w(proc: str, msg: str) -> str:
        return f"({proc}) INFO 05-01 10:00:00 [gpu_worker.py:1] {msg}"

    return "\n".join([
        "INFO 05-01 10:00:00 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='org/m',"
        " dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, pipeline_parallel_size=2,"
        " quantization=None, enforce_eager=True, kv_cache_dtype=auto, device_config=cuda",
        w("Worker_PP0 pid=10", "Model loading took 8.0000 GiB and 3.000000 seconds"),
        w("Worker_PP1 pid=11", "Model loading took 9.5000 GiB and 3.000000 seconds"),
        w("Worker_PP0 pid=10", f"Available KV cache memory: {kv0} GiB"),
        w("Worker_PP1 pid=11", f"Available KV cache memory: {kv1} GiB"),
        "INFO 05-01 10:00:20 [kv_cache_utils.py:1] GPU KV cache size: 204,800 tokens",
        "INFO 05-01 10:00:20 [kv_cache_utils.py:1] Maximum concurrency for 32,768 tokens per request: 6.25x",
    ])


def test_unequal_pipeline_stages_report_the_binding_rank():
    s, = parse_log(_pp_log("20.00", "12.50"))
    assert s.ranks == (0, 1)
    rep = explain(s)
    assert rep.binding is not None
    assert (rep.binding.rank, rep.binding.primary_rank, rep.binding.basis) == (1, 0, "available_kv_cache_bytes")
    doc = report_to_json([rep])["startups"][0]
    json.dumps(doc)
    assert doc["binding_rank"] == {"rank": 1, "primary_rank": 0, "basis": "available_kv_cache_bytes"}
    assert doc["per_rank"]["1"]["available_kv_cache_bytes"] == _gib("12.50")
    assert doc["figures"]["available_kv_cache_bytes"] == _gib("20.00")  # rank 0 stays the headline
    text = render_text(rep)
    head = text.split("\n\n")[0]
    assert "binding rank: rank 1" in head and "rank 1 (binding)" in head
    kv_row = next(ln for ln in head.splitlines() if ln.strip().startswith("available KV cache"))
    assert "20.00 GiB" in kv_row and "12.50 GiB" in kv_row
    weights_row = next(ln for ln in head.splitlines() if ln.strip().startswith("weights"))
    assert "8.0000 GiB" in weights_row and "9.5000 GiB" in weights_row


def test_no_binding_rank_when_rank_0_binds_or_the_difference_is_rounding():
    assert explain(parse_log(_pp_log("12.50", "20.00"))[0]).binding is None
    # 16.0 vs 16.01: half a unit of each printed decimal (0.05 + 0.005 GiB) covers the 0.01 GiB
    s, = parse_log(_pp_log("16.01", "16.0"))
    assert 0.01 * GIB <= half_unit_bytes("16.0") + half_unit_bytes("16.01")
    rep = explain(s)
    assert rep.binding is None
    assert "binding rank" not in render_text(rep)
    assert report_to_json([rep])["startups"][0]["binding_rank"] is None


def test_model_flag_gets_no_sibling():
    from vmemplan.core.errors import VmemplanError

    with pytest.raises(VmemplanError):
        link_model("Qwen/Qwen2.5-7B-Instruct", registry=load_registry(), strict=True)
