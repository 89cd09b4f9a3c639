"""Refresh the generated sections of README.md with real output.

    python bench/update_readme.py            # example, accuracy table, startup table

Each section sits between `<!-- BEGIN name -->` and `<!-- END name -->` markers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def run(cmd: list[str]) -> str:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "TERMINAL_WIDTH": "100"}
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return out.stdout.rstrip() + ("\n" + out.stderr.rstrip() if out.stderr.strip() else "")


def fence(cmd: str, output: str) -> str:
    return f"```console\n$ {cmd}\n{output}\n```"


def sections() -> dict[str, str]:
    vm = [sys.executable, "-m", "vmemplan"]
    out: dict[str, str] = {}
    examples = [
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92"],
        ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92", "--max-model-len", "32768",
         "--format", "log"],
        ["size", "meta-llama/Llama-3.1-70B", "--gpu", "l40s", "--max-model-len", "8192"],
    ]
    out["example-size"] = "\n\n".join(fence("vmemplan " + " ".join(a), run(vm + a)) for a in examples)
    out["accuracy"] = "```text\n" + run([sys.executable, "bench/accuracy.py"]) + "\n```"
    startup = ROOT / "bench" / "startup.py"
    if startup.exists() and "--skip-startup" not in sys.argv:
        out["startup"] = run([sys.executable, str(startup), "--peers"])
    return out


def main() -> int:
    text = README.read_text(encoding="utf-8")
    for name, body in sections().items():
        pattern = re.compile(rf"(<!-- BEGIN {re.escape(name)} -->\n).*?(<!-- END {re.escape(name)} -->)", re.S)
        text = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    README.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
