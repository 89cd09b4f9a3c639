#!/usr/bin/env python
"""The architecture coverage table: every architecture of vLLM 0.33.0's model registry, the
vmemplan family that plans it, whether it is checked against vLLM's own code (the oracle
fixtures in tests/fixtures/oracle/), and the real config it rests on.

"exact" is read from the fixtures and the strict-xfail gap table of the fixture test
(tests/oracle/oracle_known_gaps.py): a fixture of that architecture not listed there is
compared exactly by tests/oracle/test_oracle_fixtures.py (weights before allocator rounding;
blocks, tokens and concurrency), and a listed one fails the test the day it starts to match,
so the table cannot claim more than the test suite proves.

    python bench/coverage.py            # prints the markdown table (the README's section)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "oracle"


def _fixtures() -> dict[str, list[dict]]:
    by_arch: dict[str, list[dict]] = {}
    for path in sorted(FIXTURES.glob("*.json")):
        fx = json.loads(path.read_text())
        arch = fx.get("architecture_expected") or fx.get("oracle", {}).get("architecture")
        if arch:
            by_arch.setdefault(arch, []).append(fx)
    return by_arch


def _gaps() -> tuple[dict[str, str], dict[str, str]]:
    sys.path.insert(0, str(ROOT / "tests" / "oracle"))
    from oracle_known_gaps import KNOWN_KV_GAPS, KNOWN_WEIGHT_GAPS

    return KNOWN_WEIGHT_GAPS, KNOWN_KV_GAPS


def _refused(fx: dict) -> bool:
    """vLLM itself refused the case (the fixture keeps its error)."""
    return "error" in fx or "error" in fx.get("oracle", {})


def _tp(fx: dict) -> int:
    return int(fx.get("oracle", {}).get("tp") or fx["id"].rsplit(".tp", 1)[-1])


def _verdict(fxs: list[dict], gaps: dict[str, str]) -> str:
    if not fxs:
        return "not tested"
    parts = []
    for fx in sorted(fxs, key=_tp):
        tp = _tp(fx)
        if _refused(fx):
            parts.append(f"TP {tp}: vLLM refuses")
        elif fx["id"] in gaps:
            reason = gaps[fx["id"]]
            parts.append(f"TP {tp}: {reason.split(':', 1)[0] if reason[0] in '+-' else 'refused'}")
        else:
            parts.append(f"TP {tp} exact")
    return ", ".join(parts)


def _family(cls: type) -> str:
    module = cls.__module__.rsplit(".", 1)[-1]
    if module == "declared":
        base = cls.__mro__[1]
        return f"`{base.__module__.rsplit('.', 1)[-1]}` (declared: `{base.architectures[0] if base.architectures else base.__name__}`)"
    return f"`{module}`"


def _config(fxs: list[dict]) -> str:
    if not fxs:
        return ""
    path = fxs[0]["config"]
    kind = "bundled" if path.startswith("registry/models/") else "fixture"
    return f"{kind}: `{Path(path).name}`"


def coverage_table() -> str:
    sys.path.insert(0, str(ROOT))
    from vmemplan.models.base import ADAPTERS, _load_families, resembles  # noqa: F401
    from vmemplan.registry import load_registry

    _load_families()
    text_gen = json.loads((ROOT / "bench" / "oracle" / "architectures.json").read_text())["architectures"]
    fixtures = _fixtures()
    weight_gaps, kv_gaps = _gaps()
    rows = ["| architecture | vLLM module | vmemplan family | weights vs vLLM | KV pool vs vLLM | config |",
            "|---|---|---|---|---|---|"]
    planned = weights_exact = kv_exact = tested = 0
    for entry in text_gen:
        arch = entry["architecture"]
        cls = ADAPTERS.get(arch)
        fxs = fixtures.get(arch, [])
        if cls is None:
            rows.append(f"| `{arch}` | `{entry['module']}` | not planned | | | {_config(fxs)} |")
            continue
        planned += 1
        w, k = _verdict(fxs, weight_gaps), _verdict(fxs, kv_gaps)
        ok = [fx for fx in fxs if not _refused(fx)]
        tested += bool(ok)
        weights_exact += bool(ok) and all(fx["id"] not in weight_gaps for fx in ok)
        kv_exact += bool(ok) and all(fx["id"] not in kv_gaps for fx in ok)
        rows.append(f"| `{arch}` | `{entry['module']}` | {_family(cls)} | {w} | {k} | {_config(fxs)} |")
    head = (f"Text generation (vLLM 0.33.0's `_TEXT_GENERATION_MODELS`): **{planned} of {len(text_gen)} planned**; "
            f"{tested} checked against vLLM's own code (oracle fixtures), weights exact at every checked TP for "
            f"{weights_exact}, KV pool (blocks, tokens, concurrency) exact for {kv_exact}.  A gap names the "
            "difference in bytes; its cause is in `tests/oracle/oracle_known_gaps.py`.")
    cats = load_registry().vllm_architectures
    other = []
    for cat in ("multimodal", "embedding"):
        names = sorted(a for a, c in cats.items() if cat in c)
        have = [a for a in names if a in ADAPTERS]
        other.append(f"- {cat}: {len(have)} of {len(names)} planned"
                     + (f" ({', '.join(f'`{a}`' for a in have)})" if have else "")
                     + "; the rest are refused with what vLLM would do with them (exit 4).")
    return "\n".join([head, "", *rows, "", "Other categories of vLLM 0.33.0's registry "
                      "(`registry/vllm_architectures.yaml`):", *other,
                      "", "Generated by `bench/coverage.py` from the adapters, `registry/architectures/` and the "
                      "oracle fixtures."])


if __name__ == "__main__":
    print(coverage_table())
