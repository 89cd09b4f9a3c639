"""The catalogue of vLLM startup lines explain-log reads: one :class:`LineRule` per line kind.

Each rule names the literal ``anchors`` that select it (a plain substring test, cheap on the
thousands of serving lines a log also holds), the vLLM ``file::function`` that prints it, and a
small handler that writes named figures into the startup being read.  Most handlers are built by
:func:`read` from one regular expression and a list of :class:`Put` (figure, regex group,
conversion); the few lines that carry structure (config dumps, the KV-capacity pair, the memory
summary, errors) have a handler of their own in :mod:`vmemplan.explain.line_handlers`,
:mod:`vmemplan.explain.memory_lines` or :mod:`vmemplan.explain.failure_lines`.

Format strings were checked in the release wheels 0.5.5, 0.6.4, 0.6.5, 0.8.5, 0.10.1.1, 0.11.0,
0.13.0, 0.17.0, 0.19.0, 0.21.0, 0.24.0 and in the 0.33.0 source; each release's format strings are
recorded in the ``log:`` section of its rules pack (registry/vllm/v*.yaml), and
tests/explain/test_pack_formats.py reads every one of them back through these rules.  Paths below
are relative to ``vllm/``.

The table order is the order rules fire when one record matches several (a V0 profiling
message joined into one record holds three): later rules may refine what earlier ones wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from vmemplan.core.frozen import frozen
from vmemplan.explain import failure_lines as fail
from vmemplan.explain import line_handlers as h
from vmemplan.explain import memory_lines as mem
from vmemplan.explain.accumulator import Acc
from vmemplan.explain.line_handlers import NUM, Hit, Put, read

__all__ = ["LineRule", "RULES", "rules_for", "BOUNDARY_KINDS"]


@frozen
class LineRule:
    """One kind of startup line: how to spot it, who prints it, what it yields."""

    kind: str
    anchors: tuple[str, ...]
    printed_by: str
    handle: Callable[[Acc, Hit], None]
    #: a second, stricter test for anchors that also occur in unrelated lines
    confirm: re.Pattern[str] | None = None
    #: one line as vLLM prints it (tests/explain/test_line_rules.py reads each through its rule)
    example: str = ""


def _rule(kind: str, anchors: str | tuple[str, ...], printed_by: str, handle: Callable[[Acc, Hit], None],
          confirm: str | None = None) -> LineRule:
    return LineRule(kind, (anchors,) if isinstance(anchors, str) else anchors, printed_by, handle,
                    re.compile(confirm) if confirm else None, EXAMPLES.get(kind, ""))


#: One real-format line per rule kind (values made up, format strings from the vLLM source).
EXAMPLES: dict[str, str] = {
    "version": "INFO 08-16 01:42:32 [api_server.py:1755] vLLM API server version 0.10.0",
    "banner": "(APIServer pid=1) INFO  \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588"
              "  version 0.33.0",
    "args": "(APIServer pid=1) INFO [utils.py:1] non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 32768,"
            " 'gpu_memory_utilization': 0.9}",
    "namespace": "INFO 09-13 22:25:30 api_server.py:495] args: Namespace(host=None, port=8000, model='m',"
                 " max_model_len=4096, tensor_parallel_size=1, seed=0)",
    "engine": "INFO [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='Qwen/Qwen3-8B',"
              " dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, device_config=cuda",
    "loadmodel": "(EngineCore_DP0 pid=5) INFO [gpu_model_runner.py:1] Starting to load model Qwen/Qwen3-8B...",
    "maxlen": "INFO [model.py:1] Using max model len 32768",
    "autofit": "INFO [kv_cache_planning.py:1] Auto-fit max_model_len: reduced from 131072 to 50304 to fit in"
               " available GPU memory",
    "chunked": "INFO [scheduler.py:1] Chunked prefill is enabled with max_num_batched_tokens=8192.",
    "blocksize": "INFO [interface.py:1] Setting attention block size to 1072 tokens to ensure that attention"
                 " page size is >= mamba page size.",
    "mamba": "INFO [interface.py:1] Padding mamba page size by 1.23% to ensure that mamba page size and"
             " attention page size are exactly equal.",
    "weights": "(EngineCore_DP0 pid=5) INFO [gpu_model_runner.py:1] Model loading took 15.27 GiB memory and"
               " 5.123456 seconds",
    "profres": "INFO 11-20 10:00:00 worker.py:1] Memory profiling results: total_gpu_memory=79.19GiB"
               " initial_memory_usage=15.50GiB peak_torch_memory=17.00GiB memory_usage_post_profile=15.60Gib"
               " non_torch_memory=0.50GiB kv_cache_size=53.77GiB gpu_memory_utilization=0.90",
    "proftakes": "DEBUG [gpu_worker.py:1] Memory profiling takes 4.32 seconds. Total non KV cache memory: 17.2GiB;"
                 " torch peak memory increase: 1.4GiB; non-torch forward increase memory: 0.5GiB; weights"
                 " memory: 15.27GiB.",
    "budget": "INFO 12-20 10:00:05 worker.py:265] the current vLLM instance can use total_gpu_memory (79.19GiB)"
              " x gpu_memory_utilization (0.90) = 71.27GiB",
    "weightstake": "INFO 12-20 10:00:05 worker.py:265] model weights take 14.99GiB; non_torch_memory takes"
                   " 0.40GiB; PyTorch activation peak memory takes 1.20GiB; the rest of the memory reserved for"
                   " KV Cache is 54.68GiB.",
    "avail": "(EngineCore_DP0 pid=5) INFO [gpu_worker.py:1] Available KV cache memory: 53.78 GiB",
    "kvsize": "(EngineCore_DP0 pid=5) INFO [kv_cache_utils.py:1] GPU KV cache size: 391,632 tokens, Maximum"
              " concurrency for 32,768 tokens per request: 11.95x",
    "blocks": "INFO 04-23 14:48:44 [executor_base.py:112] # cuda blocks: 7299, # CPU blocks: 2048",
    "numblocks": "INFO [loggers.py:1] Engine 000: vllm cache_config_info with initialization after"
                 " num_gpu_blocks is: 5867",
    "graph": "(EngineCore_DP0 pid=5) INFO [gpu_model_runner.py:1] Graph capturing finished in 12 secs, took"
             " 0.55 GiB",
    "cgest": "INFO [gpu_model_runner.py:1] Estimated CUDA graph memory: 0.61 GiB total",
    "cgprof": "INFO [gpu_model_runner.py:1] Profiling CUDA graph memory: PIECEWISE=51 (largest=512),"
              " FULL=35 (largest=256)",
    "cgutil": "INFO [gpu_worker.py:1] CUDA graph memory profiling is enabled (default since v0.21.0). The"
              " current --gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8923"
              " without CUDA graph memory profiling. To maintain the same effective KV cache size as before,"
              " increase --gpu-memory-utilization to 0.9077.",
    "cgpool": "INFO [gpu_worker.py:1] CUDA graph pool memory: 0.55 GiB (actual), 0.61 GiB (estimated),"
              " difference: 0.06 GiB (10.9%).",
    "eager": "INFO [vllm.py:1] Cudagraph is disabled under eager mode",
    "freemem": "INFO [gpu_worker.py:1] Free memory on device (78.7/79.19 GiB) on startup. Desired GPU memory"
               " utilization is (0.9, 71.27 GiB). Actual usage is 15.27 GiB for weight, 1.4 GiB for peak"
               " activation, 0.5 GiB for non-torch memory, and 0.55 GiB for CUDAGraph memory.",
    "initfree": "INFO [gpu_worker.py:1] Initial free memory 78.5 GiB, reserved 20.0 GiB memory for KV Cache as"
                " specified by kv_cache_memory_bytes config and skipped memory profiling.",
    "toserve": "ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV"
               " cache is needed, which is larger than the available KV cache memory (9.17 GiB). Based on the"
               " available memory, the estimated maximum model length is 75136. Try increasing"
               " `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    "v0maxlen": "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that"
                " can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing"
                " `max_model_len` when initializing the engine.",
    "noavail": "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
               " when initializing the engine.",
    "oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity"
           " of 79.19 GiB of which 1.06 GiB is free.",
    "failed": "(EngineCore_DP0 pid=5) ERROR [core.py:1] EngineCore failed to start.",
    "preempt": "WARNING 09-13 22:30:00 scheduler.py:1] Sequence group 12 is preempted by"
               " PreemptionMode.RECOMPUTE mode because there is not enough KV cache space."
               " total_num_cumulative_preemption=1",
    "stats": "INFO [loggers.py:1] Engine 000: Avg prompt throughput: 812.3 tokens/s, Avg generation"
             " throughput: 95.1 tokens/s, Running: 16 reqs, Waiting: 3 reqs, GPU KV cache usage: 97.5%,"
             " Prefix cache hit rate: 0.0%",
    "dcp": "INFO [kv_cache_utils.py:1] Multiplying the GPU KV cache size by the cp_world_size 2"
           " (pcp_world_size 1 * dcp_world_size 2).",
}


GIB_ = "gib"  # a GiB figure -> bytes, printed text kept
UTIL = "util"  # a float whose printed text is kept (gpu_memory_utilization)
FLOAT = "float"
INT = "int"

#: Rules that open a new startup when the current one already has an outcome.
BOUNDARY_KINDS = ("version", "engine", "args", "namespace", "banner")

RULES: tuple[LineRule, ...] = (
    # ---- who and what: version, arguments, engine config
    _rule("version", ("API server version", "vLLM server version", "batch processing API version"),
          "entrypoints/common/startup.py::log_version_and_model (0.33); entrypoints/openai/api_server.py::"
          "run_server 'vLLM API server version %s' (<= 0.2x); entrypoints/openai/run_batch.py::main",
          h.version),
    _rule("banner", ("\u2580\u2584\u2580", "\u2588\u2584\u2588\u2580"),
          "entrypoints/common/startup.py::log_version_and_model (the logo with 'version' and 'model')",
          h.banner),
    _rule("args", "non-default args:", "entrypoints/common/startup.py::log_non_default_args "
          "(entrypoints/utils.py::log_non_default_args before 0.3x)", h.non_default_args),
    _rule("namespace", "args: Namespace(", "entrypoints/openai/api_server.py::run_server "
          "'args: %s' (V0 era)", h.namespace),
    _rule("engine", "LLM engine (v", "v1/engine/core.py::EngineCore.__init__ 'Initializing a V1 LLM engine"
          " (v%s) with config: %s'; engine/llm_engine.py::LLMEngine.__init__ (V0)", h.engine_config),
    _rule("loadmodel", "Starting to load model", "v1/worker/gpu_model_runner.py::GPUModelRunner.load_model "
          "'Starting to load model %s...'", h.load_model),
    _rule("maxlen", "Using max model len", "config/model.py::ModelConfig.get_and_verify_max_len "
          "'Using max model len %s'",
          read(r"Using max model len (\d+)", "max_model_len", Put("max_model_len", 1, INT))),
    _rule("autofit", "Auto-fit max_model_len", "v1/core/kv_cache_planning.py::_auto_fit_max_model_len "
          "'Auto-fit max_model_len: reduced from %d to %d ...'",
          read(r"reduced from (\d+) to (\d+)", "max_model_len", Put("max_model_len", 2, INT))),
    _rule("chunked", "Chunked prefill is enabled", "config/scheduler.py::SchedulerConfig.__post_init__ "
          "'Chunked prefill is enabled with max_num_batched_tokens=%d.'",
          read(r"max_num_batched_tokens=(\d+)", "chunked_prefill", Put("max_num_batched_tokens", 1, INT))),
    _rule("blocksize", "block size to ", "platforms/interface.py::Platform._align_hybrid_block_size "
          "'Setting attention block size to %d tokens ...' (models/config.py::"
          "HybridAttentionMambaModelConfig.verify_and_update_config before 0.2x)", h.block_size),
    _rule("mamba", ("Padding mamba page size", "padding layers", "Hybrid KV cache manager is disabled"),
          "platforms/interface.py::Platform._align_hybrid_block_size 'Padding mamba page size by %.2f%%';"
          " v1/core/kv_cache_planning.py::_get_kv_cache_groups_uniform_page_size 'Add %d padding layers';"
          " kv_cache_planning.py::unify_hybrid_kv_cache_specs", h.hybrid),
    # ---- weights and the profile run
    _rule("weights", ("Loading model weights took", "Model loading took"),
          "v1/worker/gpu_model_runner.py::GPUModelRunner.load_model 'Model loading took %s GiB memory and"
          " %.6f seconds' (%.4f GB|GiB before 2026-01); worker/model_runner.py::GPUModelRunnerBase.load_model"
          " 'Loading model weights took %.4f GB' (V0; value / 2**30, i.e. GiB)", mem.weights),
    _rule("profres", ("Memory profiling results", "total_gpu_memory=", "peak_torch_memory=", "kv_cache_size=",
                      "non_torch_memory="),
          "worker/worker.py::Worker.determine_num_available_blocks 'Memory profiling results: "
          "total_gpu_memory=%.2fGiB ... gpu_memory_utilization=%.2f' (0.6.4; name=value pairs, one line or"
          " several; 0.6.5 development builds: a block of aligned 'name  value' rows)", mem.profiling_results),
    _rule("proftakes", "Memory profiling takes",
          "utils/mem_utils.py::MemoryProfilingResult.__repr__ (V1, debug: 'Total non KV cache memory: ...');"
          " worker/worker.py::Worker.determine_num_available_blocks (V0 0.6.5+, first of three lines)",
          mem.profiling_takes),
    _rule("budget", "current vLLM instance can use",
          "worker/worker.py::Worker.determine_num_available_blocks 'the current vLLM instance can use"
          " total_gpu_memory (%.2fGiB) x gpu_memory_utilization (%.2f) = %.2fGiB' (V0 0.6.5 .. removal)",
          read(r"total_gpu_memory\s*\(\s*(" + NUM + r")\s*(?:GiB|Gib|GB)\s*\)\s*[x\u00d7*]\s*"
               r"gpu_memory_utilization\s*\(\s*(" + NUM + r")\s*\)\s*=\s*(" + NUM + r")\s*(?:GiB|Gib|GB)",
               "budget", Put("total_memory_bytes", 1, GIB_), Put("gpu_memory_utilization", 2, UTIL),
               Put("requested_memory_bytes", 3, GIB_), hint="v0-takes")),
    _rule("weightstake", "model weights take",
          "worker/worker.py::Worker.determine_num_available_blocks 'model weights take %.2fGiB;"
          " non_torch_memory takes ...; PyTorch activation peak memory takes ...; the rest of the memory"
          " reserved for KV Cache is %.2fGiB.' (V0 0.6.5 .. removal)", mem.weights_take),
    # ---- the KV cache pool
    _rule("avail", "Available KV cache memory",
          "v1/worker/gpu_worker.py::Worker.determine_available_memory 'Available KV cache memory: %s GiB'"
          " (%.2f GiB before 2026-01; not printed before 2025-06)",
          read(r"Available KV cache memory:\s*(" + NUM + r")\s*GiB", "available_kv",
               Put("available_kv_cache_bytes", 1, GIB_), hint="v1")),
    _rule("kvsize", ("KV cache size: ", "Maximum concurrency for"),
          "v1/core/kv_cache_utils.py::update_kv_cache_capacity '%s KV cache size: %s tokens, Maximum"
          " concurrency for %s tokens per request: %.2fx' (0.33, one record); _report_kv_cache_config /"
          " get_kv_cache_config 'GPU KV cache size: %s tokens' + 'Maximum concurrency ...' (V1 before);"
          " executor/executor_base.py::ExecutorBase.initialize_cache (V0 concurrency)", mem.kv_capacity),
    _rule("blocks", "blocks: ", "executor/executor_base.py::ExecutorBase.initialize_cache '# %s blocks: %d,"
          " # CPU blocks: %d' (device name, e.g. cuda); executor/gpu_executor.py::GPUExecutor."
          "initialize_cache '# GPU blocks: %d, # CPU blocks: %d' (before 2025-01); early V1 '# GPU blocks: %d'",
          mem.blocks),
    _rule("numblocks", ("num_gpu_blocks is", "Overriding num_gpu_blocks"),
          "v1/metrics/loggers.py::LoggingStatLogger.log_engine_initialized '... num_gpu_blocks is: %d';"
          " v1/core/kv_cache_planning.py::get_kv_cache_configs 'Overriding num_gpu_blocks=%d with"
          " num_gpu_blocks_override=%d'", mem.num_blocks),
    # ---- CUDA graphs
    _rule("graph", "Graph capturing finished",
          "v1/worker/gpu_model_runner.py::GPUModelRunner.capture_model 'Graph capturing finished in %.0f"
          " secs, took %.2f GiB' (no GiB before 2024-11); worker/model_runner.py (V0)",
          read(r"Graph capturing finished in (" + NUM + r") secs(?:, took (" + NUM + r") GiB)?", "cuda_graph",
               Put("graph_capture_seconds", 1, FLOAT), Put("cuda_graph_bytes", 2, GIB_))),
    _rule("cgest", "Estimated CUDA graph memory",
          "v1/worker/gpu_model_runner.py::GPUModelRunner.profile_cudagraph_memory 'Estimated CUDA graph"
          " memory: %.2f GiB total' (2026-03+)",
          read(r"Estimated CUDA graph memory: (" + NUM + r") GiB total", "cuda_graph_estimate",
               Put("cuda_graph_estimate_bytes", 1, GIB_))),
    _rule("cgprof", "Profiling CUDA graph memory",
          "v1/worker/gpu_model_runner.py::GPUModelRunner.profile_cudagraph_memory 'Profiling CUDA graph"
          " memory: %s'", h.line_only("cuda_graph_profiling")),
    _rule("cgutil", ("CUDA graph memory profiling is", "CUDA graph memory profiling will be"),
          "v1/worker/gpu_worker.py::Worker.determine_available_memory 'CUDA graph memory profiling is"
          " enabled|disabled ...' (and the opt-in era's 'will be enabled by default')", mem.cuda_graph_util),
    _rule("cgpool", "CUDA graph pool memory",
          "v1/worker/gpu_worker.py::Worker._compile_or_warm_up_model 'CUDA graph pool memory: %s GiB"
          " (actual), %s GiB (estimated), difference: ...'",
          read(r"CUDA graph pool memory: (" + NUM + r") GiB \(actual\), (" + NUM + r") GiB \(estimated\)",
               "cuda_graph_pool", Put("cuda_graph_bytes", 1, GIB_, weak=True),
               Put("cuda_graph_estimate_bytes", 2, GIB_, weak=True))),
    _rule("eager", "Cudagraph is disabled under eager",
          "config/vllm.py::VllmConfig.__post_init__ 'Cudagraph is disabled under eager mode'", h.eager),
    # ---- the memory summary and the KV override
    _rule("freemem", "Free memory on device",
          "v1/worker/gpu_worker.py::Worker._compile_or_warm_up_model (summary, 0.10.2+); v1/worker/utils.py::"
          "request_memory / gpu_worker.py::Worker.init_device ('... is less than desired GPU memory"
          " utilization', an error)", mem.free_memory),
    _rule("initfree", "Initial free memory",
          "v1/worker/gpu_worker.py::Worker.determine_available_memory 'Initial free memory %s GiB,"
          " reserved %s GiB memory for KV Cache as specified by kv_cache_memory_bytes ...' and the debug"
          " 'Initial free memory: %s GiB; Requested memory: %f (util), %s GiB'", mem.initial_free),
    # ---- failures
    _rule("toserve", "To serve at least one request",
          "v1/core/kv_cache_planning.py::_check_enough_kv_cache_memory (kv_cache_utils.py before 0.3x)"
          " 'To serve at least one request with the model's max seq len (%d), (%s GiB KV cache is needed,"
          " ...'", fail.to_serve),
    _rule("v0maxlen", "maximum number of tokens that can be",
          "worker/worker.py::raise_if_cache_size_invalid 'The model's max seq len (%d) is larger than the"
          " maximum number of tokens that can be stored in KV cache (%d).' (V0)", fail.v0_max_len),
    _rule("noavail", "No available memory for the cache blocks",
          "v1/core/kv_cache_planning.py::_check_enough_kv_cache_memory; worker/worker.py::"
          "raise_if_cache_size_invalid (V0)", fail.no_available),
    _rule("oom", (" out of memory", "OutOfMemoryError"), "torch c10/cuda/CUDACachingAllocator.cpp::DeviceCachingAllocator::malloc"
          " 'CUDA out of memory. Tried to allocate ...' (HIP / XPU allocators alike), in any phase",
          fail.out_of_memory, confirm=r"(?:CUDA|HIP|XPU) out of memory|OutOfMemoryError"),
    _rule("failed", ("EngineCore failed to start", "Engine core initialization failed"),
          "v1/engine/core.py::EngineCoreProc.run_engine_core 'EngineCore failed to start.'; v1/engine/"
          "utils.py::wait_for_engine_startup 'Engine core initialization failed. ...'", fail.engine_failed),
    # ---- serving (after startup)
    _rule("preempt", "is preempted by", "core/scheduler.py::Scheduler._preempt (V0 warning 'Sequence group"
          " %s is preempted by %s mode ... total_num_cumulative_preemption=%d')", fail.preempted),
    _rule("stats", " reqs", "v1/metrics/loggers.py::LoggingStatLogger.log 'Running: %d reqs, Waiting: %d"
          " reqs, ... KV cache usage: %.1f%%, ... Preemptions: %d' (V0: engine/metrics.py)", fail.stats,
          confirm=r"Running: \d+ reqs"),
    _rule("dcp", "Multiplying the GPU KV cache size",
          "v1/core/kv_cache_utils.py::_report_kv_cache_config 'Multiplying the GPU KV cache size by the"
          " cp_world_size %d ...' (2025-09 .. 2026-04)", fail.context_parallel),
)


#: Every anchor with the index of its rule: one flat substring scan per record (most records are
#: serving traffic and match nothing).
_ANCHORS: tuple[tuple[str, int], ...] = tuple((a, i) for i, rule in enumerate(RULES) for a in rule.anchors)


def rules_for(text: str) -> list[LineRule]:
    """The rules whose anchors occur in ``text`` (and whose confirming pattern matches), in table order."""
    hits = {i for anchor, i in _ANCHORS if anchor in text}
    if not hits:
        return []
    out = [RULES[i] for i in sorted(hits)]
    return [r for r in out if r.confirm is None or r.confirm.search(text)]
