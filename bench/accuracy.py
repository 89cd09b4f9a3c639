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
EXTENDED = ROOT / "tests" / "fixtures" / "corpus_cases_extended.yaml"
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
    budget_gib: float = 0.0

    @property
    def weights_err(self) -> float:
        if self.logged_weights_gib is None:
            return 0.0
        return (self.predicted_weights_gib - self.logged_weights_gib) / self.logged_weights_gib

    @property
    def kv_err(self) -> float:
        return (self.predicted_kv_gib - self.logged_kv_gib) / abs(self.logged_kv_gib)

    @property
    def ok(self) -> bool:
        return abs(self.weights_err) <= WEIGHTS_TOL and abs(self.kv_err) <= KV_TOL


def load_cases(path: Path = CASES) -> list[dict]:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def resolve_case(case: dict):
    """The resolved request of a corpus case: the log's model, GPU, flags and release."""
    from vmemplan.registry import load_registry
    from vmemplan.resolve import PlanInputs, resolve
    from vmemplan.sources import ModelSource, load_model_source

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
    return resolve(inputs, registry=reg, source=source)


def plan_case(case: dict):
    from vmemplan.planner import plan_memory

    return plan_memory(resolve_case(case))


def run(path: Path = CASES) -> list[Row]:
    rows = []
    for case in load_cases(path):
        p = plan_case(case)
        rows.append(Row(case["log"], case["logged"].get("weights_gib"), p.per_rank.weights_bytes / GIB,
                        case["logged"]["available_kv_gib"], p.per_rank.available_kv_cache_bytes / GIB,
                        case.get("known_miss"), p.per_rank.requested_memory_bytes / GIB))
    return rows


def table(rows: list[Row], title: str) -> None:
    print(title)
    print(f"{'log':<45} {'weights GiB log/pred':>22} {'err%':>7} {'avail KV GiB log/pred':>24} {'err%':>7} "
          f"{'of budget':>9}  ok")
    for r in rows:
        logged_w = f"{r.logged_weights_gib:>10.4f}" if r.logged_weights_gib is not None else f"{'-':>10}"
        print(f"{r.log:<45} {logged_w}/{r.predicted_weights_gib:<10.4f} {r.weights_err*100:>+7.2f} "
              f"{r.logged_kv_gib:>11.2f}/{r.predicted_kv_gib:<11.2f} {r.kv_err*100:>+7.2f} "
              f"{(r.predicted_kv_gib - r.logged_kv_gib) / r.budget_gib * 100:>+8.2f}%  {'yes' if r.ok else 'NO'}"
              + (f"  ({r.known_miss})" if r.known_miss and not r.ok else ""))
    good = sum(r.ok for r in rows)
    print(f"summary: {good}/{len(rows)} logs with weights within {WEIGHTS_TOL:.1%} and available KV within {KV_TOL:.0%}")


def main() -> int:
    table(run(CASES), "Dense models, known GPU (issue bar: 9 in 10)")
    print()
    table(run(EXTENDED), "MoE, quantized, windowed and multimodal models, known GPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
