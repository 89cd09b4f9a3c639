"""-O / --optimization-level and --compilation-config: which CUDA graphs vLLM 0.33.0 captures.

vllm/config/vllm.py: OPTIMIZATION_LEVEL_00..03 fill an unset cudagraph_mode (O0 NONE, O1 PIECEWISE,
O2/O3 FULL_AND_PIECEWISE) and VllmConfig.__post_init__ an unset compilation mode (VLLM_COMPILE above
O0, else NONE); _normalize_piecewise_cudagraph_mode drops the piecewise part of a mode when the
compilation mode is not VLLM_COMPILE (CUDAGraphMode.without_piecewise).  The compilation config's
capture-size keys are the --cudagraph-capture-sizes flags (EngineArgs.create_engine_config).

Llama-3.1-8B on one H100 at 32,000 tokens: hidden 4,096, 32 layers, 51 capture sizes up to 512
(tests/request/test_cudagraph_capture_sizes.py).  The registry's CUDA-graph estimate
(cost_model.yaml cuda_graphs, vmemplan/laws/overhead.py::cuda_graph_bytes): the first capture of
the largest graph costs c x tokens x hidden x layers (c = 7 B piecewise, 2 B full), each further
graph 1 MiB; FULL and PIECEWISE share one pool, so only the larger first capture counts.
"""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run

MODEL = "meta-llama/Llama-3.1-8B"
MIB = 1 << 20
PIECEWISE_512 = 7 * 512 * 4096 * 32 + 50 * MIB  # 51 piecewise graphs
FULL_512 = 2 * 512 * 4096 * 32 + 50 * MIB  # 51 full graphs
DEFAULT = 7 * 512 * 4096 * 32 + 50 * MIB + 50 * MIB  # FULL_AND_PIECEWISE: both families, one first capture


def _size(args, capsys, code=0, gpu="h100"):
    r = run(["size", "--gpu", gpu, "--format", "json", "--", "vllm", "serve", MODEL, "--max-model-len", "32k",
             *args], capsys)
    assert r.code == code, r.stderr
    return json.loads(r.stdout) if code == 0 else r


def _graph_source(d):
    return next(p["source"] for p in d["provenance"] if p["figure"] == "cuda_graph_bytes")


def _no_unmodelled(d):
    assert not any(w.startswith("not modelled:") for w in d["warnings"]), d["warnings"]


def test_default_is_o2_full_and_piecewise(capsys):
    d = _size([], capsys)
    assert d["engine"]["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert d["per_rank"]["cuda_graph_bytes"] == DEFAULT
    o3 = _size(["-O3"], capsys)  # O3 is O2 today (vllm/config/vllm.py::OptimizationLevel)
    assert o3["per_rank"] == d["per_rank"] and o3["kv_cache"]["num_blocks"] == d["kv_cache"]["num_blocks"]
    assert "--optimization-level" in o3["vllm_args"]["modelled"]
    _no_unmodelled(o3)


def test_o1_captures_piecewise_graphs_only_and_the_pool_takes_the_difference(capsys):
    base = _size([], capsys)
    d = _size(["-O1"], capsys)
    assert d["engine"]["cudagraph_mode"] == "PIECEWISE"
    assert d["per_rank"]["cuda_graph_bytes"] == PIECEWISE_512 == 522_190_848
    gain = base["per_rank"]["cuda_graph_bytes"] - d["per_rank"]["cuda_graph_bytes"]
    assert gain == 50 * MIB
    assert d["per_rank"]["available_kv_cache_bytes"] - base["per_rank"]["available_kv_cache_bytes"] == gain
    assert "mode from -O / --compilation-config" in _graph_source(d)
    _no_unmodelled(d)


def test_o0_captures_nothing(capsys):
    base = _size([], capsys)
    for args in (["-O0"], ["-O", "0"], ["--optimization-level=0"]):
        d = _size(args, capsys)
        assert d["engine"]["cudagraph_mode"] == "NONE"
        assert d["engine"]["cudagraph_capture_sizes"] == 0
        assert d["per_rank"]["cuda_graph_bytes"] == 0 and d["per_rank"]["cuda_graph_subtracted"] is False
        assert d["per_rank"]["available_kv_cache_bytes"] - base["per_rank"]["available_kv_cache_bytes"] == DEFAULT
        assert "cudagraph_mode NONE: vLLM captures no CUDA graphs" in d["warnings"]


def test_full_mode_on_hopper(capsys):
    """FlashAttention 3 (SM 9.0) captures mixed batches whole: FULL stays FULL, one family."""
    d = _size(["--compilation-config", '{"cudagraph_mode": "FULL"}'], capsys)
    assert d["engine"]["cudagraph_mode"] == "FULL"
    assert d["per_rank"]["cuda_graph_bytes"] == FULL_512 == 186_646_528
    assert "--compilation-config" in d["vllm_args"]["modelled"]
    _no_unmodelled(d)


def test_full_mode_below_sm90_is_downgraded_as_vllm_does(capsys):
    """FlashAttention 2 supports UNIFORM_BATCH only; with VLLM_COMPILE attention is a splitting op, so
    vLLM sets FULL_AND_PIECEWISE (CompilationConfig.resolve_cudagraph_mode_and_sizes)."""
    d = _size(["-cc.cudagraph_mode=full"], capsys, gpu="a100-80gb")
    assert d["engine"]["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert ("CUDAGraphMode.FULL is not supported with FlashAttentionBackend backend (support: "
            "AttentionCGSupport.UNIFORM_BATCH); setting cudagraph_mode=FULL_AND_PIECEWISE") in d["warnings"]


def test_compilation_mode_none_drops_the_piecewise_graphs(capsys):
    d = _size(["-cc", '{"mode": 0}'], capsys)
    assert d["engine"]["cudagraph_mode"] == "FULL_DECODE_ONLY"
    # the full decode graphs: every size up to max_num_seqs (1,024), so all 51
    assert d["per_rank"]["cuda_graph_bytes"] == FULL_512
    assert ("Cudagraph mode FULL_AND_PIECEWISE is not compatible with compilation mode NONE. "
            "Overriding to FULL_DECODE_ONLY.") in d["warnings"]
    d = _size(["-cc", '{"mode": "STOCK_TORCH_COMPILE"}'], capsys)  # V2 runner captures none: a warning
    assert any(w.startswith("not modelled: compilation mode STOCK_TORCH_COMPILE") for w in d["warnings"])


def test_a_level_fills_only_what_the_user_left_unset(capsys):
    """-O0 sets compilation mode NONE; a user's PIECEWISE is kept, then dropped for want of
    piecewise compilation (NONE); a user's FULL needs none and is captured."""
    d = _size(["-O0", "-cc", '{"cudagraph_mode": "PIECEWISE"}'], capsys)
    assert d["engine"]["cudagraph_mode"] == "NONE" and d["per_rank"]["cuda_graph_bytes"] == 0
    d = _size(["-O0", "-cc", '{"cudagraph_mode": "FULL"}'], capsys)
    assert d["engine"]["cudagraph_mode"] == "FULL" and d["per_rank"]["cuda_graph_bytes"] == FULL_512


def test_capture_sizes_inside_the_compilation_config(capsys):
    d = _size(["-O1", "-cc.cudagraph_capture_sizes", "[1, 2, 4, 8]"], capsys)
    assert d["engine"]["cudagraph_capture_sizes"] == 4
    assert d["per_rank"]["cuda_graph_bytes"] == 7 * 8 * 4096 * 32 + 3 * MIB == 10_485_760
    d = _size(["-cc", '{"max_cudagraph_capture_size": 100}'], capsys)
    assert d["engine"]["cudagraph_capture_sizes"] == 15
    assert "Truncating max_cudagraph_capture_size to 96" in d["warnings"]


def test_flag_and_key_are_mutually_exclusive(capsys):
    r = _size(["-cc", '{"cudagraph_capture_sizes": [1, 2]}', "--cudagraph-capture-sizes", "1", "2"], capsys, code=2)
    error, hint = error_lines(r.stderr)
    assert error == ("error: cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are "
                     "mutually exclusive")


def test_level_key_is_refused_as_vllm_0_33_refuses_it(capsys):
    r = _size(["--compilation-config", '{"level": 3}'], capsys, code=2)
    error, hint = error_lines(r.stderr)
    assert "CompilationConfig" in error and "level: Unexpected keyword argument" in error
    assert "'level' was renamed 'mode'" in hint


def test_bad_level_and_mode_are_refused(capsys):
    r = _size(["-O7"], capsys, code=2)
    error, _ = error_lines(r.stderr)
    assert error.startswith("error: argument --optimization-level: Input should be 0, 1, 2 or 3")
    r = _size(["-cc", '{"mode": "FAST"}'], capsys, code=2)
    error, _ = error_lines(r.stderr)
    assert error == ("error: Invalid compilation mode: FAST. Valid modes are: NONE, STOCK_TORCH_COMPILE, "
                     "DYNAMO_TRACE_ONCE, VLLM_COMPILE")


def test_other_keys_warn_and_enforce_eager_wins(capsys):
    d = _size(["-cc", '{"cudagraph_mode": "PIECEWISE", "splitting_ops": []}'], capsys)
    assert any(w.startswith("not modelled: --compilation-config key(s) splitting_ops") for w in d["warnings"])
    d = _size(["--enforce-eager", "-O3"], capsys)
    assert d["per_rank"]["cuda_graph_bytes"] == 0 and d["engine"]["cudagraph_mode"] == "NONE"


def test_older_release_keeps_the_warning(capsys):
    r = run(["size", "--gpu", "h100", "--vllm-version", "0.17.1", "--format", "json", "--", "vllm", "serve", MODEL,
             "--max-model-len", "32k", "-O1"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert any(w.startswith("not modelled: -O") for w in d["warnings"])
