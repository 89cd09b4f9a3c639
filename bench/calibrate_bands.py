"""Generate registry/bands.yaml: the cost model's residual on every corpus log.

For each case in tests/fixtures/corpus_cases.yaml and corpus_cases_extended.yaml (real startup
logs copied from ../shared/corpus/logs), plan the deployment a priori from the log's model, GPU,
flags and release, and record

    residual = (predicted available KV − logged available KV) / requested budget

with the log's cost-model era and model family.  Where the log also prints one of the estimated
terms themselves (the activation peak, the non-torch growth, the CUDA-graph memory; see
TERM_SOURCES), the same residual is recorded for that term, so that each estimated figure gets a
band of its own (vmemplan/laws/bands.py::term_band_width).  vmemplan/laws/bands.py draws each plan's band
from these (largest |residual| of the plan's group), and bench/accuracy.py checks the bands
leave-one-log-out.  Logs whose miss comes from a setup the cost model does not describe (listed
in EXCLUDED with the reason) are recorded apart and never widen a band.

    python bench/calibrate_bands.py            # rewrite registry/bands.yaml
    python bench/calibrate_bands.py --check    # exit 1 if the file is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import accuracy  # noqa: E402

OUT = ROOT / "registry" / "bands.yaml"
GIB = 1 << 30
# a group needs 4 logs before its own residuals set its band (with 3, leave-one-out leaves 2 and the
# largest of 2 residuals is a poor bound: coverage 88 % on the corpus); smaller groups use their
# family over every era, then every log
MIN_LOGS = 4
# the logged KV figure is printed to 0.01 GiB: residuals below half of that are not resolvable;
# expressed against an 80 GiB budget this is ~0.006 %; a floor of 0.1 % of the budget keeps a
# band visible where the group's logs agree to the rounding
FLOOR_FRACTION = 0.001
EXCLUDED = {
    "005-qwen2-7b-2xa100-40gb-tp2-2nodes.log":
        "two nodes over Ray: cross-node communicator buffers inside the budget; the registry has no topology",
    "017-qwen3-235b-a22b-fp8-4xh100-tp4.log":
        "LMCacheConnectorV1 KV-transfer connector buffers inside the budget, not modelled",
    "037-gpt-oss-20b-gb10-ngc-gmu025.log":
        "DGX Spark unified memory: host RAM taken while loading counts as non-torch growth",
}


#: Which log figure measures each estimated term, as vmemplan.explain reads it:
#: activation: "PyTorch activation peak memory takes X GiB" (V1 0.7-0.10), or V0's
#: peak_torch_memory minus the weights ("Memory profiling results", 0.6.x);
#: non-torch: "non_torch_memory takes X GiB" / V0's non_torch_memory;
#: CUDA graphs: "Graph capturing finished in S secs, took X GiB" (the capture's real memory).
TERM_SOURCES = {
    "activation_peak_bytes": "activation_peak_bytes, or peak_torch_bytes - weights_bytes",
    "non_torch_bytes": "non_torch_bytes",
    "cuda_graph_bytes": "cuda_graph_bytes",
}


def logged_terms(log_name: str) -> dict[str, float]:
    """The estimated terms the log prints itself, in bytes (first startup, rank 0)."""
    from vmemplan.explain.parse import parse_log, read_log_bytes

    text = read_log_bytes((ROOT / "tests" / "fixtures" / "logs" / log_name).read_bytes())
    startups = parse_log(text)
    if not startups:
        return {}
    f = startups[0].figures
    out: dict[str, float] = {}
    if f.activation_peak_bytes is not None:
        out["activation_peak_bytes"] = f.activation_peak_bytes
    elif f.peak_torch_bytes is not None and f.weights_bytes is not None:
        out["activation_peak_bytes"] = f.peak_torch_bytes - f.weights_bytes
    if f.non_torch_bytes is not None:
        out["non_torch_bytes"] = f.non_torch_bytes
    if f.cuda_graph_bytes is not None:
        out["cuda_graph_bytes"] = f.cuda_graph_bytes
    return out


def residual_rows() -> tuple[list[dict], list[dict]]:
    from vmemplan.pipeline import plan_memory

    rows, excluded = [], []
    for path in (accuracy.CASES, accuracy.EXTENDED):
        for case in accuracy.load_cases(path):
            req = accuracy.resolve_case(case)
            plan = plan_memory(req)
            era = req.registry.cost_model.era_for(req.vllm_version, engine=req.rules.engine).id
            requested = plan.per_rank.requested_memory_bytes
            predicted = plan.per_rank.available_kv_cache_bytes
            logged = case["logged"]["available_kv_gib"] * GIB
            frac = (predicted - logged) / requested
            row = {"log": case["log"], "era": era, "family": req.adapter.family,
                   "vllm_version": str(case["vllm_version"]), "residual_fraction": round(frac, 6),
                   "residual_gib": round((predicted - logged) / GIB, 3)}
            terms = {term: round((getattr(plan.per_rank, term) - value) / requested, 6)
                     for term, value in logged_terms(case["log"]).items()}
            if terms:
                row["terms"] = terms
            if case["log"] in EXCLUDED:
                excluded.append({**row, "reason": EXCLUDED[case["log"]]})
            else:
                rows.append(row)
    return rows, excluded


def render(rows: list[dict], excluded: list[dict]) -> str:
    import yaml

    doc = {
        "schema_version": 1,
        "source": "bench/calibrate_bands.py: every case of tests/fixtures/corpus_cases.yaml and "
                  "corpus_cases_extended.yaml (real startup logs from ../shared/corpus/logs), planned a priori",
        "statistic": "residual = (predicted - logged available KV) / requested budget; a plan's half-width is the "
                     "largest |residual| of its cost-model era x model family group (>= min_logs logs), else of its "
                     "family, else of all logs, floored at floor_fraction",
        "term_statistic": "terms: the same residual for each estimated figure the log prints itself ("
                          + "; ".join(f"{k} from the log's {v}" for k, v in TERM_SOURCES.items())
                          + "); a figure's half-width is drawn from the logs that print it, by the same rule",
        "min_logs": MIN_LOGS,
        "floor_fraction": FLOOR_FRACTION,
        "residuals": rows,
        "excluded": [{"log": e["log"], "reason": e["reason"], "residual_fraction": e["residual_fraction"]}
                     for e in excluded],
    }
    head = ("# Generated by bench/calibrate_bands.py from the corpus logs; do not edit by hand.\n"
            "# Each residual is the cost model's miss on one log's available KV cache, as a fraction of the\n"
            "# requested budget.  vmemplan/laws/bands.py turns them into bands.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=120)


def main(argv: list[str]) -> int:
    rows, excluded = residual_rows()
    text = render(rows, excluded)
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("registry/bands.yaml is " + ("up to date" if same else "OUT OF DATE: run python bench/calibrate_bands.py"))
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    for r in rows:
        terms = "  ".join(f"{k.replace('_bytes', '')} {v*100:+.3f}%" for k, v in r.get("terms", {}).items())
        print(f"{r['log']:<45} {r['era']:<15} {r['family']:<6} {r['residual_fraction']*100:+7.3f}% of budget  {terms}")
    for e in excluded:
        print(f"{e['log']:<45} excluded: {e['reason']}")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
