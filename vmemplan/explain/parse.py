"""Parse vLLM startup logs (0.5 .. 0.33.0) into frozen :class:`Startup` records.

Pure: text in, frozen values out.  Never raises on odd input: lines that are cut short, binary
garbage or formats we do not know are skipped.

What is read, and where vLLM prints it (format strings checked in the release wheels
0.5.5, 0.6.4, 0.6.5, 0.8.5, 0.10.1.1, 0.11.0, 0.13.0, 0.17.0, 0.19.0, 0.21.0, 0.24.0, 0.33.0):

* weights -- ``"Loading model weights took %.4f GB"`` (vllm/worker/model_runner.py and the early V1
  gpu_model_runner.py; the value is ``model_memory_usage / float(2**30)``, i.e. GiB despite the
  "GB" label), later ``"Model loading took %.4f GB|GiB [memory] and %.6f seconds"`` and
  ``"Model loading took %s GiB memory ..."`` with ``format_gib`` (v1/worker/gpu_model_runner.py).
* V0 profiler -- 0.6.4 ``"Memory profiling results: total_gpu_memory=%.2fGiB initial_memory_usage=...
  peak_torch_memory=... memory_usage_post_profile=...Gib non_torch_memory=... kv_cache_size=...
  gpu_memory_utilization=%.2f"`` (vllm/worker/worker.py::determine_num_available_blocks); later
  (0.6.5 .. V0 removal) the three-line ``"Memory profiling takes ... seconds\\nthe current vLLM
  instance can use total_gpu_memory (..GiB) x gpu_memory_utilization (..) = ..GiB\\nmodel weights take
  ..GiB; non_torch_memory takes ..GiB; PyTorch activation peak memory takes ..GiB; the rest of the
  memory reserved for KV Cache is ..GiB."`` (worker.py::determine_num_available_blocks).
* blocks -- ``"# GPU blocks: %d, # CPU blocks: %d"`` (gpu_executor.py), ``"# %s blocks: ..."`` with the
  device name (executor_base.py, prints ``cuda``), ``"# GPU blocks: %d"`` (early V1), and the V1
  stat logger ``"... num_gpu_blocks is: %d"`` (v1/metrics/loggers.py).
* V1 pool -- ``"Available KV cache memory: %.2f GiB|%s GiB"`` (v1/worker/gpu_worker.py),
  ``"GPU KV cache size: %s tokens"`` and ``"Maximum concurrency for %s tokens per request: %.2fx"``
  (v1/core/kv_cache_utils.py), joined in 0.33.0 as ``"%s KV cache size: %s tokens, Maximum
  concurrency for %s tokens per request: %.2fx"`` (kv_cache_utils.py::update_kv_cache_capacity).
* CUDA graphs -- ``"Graph capturing finished in %.0f secs, took %.2f GiB"``, ``"Estimated CUDA graph
  memory: %.2f GiB total"``, ``"Profiling CUDA graph memory: ..."``, ``"CUDA graph memory profiling is
  enabled|disabled ..."``, ``"CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), ..."``.
* summary -- 0.10.2+ ``"Free memory on device (a/b GiB) on startup. Desired GPU memory utilization is
  (u, x GiB). Actual usage is w GiB for weight, p GiB for peak activation, n GiB for non-torch memory,
  and g GiB for CUDAGraph memory. ..."``; 0.33.0 says ``"c GiB for consumed memory (weights +
  non-torch)"`` instead of the weight / non-torch pair.
* failures -- ``"To serve at least one request with the model[']s's max seq len (L), (X GiB KV cache is
  needed, which is larger than the available KV cache memory (Y GiB). ... estimated maximum model
  length is N."`` (kv_cache_utils.py / kv_cache_planning.py::_check_enough_kv_cache_memory), V0 ``"The
  model's max seq len (L) is larger than the maximum number of tokens that can be stored in KV cache
  (T)."`` (worker.py::raise_if_cache_size_invalid), ``"No available memory for the cache blocks"``,
  ``"Free memory on device ... is less than desired GPU memory utilization"`` (gpu_worker.py /
  v1/worker/utils.py::request_memory), CUDA OOM, ``"EngineCore failed to start"``.
"""

from __future__ import annotations

import ast
import codecs
import re
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping

__all__ = [
    "Figures",
    "LogLine",
    "Startup",
    "parse_log",
    "read_log_bytes",
    "split_corpus_header",
    "half_unit_bytes",
    "FIGURE_JSON_KEYS",
]

GIB = 1 << 30
MIB = 1 << 20

# --------------------------------------------------------------------------------------------
# Frozen results
# --------------------------------------------------------------------------------------------

#: The figure keys the JSON contract promises (schema_version 1), in order.
FIGURE_JSON_KEYS: tuple[str, ...] = (
    "total_memory_bytes",
    "gpu_memory_utilization",
    "weights_bytes",
    "activation_peak_bytes",
    "non_torch_bytes",
    "cuda_graph_bytes",
    "cuda_graph_estimate_bytes",
    "available_kv_cache_bytes",
    "kv_cache_tokens",
    "num_gpu_blocks",
    "block_size",
    "max_model_len",
    "max_concurrency",
    "tensor_parallel_size",
)


@dataclass(frozen=True)
class Figures:
    """The numbers one startup (or one rank of it) printed.  ``None`` = not in the log.

    Memory is in bytes, converted from the printed GiB as ``round(value * 2**30)``; ``printed``
    keeps the text each memory figure was printed with (``{"weights_bytes": "14.2488"}``) so checks
    can allow half a unit of the last printed decimal.
    """

    total_memory_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    weights_bytes: int | None = None
    activation_peak_bytes: int | None = None
    non_torch_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    cuda_graph_estimate_bytes: int | None = None
    available_kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    max_model_len: int | None = None
    max_concurrency: float | None = None
    tensor_parallel_size: int | None = None
    # -- beyond the JSON contract's minimum
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool | None = None
    estimated_max_model_len: int | None = None
    requested_memory_bytes: int | None = None
    free_memory_bytes: int | None = None
    kv_cache_needed_bytes: int | None = None
    peak_torch_bytes: int | None = None
    initial_memory_usage_bytes: int | None = None
    post_profile_memory_bytes: int | None = None
    non_kv_cache_bytes: int | None = None
    consumed_bytes: int | None = None
    kv_cache_memory_to_requested_bytes: int | None = None
    kv_cache_memory_to_gpu_bytes: int | None = None
    kv_cache_memory_override_bytes: int | None = None
    num_cpu_blocks: int | None = None
    cuda_graph_equivalent_util: float | None = None
    cuda_graph_suggested_util: float | None = None
    weights_load_seconds: float | None = None
    profile_seconds: float | None = None
    graph_capture_seconds: float | None = None
    printed: Mapping[str, str] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """All figures as a plain dict (contract keys first), without ``printed``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name != "printed":
                out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True)
class LogLine:
    """One recognised log record: 1-based line ``number`` of its first physical line in the input,
    its text (ANSI removed, terminal wrapping joined), what ``kind`` of figure it carries, and the
    ``rank`` that printed it (``None`` for the engine / API server)."""

    number: int
    text: str
    kind: str
    rank: int | None = None


@dataclass(frozen=True)
class Startup:
    """One startup attempt found in a log."""

    vllm_version: str | None
    format: str
    model: str | None
    outcome: str  # "started" | "failed"
    error: str | None
    ranks: tuple[int, ...]
    figures: Figures
    per_rank: Mapping[int, Figures]
    engine: Mapping[str, Any]
    lines: tuple[LogLine, ...]
    preemptions: int = 0
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    reached: str = "none"
    first_line: int = 0
    last_line: int = 0
    stats: Mapping[str, Any] = field(default_factory=dict)
    kv_lines: tuple[Mapping[str, Any], ...] = ()

    @property
    def primary_rank(self) -> int:
        return self.ranks[0] if 0 not in self.ranks else 0

    def to_json(self, **explain_kwargs: Any) -> dict[str, Any]:
        """The JSON contract entry for this startup (schema_version 1), checks included."""
        from vmemplan.explain.explain import explain  # local: explain imports this module

        return explain(self, **explain_kwargs).to_json()



def _literal(text: str) -> object:
    """``ast.literal_eval`` without the SyntaxWarning/DeprecationWarning Python prints for odd
    escapes ("\\-") inside the logged strings."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(text)

def half_unit_bytes(printed: str | None) -> int:
    """Half a unit of the last printed decimal of a GiB figure, in bytes (0 when unknown).

    ``"14.96"`` -> 0.005 GiB; ``"48.5"`` -> 0.05 GiB; ``"16"`` -> 0.5 GiB.
    """
    if not printed:
        return 0
    text = printed.strip().lstrip("-")
    if "e" in text.lower():
        return 0
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return int(round(0.5 * 10.0 ** (-decimals) * GIB))


# --------------------------------------------------------------------------------------------
# Text clean-up and the corpus header
# --------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?")


def _clean(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def read_log_bytes(data: bytes) -> str:
    """Decode log bytes: UTF-8 (or UTF-16 with a BOM) with undecodable bytes replaced, ANSI colour
    codes removed, CRLF / CR turned into LF."""
    if data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return _clean(text)


def _header_end(lines: list[str]) -> int:
    """Index of the line after a leading ``---`` ... ``---`` block, or 0 when there is none."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, min(len(lines), 400)):
        if lines[i].strip() == "---":
            return i + 1
    return 0


def _tiny_yaml(lines: list[str]) -> dict[str, Any]:
    """A forgiving reader for the simple YAML the corpus headers use (top-level ``key: value``
    and one level of indented ``key: value``); used only when PyYAML fails."""
    out: dict[str, Any] = {}
    current: str | None = None
    for raw in lines:
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        indented = raw[:1] in (" ", "\t")
        key, sep, value = raw.strip().partition(":")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if indented and current is not None and isinstance(out.get(current), dict):
            out[current][key.strip()] = value
        elif not indented:
            current = key.strip()
            out[current] = value if value else {}
    return out


def split_corpus_header(text: str) -> tuple[dict[str, Any] | None, str]:
    """Split a leading YAML header (``---`` ... ``---``) from a corpus log.

    Returns ``(header_dict_or_None, body)``.  PyYAML is imported lazily; a header it cannot read
    falls back to a tiny line reader, never an exception.
    """
    lines = text.split("\n")
    end = _header_end(lines)
    if not end:
        return None, text
    head = lines[1 : end - 1]
    body = "\n".join(lines[end:])
    data: Any = None
    try:
        from vmemplan._yaml import load_yaml_text  # lazy: keep module import light; aliases bounded

        data = load_yaml_text("\n".join(head))
    except Exception:  # noqa: BLE001 - any YAML problem falls back to the tiny reader
        data = None
    if not isinstance(data, dict):
        data = _tiny_yaml(head)
    return data, body


# --------------------------------------------------------------------------------------------
# Records: physical lines -> logical records (terminal wrapping joined)
# --------------------------------------------------------------------------------------------

_MSG_STARTS = (
    "Loading model weights|Model loading took|Memory profiling|the current vLLM instance|"
    "model weights take|GPU blocks|CUDA blocks|cuda blocks|Maximum concurrency|GPU KV cache size|"
    "[A-Z]+ KV cache size|Available KV cache|Graph capturing|The model's max seq len|"
    "To serve at least|Free memory on device|Estimated CUDA graph|Profiling CUDA graph|CUDA graph|"
    "vLLM |Initializing |Using max model len|Chunked prefill|non-default args|Sequence group|"
    "Avg prompt throughput|Engine \\d+|Starting to load model|torch\\.|RuntimeError|ValueError"
)
_RECORD_START = re.compile(
    r"\s*(?:\(|\[|\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|"
    r"Traceback|File \"|[\w.]*(?:Error|Exception|Warning)\b|#|" + _MSG_STARTS + ")"
)
_WRAP_MIN = 100  # a piece this long, followed by a non-record line, was cut by a terminal
_WRAP_MAX_PIECES = 64


def _records(lines: list[str], start: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    cur_num = 0
    parts: list[str] = []
    last_len = 0
    is_record = False
    n = len(lines)
    for idx in range(start, n):
        line = lines[idx]
        if (
            parts
            and is_record
            and last_len >= _WRAP_MIN
            and len(parts) < _WRAP_MAX_PIECES
            and line.strip()
            and not _RECORD_START.match(line)
        ):
            parts.append(line)
            last_len = len(line)
            continue
        if parts:
            out.append((cur_num, parts[0] if len(parts) == 1 else "".join(parts)))
        cur_num = idx + 1
        parts = [line]
        last_len = len(line)
        is_record = bool(line) and bool(_RECORD_START.match(line))
    if parts:
        out.append((cur_num, parts[0] if len(parts) == 1 else "".join(parts)))
    return out


# --------------------------------------------------------------------------------------------
# Process prefixes -> ranks
# --------------------------------------------------------------------------------------------

_PROC = re.compile(r"\(([A-Za-z][\w\-]*)((?:[ \t]+[^()\s]+?)*?)[ \t]+pid=(\d+)[^()]{0,80}\)[ \t]*")
_GRID = re.compile(r"(DP|PP|TP|EP|PCP|DCP)_?(\d+)")
_RANK_ATTR = re.compile(r"\brank=(\d+)")


def _process_key(text: str) -> Any:
    """The rank key of the process that printed ``text``: ``None`` for engine/API/driver lines,
    ``("rank", n)``, ``("grid", ((axis, n), ...))`` or ``("pid", pid)`` for worker processes."""
    if "pid=" not in text[:300]:
        return None
    m = _PROC.search(text, 0, 300)
    if m is None:
        return None
    last = m
    pos = m.end()
    while True:
        m2 = _PROC.match(text, pos)
        if m2 is None:
            break
        last, pos = m2, m2.end()
    name, attrs, pid = last.group(1), last.group(2) or "", last.group(3)
    if "worker" not in name.lower():
        return None
    r = _RANK_ATTR.search(attrs)
    if r:
        return ("rank", int(r.group(1)))
    grid = tuple((a, int(b)) for a, b in _GRID.findall(name + " " + attrs))
    if grid:
        return ("grid", grid)
    return ("pid", int(pid))


# --------------------------------------------------------------------------------------------
# Message patterns
# --------------------------------------------------------------------------------------------

_NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"

#: Literal anchors -> message kind.  A plain substring test per anchor is far cheaper than one big
#: alternation regex (which Python tries at every position), and lets irrelevant lines through fast.
_ANCHORS: tuple[tuple[str, str], ...] = (
    ("API server version", "version"), ("vLLM server version", "version"),
    ("batch processing API version", "version"),
    ("\u2580\u2584\u2580", "banner"), ("\u2588\u2584\u2588\u2580", "banner"),
    ("non-default args:", "args"), ("args: Namespace(", "namespace"),
    ("LLM engine (v", "engine"), ("Starting to load model", "loadmodel"),
    ("Using max model len", "maxlen"), ("Auto-fit max_model_len", "autofit"),
    ("Chunked prefill is enabled", "chunked"), ("block size to ", "blocksize"),
    ("Padding mamba page size", "mamba"), ("padding layers", "mamba"),
    ("Hybrid KV cache manager is disabled", "mamba"),
    ("Loading model weights took", "weights"), ("Model loading took", "weights"),
    ("Memory profiling results", "profres"), ("total_gpu_memory=", "profkv"),
    ("peak_torch_memory=", "profkv"), ("kv_cache_size=", "profkv"), ("non_torch_memory=", "profkv"),
    ("Memory profiling takes", "proftakes"), ("current vLLM instance can use", "budget"),
    ("model weights take", "weightstake"), ("Available KV cache memory", "avail"),
    ("KV cache size: ", "kvsize"), ("Maximum concurrency for", "conc"), ("blocks: ", "blocks"),
    ("num_gpu_blocks is", "numblocks"), ("Overriding num_gpu_blocks", "numblocks"),
    ("Graph capturing finished", "graph"), ("Estimated CUDA graph memory", "cgest"),
    ("Profiling CUDA graph memory", "cgprof"), ("CUDA graph memory profiling is", "cgutil"),
    ("CUDA graph memory profiling will be", "cgutil"), ("CUDA graph pool memory", "cgpool"),
    ("Cudagraph is disabled under eager", "eager"), ("Free memory on device", "freemem"),
    ("Initial free memory", "initfree"), ("To serve at least one request", "toserve"),
    ("maximum number of tokens that can be", "v0maxlen"),
    ("No available memory for the cache blocks", "noavail"),
    (" out of memory", "oom"), ("OutOfMemoryError", "oom"),
    ("EngineCore failed to start", "failed"), ("Engine core initialization failed", "failed"),
    ("is preempted by", "preempt"), (" reqs", "stats"), ("Multiplying the GPU KV cache size", "dcp"),
)
_OOM = re.compile(r"(?:CUDA|HIP|XPU) out of memory|OutOfMemoryError")
_STATS = re.compile(r"Running: \d+ reqs")


def _kinds(text: str) -> set[str]:
    kinds = {kind for anchor, kind in _ANCHORS if anchor in text}
    if kinds:
        if "oom" in kinds and not _OOM.search(text):
            kinds.discard("oom")
        if "stats" in kinds and not _STATS.search(text):
            kinds.discard("stats")
    return kinds


_RE = {
    "version": re.compile(
        r"(?:API server version|vLLM server version|batch processing API version)\s+v?([0-9][\w.+\-]*)"
        r"(?:, serving model (\S+))?"
    ),
    "banner_version": re.compile(r"\u2580\u2584\u2580.*?\bversion\s+v?([0-9][\w.+\-]*)"),
    "banner_model": re.compile(r"\u2588\u2584\u2588\u2580.*?\bmodel\s+(\S+)"),
    "engine": re.compile(r"Initializing an? (?:V[01] )?LLM engine \(v([^)\s]+)\) with config: (.*)"),
    "loadmodel": re.compile(r"Starting to load model (\S+?)(?:\.\.\.)?\s*$"),
    "maxlen": re.compile(r"Using max model len (\d+)"),
    "autofit": re.compile(r"reduced from (\d+) to (\d+)"),
    "chunked": re.compile(r"max_num_batched_tokens=(\d+)"),
    "blocksize": re.compile(r"(attention|kv cache) block size to (\d+)"),
    "weights": re.compile(
        r"(?:Loading model weights took|Model loading took)\s+(" + _NUM + r")\s*(GiB|GB)"
        r"(?:\s+memory)?(?:\s+and\s+(" + _NUM + r")\s*seconds)?"
    ),
    "kv_eq": re.compile(r"(\w+)=(" + _NUM + r")\s*(GiB|Gib|GB|seconds)?"),
    "proftakes": re.compile(r"Memory profiling takes (" + _NUM + r") seconds"),
    "v1repr": re.compile(
        r"Total non KV cache memory: (" + _NUM + r")\s*GiB; torch peak memory increase: ("
        + _NUM + r")\s*GiB; non-torch forward increase memory: (" + _NUM
        + r")\s*GiB; weights memory: (" + _NUM + r")\s*GiB"
    ),
    "budget": re.compile(
        r"total_gpu_memory \((" + _NUM + r")\s*GiB\) x gpu_memory_utilization \((" + _NUM
        + r")\) = (" + _NUM + r")\s*GiB"
    ),
    "weightstake": re.compile(r"model weights take (" + _NUM + r")\s*GiB"),
    "nontorchtakes": re.compile(r"non_torch_memory takes (" + _NUM + r")\s*GiB"),
    "acttakes": re.compile(r"activation peak memory takes (" + _NUM + r")\s*GiB"),
    "kvrest": re.compile(r"reserved for KV Cache is (" + _NUM + r")\s*GiB"),
    "avail": re.compile(r"Available KV cache memory:\s*(" + _NUM + r")\s*GiB"),
    "kvsize": re.compile(r"(\w+(?: \+ host)?) KV cache size: ([\d,]+) tokens"),
    "conc": re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: (" + _NUM + r")x"),
    "blocks": re.compile(r"(?<![\w])([A-Za-z]+) blocks: (\d+)(?:, # CPU blocks: (\d+))?"),
    "numblocks": re.compile(r"num_gpu_blocks is:?\s*(\d+)"),
    "override": re.compile(r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)"),
    "graph": re.compile(r"Graph capturing finished in (" + _NUM + r") secs(?:, took (" + _NUM + r") GiB)?"),
    "cgest": re.compile(r"Estimated CUDA graph memory: (" + _NUM + r") GiB total"),
    "cgutil_on": re.compile(
        r"--gpu-memory-utilization=(" + _NUM + r") is equivalent to --gpu-memory-utilization=("
        + _NUM + r").*?increase --gpu-memory-utilization to (" + _NUM + r")"
    ),
    "cgutil_off": re.compile(r"--gpu-memory-utilization from (" + _NUM + r") to (" + _NUM + r")"),
    "cgpool": re.compile(
        r"CUDA graph pool memory: (" + _NUM + r") GiB \(actual\), (" + _NUM + r") GiB \(estimated\)"
    ),
    "free_head": re.compile(
        r"Free memory on device(?: \S+)? \((" + _NUM + r")/(" + _NUM + r") GiB\) on startup"
    ),
    "free_desired": re.compile(r"utilization(?: is)? \((" + _NUM + r"), (" + _NUM + r") GiB\)"),
    "free_weight": re.compile(r"(" + _NUM + r") GiB for weight"),
    "free_act": re.compile(r"(" + _NUM + r") GiB for peak activation"),
    "free_nontorch": re.compile(r"(" + _NUM + r") GiB for non-torch memory"),
    "free_consumed": re.compile(r"(" + _NUM + r") GiB for consumed memory"),
    "free_graph": re.compile(r"(" + _NUM + r") GiB for CUDAGraph memory"),
    "free_kvmem": re.compile(r"--kv-cache-memory=(-?\d+)`"),
    "free_inuse_bytes": re.compile(r"kv cache memory in use is (-?\d+) bytes"),
    "free_inuse_gib": re.compile(r"kv cache memory in use is (" + _NUM + r") GiB"),
    "initfree_override": re.compile(
        r"Initial free memory (" + _NUM + r") GiB, reserved (" + _NUM + r")\s*GiB memory for KV Cache"
    ),
    "initfree_debug": re.compile(
        r"Initial free memory: (" + _NUM + r") GiB; Requested memory: (" + _NUM + r") \(util\), ("
        + _NUM + r") GiB"
    ),
    "toserve": re.compile(
        r"max seq len \((\d+)\), \((" + _NUM + r") GiB KV cache is needed, which is larger than the "
        r"available KV cache memory \((" + _NUM + r") GiB\)"
    ),
    "estlen": re.compile(r"estimated maximum model length is (\d+)"),
    "v0maxlen": re.compile(
        r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be\s+stored in "
        r"KV cache \((\d+)\)"
    ),
    "preempt_total": re.compile(r"total_num_cumulative_preemption=(\d+)"),
    "stats_running": re.compile(r"Running: (\d+) reqs"),
    "stats_waiting": re.compile(r"(?:Waiting|Pending): (\d+) reqs"),
    "stats_preempt": re.compile(r"Preemptions: (\d+)"),
    "stats_usage": re.compile(r"KV cache usage: (" + _NUM + r")%"),
}

#: Figures that belong to one worker (rank); the rest are engine-wide.
_WORKER_FIGURES = frozenset(
    {
        "total_memory_bytes", "weights_bytes", "activation_peak_bytes", "non_torch_bytes",
        "cuda_graph_bytes", "cuda_graph_estimate_bytes", "available_kv_cache_bytes",
        "requested_memory_bytes", "free_memory_bytes", "peak_torch_bytes",
        "initial_memory_usage_bytes", "post_profile_memory_bytes", "non_kv_cache_bytes",
        "consumed_bytes", "kv_cache_memory_to_requested_bytes", "kv_cache_memory_to_gpu_bytes",
        "kv_cache_memory_override_bytes", "cuda_graph_equivalent_util",
        "cuda_graph_suggested_util", "weights_load_seconds", "profile_seconds",
        "graph_capture_seconds",
    }
)
_MEMORY_MARKERS = frozenset(
    {"weights_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "num_gpu_blocks",
     "total_memory_bytes", "peak_torch_bytes", "max_concurrency", "cuda_graph_bytes"}
)
_KV_MARKERS = frozenset(
    {"available_kv_cache_bytes", "kv_cache_tokens", "num_gpu_blocks", "max_concurrency"}
)
_FIGURE_NAMES = frozenset(f.name for f in fields(Figures)) - {"printed"}


def _gib_bytes(text: str) -> int:
    return int(round(float(text) * GIB))


def _to_int(text: str) -> int:
    return int(text.replace(",", ""))


# --------------------------------------------------------------------------------------------
# Python-literal-ish parsing of config lines and dicts
# --------------------------------------------------------------------------------------------

_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_top(text: str, sep: str = ",") -> tuple[list[str], bool]:
    """Split on ``sep`` outside brackets and quotes.  Returns the parts and whether the text ended
    balanced (a cut line ends unbalanced: its last part is then unreliable)."""
    parts: list[str] = []
    stack: list[str] = []
    quote = ""
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
        elif c in ")]}" and not stack:
            pass
        elif c == sep and not stack:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts, not stack and not quote


def _value(raw: str) -> Any:
    raw = raw.strip()
    if not raw:
        return raw
    if raw in ("None", "null"):
        return None
    if raw in ("True", "true"):
        return True
    if raw in ("False", "false"):
        return False
    if raw[0] in "'\"[{(" or raw[0].isdigit() or raw[0] == "-":
        try:
            return _literal(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return raw


def _parse_config(text: str) -> dict[str, Any]:
    """``key=value, key=value, ...`` as printed by VllmConfig.__str__ / the V0 engine / argparse
    ``Namespace(...)``.  A cut-off last item is dropped."""
    parts, _balanced = _split_top(text)
    # The last item is dropped: a cut line cuts it, and no figure we need is ever printed last
    # (VllmConfig.__str__ ends with compilation/kernel config, Namespace with unrelated flags).
    parts = parts[:-1]
    out: dict[str, Any] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            continue
        out[key] = _value(raw)
    return out


def _parse_dict_literal(text: str) -> dict[str, Any] | None:
    """The ``{...}`` dict printed after ``non-default args:``; ``ast.literal_eval`` first, then a
    forgiving top-level split (object reprs such as ``PoolerConfig(...)`` stay strings; a cut-off
    last item is dropped)."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = _literal(text)
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    inner = text[1:]
    closed = False
    parts, balanced = _split_top(inner)
    if parts and parts[-1].rstrip().endswith("}"):
        parts[-1] = parts[-1].rstrip()[:-1]
        closed = True
    if (not balanced or not closed) and parts:
        parts = parts[:-1]
    out: dict[str, Any] = {}
    for part in parts:
        kv, _ = _split_top(part, ":")
        if len(kv) < 2:
            continue
        key = _value(kv[0])
        out[str(key)] = _value(":".join(kv[1:]))
    return out


def _norm_dtype(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    if text.startswith("torch."):
        text = text[6:]
    return {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(text, text)


# --------------------------------------------------------------------------------------------
# The accumulator for one startup
# --------------------------------------------------------------------------------------------


class _Acc:
    """Mutable state while reading one startup; frozen by :meth:`freeze`."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str]] = []
        self.seen_keys: list[Any] = []
        self.lines: list[tuple[int, str, str, Any]] = []
        self.version: str | None = None
        self.model_sources: dict[str, str] = {}
        self.engine_config: dict[str, Any] = {}
        self.non_default_args: dict[str, Any] = {}
        self.namespace_args: dict[str, Any] = {}
        self.eng: dict[str, Any] = {}
        self.eng_weak: dict[str, Any] = {}
        self.printed: dict[Any, dict[str, str]] = {}
        self.workers: dict[Any, dict[str, Any]] = {}
        self.kv_entries: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.generic_errors: list[str] = []
        self.notes: list[str] = []
        self.hints: set[str] = set()
        self.preempt_v0_max = 0
        self.preempt_v0_count = 0
        self.preempt_v1_sum = 0
        self.runtime_lines = 0
        self.stats: dict[str, Any] = {}
        self.started_by: str | None = None
        self.has_kv = False
        self.has_memory = False

    # ---- figure setters
    def put(self, target: Any, name: str, value: Any, printed: str | None = None, weak: bool = False) -> None:
        if value is None:
            return
        if name in _WORKER_FIGURES:
            if target is None:
                target = "driver"
            bucket = self.workers.setdefault(target, {})
            if weak and name in bucket:
                return
            bucket[name] = value
            if printed is not None:
                self.printed.setdefault(target, {})[name] = printed
        else:
            if weak:
                if name not in self.eng:
                    self.eng_weak.setdefault(name, value)
                return
            self.eng[name] = value
            if printed is not None:
                self.printed.setdefault(None, {})[name] = printed
        if name in _MEMORY_MARKERS:
            self.has_memory = True
        if name in _KV_MARKERS:
            self.has_kv = True

    def line(self, number: int, text: str, kind: str, key: Any) -> None:
        self.lines.append((number, text, kind, key))

    @property
    def has_outcome(self) -> bool:
        return self.has_kv or bool(self.errors) or bool(self.generic_errors)


# --------------------------------------------------------------------------------------------
# Handlers: one per message kind
# --------------------------------------------------------------------------------------------


def _apply_args(acc: _Acc, args: Mapping[str, Any]) -> None:
    """Figures from a non-default-args dict or an argparse Namespace (weak: log lines win)."""
    ints = ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
            "max_num_batched_tokens", "max_num_seqs", "block_size")
    for key in ints:
        v = args.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            acc.put(None, key, v, weak=True)
    util = args.get("gpu_memory_utilization")
    if isinstance(util, (int, float)) and not isinstance(util, bool):
        acc.put(None, "gpu_memory_utilization", float(util), weak=True)
    for key in ("kv_cache_dtype", "quantization"):
        v = args.get(key)
        if isinstance(v, str):
            acc.put(None, key, v, weak=True)
    if isinstance(args.get("dtype"), str):
        acc.put(None, "dtype", _norm_dtype(args["dtype"]), weak=True)
    if isinstance(args.get("enforce_eager"), bool):
        acc.put(None, "enforce_eager", args["enforce_eager"], weak=True)
    kvb = args.get("kv_cache_memory_bytes")
    if isinstance(kvb, int) and not isinstance(kvb, bool):
        acc.put(None, "kv_cache_memory_override_bytes", kvb, weak=True)
    for key in ("model", "model_tag"):
        if isinstance(args.get(key), str) and args[key]:
            acc.model_sources.setdefault("args", args[key])
            break


def _handle(acc: _Acc, kinds: set[str], number: int, text: str, key: Any) -> None:  # noqa: C901
    R = _RE
    wk = key  # target for worker figures (None = driver / engine process)

    if "version" in kinds:
        m = R["version"].search(text)
        if m:
            acc.version = m.group(1).rstrip(".,")
            if m.group(2):
                acc.model_sources.setdefault("server", m.group(2).rstrip(","))
            acc.line(number, text, "version", key)
    if "banner" in kinds:
        m = R["banner_version"].search(text)
        if m:
            acc.version = m.group(1)
            acc.line(number, text, "version", key)
        m = R["banner_model"].search(text)
        if m:
            acc.model_sources.setdefault("server", m.group(1))
            acc.line(number, text, "model", key)
    if "args" in kinds:
        body = text.split("non-default args:", 1)[1]
        d = _parse_dict_literal(body)
        if d is not None:
            acc.non_default_args.update(d)
            _apply_args(acc, d)
        acc.line(number, text, "args", key)
    if "namespace" in kinds:
        body = text.split("args: Namespace(", 1)[1]
        if body.rstrip().endswith(")"):
            body = body.rstrip()[:-1]
        d = _parse_config(body)
        acc.namespace_args.update(d)
        _apply_args(acc, d)
        acc.line(number, text, "args", key)
    if "engine" in kinds:
        m = R["engine"].search(text)
        if m:
            acc.version = acc.version or m.group(1)
            cfg = _parse_config(m.group(2))
            acc.engine_config.update(cfg)
            if isinstance(cfg.get("model"), str):
                acc.model_sources["engine"] = cfg["model"]
            for src, dst in (("max_seq_len", "max_model_len"), ("tensor_parallel_size", "tensor_parallel_size"),
                             ("pipeline_parallel_size", "pipeline_parallel_size"),
                             ("data_parallel_size", "data_parallel_size")):
                v = cfg.get(src)
                if isinstance(v, int) and not isinstance(v, bool):
                    acc.put(None, dst, v)
            if "dtype" in cfg:
                acc.put(None, "dtype", _norm_dtype(cfg["dtype"]))
            for src in ("kv_cache_dtype", "quantization"):
                if src in cfg and cfg[src] is not None:
                    acc.put(None, src, str(cfg[src]))
            if isinstance(cfg.get("enforce_eager"), bool):
                acc.put(None, "enforce_eager", cfg["enforce_eager"])
            acc.hints.add("v1" if "V1 LLM engine" in text else "v0")
            acc.line(number, text, "engine_config", key)
    if "loadmodel" in kinds:
        m = R["loadmodel"].search(text)
        if m:
            acc.model_sources.setdefault("load", m.group(1))
    if "maxlen" in kinds:
        m = R["maxlen"].search(text)
        if m:
            acc.put(None, "max_model_len", int(m.group(1)))
            acc.line(number, text, "max_model_len", key)
    if "autofit" in kinds:
        m = R["autofit"].search(text)
        if m:
            acc.put(None, "max_model_len", int(m.group(2)))
            acc.line(number, text, "max_model_len", key)
    if "chunked" in kinds:
        m = R["chunked"].search(text)
        if m:
            acc.put(None, "max_num_batched_tokens", int(m.group(1)))
            acc.line(number, text, "chunked_prefill", key)
    if "blocksize" in kinds:
        m = R["blocksize"].search(text)
        if m:
            acc.put(None, "block_size", int(m.group(2)))
            if m.group(1) == "attention":
                acc.notes.append("hybrid")
            acc.line(number, text, "block_size", key)
    if "mamba" in kinds:
        acc.notes.append("hybrid" if "mamba" in text else "padding_layers" if "padding layers" in text else "hma_disabled")
        acc.line(number, text, "hybrid", key)
    if "weights" in kinds:
        m = R["weights"].search(text)
        if m:
            acc.put(wk, "weights_bytes", _gib_bytes(m.group(1)), m.group(1))
            if m.group(3):
                acc.put(wk, "weights_load_seconds", float(m.group(3)))
            acc.hints.add("weights_gb" if m.group(2) == "GB" else "weights_gib")
            if text.find("Model loading took") >= 0:
                acc.hints.add("v1")
            acc.line(number, text, "weights", key)
    if "profres" in kinds or "profkv" in kinds:
        got = False
        for m in R["kv_eq"].finditer(text):
            name, val = m.group(1), m.group(2)
            target = {
                "total_gpu_memory": "total_memory_bytes",
                "initial_memory_usage": "initial_memory_usage_bytes",
                "peak_torch_memory": "peak_torch_bytes",
                "memory_usage_post_profile": "post_profile_memory_bytes",
                "non_torch_memory": "non_torch_bytes",
                "kv_cache_size": "available_kv_cache_bytes",
            }.get(name)
            if target:
                acc.put(wk, target, _gib_bytes(val), val)
                got = True
            elif name == "gpu_memory_utilization":
                acc.put(wk, "gpu_memory_utilization", float(val), val)
                got = True
            elif name == "duration":
                acc.put(wk, "profile_seconds", float(val))
        if got or "profres" in kinds:
            acc.hints.add("v0.6.4")
            if "kv_cache_size=" not in text or "total_gpu_memory=" not in text:
                acc.hints.add("v0.6.4-split")
            acc.line(number, text, "profiling", key)
    if "proftakes" in kinds:
        m = R["proftakes"].search(text)
        if m:
            acc.put(wk, "profile_seconds", float(m.group(1)))
        m = R["v1repr"].search(text)
        if m:
            acc.put(wk, "non_kv_cache_bytes", _gib_bytes(m.group(1)), m.group(1))
            acc.put(wk, "activation_peak_bytes", _gib_bytes(m.group(2)), m.group(2))
            acc.put(wk, "non_torch_bytes", _gib_bytes(m.group(3)), m.group(3))
            acc.put(wk, "weights_bytes", _gib_bytes(m.group(4)), m.group(4), weak=True)
            acc.hints.add("v1")
        else:
            acc.hints.add("v0-takes")
        acc.line(number, text, "profiling", key)
    if "budget" in kinds:
        m = R["budget"].search(text)
        if m:
            acc.put(wk, "total_memory_bytes", _gib_bytes(m.group(1)), m.group(1))
            acc.put(wk, "gpu_memory_utilization", float(m.group(2)), m.group(2))
            acc.put(wk, "requested_memory_bytes", _gib_bytes(m.group(3)), m.group(3))
            acc.hints.add("v0-takes")
            acc.line(number, text, "budget", key)
    if "weightstake" in kinds:
        got = False
        for rx, name in (("weightstake", "weights_bytes"), ("nontorchtakes", "non_torch_bytes"),
                         ("acttakes", "activation_peak_bytes"), ("kvrest", "available_kv_cache_bytes")):
            m = R[rx].search(text)
            if m:
                # the 4-decimal "Loading model weights took" figure, when present, is the finer one
                acc.put(wk, name, _gib_bytes(m.group(1)), m.group(1), weak=name == "weights_bytes")
                got = True
        if got:
            acc.hints.add("v0-takes")
            acc.line(number, text, "profile_breakdown", key)
    if "avail" in kinds:
        m = R["avail"].search(text)
        if m:
            acc.put(wk, "available_kv_cache_bytes", _gib_bytes(m.group(1)), m.group(1))
            acc.has_kv = True
            acc.hints.add("v1")
            acc.line(number, text, "available_kv", key)
    if "kvsize" in kinds or "conc" in kinds:
        m = R["kvsize"].search(text)
        c = R["conc"].search(text)
        entry: dict[str, Any] | None = None
        if m:
            entry = {"kv_cache_tokens": _to_int(m.group(2)), "device": m.group(1)}
            if key is not None:
                entry["key"] = key
            acc.kv_entries.append(entry)
            acc.has_kv = True
            acc.hints.add("v1")
        if c:
            last = acc.kv_entries[-1] if acc.kv_entries else None
            same_proc = last is not None and last.get("key") == key
            if entry is None and same_proc and "max_concurrency" not in last:
                entry = last
            elif (entry is None and same_proc and last.get("max_concurrency_printed") == c.group(2)
                  and last.get("max_model_len") == _to_int(c.group(1))):
                entry = last  # the same concurrency printed twice (info_once per process)
            elif entry is None:
                entry = {}
                if key is not None:
                    entry["key"] = key
                acc.kv_entries.append(entry)
            entry["max_model_len"] = _to_int(c.group(1))
            entry["max_concurrency"] = float(c.group(2))
            entry["max_concurrency_printed"] = c.group(2)
            acc.put(None, "max_model_len", _to_int(c.group(1)))
            acc.has_kv = True
        if m and c:
            acc.hints.add("v1-joined")
        if m or c:
            kind = "kv_tokens_concurrency" if (m and c) else "kv_tokens" if m else "concurrency"
            acc.line(number, text, kind, key)
    if "blocks" in kinds:
        m = R["blocks"].search(text)
        if m and m.group(1).upper() != "CPU":
            acc.put(None, "num_gpu_blocks", int(m.group(2)))
            if m.group(3) is not None:
                acc.put(None, "num_cpu_blocks", int(m.group(3)))
                acc.hints.add("v0-blocks")
            else:
                acc.hints.add("v1-early")
            acc.line(number, text, "blocks", key)
    if "numblocks" in kinds:
        m = R["override"].search(text)
        if m:
            acc.put(None, "num_gpu_blocks", int(m.group(2)))
            acc.line(number, text, "blocks", key)
        else:
            m = R["numblocks"].search(text)
            if m:
                acc.put(None, "num_gpu_blocks", int(m.group(1)))
                acc.line(number, text, "blocks", key)
    if "graph" in kinds:
        m = R["graph"].search(text)
        if m:
            acc.put(wk, "graph_capture_seconds", float(m.group(1)))
            if m.group(2) is not None:
                acc.put(wk, "cuda_graph_bytes", _gib_bytes(m.group(2)), m.group(2))
            acc.line(number, text, "cuda_graph", key)
    if "cgest" in kinds:
        m = R["cgest"].search(text)
        if m:
            acc.put(wk, "cuda_graph_estimate_bytes", _gib_bytes(m.group(1)), m.group(1))
            acc.line(number, text, "cuda_graph_estimate", key)
    if "cgprof" in kinds:
        acc.line(number, text, "cuda_graph_profiling", key)
    if "cgutil" in kinds:
        m = R["cgutil_on"].search(text)
        if m:
            acc.put(wk, "gpu_memory_utilization", float(m.group(1)), m.group(1))
            acc.put(wk, "cuda_graph_equivalent_util", float(m.group(2)))
            acc.put(wk, "cuda_graph_suggested_util", float(m.group(3)))
        else:
            m = R["cgutil_off"].search(text)
            if m:
                acc.put(wk, "gpu_memory_utilization", float(m.group(1)), m.group(1))
                acc.put(wk, "cuda_graph_suggested_util", float(m.group(2)))
        acc.line(number, text, "cuda_graph_util", key)
    if "cgpool" in kinds:
        m = R["cgpool"].search(text)
        if m:
            acc.put(wk, "cuda_graph_bytes", _gib_bytes(m.group(1)), m.group(1), weak=True)
            acc.put(wk, "cuda_graph_estimate_bytes", _gib_bytes(m.group(2)), m.group(2), weak=True)
            acc.line(number, text, "cuda_graph_pool", key)
    if "eager" in kinds:
        acc.put(None, "enforce_eager", True)
    if "freemem" in kinds:
        m = R["free_head"].search(text)
        if m:
            acc.put(wk, "free_memory_bytes", _gib_bytes(m.group(1)), m.group(1))
            acc.put(wk, "total_memory_bytes", _gib_bytes(m.group(2)), m.group(2))
        d = R["free_desired"].search(text)
        if d:
            acc.put(wk, "gpu_memory_utilization", float(d.group(1)), d.group(1))
            acc.put(wk, "requested_memory_bytes", _gib_bytes(d.group(2)), d.group(2))
        if "is less than" in text:
            msg = text[text.find("Free memory on device"):]
            acc.errors.append(msg.split(". ")[0].rstrip(".") + ".")
            acc.line(number, text, "error", key)
        else:
            for rx, name in (("free_weight", "weights_bytes"), ("free_act", "activation_peak_bytes"),
                             ("free_nontorch", "non_torch_bytes"), ("free_consumed", "consumed_bytes"),
                             ("free_graph", "cuda_graph_bytes")):
                mm = R[rx].search(text)
                if mm:
                    acc.put(wk, name, _gib_bytes(mm.group(1)), mm.group(1), weak=name != "activation_peak_bytes"
                            and name != "non_torch_bytes" and name != "consumed_bytes")
            kvm = R["free_kvmem"].findall(text)
            if len(kvm) >= 1:
                acc.put(wk, "kv_cache_memory_to_requested_bytes", int(kvm[0]))
            if len(kvm) >= 2:
                acc.put(wk, "kv_cache_memory_to_gpu_bytes", int(kvm[1]))
            mm = R["free_inuse_bytes"].search(text)
            if mm:
                acc.put(wk, "available_kv_cache_bytes", int(mm.group(1)), weak=True)
            else:
                mm = R["free_inuse_gib"].search(text)
                if mm:
                    acc.put(wk, "available_kv_cache_bytes", _gib_bytes(mm.group(1)), mm.group(1), weak=True)
            acc.hints.add("v1")
            acc.line(number, text, "memory_summary", key)
    if "initfree" in kinds:
        m = R["initfree_override"].search(text)
        if m:
            acc.put(wk, "free_memory_bytes", _gib_bytes(m.group(1)), m.group(1))
            acc.put(wk, "kv_cache_memory_override_bytes", _gib_bytes(m.group(2)), m.group(2))
            acc.put(wk, "available_kv_cache_bytes", _gib_bytes(m.group(2)), m.group(2), weak=True)
            acc.line(number, text, "kv_override", key)
        else:
            m = R["initfree_debug"].search(text)
            if m:
                acc.put(wk, "free_memory_bytes", _gib_bytes(m.group(1)), m.group(1))
                acc.put(wk, "gpu_memory_utilization", float(m.group(2)), m.group(2))
                acc.put(wk, "requested_memory_bytes", _gib_bytes(m.group(3)), m.group(3))
                acc.line(number, text, "budget", key)
    if "toserve" in kinds:
        m = R["toserve"].search(text)
        start = text.find("To serve at least one request")
        end = text.find("Try increasing", start)
        msg = text[start:end].strip() if end > 0 else text[start:].strip()
        if msg not in acc.errors:
            acc.errors.append(msg)
        if m:
            acc.put(None, "max_model_len", int(m.group(1)))
            acc.put(None, "kv_cache_needed_bytes", _gib_bytes(m.group(2)), m.group(2))
            acc.put(wk, "available_kv_cache_bytes", _gib_bytes(m.group(3)), m.group(3), weak=True)
        e = R["estlen"].search(text)
        if e:
            acc.put(None, "estimated_max_model_len", int(e.group(1)))
        acc.line(number, text, "error", key)
    if "v0maxlen" in kinds:
        m = R["v0maxlen"].search(text)
        start = text.find("The model's max seq len")
        start = start if start >= 0 else text.find("max seq len")
        end = text.find("Try increasing", start)
        msg = text[start:end].strip() if end > 0 else text[start:].strip()
        if msg not in acc.errors:
            acc.errors.append(msg)
        if m:
            acc.put(None, "max_model_len", int(m.group(1)))
            acc.put(None, "kv_cache_tokens", int(m.group(2)), weak=True)
        acc.line(number, text, "error", key)
    if "noavail" in kinds:
        msg = "No available memory for the cache blocks."
        if msg not in acc.errors:
            acc.errors.append(msg)
        acc.line(number, text, "error", key)
    if "oom" in kinds and not ("toserve" in kinds or "v0maxlen" in kinds):
        starts = [p for p in (text.find("CUDA out of memory"), text.find("HIP out of memory"),
                              text.find("XPU out of memory"), text.find("OutOfMemoryError")) if p >= 0]
        msg = text[min(starts):] if starts else text
        msg = msg[:300].strip()
        if not any(e.startswith(msg[:40]) for e in acc.errors):
            acc.errors.append(msg)
        acc.line(number, text, "error", key)
    if "failed" in kinds:
        acc.generic_errors.append("EngineCore failed to start" if "EngineCore" in text else "Engine core initialization failed")
        acc.line(number, text, "error", key)
    if "preempt" in kinds:
        acc.preempt_v0_count += 1
        m = R["preempt_total"].search(text)
        if m:
            acc.preempt_v0_max = max(acc.preempt_v0_max, int(m.group(1)))
        if acc.runtime_lines < 20:
            acc.line(number, text, "preemption", key)
        acc.runtime_lines += 1
    if "stats" in kinds:
        st = acc.stats
        m = R["stats_running"].search(text)
        if m:
            st["max_running_reqs"] = max(st.get("max_running_reqs", 0), int(m.group(1)))
        m = R["stats_waiting"].search(text)
        if m:
            st["max_waiting_reqs"] = max(st.get("max_waiting_reqs", 0), int(m.group(1)))
        m = R["stats_usage"].search(text)
        if m:
            st["max_kv_cache_usage_pct"] = max(st.get("max_kv_cache_usage_pct", 0.0), float(m.group(1)))
        st["stats_lines"] = st.get("stats_lines", 0) + 1
        m = R["stats_preempt"].search(text)
        if m:
            acc.preempt_v1_sum += int(m.group(1))
            if acc.runtime_lines < 20:
                acc.line(number, text, "preemption", key)
            acc.runtime_lines += 1
    if "dcp" in kinds:
        acc.notes.append("context_parallel")
        acc.line(number, text, "kv_tokens", key)


_BOUNDARY_KINDS = ("version", "engine", "args", "namespace", "banner")


def _boundary(kinds: set[str], text: str) -> str | None:
    for k in _BOUNDARY_KINDS:
        if k in kinds:
            if k == "banner" and "\u2580\u2584\u2580" not in text:
                continue
            return k
    return None


def _run(records: Iterable[tuple[int, str]], split: bool = True) -> list[_Acc]:
    accs: list[_Acc] = []
    acc = _Acc()
    for number, text in records:
        kinds = _kinds(text)
        if not kinds:
            acc.records.append((number, text))
            if "orker" in text[:160]:  # a worker process we have not met yet still counts as a rank
                k = _process_key(text)
                if k is not None and k not in acc.seen_keys:
                    acc.seen_keys.append(k)
            continue
        b = _boundary(kinds, text) if split else None
        if b is not None:
            if acc.has_outcome:
                accs.append(acc)
                acc = _Acc()
            if acc.started_by is None or (acc.started_by == "args" and b != "args"):
                acc.started_by = b
        acc.records.append((number, text))
        key = _process_key(text)
        try:
            _handle(acc, kinds, number, text, key)
        except (ValueError, OverflowError, IndexError, TypeError):  # a cut or garbled figure: skip
            continue
    accs.append(acc)
    return accs


def _is_orphan(acc: _Acc) -> bool:
    return (not acc.has_memory and not acc.has_kv and not acc.errors and not acc.generic_errors
            and acc.started_by in ("args", "namespace", None))


# --------------------------------------------------------------------------------------------
# Freezing: rank mapping, engine KV lines, format, outcome
# --------------------------------------------------------------------------------------------


def _freeze(acc: _Acc) -> Startup:  # noqa: C901
    eng_all: dict[str, Any] = dict(acc.eng_weak)
    eng_all.update(acc.eng)
    tp = eng_all.get("tensor_parallel_size")
    pp = eng_all.get("pipeline_parallel_size") or 1

    # ---- map rank keys to integers
    grid_keys = [k for k in acc.workers if isinstance(k, tuple) and k[0] == "grid"]
    grid_keys += [k for (_, _, _, k) in acc.lines if isinstance(k, tuple) and k[0] == "grid"]
    grid_keys += [k for k in acc.seen_keys if k[0] == "grid"]
    max_tp = 0
    for k in grid_keys:
        for axis, n in k[1]:
            if axis == "TP":
                max_tp = max(max_tp, n + 1)
    tp_size = tp if isinstance(tp, int) and tp > 0 else max(max_tp, 1)
    mapping: dict[Any, int] = {"driver": 0}
    used: set[int] = set()
    all_keys: list[Any] = []
    for (_, _, _, k) in acc.lines:
        if k is not None and k not in all_keys:
            all_keys.append(k)
    for k in list(acc.workers) + acc.seen_keys:
        if k not in all_keys and k != "driver":
            all_keys.append(k)
    for k in all_keys:
        if k[0] == "rank":
            mapping[k] = k[1]
        elif k[0] == "grid":
            axes = dict(k[1])
            mapping[k] = (axes.get("DP", 0) * pp + axes.get("PP", 0)) * tp_size + axes.get("TP", 0)
    used.update(v for kk, v in mapping.items() if kk != "driver")
    driver_has = bool(acc.workers.get("driver"))
    if driver_has:
        used.add(0)
    nxt = 0
    for k in all_keys:
        if k[0] == "pid":
            while nxt in used:
                nxt += 1
            mapping[k] = nxt
            used.add(nxt)
    ranks = sorted(used) if used else [0]

    # ---- per-rank worker figures
    per_worker: dict[int, dict[str, Any]] = {}
    per_printed: dict[int, dict[str, str]] = {}
    for k, figs in acc.workers.items():
        r = mapping.get(k, 0)
        per_worker.setdefault(r, {}).update(figs)
        per_printed.setdefault(r, {}).update(acc.printed.get(k, {}))

    # ---- engine KV lines (one per worker in some releases)
    engine_kv: dict[str, Any] = {}
    rank_kv: dict[int, dict[str, Any]] = {}
    entries = acc.kv_entries
    eng_entries = [e for e in entries if "key" not in e]
    for e in entries:
        if "key" in e:
            rank_kv.setdefault(mapping.get(e["key"], 0), {}).update(e)
    if eng_entries:
        distinct = {(e.get("kv_cache_tokens"), e.get("max_concurrency")) for e in eng_entries}
        if len(eng_entries) == len(ranks) > 1:
            for r, e in zip(ranks, eng_entries):
                rank_kv.setdefault(r, {}).update(e)
            engine_kv = dict(eng_entries[0])
        else:
            engine_kv = dict(eng_entries[0])
            if len(distinct) > 1:
                acc.notes.append("kv_lines_differ")
    kv_lines = tuple(
        {k: v for k, v in e.items() if k in ("kv_cache_tokens", "max_model_len", "max_concurrency", "device")}
        for e in entries
    )

    def kv_part(e: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        figs: dict[str, Any] = {}
        printed: dict[str, str] = {}
        for name in ("kv_cache_tokens", "max_concurrency"):
            if name in e:
                figs[name] = e[name]
        if "max_concurrency_printed" in e:
            printed["max_concurrency"] = e["max_concurrency_printed"]
        return figs, printed

    base = {k: v for k, v in eng_all.items() if k in _FIGURE_NAMES}
    base_printed = dict(acc.printed.get(None, {}))
    f_eng, p_eng = kv_part(engine_kv)
    base.update(f_eng)
    base_printed.update(p_eng)

    per_rank: dict[int, Figures] = {}
    for r in ranks:
        figs = dict(base)
        printed = dict(base_printed)
        f_r, p_r = kv_part(rank_kv.get(r, {}))
        figs.update(f_r)
        printed.update(p_r)
        figs.update(per_worker.get(r, {}))
        printed.update(per_printed.get(r, {}))
        figs = {k: v for k, v in figs.items() if k in _FIGURE_NAMES}
        per_rank[r] = Figures(printed=printed, **figs)
    primary = 0 if 0 in per_rank else ranks[0]
    figures = per_rank[primary]

    # ---- format variant
    h = acc.hints
    if "v1-joined" in h:
        fmt = "v1-joined"
    elif "v1-early" in h and "v0-blocks" not in h:
        fmt = "v1-early"
    elif "v1" in h:
        fmt = "v1"
    elif "v0-takes" in h:
        fmt = "v0.6.6-weights-take"
    elif "v0.6.4" in h:
        fmt = "v0.6.5-multiline" if "v0.6.4-split" in h else "v0.6.4-oneline"
    elif "v0-blocks" in h or "weights_gb" in h or "v0" in h:
        fmt = "v0-blocks"
    else:
        fmt = "unknown"

    # ---- outcome
    errors = list(dict.fromkeys(acc.errors))
    error: str | None = errors[0] if errors else None
    outcome = "failed" if errors or acc.generic_errors else "started"
    if error is None and acc.generic_errors:
        error = acc.generic_errors[0] + " (the reason is not in the log)"
    negative = [r for r, f in per_rank.items() if f.available_kv_cache_bytes is not None and f.available_kv_cache_bytes <= 0]
    if negative and not errors:
        f = per_rank[negative[0]]
        reason = (f"available KV cache memory is {f.printed.get('available_kv_cache_bytes', '?')} GiB "
                  f"on rank {negative[0]}, so no KV cache block fits: vLLM stops with "
                  "'No available memory for the cache blocks'")
        error = (error + "; " if error else "") + reason
        outcome = "failed"
    elif figures.num_gpu_blocks == 0 and not errors:
        error = (error + "; " if error else "") + ("num_gpu_blocks is 0: vLLM stops with "
                                                  "'No available memory for the cache blocks'")
        outcome = "failed"

    # ---- how far it got
    kinds = {k for (_, _, k, _) in acc.lines}
    reached = "none"
    for label, needs in (("config", {"version", "args", "engine_config", "max_model_len", "chunked_prefill"}),
                         ("weights", {"weights"}),
                         ("profiling", {"profiling", "profile_breakdown", "budget", "available_kv", "cuda_graph_estimate"}),
                         ("kv_cache", {"kv_tokens", "kv_tokens_concurrency", "concurrency", "blocks"}),
                         ("cuda_graphs", {"cuda_graph", "cuda_graph_pool", "memory_summary"})):
        if kinds & needs:
            reached = label

    # ---- model id
    model = None
    for src in ("engine", "args", "server", "load"):
        if acc.model_sources.get(src):
            model = acc.model_sources[src]
            break

    engine: dict[str, Any] = {}
    if acc.engine_config:
        engine["config"] = acc.engine_config
    if acc.non_default_args:
        engine["non_default_args"] = acc.non_default_args
    if acc.namespace_args:
        engine["args"] = acc.namespace_args

    lines = tuple(LogLine(n, t, k, None if key is None else mapping.get(key)) for (n, t, k, key) in acc.lines)
    numbers = [n for n, _ in acc.records]
    preempt = max(acc.preempt_v0_max, acc.preempt_v0_count) + acc.preempt_v1_sum
    return Startup(
        vllm_version=acc.version,
        format=fmt,
        model=model,
        outcome=outcome,
        error=error,
        ranks=tuple(ranks),
        figures=figures,
        per_rank=per_rank,
        engine=engine,
        lines=lines,
        preemptions=preempt,
        errors=tuple(errors + acc.generic_errors),
        notes=tuple(dict.fromkeys(acc.notes)),
        reached=reached,
        first_line=min(numbers) if numbers else 0,
        last_line=max(numbers) if numbers else 0,
        stats=dict(acc.stats),
        kv_lines=kv_lines,
    )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def parse_log(text: str) -> list[Startup]:
    """Every vLLM startup found in ``text`` (oldest first); ``[]`` when none is recognised.

    A leading corpus YAML header is skipped (line numbers still count it).  A new startup begins
    at "vLLM API server version", an engine-config line, the version banner or a new
    "non-default args" line once the current one already has KV-cache figures or an error; a
    trailing piece that only repeats arguments (a reordered paste) is folded back into the
    startup before it.
    """
    if not text:
        return []
    text = _clean(text)
    lines = text.split("\n")
    start = _header_end(lines)
    records = _records(lines, start)
    accs = _run(records)
    # fold orphan pieces (only arguments, no figures) into the startup before them
    merged: list[_Acc] = []
    for acc in accs:
        if merged and _is_orphan(acc) and acc.lines:
            prev = merged.pop()
            again = _run(prev.records + acc.records, split=False)
            merged.append(again[0])
        else:
            merged.append(acc)
    return [_freeze(a) for a in merged if a.lines]
