"""Which releases take the CUDA-graph estimate out of the KV budget.

vllm/v1/worker/gpu_worker.py::Worker.determine_available_memory subtracts only
``cudagraph_memory_estimate_applied`` (the estimate when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is
set, else 0).  vllm/envs.py defaults that variable to '0' in the 0.18.0 and 0.19.0 wheels and to
'1' from the 0.20.0 wheel on (read from the wheels; the 0.20/0.21 log line's "default since
v0.21.0" is vLLM's own text, not its default).
"""

from __future__ import annotations

import pytest

from vmemplan.api import plan
from vmemplan.registry import load_registry
from vmemplan.rules import parse_version


def _packs():
    return load_registry().rules_packs


def test_packs_apply_the_estimate_from_0_20_on():
    for pack in _packs():
        cg = pack.cuda_graphs
        if not cg.estimate_computed:
            assert not cg.estimate_subtracted_by_default, pack.id
            continue
        first = parse_version(pack.min_version)
        assert cg.estimate_subtracted_by_default == (first >= (0, 20)), pack.id
        # one source of truth: a pack that applies the estimate has the formula that says so
        if cg.estimate_subtracted_by_default:
            assert pack.budget.formula == "requested_minus_non_kv_minus_cudagraph", pack.id


@pytest.mark.parametrize("version, subtracted", [("0.18.0", False), ("0.19.0", False),
                                                 ("0.20.0", True), ("0.21.0", True), ("0.33.0", True)])
def test_available_kv_subtracts_only_the_applied_estimate(version, subtracted):
    p = plan("meta-llama/Llama-3.1-8B", gpu="h100", vllm_version=version, max_model_len=8192)
    r = p.per_rank
    assert r.cuda_graph_bytes > 0
    assert r.cuda_graph_subtracted is subtracted
    applied = r.cuda_graph_bytes if subtracted else 0
    assert r.available_kv_cache_bytes == (r.requested_memory_bytes - r.weights_bytes - r.activation_peak_bytes
                                          - r.non_torch_bytes - applied)


@pytest.mark.parametrize("version, label", [("0.19.0", "CUDA graphs (after the pool)"), ("0.20.0", "CUDA graphs ")])
def test_table_label_follows_the_applied_estimate(version, label):
    from rich.console import Console

    from vmemplan.render.table import render_table

    p = plan("meta-llama/Llama-3.1-8B", gpu="h100", vllm_version=version, max_model_len=8192)
    console = Console(width=200, record=True)
    console.print(render_table(p))
    text = console.export_text()
    assert label in text
    if p.per_rank.cuda_graph_subtracted:
        assert "(after the pool)" not in text


@pytest.mark.parametrize(("version", "env", "subtracted"), [
    ("0.18.0", None, False), ("0.18.0", "1", True), ("0.19.0", "1", True), ("0.33.0", None, True),
    ("0.33.0", "0", False), ("0.33.0", "1", True), ("0.14.0", "1", False),  # 0.14 computes no estimate
])
def test_the_environment_variable_decides_where_vllm_reads_it(monkeypatch, version, env, subtracted):
    """VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (vllm/envs.py: bool(int(...))) switches the applied
    estimate in every release that computes one; the pool moves by exactly the estimate."""
    if env is None:
        monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    else:
        monkeypatch.setenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", env)
    p = plan("meta-llama/Llama-3.1-8B", gpu="h100", vllm_version=version)
    assert p.per_rank.cuda_graph_subtracted is subtracted
    monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    default = plan("meta-llama/Llama-3.1-8B", gpu="h100", vllm_version=version)
    moved = default.per_rank.available_kv_cache_bytes - p.per_rank.available_kv_cache_bytes
    expected = (int(subtracted) - int(default.per_rank.cuda_graph_subtracted)) * p.per_rank.cuda_graph_bytes
    assert moved == expected


def test_a_pasted_prefix_sets_it_and_a_bad_value_is_vllms_failure(capsys, monkeypatch):
    import json

    from tests.request._cli import error_lines, run

    monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    r = run(["size", "--gpu", "h100", "--format", "json", "--", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0",
             "vllm", "serve", "meta-llama/Llama-3.1-8B"], capsys)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["per_rank"]["cuda_graph_subtracted"] is False
    monkeypatch.setenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "yes")
    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"], capsys)
    assert r.code == 2
    err, hint = error_lines(r.stderr)
    assert "int()" in err and "=1" in hint
