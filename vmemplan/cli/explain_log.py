"""`vmemplan explain-log`: explain a real vLLM startup log line by line, cross-check its figures,
and re-plan it with changed flags (calibrated what-ifs)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from vmemplan.cli._common import emit, reports_errors
from vmemplan.cli._options import NoColorOpt, OnlineOpt, VersionOpt, WhatIfOpt
from vmemplan.core.errors import BadInput, BadLog

__all__ = ["explain_log", "read_log_input", "ExplainFormat"]

#: Reading stops here (at the last whole line below it), so that even a huge `docker logs` dump is
#: answered in a second or two: a startup sits at the top of its log, and what follows it is serving
#: traffic.  The output then says that only the head was read.
MAX_LOG_BYTES = 32 * 1024 * 1024
_HINT = "pipe `docker logs CONTAINER 2>&1` into `vmemplan explain-log`, or pass the log file's path"


class ExplainFormat(str, Enum):
    table = "table"
    json = "json"


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _read_stdin() -> bytes:
    """At most MAX_LOG_BYTES + 1 bytes of standard input (the same cap as a file)."""
    from vmemplan.sources._io import read_stream

    if sys.stdin is None:
        raise BadInput("standard input is closed", hint=_HINT)
    buf = getattr(sys.stdin, "buffer", None)
    try:
        return read_stream(buf if buf is not None else sys.stdin, MAX_LOG_BYTES)
    except (OSError, ValueError) as error:
        raise BadInput(f"cannot read standard input: {getattr(error, 'strerror', None) or error}", hint=_HINT) from None


def read_log_input(path: str | None) -> tuple[bytes, str]:
    """The log's bytes and a label for messages: a file, ``-`` for stdin, or (no path) stdin, with a
    one-line prompt on stderr when stdin is a terminal (paste, then Ctrl-D)."""
    if path is None or path == "-":
        if path is None and _stdin_is_tty():
            sys.stderr.write("Paste a vLLM startup log, then press Ctrl-D on an empty line"
                             " (Ctrl-Z Enter on Windows):\n")
            sys.stderr.flush()
        return _read_stdin(), "standard input"
    from vmemplan.sources._io import NotRegularFile, printable, read_regular

    p = Path(path).expanduser()
    shown = printable(path)
    try:
        data = read_regular(p, MAX_LOG_BYTES)  # a FIFO or a device is refused, never opened blocking
    except FileNotFoundError:
        raise BadInput(f"no such file: {shown}", hint=_HINT) from None
    except NotRegularFile as error:
        raise BadInput(f"{shown} {error.strerror}", hint=_HINT + " (to read a pipe, use `... | vmemplan explain-log -`)") from None
    except OSError as error:
        raise BadInput(f"cannot read {shown}: {error.strerror or error}",
                       hint="check that the file exists and that you may read it; " + _HINT) from None
    return data, shown


def _looks_binary(data: bytes) -> bool:
    head = data[:65536]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 with a BOM
    if head.count(b"\x00") > len(head) // 100:
        return True
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > max(16, len(text) // 20)


@reports_errors
def explain_log(
    log: Annotated[str | None, typer.Argument(
        help="The log file; '-' or nothing reads standard input (paste, then Ctrl-D).", show_default=False)] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model id or config path to cross-check with [default: the model the log names].",
        show_default=False)] = None,
    what_if: WhatIfOpt = None,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="GPU id, for what-ifs on logs that do not print the total memory (see `vmemplan gpus`).",
        show_default=False)] = None,
    vllm_version: VersionOpt = None,
    online: OnlineOpt = False,
    output_format: ExplainFormat = typer.Option(ExplainFormat.table, "--format", "-f", help="table or json."),
    check: bool = typer.Option(False, "--check", help="For CI: exit 3 when the log shows a failed startup or a "
                                                      "cross-check of its figures fails."),
    no_color: NoColorOpt = False,
) -> None:
    """Explain a vLLM startup log: every memory line in plain words, arithmetic cross-checks, advice,
    and calibrated what-ifs.

    Examples:

        docker logs vllm 2>&1 | vmemplan explain-log

        vmemplan explain-log server.log --what-if gpu-memory-utilization=0.95 --what-if kv-cache-dtype=fp8

        vmemplan explain-log server.log --format json
    """
    from vmemplan.explain import parse_log, read_log_bytes, report_to_json, split_corpus_header
    from vmemplan.explain.runner import explain_startups
    from vmemplan.explain.whatif import parse_what_if

    changes = parse_what_if(what_if or [])
    data, label = read_log_input(log)
    truncated = len(data) > MAX_LOG_BYTES
    if truncated:
        cut = data.rfind(b"\n", 0, MAX_LOG_BYTES)
        data = data[: cut + 1 if cut > 0 else MAX_LOG_BYTES]
        sys.stderr.write(f"note: {label} is larger than {MAX_LOG_BYTES >> 20} MiB; only its first"
                         f" {MAX_LOG_BYTES >> 20} MiB were read (a startup is at the top of its log; pass an"
                         " excerpt to explain a later restart)\n")
    if not data.strip():
        raise BadLog(f"{label} is empty", hint=_HINT)
    if _looks_binary(data):
        raise BadLog(f"{label} is a binary file, not a vLLM log", hint=_HINT)
    text = read_log_bytes(data)
    header, _ = split_corpus_header(text)
    startups = parse_log(text)
    if not startups:
        raise BadLog(f"no vLLM startup found in {label}",
                     hint="the log needs vLLM's startup lines (model loading, KV cache, memory profiling); " + _HINT)
    from vmemplan.registry import load_registry

    registry = load_registry()
    gpu_obj = registry.gpu(gpu) if gpu else None
    if vllm_version:
        from vmemplan.core.version import parse_version

        parse_version(vllm_version)
    reports = explain_startups(startups, registry=registry, changes=changes, model=model, allow_hub=online,
                               gpu=gpu_obj, vllm_version=vllm_version, header=header)
    if output_format is ExplainFormat.json:
        from vmemplan.render.json_out import dumps

        doc = report_to_json(reports)
        if truncated:
            doc["notes"] = [f"only the first {MAX_LOG_BYTES >> 20} MiB of {label} were read"]
        emit(dumps(doc))
        _check(reports, check)
        return
    from vmemplan.cli._common import output_width
    from vmemplan.render.explain import render_text

    out = render_text(reports, width=output_width())
    if truncated:
        out += f"(only the first {MAX_LOG_BYTES >> 20} MiB of {label} were read)\n"
    _ = no_color  # plain text: nothing to colour
    emit(out)
    _check(reports, check)


def _check(reports: object, check: bool) -> None:
    """--check: exit 3 (one error line, one hint) when the log fails a check."""
    if not check:
        return
    from vmemplan.core.errors import TargetNotMet
    from vmemplan.gates import log_check_failures

    failures = log_check_failures(reports)
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise TargetNotMet(f"check failed: {failures[0]}{more}",
                           hint="the output above explains each line and check; --format json lists them all")
