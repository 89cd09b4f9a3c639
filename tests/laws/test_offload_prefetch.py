"""The prefetch weight offloader (vllm/model_executor/offloader/prefetch.py, 0.33.0), by hand.

Llama-3.1-8B, one decoder layer's parameters in bf16 (2 B), each a whole number of 512-byte
allocator blocks:  qkv 6144 x 4096 + o 4096 x 4096 + gate_up 28672 x 4096 + down 4096 x 14336
+ two norms of 4096 = 218,112,000 elements = 436,224,000 B.  The four fp32 attention scales are
buffers, not parameters: they stay on the GPU.  Of each group of G layers the last N live in host
memory; the GPU gains a static pool of S (prefetch step) copies of one offloaded layer.
"""

from __future__ import annotations

import json

import pytest

from vmemplan.api import plan_from_flags
from vmemplan.laws.offload import prefetch_offloaded_bytes

LAYER = 436_224_000
BASE = 16_094_142_464  # Llama-3.1-8B weights on one rank (tests/test_size_worked_example.py + scales)


@pytest.mark.parametrize(("g", "n", "s", "offloaded"), [(4, 1, 1, 8), (4, 2, 1, 16), (4, 2, 2, 16), (32, 1, 3, 1),
                                                        (1, 1, 1, 32)])
def test_weights_on_the_gpu(g, n, s, offloaded):
    p = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", offload_group_size=g, offload_num_in_group=n,
                        offload_prefetch_step=s)
    assert p.per_rank.weights_bytes == BASE - offloaded * LAYER + s * LAYER
    prov = {x.figure: x for x in p.provenance}
    assert "PrefetchOffloader" in prov["weights_bytes.cpu_offload"].source


def test_the_law_counts_the_last_layers_of_each_group():
    assert prefetch_offloaded_bytes([10, 5], 10, group_size=4, num_in_group=2, prefetch_step=1) == (4 * 15, 15)  # layers 2, 3, 6, 7
    assert prefetch_offloaded_bytes([10], 3, group_size=4, num_in_group=1, prefetch_step=2) == (0, 0)


def test_pasted_command_and_vllms_refusals(capsys):
    from tests.request._cli import error_lines, run

    r = run(["size", "--gpu", "h100", "--format", "json", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B",
             "--offload-group-size", "4", "--offload-num-in-group", "2"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["per_rank"]["weights_bytes"] == BASE - 16 * LAYER + LAYER
    assert {"--offload-group-size", "--offload-num-in-group"} <= set(d["vllm_args"]["modelled"])
    # vllm/config/offload.py::OffloadConfig.validate_offload_config
    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--offload-group-size", "2",
             "--offload-num-in-group", "3"], capsys)
    assert r.code == 2
    err, _ = error_lines(r.stderr)
    assert "offload_num_in_group (3) must be <= offload_group_size (2)" in err
    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--offload-group-size", "2",
             "--offload-prefetch-step", "0"], capsys)
    assert r.code == 2 and "must be >= 1 when prefetch offloading is enabled" in r.stderr


def test_auto_picks_prefetch_over_uva_and_uva_backend_ignores_the_groups():
    both = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", cpu_offload_gb=4, offload_group_size=4)
    assert both.per_rank.weights_bytes == BASE - 8 * LAYER + LAYER
    assert any("--cpu-offload-gb is ignored" in w for w in both.warnings)
    uva = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", cpu_offload_gb=4, offload_group_size=4,
                          offload_backend="uva")
    only_uva = plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100", cpu_offload_gb=4)
    assert uva.per_rank.weights_bytes == only_uva.per_rank.weights_bytes
    assert any("--offload-group-size is ignored" in w for w in uva.warnings)
