"""Fuzz explain-log's parser: 10,000+ logs through parse, explain and both renderings.

Inputs: random bytes; real logs from tests/fixtures/logs truncated at a random byte, spliced
with each other, with lines repeated, shuffled, dropped or corrupted, re-encoded (UTF-16, CRLF,
NULs, ANSI colour); and one big file: 10 MB in the suite, ``VMEMPLAN_FUZZ_LOG_MB=50`` in the long
campaign (the work is bounded by the size, not by a clock).  The rule (see ``_harness``): a report, or a
VmemplanError -- never a traceback.
"""

from __future__ import annotations

import codecs
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _harness import explain_log_bytes, must_be_vmemplan_error, real_logs, time_limit

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("VMEMPLAN_FUZZ_EXAMPLES", "1500"))
#: the big log's size: the same lines at any size, so the suite keeps 10 MB of it
LOG_BYTES = int(float(os.environ.get("VMEMPLAN_FUZZ_LOG_MB", "10")) * 1_000_000)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))

NOISE_LINES = (
    b"INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: -3.00 GiB",
    b"INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: 99999999999999999999999 tokens",
    b"INFO 01-01 00:00:00 [kv_cache_utils.py:1] Maximum concurrency for 0 tokens per request: nanx",
    b"INFO 01-01 00:00:00 [gpu_model_runner.py:1] Model loading took inf GiB memory and 1e400 seconds",
    b"INFO 01-01 00:00:00 [core.py:1] init engine (profile, create kv cache, warmup model) took -1 seconds",
    b"INFO 01-01 00:00:00 [api_server.py:1] non-default args: {'model': 'x', 'max_model_len': 'abc', ",
    b"INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.0.0.dev0+garbage",
    b"# GPU blocks: 0, # CPU blocks: -1",
    b"ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
    b"cache is needed, which is larger than the available KV cache memory (-0.00 GiB).",
    b"\x1b[1;36m(EngineCore_DP0 pid=1)\x1b[0;0m INFO \x1b[0m",
    b"---", b"", b"\x00\x00\x00", "日本語のログ行 ✓".encode(),
)


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    corpus = real_logs()
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=4096))
    base = draw(st.sampled_from(corpus))
    if kind == 1:  # truncated at a random byte (mid-line, mid-UTF-8 sequence)
        return base[: draw(st.integers(0, len(base)))]
    if kind == 2:  # two logs spliced at random points
        other = draw(st.sampled_from(corpus))
        return base[: draw(st.integers(0, len(base)))] + other[draw(st.integers(0, len(other))):]
    lines = base.split(b"\n")
    if kind == 3:  # lines repeated
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        lines[i:i + 1] = [lines[i]] * draw(st.integers(2, 200))
    elif kind == 4:  # shuffled / dropped lines
        lines = draw(st.permutations(lines)) if draw(st.booleans()) else [
            ln for ln in lines if draw(st.booleans())]
    elif kind == 5:  # corrupted numbers and noise lines inserted
        for _ in range(draw(st.integers(1, 8))):
            pos = draw(st.integers(0, len(lines)))
            lines.insert(pos, draw(st.sampled_from(NOISE_LINES) | st.binary(max_size=120)))
    elif kind == 6:  # bytes flipped inside lines
        data = bytearray(base)
        for _ in range(draw(st.integers(1, 50))):
            if data:
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    elif kind == 7:  # re-encoded
        text = base.decode("utf-8", errors="replace")
        enc = draw(st.sampled_from(["utf-16", "crlf", "cr", "nul", "ansi", "latin1"]))
        if enc == "utf-16":
            return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
        if enc == "crlf":
            return text.replace("\n", "\r\n").encode()
        if enc == "cr":
            return text.replace("\n", "\r").encode()
        if enc == "nul":
            return text.replace(" ", "\x00", draw(st.integers(1, 50))).encode()
        if enc == "ansi":
            return text.replace("INFO", "\x1b[32mINFO\x1b[0m").encode()
        return text.encode("latin-1", errors="replace")
    elif kind == 8:  # a line cut in the middle and glued to another
        if len(lines) > 2:
            i = draw(st.integers(0, len(lines) - 2))
            cut = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:cut] + lines[i + 1]
            del lines[i + 1]
    else:  # several whole logs in one file
        lines = b"\n".join(draw(st.lists(st.sampled_from(corpus), min_size=2, max_size=5))).split(b"\n")
    return b"\n".join(lines)


def _check(data: bytes, seconds: float = 10) -> None:
    try:
        with time_limit(seconds):
            explain_log_bytes(data)
    except Exception as error:  # noqa: BLE001 - the property under test
        must_be_vmemplan_error(error, data[:3000])


@FUZZ
@given(data=logs())
def test_generated_logs_explain_or_raise_vmemplan_error(data: bytes) -> None:
    _check(data)


def test_a_big_log() -> None:
    corpus = real_logs()
    chunk = b"\n".join(corpus) + b"\n" + b"\n".join(NOISE_LINES) + b"\n"
    data = (chunk * (LOG_BYTES // len(chunk) + 1))[:LOG_BYTES]
    assert len(data) == LOG_BYTES and len(data) > 4 * len(chunk)  # every real log several times over
    _check(data, seconds=300)


def test_one_huge_line() -> None:
    _check(b"INFO 01-01 00:00:00 [api_server.py:1] non-default args: {" + b"'a': [" * 50_000 + b"\n")
    _check(b"x" * 5_000_000)
