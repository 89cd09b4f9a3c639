"""The handlers of :mod:`vmemplan.explain.line_rules`: each reads one kind of vLLM startup line
and writes named figures into the :class:`~vmemplan.explain.accumulator.Acc` of the startup.

A handler never raises on odd text it can avoid; a figure cut in half raises ``ValueError`` /
``OverflowError``, which the caller treats as "skip the rest of this record".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from vmemplan.core.frozen import frozen
from vmemplan.explain.accumulator import Acc
from vmemplan.explain.pyliteral import norm_dtype, parse_config, parse_dict_literal

__all__ = ["NUM", "Hit", "Put", "read", "line_only", "gib_bytes", "to_int"]

GIB = 1 << 30
#: A printed number (vLLM prints %.2f, %.4f, format_gib's shortest repr, and, cut or garbled, worse).
NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


def gib_bytes(text: str) -> int:
    return int(round(float(text) * GIB))


def to_int(text: str) -> int:
    return int(text.replace(",", ""))


@frozen
class Hit:
    """One record a rule fired on: its first line's number, text, printing process and the kinds of
    every rule that fired on it."""

    number: int
    text: str
    key: Any
    kinds: frozenset[str]

    def line(self, acc: Acc, kind: str) -> None:
        acc.line(self.number, self.text, kind, self.key)


class Put(NamedTuple):
    """Write regex ``group`` into ``figure``, converted as ``conv`` ("gib" GiB text -> bytes, "util"
    a float whose text is kept, "float", "int"); ``weak`` never overwrites a figure already read."""

    figure: str
    group: int
    conv: str
    weak: bool = False


def put_text(acc: Acc, key: Any, figure: str, conv: str, text: str | None, weak: bool = False) -> None:
    if text is None:
        return
    if conv == "gib":
        acc.put(key, figure, gib_bytes(text), text, weak=weak)
    elif conv == "util":
        acc.put(key, figure, float(text), text, weak=weak)
    elif conv == "float":
        acc.put(key, figure, float(text), weak=weak)
    else:
        acc.put(key, figure, to_int(text), weak=weak)


def read(pattern: str, line_kind: str, *puts: Put, hint: str | None = None) -> Callable[[Acc, Hit], None]:
    """A handler for a line with one regular expression: on a match, write ``puts``, note the format
    ``hint`` and record the line as ``line_kind``."""
    rx = re.compile(pattern)

    def handle(acc: Acc, hit: Hit) -> None:
        m = rx.search(hit.text)
        if m is None:
            return
        for p in puts:
            put_text(acc, hit.key, p.figure, p.conv, m.group(p.group), p.weak)
        if hint:
            acc.hints.add(hint)
        hit.line(acc, line_kind)

    handle.pattern = rx  # type: ignore[attr-defined]
    return handle


def line_only(line_kind: str) -> Callable[[Acc, Hit], None]:
    """A handler that only records the line (it carries no figure we use)."""

    def handle(acc: Acc, hit: Hit) -> None:
        hit.line(acc, line_kind)

    return handle


# --------------------------------------------------------------------------------------------
# Who and what: version, arguments, engine config
# --------------------------------------------------------------------------------------------

_VERSION = re.compile(
    r"(?:API server version|vLLM server version|batch processing API version)\s+v?([0-9][\w.+\-]*)"
    r"(?:, serving model (\S+))?"
)
_BANNER_VERSION = re.compile(r"\u2580\u2584\u2580.*?\bversion\s+v?([0-9][\w.+\-]*)")
_BANNER_MODEL = re.compile(r"\u2588\u2584\u2588\u2580.*?\bmodel\s+(\S+)")
_ENGINE = re.compile(r"Initializing an? (?:V[01] )?LLM engine \(v([^)\s]+)\) with config: (.*)")
_LOAD_MODEL = re.compile(r"Starting to load model (\S+?)(?:\.\.\.)?\s*$")


def version(acc: Acc, hit: Hit) -> None:
    m = _VERSION.search(hit.text)
    if m:
        acc.version = m.group(1).rstrip(".,")
        if m.group(2):
            acc.model_sources.setdefault("server", m.group(2).rstrip(","))
        hit.line(acc, "version")


def banner(acc: Acc, hit: Hit) -> None:
    m = _BANNER_VERSION.search(hit.text)
    if m:
        acc.version = m.group(1)
        hit.line(acc, "version")
    m = _BANNER_MODEL.search(hit.text)
    if m:
        acc.model_sources.setdefault("server", m.group(1))
        hit.line(acc, "model")


def apply_args(acc: Acc, args: Mapping[str, Any]) -> None:
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
        acc.put(None, "dtype", norm_dtype(args["dtype"]), weak=True)
    if isinstance(args.get("enforce_eager"), bool):
        acc.put(None, "enforce_eager", args["enforce_eager"], weak=True)
    kvb = args.get("kv_cache_memory_bytes")
    if isinstance(kvb, int) and not isinstance(kvb, bool):
        acc.put(None, "kv_cache_memory_override_bytes", kvb, weak=True)
    for key in ("model", "model_tag"):
        if isinstance(args.get(key), str) and args[key]:
            acc.model_sources.setdefault("args", args[key])
            break


def non_default_args(acc: Acc, hit: Hit) -> None:
    body = hit.text.split("non-default args:", 1)[1]
    d = parse_dict_literal(body)
    if d is not None:
        acc.non_default_args.update(d)
        apply_args(acc, d)
    hit.line(acc, "args")


def namespace(acc: Acc, hit: Hit) -> None:
    body = hit.text.split("args: Namespace(", 1)[1]
    if body.rstrip().endswith(")"):
        body = body.rstrip()[:-1]
    d = parse_config(body)
    acc.namespace_args.update(d)
    apply_args(acc, d)
    hit.line(acc, "args")


_ENGINE_INTS = (("max_seq_len", "max_model_len"), ("tensor_parallel_size", "tensor_parallel_size"),
                ("pipeline_parallel_size", "pipeline_parallel_size"),
                ("data_parallel_size", "data_parallel_size"))


def engine_config(acc: Acc, hit: Hit) -> None:
    m = _ENGINE.search(hit.text)
    if not m:
        return
    acc.version = acc.version or m.group(1)
    cfg = parse_config(m.group(2))
    acc.engine_config.update(cfg)
    if isinstance(cfg.get("model"), str):
        acc.model_sources["engine"] = cfg["model"]
    for src, dst in _ENGINE_INTS:
        v = cfg.get(src)
        if isinstance(v, int) and not isinstance(v, bool):
            acc.put(None, dst, v)
    if "dtype" in cfg:
        acc.put(None, "dtype", norm_dtype(cfg["dtype"]))
    for src in ("kv_cache_dtype", "quantization"):
        if src in cfg and cfg[src] is not None:
            acc.put(None, src, str(cfg[src]))
    if isinstance(cfg.get("enforce_eager"), bool):
        acc.put(None, "enforce_eager", cfg["enforce_eager"])
    acc.hints.add("v1" if "V1 LLM engine" in hit.text else "v0")
    hit.line(acc, "engine_config")


def load_model(acc: Acc, hit: Hit) -> None:
    m = _LOAD_MODEL.search(hit.text)
    if m:
        acc.model_sources.setdefault("load", m.group(1))


_BLOCK_SIZE = re.compile(r"(attention|kv cache) block size to (\d+)")


def block_size(acc: Acc, hit: Hit) -> None:
    m = _BLOCK_SIZE.search(hit.text)
    if m:
        acc.put(None, "block_size", int(m.group(2)))
        if m.group(1) == "attention":
            acc.notes.append("hybrid")
        hit.line(acc, "block_size")


def hybrid(acc: Acc, hit: Hit) -> None:
    t = hit.text
    acc.notes.append("hybrid" if "mamba" in t else "padding_layers" if "padding layers" in t else "hma_disabled")
    hit.line(acc, "hybrid")


def eager(acc: Acc, hit: Hit) -> None:
    acc.put(None, "enforce_eager", True)
