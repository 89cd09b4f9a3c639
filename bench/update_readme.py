"""Refresh the generated sections of README.md with real output.

    python bench/update_readme.py                  # examples, accuracy table, startup table
    python bench/update_readme.py --skip-startup   # leave the timing table as it is

Each section sits between `<!-- BEGIN name -->` and `<!-- END name -->` markers.  Examples are
rendered at README_COLUMNS (80) columns, as an 80-column terminal shows them; the README says
so.  A command's stderr follows its stdout, as a terminal would show both.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The width the README's examples are rendered at (the README states it).
README_COLUMNS = 80
EXAMPLE_LOG = "bench/examples/vllm-0.11.0-llama31-8b-a100-40gb.log"


def run(cmd: list[str], *, columns: int = README_COLUMNS) -> str:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns), "HF_HUB_OFFLINE": "1"}
    env.pop("TERMINAL_WIDTH", None)
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    text = "\n".join(line.rstrip() for line in out.stdout.rstrip().splitlines())
    if out.stderr.strip():
        text += "\n" + out.stderr.rstrip()
    return text


def fence(cmd: str, output: str) -> str:
    return f"```console\n$ {cmd}\n{output}\n```"


def examples(name: str, commands: list[list[str]]) -> str:
    vm = [sys.executable, "-m", "vmemplan"]
    return "\n\n".join(fence("vmemplan " + " ".join(_quote(a) for a in args), run(vm + args)) for args in commands)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def sections(include_slow: bool = True) -> dict[str, str]:
    """Every generated section; ``include_slow=False`` leaves out the accuracy and startup tables
    (tests/screen/test_readme_examples.py checks the examples are current)."""
    out: dict[str, str] = {}
    out["example-paste"] = examples("paste", [
        ["size", "--gpu", "NVIDIA H100 80GB HBM3", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B",
         "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "32k", "--enable-lora", "--max-loras", "4",
         "--max-lora-rank", "64", "--disable-custom-all-reduce"],
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--swap-space", "4"],
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-num-batched-tokens", "100",
         "--max-num-seqs", "256"],
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--gpu-memory-in-use", "10G", "--quiet"],
    ])
    out["example-size"] = examples("size", [
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92"],
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--max-model-len", "32768",
         "--quiet"],
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--max-model-len", "32768",
         "--format", "log"],
        ["size", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "8192", "--format", "log"],
        ["size", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "-tp", "2", "--quiet"],
    ])
    out["example-concurrency"] = examples("concurrency", [
        ["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--max-model-len", "32768",
         "--max-num-seqs", "256", "--lengths", "1000,1792,1808,4000,32768"],
    ])
    out["example-simulate"] = examples("simulate", [
        ["concurrency", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--max-model-len", "32768",
         "--max-num-seqs", "256", "--simulate", "--requests", "60", "--prompt-tokens", "500:3000",
         "--output-tokens", "150:400", "--arrival-rate", "4"],
    ])
    out["example-sweep"] = examples("sweep", [
        ["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--max-model-len", "32768", "--max-num-seqs", "256",
         "--vary", "util=0.8:0.95:0.05", "--vary", "kv-cache-dtype=auto,fp8", "-f", "csv"],
        ["sweep", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--max-model-len", "32768", "--vary", "tp=1,2,4,8",
         "--solve", "--min-concurrency", "64", "--request-tokens", "4000"],
    ])
    out["example-explain"] = examples("explain", [
        ["explain-log", EXAMPLE_LOG, "--what-if", "max-model-len=8192"],
    ])
    gpus = run([sys.executable, "-m", "vmemplan", "gpus"]).splitlines()[:12]
    out["example-registry"] = fence("vmemplan gpus | head -12", "\n".join(gpus))
    if not include_slow:
        return out
    out["accuracy"] = "```text\n" + run([sys.executable, "bench/accuracy.py"]) + "\n```"
    startup = ROOT / "bench" / "startup.py"
    if startup.exists() and "--skip-startup" not in sys.argv:
        out["startup"] = run([sys.executable, str(startup), "--peers"])
    return out


def main() -> int:
    text = README.read_text(encoding="utf-8")
    for name, body in sections().items():
        pattern = re.compile(rf"(<!-- BEGIN {re.escape(name)} -->\n).*?(<!-- END {re.escape(name)} -->)", re.S)
        if not pattern.search(text):
            print(f"README.md has no section {name}", file=sys.stderr)
        text = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    README.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
