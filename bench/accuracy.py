"""Accuracy table: vmemplan's a-priori prediction against real vLLM startup logs.

For every case in tests/fixtures/corpus_cases.yaml (dense models with a known GPU), plan the
deployment from the log's model, GPU, flags and vLLM release alone, then compare the
weights and the available KV cache with what the log printed.

    python bench/accuracy.py            # the table and a summary line
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CASES = ROOT / "tests" / "fixtures" / "corpus_cases.yaml"
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
GIB = 1 << 30
WEIGHTS_TOL = 0.005
KV_TOL = 0.02


@dataclass
class Row:
    log: str
    logged_weights_gib: float
    predicted_weights_gib: float
    logged_kv_gib: float
    predicted_kv_gib: float
    known_miss: str | None

    @property
    def weights_err(self) -> float:
        return (self.predicted_weights_gib - self.logged_weights_gib) / self.logged_weights_gib

    @property
    def kv_err(self) -> float:
        return (self.predicted_kv_gib - self.logged_kv_gib) / abs(self.logged_kv_gib)

    @property
    def ok(self) -> bool:
        return abs(self.weights_err) <= WEIGHTS_TOL and abs(self.kv_err) <= KV_TOL


def load_cases() -> list[dict]:
    import yaml

    return yaml.safe_load(CASES.read_text(encoding="utf-8"))


def plan_case(case: dict):
    from vmemplan.api import plan_from_flags
    from vmemplan.registry import load_registry
    from vmemplan.resolve import PlanInputs, resolve
    from vmemplan.sources import ModelSource, load_model_source
    from vmemplan.planner import plan_memory

    reg = load_registry()
    ref = case["config"]
    if ref.endswith(".json"):
        path = CONFIGS / ref
        source = ModelSource(model_id=path.stem.replace("--", "/"), source="local",
                             config=json.loads(path.read_text()), extra={}, revision=None, path=str(path),
                             safetensors_params=None, notes=())
    else:
        source = load_model_source(ref, bundled_dir=reg.models_dir)
    inputs = PlanInputs(model=source.model_id, gpu=case["gpu"], vllm_version=str(case["vllm_version"]),
                        **case.get("flags", {}))
    _ = plan_from_flags
    return plan_memory(resolve(inputs, registry=reg, source=source))


def run() -> list[Row]:
    rows = []
    for case in load_cases():
        p = plan_case(case)
        rows.append(Row(case["log"], case["logged"]["weights_gib"], p.per_rank.weights_bytes / GIB,
                        case["logged"]["available_kv_gib"], p.per_rank.available_kv_cache_bytes / GIB,
                        case.get("known_miss")))
    return rows


def main() -> int:
    rows = run()
    print(f"{'log':<45} {'weights GiB log/pred':>22} {'err%':>7} {'avail KV GiB log/pred':>24} {'err%':>7}  ok")
    for r in rows:
        print(f"{r.log:<45} {r.logged_weights_gib:>10.4f}/{r.predicted_weights_gib:<10.4f} {r.weights_err*100:>+7.2f} "
              f"{r.logged_kv_gib:>11.2f}/{r.predicted_kv_gib:<11.2f} {r.kv_err*100:>+7.2f}  {'yes' if r.ok else 'NO'}"
              + (f"  ({r.known_miss})" if r.known_miss and not r.ok else ""))
    good = sum(r.ok for r in rows)
    print(f"summary: {good}/{len(rows)} logs with weights within {WEIGHTS_TOL:.1%} and available KV within {KV_TOL:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
