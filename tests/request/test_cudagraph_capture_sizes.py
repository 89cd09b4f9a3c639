"""--cudagraph-capture-sizes / --max-cudagraph-capture-size: which batch sizes get a CUDA graph.

vLLM 0.33.0, vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes: given sizes are
de-duplicated, those above max_num_batched_tokens dropped, sorted; a given maximum alone caps the
default ladder (1, 2, 4, multiples of 8 below 256, multiples of 16 from 256, plus
max_num_batched_tokens when it fits) and is truncated to the ladder's last size; both given and
inconsistent is a ValueError.  The CUDA-graph estimate (FULL_AND_PIECEWISE: a piecewise graph per
size and a full decode graph per size up to max_num_seqs) is subtracted before the KV pool, so the
pool grows by exactly what the estimate shrinks.

Llama-3.1-8B on one H100, 32,000 tokens: max_num_seqs 1,024, max_num_batched_tokens 8,192.
The default ladder tops out at min(1,024 x 2, 512) = 512: 3 + 31 + 17 = 51 sizes.
"""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run
from vmemplan.laws.cudagraph_sizes import user_capture_sizes

MODEL = "meta-llama/Llama-3.1-8B"


def _size(args, capsys, code=0):
    r = run(["size", "--gpu", "h100", "--format", "json", "--", "vllm", "serve", MODEL, "--max-model-len", "32k",
             *args], capsys)
    assert r.code == code, r.stderr
    return json.loads(r.stdout) if code == 0 else r


def _graphs(d):
    src = next(p["source"] for p in d["provenance"] if p["figure"] == "cuda_graph_bytes")
    return src


def test_default_ladder_by_hand(capsys):
    d = _size([], capsys)
    ladder = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))
    assert len(ladder) == 51 == d["engine"]["cudagraph_capture_sizes"]


def test_given_sizes_replace_the_ladder_and_the_pool_takes_the_difference(capsys):
    base = _size([], capsys)
    small = _size(["--cudagraph-capture-sizes", "1", "2", "4", "8", "16", "32", "16"], capsys)
    assert small["engine"]["cudagraph_capture_sizes"] == 6  # 16 once
    src = _graphs(small)
    assert "graphs {'piecewise': 6, 'full': 6}, largest {'piecewise': 32, 'full': 32}" in src
    assert "--cudagraph-capture-sizes" in src
    b, s = base["per_rank"], small["per_rank"]
    assert s["cuda_graph_bytes"] < b["cuda_graph_bytes"]
    assert s["available_kv_cache_bytes"] - b["available_kv_cache_bytes"] == b["cuda_graph_bytes"] - s["cuda_graph_bytes"]
    assert small["kv_cache"]["num_blocks"] == s["available_kv_cache_bytes"] // small["kv_cache"]["page_size_bytes"]
    assert "--cudagraph-capture-sizes" in small["vllm_args"]["modelled"]
    assert not any(w.startswith("not modelled:") for w in small["warnings"])


def test_max_capture_size_caps_the_ladder(capsys):
    """--max-cudagraph-capture-size 100: 1, 2, 4 and 8 ... 96 (12 sizes) = 15; vLLM logs
    'Truncating max_cudagraph_capture_size to 96'."""
    d = _size(["--max-cudagraph-capture-size", "100"], capsys)
    assert d["engine"]["cudagraph_capture_sizes"] == 3 + len(range(8, 101, 8)) == 15
    assert "largest {'piecewise': 96, 'full': 96}" in _graphs(d)
    assert "Truncating max_cudagraph_capture_size to 96" in d["warnings"]


def test_sizes_above_the_batch_are_dropped():
    sizes, notes = user_capture_sizes(sizes=[1024, 4096, 8], max_size=None, max_num_batched_tokens=2048)
    assert sizes == [8, 1024] and notes
    sizes, _ = user_capture_sizes(sizes=None, max_size=600, max_num_batched_tokens=300)
    # min(600, 300) = 300: 1, 2, 4, 8..248, 256, 272, 288, then 300 itself (max_num_batched_tokens)
    assert sizes == [1, 2, 4, *range(8, 256, 8), 256, 272, 288, 300]


def test_inconsistent_max_is_vllms_refusal(capsys):
    r = _size(["--cudagraph-capture-sizes", "1", "2", "4", "--max-cudagraph-capture-size", "8"], capsys, code=2)
    error, hint = error_lines(r.stderr)
    assert error == ("error: customized max_cudagraph_capture_size(=8) should be consistent with the max value of "
                     "cudagraph_capture_sizes(=4)")
    assert hint.startswith("hint: --max-cudagraph-capture-size 4")


def test_enforce_eager_ignores_the_sizes(capsys):
    d = _size(["--enforce-eager", "--cudagraph-capture-sizes", "1", "2"], capsys)
    assert d["per_rank"]["cuda_graph_bytes"] == 0
    assert any("captures no CUDA graphs" in w for w in d["warnings"])


def test_speculative_decoding_keeps_the_warning(capsys):
    d = _size(["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}',
               "--cudagraph-capture-sizes", "1", "2"], capsys)
    assert any(w.startswith("not modelled: --cudagraph-capture-sizes") for w in d["warnings"])
