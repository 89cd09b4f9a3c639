"""Synthetic logs built from vLLM's format strings: robustness and every failure kind."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.explain import explain, parse_log, read_log_bytes, report_to_json
from vmemplan.explain.parse import half_unit_bytes
from vmemplan.render.explain import render_text

GIB = 2**30
ESC = "\x1b"


def _info(msg: str, proc: str = "(EngineCore_DP0 pid=11)") -> str:
    return f"{ESC}[1;36m{proc}{ESC}[0m {ESC}[32mINFO{ESC}[0m 01-02 03:04:05 [x.py:1] {msg}"


# 0.33.0 kv_cache_utils.py::update_kv_cache_capacity prints one joined record
JOINED_033 = ("%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx"
              % ("GPU", f"{262_144:,}", f"{32_768:,}", 8.0))

V1_LOG = "\n".join([
    _info("vLLM API server version 0.33.0", "(APIServer pid=1)"),
    _info("non-default args: {'model': 'org/m', 'max_model_len': 32768, 'gpu_memory_utilization': 0.9}",
          "(APIServer pid=1)"),
    _info("Initializing a V1 LLM engine (v0.33.0) with config: model='org/m', dtype=torch.bfloat16, "
          "max_seq_len=32768, tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None, "
          "enforce_eager=False, kv_cache_dtype=auto, device_config=cuda"),
    _info("Model loading took 7.5 GiB memory and 3.000000 seconds", "(Worker_TP1 pid=21)"),
    _info("Model loading took 7.49 GiB memory and 3.000000 seconds", "(Worker_TP0 pid=20)"),
    _info("Available KV cache memory: 16.0 GiB", "(Worker_TP0 pid=20)"),
    _info("Available KV cache memory: 16.01 GiB", "(Worker_TP1 pid=21)"),
    _info(JOINED_033),
    _info("Graph capturing finished in 5 secs, took 0.50 GiB", "(Worker_TP0 pid=20)"),
])


def test_joined_033_line_with_ansi_crlf_and_ranks():
    raw = V1_LOG.replace("\n", "\r\n").encode()
    s, = parse_log(read_log_bytes(raw))
    assert s.format == "v1-joined"
    assert s.vllm_version == "0.33.0"
    assert s.model == "org/m"
    assert s.ranks == (0, 1)
    f = s.figures
    assert f.kv_cache_tokens == 262_144 and f.max_model_len == 32_768 and f.max_concurrency == 8.0
    assert f.weights_bytes == round(7.49 * GIB) and f.available_kv_cache_bytes == 16 * GIB
    assert s.per_rank[1].weights_bytes == round(7.5 * GIB)
    assert s.per_rank[1].available_kv_cache_bytes == round(16.01 * GIB)
    assert s.per_rank[1].kv_cache_tokens == 262_144  # the engine-wide pool
    assert f.tensor_parallel_size == 2 and f.dtype == "bfloat16"
    assert all(ESC not in ln.text and "\r" not in ln.text for ln in s.lines)
    rep = explain(s)
    # 262,144 / 32,768 = 8.00 exactly
    c = next(c for c in rep.checks if c.name == "concurrency_vs_tokens")
    assert c.ok and "8.0000" in c.detail


def test_cut_lines_invalid_utf8_and_garbage_never_crash():
    data = (V1_LOG.encode() + b"\n\xff\xfe\x80garbage\x00\x01"
            + "Available KV cache memory: 1".encode() + b"\n"  # cut before the unit
            + b"GPU KV cache size: 12,3")  # cut in the middle of the number
    startups = parse_log(read_log_bytes(data))
    assert len(startups) == 1
    assert startups[0].figures.available_kv_cache_bytes == 16 * GIB
    assert parse_log(read_log_bytes(bytes(range(256)) * 50)) == []


def test_empty_input():
    assert parse_log("") == []
    assert parse_log("\n\n  \n") == []
    assert parse_log(read_log_bytes(b"")) == []
    assert report_to_json([]) == {"schema_version": 1, "startups": []}


def test_truncated_non_default_args_and_config():
    text = "\n".join([
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': 'a/b', 'max_model_len': 4096, 'gpu_memory__",
        "INFO 01-01 00:00:01 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='a/b', "
        "dtype=torch.float16, max_seq_len=4096, tensor_parallel_size=1, quantization=No",
        "INFO 01-01 00:00:02 [gpu_worker.py:1] Available KV cache memory: 10.00 GiB",
    ])
    s, = parse_log(text)
    assert s.engine["non_default_args"] == {"model": "a/b", "max_model_len": 4096}
    assert s.figures.max_model_len == 4096 and s.figures.tensor_parallel_size == 1
    assert s.figures.quantization is None  # the cut value is dropped, not guessed
    assert s.figures.gpu_memory_utilization is None


def test_two_startups_in_one_file():
    first = "\n".join([
        "INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.11.0",
        "INFO 01-01 00:00:01 [utils.py:1] non-default args: {'max_model_len': 8192}",
        "INFO 01-01 00:00:02 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB",
        "ERROR 01-01 00:00:03 [core.py:1] ValueError: To serve at least one request with the models's max seq"
        " len (8192), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory"
        " (1.00 GiB). Based on the available memory, the estimated maximum model length is 2048. Try"
        " increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ])
    second = "\n".join([
        "INFO 01-01 00:10:00 [api_server.py:1] vLLM API server version 0.11.0",
        "INFO 01-01 00:10:01 [utils.py:1] non-default args: {'max_model_len': 2048}",
        "INFO 01-01 00:10:02 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB",
        "INFO 01-01 00:10:02 [kv_cache_utils.py:1] GPU KV cache size: 8,192 tokens",
        "INFO 01-01 00:10:02 [kv_cache_utils.py:1] Maximum concurrency for 2,048 tokens per request: 4.00x",
    ])
    a, b = parse_log(first + "\n" + second)
    assert a.outcome == "failed" and b.outcome == "started"
    assert a.figures.estimated_max_model_len == 2048
    assert a.figures.kv_cache_needed_bytes == 4 * GIB
    assert a.figures.max_model_len == 8192 and b.figures.max_model_len == 2048
    assert a.last_line < b.first_line
    sg = {x.name: x.detail for x in explain(a).suggestions}
    assert "--max-model-len 2048" in sg["pool_smaller_than_one_request"]


def test_each_failure_kind():
    cases = {
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing"
        " the engine.": "No available memory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity"
        " of 79.19 GiB of which 1.00 GiB is free.": "CUDA out of memory",
        "ValueError: Free memory on device (10.0/79.19 GiB) on startup is less than desired GPU memory"
        " utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other"
        " processes.": "Free memory on device",
        "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV"
        " cache (23648). Try increasing `gpu_memory_utilization`.": "max seq len (29000)",
        "EngineCore failed to start.": "EngineCore failed to start",
    }
    for line, needle in cases.items():
        s, = parse_log("ERROR 01-01 00:00:00 [x.py:1] " + line)
        assert s.outcome == "failed", line
        assert needle in s.error, (line, s.error)
        json.dumps(report_to_json([explain(s)]))
    s, = parse_log("ERROR 01-01 00:00:00 [x.py:1] ValueError: Free memory on device (10.0/79.19 GiB) on startup"
                   " is less than desired GPU memory utilization (0.9, 71.27 GiB).")
    assert s.figures.free_memory_bytes == 10 * GIB
    assert s.figures.total_memory_bytes == round(79.19 * GIB)
    assert s.figures.requested_memory_bytes == round(71.27 * GIB)
    # the word "out of memory" in vLLM's CUDA-graph advice is not a failure
    s, = parse_log("INFO 04-28 16:55:32 model_runner.py:1185] CUDA graphs can take additional 1~3 GiB memory"
                   " per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization`.\n"
                   "INFO 04-28 16:55:29 gpu_executor.py:121] # GPU blocks: 100, # CPU blocks: 2048")
    assert s.outcome == "started"


def test_v0_preemptions_and_v1_stats():
    v0 = "\n".join([
        "INFO 01-01 00:00:00 executor_base.py:1] # cuda blocks: 1000, # CPU blocks: 2048",
        "WARNING 01-01 00:01:00 scheduler.py:1] Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode"
        " because there is not enough KV cache space. total_num_cumulative_preemption=1",
        "WARNING 01-01 00:02:00 scheduler.py:1] Sequence group 99 is preempted by PreemptionMode.RECOMPUTE mode"
        " because there is not enough KV cache space. total_num_cumulative_preemption=51",
    ])
    s, = parse_log(v0)
    assert s.preemptions == 51
    assert any(x.name == "preemptions" for x in explain(s).suggestions)
    v1 = "\n".join([
        "INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: 1,600 tokens",
        "INFO 01-01 00:01:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation"
        " throughput: 2.0 tokens/s, Running: 5 reqs, Waiting: 3 reqs, Preemptions: 2, GPU KV cache usage: 99.5%,"
        " Prefix cache hit rate: 0.0%",
        "INFO 01-01 00:01:10 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation"
        " throughput: 2.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, Preemptions: 1, GPU KV cache usage: 80.0%,"
        " Prefix cache hit rate: 0.0%",
    ])
    s, = parse_log(v1)
    assert s.preemptions == 3  # 2 + 1
    assert s.stats["max_running_reqs"] == 5 and s.stats["max_kv_cache_usage_pct"] == 99.5


def test_prefixes_timestamps_and_pid_only_workers():
    text = "\n".join([
        # python-logging timestamps with a TorchServe wrapper, V0 driver + one VllmWorkerProcess
        "2024-09-13T22:25:38,258 [INFO ] W-9000 MODEL_LOG - (VllmWorkerProcess pid=27) INFO 09-13 22:25:38"
        " model_runner.py:1008] Loading model weights took 7.5000 GB",
        "2024-09-13T22:25:38,325 [INFO ] W-9000 MODEL_LOG - INFO 09-13 22:25:38 model_runner.py:1008] Loading"
        " model weights took 7.2500 GB",
        "2024-09-13T22:25:41,496 [INFO ] W-9000 MODEL_LOG - INFO 09-13 22:25:41 distributed_gpu_executor.py:57]"
        " # GPU blocks: 61913, # CPU blocks: 4096",
    ])
    s, = parse_log(text)
    assert s.ranks == (0, 1)
    assert s.figures.weights_bytes == round(7.25 * GIB)  # the unprefixed driver is rank 0
    assert s.per_rank[1].weights_bytes == round(7.5 * GIB)
    assert s.format == "v0-blocks"


def test_pp_tp_grid_ranks():
    text = "\n".join([
        "INFO 01-01 00:00:00 [core.py:1] Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "tensor_parallel_size=2, pipeline_parallel_size=2, enforce_eager=True",
        "(Worker_PP1_TP1 pid=9) INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 3.0000 GiB memory"
        " and 1.0 seconds",
        "(Worker_PP0_TP0 pid=6) INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 4.0000 GiB memory"
        " and 1.0 seconds",
    ])
    s, = parse_log(text)
    assert s.ranks == (0, 3)  # PP1_TP1 -> 1 * 2 + 1
    assert s.per_rank[3].weights_bytes == 3 * GIB and s.figures.weights_bytes == 4 * GIB


def test_v064_variants_and_weights_gb_label():
    with_duration = ("INFO 11-20 10:00:00 worker.py:1] Memory profiling results: duration=1.23 seconds, "
                     "total_gpu_memory=79.19GiB, initial_memory_usage=15.50GiB, peak_torch_memory=17.00GiB, "
                     "memory_usage_post_profile=15.60GiB, non_torch_memory=0.50GiB, kv_cache_size=53.77GiB, "
                     "gpu_memory_utilization=0.90.")
    s, = parse_log("INFO 11-20 10:00:00 model_runner.py:1] Loading model weights took 14.9888 GB\n" + with_duration)
    assert s.format == "v0.6.4-oneline"
    f = s.figures
    assert f.profile_seconds == 1.23 and f.available_kv_cache_bytes == round(53.77 * GIB)
    assert f.weights_bytes == round(14.9888 * GIB)  # "GB" is GiB in vLLM's source (/ 2**30)
    # 79.19 * 0.9 - 17.00 - 0.50 = 53.771 -> 53.77
    chk = next(c for c in explain(s).checks if c.name == "kv_vs_budget_breakdown")
    assert chk.ok
    # the same key=value pairs spread over several records
    split = ("INFO 11-20 10:00:00 worker.py:1] Memory profiling results: duration=1.23 seconds,\n"
             "INFO 11-20 10:00:00 worker.py:1] total_gpu_memory=79.19GiB, peak_torch_memory=17.00GiB,\n"
             "INFO 11-20 10:00:00 worker.py:1] non_torch_memory=0.50GiB, kv_cache_size=53.77GiB,"
             " gpu_memory_utilization=0.90.")
    s, = parse_log(split)
    assert s.format == "v0.6.5-multiline"
    assert s.figures.total_memory_bytes == round(79.19 * GIB)
    assert s.figures.available_kv_cache_bytes == round(53.77 * GIB)


def test_v1_memory_summary_033_and_cudagraph_lines():
    text = "\n".join([
        _info("Model loading took 15.0 GiB memory and 10.000000 seconds"),
        _info("Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)"),
        _info("Estimated CUDA graph memory: 1.00 GiB total"),
        _info("Available KV cache memory: 52.0 GiB"),
        _info("CUDA graph memory profiling is enabled (default since v0.21.0). The current"
              " --gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8874 without CUDA"
              " graph memory profiling. To maintain the same effective KV cache size as before, increase"
              " --gpu-memory-utilization to 0.9126. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0."),
        _info("CUDA graph pool memory: 1.2 GiB (actual), 1.0 GiB (estimated), difference: 0.2 GiB (16.7%)."),
        _info("Free memory on device (79.0/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.28"
              " GiB). Actual usage is 15.3 GiB for consumed memory (weights + non-torch), 2.98 GiB for peak"
              " activation, and 1.2 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with"
              " `--kv-cache-memory=55000000000` (51.22 GiB) to fit into requested memory, or"
              " `--kv-cache-memory=63000000000` (58.67 GiB) to fully utilize gpu memory. Current kv cache memory"
              " in use is 52.0 GiB."),
    ])
    s, = parse_log(text)
    f = s.figures
    assert f.cuda_graph_estimate_bytes == 1 * GIB and f.cuda_graph_bytes == round(1.2 * GIB)
    assert f.consumed_bytes == round(15.3 * GIB) and f.activation_peak_bytes == round(2.98 * GIB)
    assert f.gpu_memory_utilization == 0.9 and f.cuda_graph_equivalent_util == 0.8874
    assert f.kv_cache_memory_to_requested_bytes == 55_000_000_000
    assert f.weights_bytes == 15 * GIB  # the "Model loading" line wins over the summary
    # 71.28 - 15.3 - 2.98 - 1.00 (estimate) = 52.00
    chk = next(c for c in explain(s).checks if c.name == "kv_vs_budget_breakdown")
    assert chk.ok and "estimate" in chk.detail


def test_kv_override_and_block_size_lines():
    text = "\n".join([
        "INFO 01-01 00:00:00 [interface.py:1] Setting attention block size to 1072 tokens to ensure that"
        " attention page size is >= mamba page size.",
        "INFO 01-01 00:00:00 [interface.py:1] Padding mamba page size by 1.23% to ensure that mamba page size"
        " and attention page size are exactly equal.",
        "INFO 01-01 00:00:01 [gpu_worker.py:1] Initial free memory 78.5 GiB, reserved 20.0 GiB memory for KV"
        " Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.",
    ])
    s, = parse_log(text)
    assert s.figures.block_size == 1072 and "hybrid" in s.notes
    assert s.figures.kv_cache_memory_override_bytes == 20 * GIB
    assert s.figures.available_kv_cache_bytes == 20 * GIB


def test_reordered_paste_args_after_figures_stay_one_startup():
    text = "\n".join([
        "(EngineCore pid=1) INFO 07-09 02:58:11 [gpu_worker.py:508] Available KV cache memory: 6.01 GiB",
        "(APIServer pid=1) INFO 07-09 02:56:25 [api_utils.py:273] non-default args: {'max_model_len': 131072,"
        " 'gpu_memory_utilization': 0.8}",
    ])
    s, = parse_log(text)
    assert s.figures.gpu_memory_utilization == 0.8 and s.figures.max_model_len == 131072


def test_render_text_shape():
    s, = parse_log(V1_LOG)
    text = render_text(explain(s))
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if "Available KV cache memory" in ln)
    assert lines[i + 1].startswith("          ")  # explanation indented under the line
    assert text.index("Checks:") < text.index("Suggestions:")


def test_half_unit():
    assert half_unit_bytes("14.96") == round(0.005 * GIB)
    assert half_unit_bytes("48.5") == round(0.05 * GIB)
    assert half_unit_bytes("14.2488") == round(0.00005 * GIB)
    assert half_unit_bytes(None) == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash(data: bytes):
    for s in parse_log(read_log_bytes(data)):
        json.dumps(report_to_json([explain(s)]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(V1_LOG.split("\n") + ["", "garbage", "Traceback (most recent call last):"]),
                max_size=30),
       st.integers(min_value=0, max_value=200))
def test_shuffled_and_cut_lines_never_crash(lines: list[str], cut: int):
    text = "\n".join(ln[: max(1, len(ln) - cut)] for ln in lines)
    for s in parse_log(text):
        render_text(explain(s))
        json.dumps(explain(s).to_json())


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=20_000), st.sampled_from([16, 32, 64]),
       st.integers(min_value=128, max_value=65_536))
def test_concurrency_check_accepts_vllm_arithmetic(num_blocks: int, block_size: int, max_model_len: int):
    # the log vLLM >= 0.10 would print for a full-attention model
    tokens = num_blocks * block_size
    conc = num_blocks / -(-max_model_len // block_size)
    text = (f"INFO 01-01 00:00:00 [interface.py:1] Setting kv cache block size to {block_size} for X backend.\n"
            f"INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: {tokens:,} tokens\n"
            f"INFO 01-01 00:00:00 [kv_cache_utils.py:1] Maximum concurrency for {max_model_len:,} tokens per"
            f" request: {conc:.2f}x")
    s, = parse_log(text)
    chk = next(c for c in explain(s).checks if c.name == "concurrency_vs_tokens")
    assert chk.ok, chk.detail
