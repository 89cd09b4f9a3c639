"""Time `vmemplan sweep` grids of about 10,000 points (a script, not a test).

    python bench/bench_sweep.py

Each case reads the registry and the model source once (as the CLI does), evaluates every
point, and prints points, full plans (shapes) and seconds.  The budget-only dimension
(gpu_memory_utilization) costs a few microseconds a point; every other flag value needs one
full plan (about a millisecond).
"""

from __future__ import annotations

import time

from vmemplan.registry import load_registry
from vmemplan.sources import load_model_source
from vmemplan.sweep import SweepEvaluator, parse_vary, run_sweep

CASES = [
    ("Llama-3.1-8B h100: util 0.5:0.9999:0.00005", "meta-llama/Llama-3.1-8B", {"gpu": "h100"},
     ["util=0.5:0.9999:0.00005"]),
    ("Llama-3.1-8B h100: 100 max-model-len x 100 util", "meta-llama/Llama-3.1-8B", {"gpu": "h100"},
     ["max-model-len=1280:128000:1280", "util=0.5:0.995:0.005"]),
    ("Llama-3.1-70B: 4 gpus x 4 tp x 625 util", "meta-llama/Llama-3.1-70B", {"max_model_len": 32768},
     ["gpu=l40s,a100,h100,h200", "tp=1,2,4,8", "util=0.5:0.998:0.0008"]),
    ("gemma-3-27b-it (hybrid) h100: 10 max-model-len x 1000 util", "google/gemma-3-27b-it", {"gpu": "h100"},
     ["max-model-len=4096:40960:4096", "util=0.5:0.999:0.0005"]),
    ("Llama-3.1-8B h100: 1000 max-model-len values (full plans)", "meta-llama/Llama-3.1-8B", {"gpu": "h100"},
     ["max-model-len=128:128000:128"]),
]


def main() -> None:
    t0 = time.perf_counter()
    reg = load_registry()
    print(f"registry loaded in {time.perf_counter() - t0:.3f} s")
    t0 = time.perf_counter()
    warm = SweepEvaluator({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100"}, registry=reg,
                          source=load_model_source("meta-llama/Llama-3.1-8B", bundled_dir=reg.models_dir))
    run_sweep(warm, [parse_vary("util=0.9")])  # first imports of the planner and laws
    print(f"first plan (imports) in {time.perf_counter() - t0:.3f} s")
    for title, model, base, vary in CASES:
        t = time.perf_counter()
        source = load_model_source(model, bundled_dir=reg.models_dir)
        ev = SweepEvaluator({"model": model, **base}, registry=reg, source=source, request_tokens=2000)
        points = run_sweep(ev, [parse_vary(v) for v in vary])
        dt = time.perf_counter() - t
        print(f"{title}: {len(points):,} points, {ev.full_plans:,} full plans, {dt:.3f} s "
              f"({dt / len(points) * 1e6:.0f} µs a point)")


if __name__ == "__main__":
    main()
