"""Startup-time benchmark: how long vmemplan's commands take to answer, against bare imports.

Not a timed test: run it by hand and read the table (markdown, on stdout)::

    python bench/startup.py                 # vmemplan against the bare-import baselines
    python bench/startup.py --peers         # also peer CLIs, pip-installed into a venv under /tmp
    python bench/startup.py --runs 21

After the command table it prints the in-process targets of issue 10, each measured in a fresh
interpreter (so nothing is warm but the OS cache): the first ``plan()`` after import, a
512-layer config, and 10,000 sweep points of varied ``max_model_len`` (and of varied
utilization), each with its target and whether it is met (after one unmeasured run that fills
the bytecode cache, as installing the wheel does).

Every command runs once to warm the OS cache and the bytecode cache (a private
``PYTHONPYCACHEPREFIX``, so nothing is written into the checkout and ``PYTHONDONTWRITEBYTECODE``
cannot make every run compile from source), then ``--runs`` times; the table shows the median
wall time and its ratio to ``python -c "import typer, rich, pydantic, yaml"`` -- the issue's
budget for ``size ... --format json`` on a bundled model is 1.5x that line.

Peers run offline (``HF_HUB_OFFLINE=1``, and no network is expected); a peer that cannot plan a
local config offline is listed with what it printed, not left out.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "logs" / "047-qwen25-7b-h100-mnbt4096.log"
CONFIG = ROOT / "registry" / "models" / "meta-llama--Llama-3.1-8B.json"
BASELINE = "import typer, rich, pydantic, yaml"
PEERS = ("vramscout", "hf-mem", "modelinfo-cli")


def _env(pycache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VMEMPLAN_DEBUG")}
    env.update(PYTHONPYCACHEPREFIX=pycache, HF_HUB_OFFLINE="1", NO_COLOR="1", PYTHONPATH=str(ROOT))
    return env


def _time(argv: list[str], env: dict[str, str], runs: int, cwd: Path = ROOT) -> tuple[float | None, int, str]:
    """Median seconds over ``runs`` (after one warm-up), the exit code, and the output's tail."""
    warm = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=300)
        samples.append(time.perf_counter() - started)
    tail = (warm.stderr or warm.stdout).strip().splitlines()[-1:] or [""]
    return statistics.median(samples), warm.returncode, tail[0][:100]


def _has_explain_log(env: dict[str, str]) -> bool:
    result = subprocess.run([sys.executable, "-m", "vmemplan", "explain-log", "--help"], env=env, cwd=ROOT,
                            capture_output=True, timeout=120)
    return result.returncode == 0


def _vmemplan_rows(env: dict[str, str], runs: int) -> list[tuple[str, float | None, int, str]]:
    py = sys.executable
    rows = [
        (f'python -c "{BASELINE}"', [py, "-c", BASELINE]),
        ('python -c "import typer, pydantic, yaml"', [py, "-c", "import typer, pydantic, yaml"]),
        ("vmemplan --help", [py, "-m", "vmemplan", "--help"]),
        ("vmemplan --version", [py, "-m", "vmemplan", "--version"]),
        ("vmemplan size meta-llama/Llama-3.1-8B --gpu h100 --format json",
         [py, "-m", "vmemplan", "size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json"]),
        ("vmemplan size meta-llama/Llama-3.1-8B --gpu h100 (table)",
         [py, "-m", "vmemplan", "size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"]),
    ]
    if _has_explain_log(env):
        rows.append((f"vmemplan explain-log tests/fixtures/logs/{LOG.name}",
                     [py, "-m", "vmemplan", "explain-log", str(LOG)]))
    else:
        rows.append(("vmemplan explain-log (command not present)", []))
    out = []
    for label, argv in rows:
        if not argv:
            out.append((label, None, -1, "not run"))
            continue
        median, code, tail = _time(argv, env, runs)
        out.append((label, median, code, tail if code else ""))
    return out


def _peer_rows(env: dict[str, str], runs: int, venv: Path) -> list[tuple[str, float | None, int, str]]:
    """Install the peers into ``venv`` (PyPI), then time ``--help`` and one offline plan each."""
    rows: list[tuple[str, float | None, int, str]] = []
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    peer_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    workdir = Path(tempfile.mkdtemp(prefix="vmemplan-peer-"))
    model_dir = workdir / "Llama-3.1-8B"
    model_dir.mkdir()
    shutil.copy(CONFIG, model_dir / "config.json")
    for peer in PEERS:
        installed = subprocess.run([*pip, peer], capture_output=True, text=True, timeout=600)
        if installed.returncode != 0:
            rows.append((f"{peer} (pip install)", None, installed.returncode,
                         (installed.stderr.strip().splitlines() or ["failed"])[-1][:100]))
            continue
        exe = _peer_executable(venv, peer)
        if exe is None:
            rows.append((f"{peer}", None, -1, "installed, but no console script found"))
            continue
        median, code, tail = _time([str(exe), "--help"], peer_env, runs, cwd=workdir)
        rows.append((f"{exe.name} --help", median, code, tail if code else ""))
        for attempt in _peer_plan_commands(exe, model_dir):
            median, code, tail = _time(attempt, peer_env, runs, cwd=workdir)
            shown = " ".join([exe.name, *attempt[1:]]).replace(str(workdir) + "/", "")
            rows.append((shown, median if code == 0 else None, code, tail if code else ""))
            if code == 0:
                break
    return rows


def _peer_executable(venv: Path, peer: str) -> Path | None:
    candidates = [peer, peer.replace("-", "_"), peer.removesuffix("-cli"), peer.replace("-", "")]
    for name in candidates:
        path = venv / "bin" / name
        if path.exists():
            return path
    return None


def _peer_plan_commands(exe: Path, model_dir: Path) -> list[list[str]]:
    """Guesses at each peer's "plan this local model for one H100" command, tried in order."""
    name = exe.name
    if name.startswith("vramscout"):
        return [[str(exe), str(model_dir / "config.json"), "--vram-gib", "79.2", "--engine", "vllm",
                 "--gpu-memory-utilization", "0.92", "--json"],
                [str(exe), str(model_dir), "--vram-gib", "79.2", "--json"]]
    if name.startswith("hf-mem") or name.startswith("hf_mem"):
        return [[str(exe), "--model-id", str(model_dir)], [str(exe), str(model_dir)]]
    # modelinfo reads checkpoint headers (.safetensors/.gguf/.pt), not a bare config.json
    return [[str(exe), str(model_dir / "config.json"), "--gpu", "H100", "--vllm"],
            [str(exe), str(model_dir), "--gpu", "H100", "--vllm"]]


_TARGETS = r"""
import json, os, sys, tempfile, time
t0 = time.perf_counter()
from vmemplan.api import plan_from_flags
t1 = time.perf_counter()
plan_from_flags(model="meta-llama/Llama-3.1-8B", gpu="h100")
t2 = time.perf_counter()
cfg = json.load(open(os.path.join(sys.argv[1], "registry", "models", "openai--gpt-oss-20b.json")))
cfg["num_hidden_layers"] = 512
if "layer_types" in cfg:
    cfg["layer_types"] = (cfg["layer_types"] * (512 // len(cfg["layer_types"]) + 1))[:512]
d = tempfile.mkdtemp()
json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
t3 = time.perf_counter()
plan_from_flags(model=d, gpu="h200")
t4 = time.perf_counter()
from vmemplan.registry import load_registry
from vmemplan.sources import load_model_source
from vmemplan.sweep import SweepEvaluator
reg = load_registry()
src = load_model_source("meta-llama/Llama-3.1-8B", bundled_dir=reg.models_dir)
ev = SweepEvaluator({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100"}, registry=reg, source=src)
t5 = time.perf_counter()
for i in range(10_000):
    ev.evaluate({"max_model_len": 1024 + i})
t6 = time.perf_counter()
for i in range(10_000):
    ev.evaluate({"gpu_memory_utilization": 0.5 + i / 40_000})
t7 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first_plan": t2 - t1, "layers_512": t4 - t3,
                  "sweep_max_model_len_10k": t6 - t5, "sweep_util_10k": t7 - t6}))
"""

#: issue 10's targets, in seconds
TARGETS = {"first_plan": 0.150, "layers_512": 0.2, "sweep_max_model_len_10k": 3.0, "sweep_util_10k": 3.0}


def _targets(env: dict[str, str]) -> str:
    # once to fill the bytecode cache (as installing the wheel does), then the measured run
    subprocess.run([sys.executable, "-c", _TARGETS, str(ROOT)], env=env, cwd=ROOT, capture_output=True, timeout=900)
    result = subprocess.run([sys.executable, "-c", _TARGETS, str(ROOT)], env=env, cwd=ROOT, capture_output=True,
                            text=True, timeout=900)
    if result.returncode != 0:
        return "in-process targets: failed\n" + result.stderr[-2000:]
    import json

    got = json.loads(result.stdout.strip().splitlines()[-1])
    lines = ["| in-process measure | seconds | target | met |", "|---|---:|---:|---|"]
    labels = {"import": "import vmemplan.api", "first_plan": "first plan() after import",
              "layers_512": "plan of a 512-layer gpt-oss config", "sweep_max_model_len_10k":
              "10,000 sweep points of varied max_model_len", "sweep_util_10k": "10,000 sweep points of varied util"}
    for key, label in labels.items():
        target = TARGETS.get(key)
        met = "—" if target is None else ("yes" if got[key] <= target else "no")
        lines.append(f"| {label} | {got[key]:.3f} | {'—' if target is None else f'{target:g}'} | {met} |")
    return "\n".join(lines)


def _table(rows: list[tuple[str, float | None, int, str]], baseline: float) -> str:
    lines = ["| command | median (ms) | × `import typer, rich, pydantic, yaml` | exit | note |",
             "|---|---:|---:|---:|---|"]
    for label, median, code, note in rows:
        ms = "—" if median is None else f"{median * 1000:.0f}"
        ratio = "—" if median is None else f"{median / baseline:.2f}"
        lines.append(f"| `{label}` | {ms} | {ratio} | {code} | {note.replace('|', '/')} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--peers", action="store_true", help="also install and time peer CLIs")
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "vmemplan-peers-venv")
    args = parser.parse_args()
    pycache = tempfile.mkdtemp(prefix="vmemplan-pyc-")
    env = _env(pycache)
    rows = _vmemplan_rows(env, args.runs)
    baseline = rows[0][1] or 1.0
    if args.peers:
        rows += _peer_rows(env, args.runs, args.venv)
    print(f"python {sys.version.split()[0]} on {os.uname().machine}, {os.cpu_count()} CPUs, "
          f"median of {args.runs} runs after one warm-up\n")
    print(_table(rows, baseline))
    json_row = next((r for r in rows if r[0].endswith("--format json")), None)
    if json_row and json_row[1]:
        ratio = json_row[1] / baseline
        verdict = "within" if ratio <= 1.5 else "over"
        print(f"\n`size … --format json`: {ratio:.2f}× the bare-import line ({verdict} the 1.5× budget)")
    print()
    print(_targets(env))


if __name__ == "__main__":
    main()
