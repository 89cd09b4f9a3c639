"""Accuracy table: vmemplan's a-priori prediction against real vLLM startup logs.

For every case in tests/fixtures/corpus_cases.yaml (dense models with a known GPU), plan the
deployment from the log's model, GPU, flags and vLLM release alone, then compare the
weights and the available KV cache with what the log printed.

    python bench/accuracy.py            # the table and a summary line
    python bench/accuracy.py --bands    # only the error-band coverage table

Error bands: for every log, the band is drawn from the *other* logs' residuals in
registry/bands.yaml (leave-one-log-out, vmemplan/laws/bands.py::band_width with exclude_log), and
the log is covered when its logged available KV lies inside ``predicted ± half-width``.
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


COVERAGE_TARGET = 0.90
HALF_WIDTH_TARGET = 0.02  # of the budget


@dataclass
class BandRow:
    log: str
    group: str
    level: str
    half_width_fraction: float
    half_width_gib: float
    covered: bool
    excluded: str | None


def band_rows() -> list[BandRow]:
    """Leave-one-log-out bands for every corpus case."""
    from vmemplan.laws.bands import band_width
    from vmemplan.pipeline import plan_memory

    rows = []
    for path in (CASES, EXTENDED):
        for case in load_cases(path):
            req = resolve_case(case)
            data = req.registry.bands
            plan = plan_memory(req)
            era = req.registry.cost_model.era_for(req.vllm_version, engine=req.rules.engine).id
            width = band_width(data, era=era, family=req.adapter.family, exclude_log=case["log"])
            requested = plan.per_rank.requested_memory_bytes
            half = width.half_width_fraction * requested
            logged = case["logged"]["available_kv_gib"] * GIB
            central = plan.per_rank.available_kv_cache_bytes
            excluded = dict(data.excluded).get(case["log"])
            rows.append(BandRow(case["log"], f"{era}/{req.adapter.family}", width.level, width.half_width_fraction,
                                half / GIB, central - half <= logged <= central + half, excluded))
    return rows


def band_table(rows: list[BandRow]) -> tuple[float, float]:
    """Print coverage and median half-width per group; return the overall pair."""
    from statistics import median

    inside = [r for r in rows if r.excluded is None]
    print("Error bands, leave-one-log-out (a log never calibrates its own band)")
    print(f"{'group (era/family)':<24} {'logs':>4} {'covered':>7} {'coverage':>8} {'median half-width':>18} "
          f"{'(GiB)':>7}  band level")
    groups: dict[str, list[BandRow]] = {}
    for r in inside:
        groups.setdefault(r.group, []).append(r)
    for g, rs in sorted(groups.items()):
        cov = sum(r.covered for r in rs) / len(rs)
        print(f"{g:<24} {len(rs):>4} {sum(r.covered for r in rs):>7} {cov:>8.0%} "
              f"{median(r.half_width_fraction for r in rs):>17.2%} {median(r.half_width_gib for r in rs):>7.2f}  "
              + ", ".join(sorted({r.level for r in rs})))
    coverage = sum(r.covered for r in inside) / len(inside)
    med = median(r.half_width_fraction for r in inside)
    print(f"{'all':<24} {len(inside):>4} {sum(r.covered for r in inside):>7} {coverage:>8.0%} {med:>17.2%} "
          f"{median(r.half_width_gib for r in inside):>7.2f}")
    for r in rows:
        if not r.covered and r.excluded is None:
            print(f"  outside its band: {r.log} ({r.group}, half-width {r.half_width_fraction:.2%})")
    for r in rows:
        if r.excluded is not None:
            print(f"  not counted (outside the cost model's scope): {r.log}: {r.excluded}; "
                  f"{'inside' if r.covered else 'outside'} its band")
    ok = coverage >= COVERAGE_TARGET and med <= HALF_WIDTH_TARGET
    print(f"band summary: coverage {coverage:.0%} (target >= {COVERAGE_TARGET:.0%}), median half-width "
          f"{med:.2%} of the budget (target <= {HALF_WIDTH_TARGET:.0%}): {'met' if ok else 'NOT met'}")
    return coverage, med


def term_band_table() -> None:
    """Leave-one-log-out coverage of each estimated term's own band, on the logs that print it."""
    from statistics import median

    import calibrate_bands
    from vmemplan.laws.bands import TERMS, term_band_width
    from vmemplan.pipeline import plan_memory

    seen: dict[str, list[tuple[str, bool, float]]] = {t: [] for t in TERMS}
    for path in (CASES, EXTENDED):
        for case in load_cases(path):
            logged = calibrate_bands.logged_terms(case["log"])
            if not logged:
                continue
            req = resolve_case(case)
            data = req.registry.bands
            if dict(data.excluded).get(case["log"]) is not None:
                continue
            plan = plan_memory(req)
            era = req.registry.cost_model.era_for(req.vllm_version, engine=req.rules.engine).id
            requested = plan.per_rank.requested_memory_bytes
            for term, value in logged.items():
                width = term_band_width(data, term, era=era, family=req.adapter.family, exclude_log=case["log"])
                if width is None:
                    continue
                half = width.half_width_fraction * requested
                est = getattr(plan.per_rank, term)
                seen[term].append((case["log"], max(0.0, est - half) <= value <= est + half,
                                   width.half_width_fraction))
    print("Each estimated term's own band, leave-one-log-out, on the logs that print the term")
    print(f"{'term':<24} {'logs':>4} {'covered':>7} {'coverage':>8} {'median half-width':>18}")
    for term, rows in seen.items():
        if not rows:
            print(f"{term:<24} {0:>4}  (no corpus log prints it: no band)")
            continue
        cov = sum(c for _, c, _ in rows)
        print(f"{term:<24} {len(rows):>4} {cov:>7} {cov / len(rows):>8.0%} {median(w for *_, w in rows):>17.2%}")
        for log, covered, w in rows:
            if not covered:
                print(f"  outside its band: {log} (half-width {w:.2%})")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--bands" not in argv:
        table(run(CASES), "Dense models, known GPU (issue bar: 9 in 10)")
        print()
        table(run(EXTENDED), "MoE, quantized, windowed and multimodal models, known GPU")
        print()
    band_table(band_rows())
    print()
    term_band_table()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
