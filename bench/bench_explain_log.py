"""Time `vmemplan explain-log` end to end on a generated 100k-line vLLM log.

The log is one real startup (corpus 001's lines, a vLLM 0.10.1.1 V1 startup) followed by ~100k
lines of serving traffic (request logs, throughput stats, the odd preemption warning), which is
what `docker logs vllm 2>&1` gives after a day of serving.  Run:

    python bench/bench_explain_log.py [--lines 100000] [--repeat 3] [--what-if gpu-memory-utilization=0.5]

It prints the file size, the wall time of each run of the installed entry point (a fresh
process, as a user would run it), and the best time.  Exit status 1 when the best run is
slower than --budget seconds (default 2.0).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "tests" / "fixtures" / "logs" / "001-qwen2-7b-a100-80gb-gmu025.log"


def make_log(path: Path, lines: int) -> int:
    """Write the startup plus ``lines`` lines of traffic; returns the byte size."""
    from vmemplan.explain.parse import split_corpus_header

    _, body = split_corpus_header(STARTUP.read_text(encoding="utf-8"))
    traffic = (
        "(APIServer pid=1671) INFO 09-04 01:{m:02d}:{s:02d} [logger.py:41] Received request chatcmpl-{i:08x}:"
        " prompt: '<|im_start|>user\\nSummarise the report number {i} in three sentences.<|im_end|>',"
        " params: SamplingParams(n=1, temperature=0.7, top_p=0.8, max_tokens=512), prompt_token_ids: None\n",
        "(APIServer pid=1671) INFO:     10.0.0.{o}:5{s:04d} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
        "(APIServer pid=1671) INFO 09-04 01:{m:02d}:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput:"
        " {i_mod}.3 tokens/s, Avg generation throughput: 812.4 tokens/s, Running: {r} reqs, Waiting: 0 reqs,"
        " GPU KV cache usage: {u}.4%, Prefix cache hit rate: 41.2%\n",
    )
    with path.open("w", encoding="utf-8") as fh:
        fh.write(body if body.endswith("\n") else body + "\n")
        for i in range(lines):
            m, s = divmod(i // 10 % 3600, 60)
            fh.write(traffic[i % 3].format(i=i, m=m, s=s, o=i % 250, i_mod=i % 900, r=i % 40, u=i % 90))
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=2.0, help="seconds the best run may take")
    ap.add_argument("--what-if", action="append", default=["gpu-memory-utilization=0.5"])
    ap.add_argument("--format", default="json", choices=("json", "table"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "vllm-serving.log"
        size = make_log(log, args.lines)
        print(f"log: {args.lines + 25:,} lines, {size / 1e6:.1f} MB")
        cmd = [sys.executable, "-m", "vmemplan", "explain-log", str(log), "--format", args.format, "--gpu", "a100-80g"]
        for w in args.what_if:
            cmd += ["--what-if", w]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        times = []
        for n in range(args.repeat):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
            dt = time.perf_counter() - t0
            times.append(dt)
            print(f"run {n + 1}: {dt:.2f} s (exit {proc.returncode}, {len(proc.stdout):,} bytes of output)")
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
        best = min(times)
        print(f"best: {best:.2f} s for {args.lines:,} lines ({size / 1e6 / best:.0f} MB/s); budget {args.budget:.1f} s")
        return 0 if best <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
