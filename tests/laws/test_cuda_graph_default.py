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
