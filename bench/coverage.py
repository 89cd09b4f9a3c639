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
MM_JSON = ROOT / "bench" / "vllm_architectures" / "mm_language_models.json"
# Towers the ast reading of vLLM's source gets wrong or misses (built through a method returning a
# variable, timm, or a projector-named image embedding; CLIP / SigLIP's text encoder read as a tower).
#: Why an architecture vLLM serves is not planned, where the table's columns cannot say it.
NOT_PLANNED_WHY = {
    "Terratorch": "vLLM builds it through the terratorch package (vllm/model_executor/models/terratorch.py: "
                  "terratorch.vllm.InferenceRunner from the config's pretrained_cfg), a geospatial backbone "
                  "whose tensors no config.json dimension describes; attention-free, so no KV cache either",
    "Llama_Nemotron_Nano_VL": "its vision tower is the checkpoint's own remote code "
                             "(vllm/model_executor/models/nemotron_vl.py::LlamaNemotronVLChatModel._init_vision_model: "
                             "AutoModel.from_config(vision_config, trust_remote_code)), which vmemplan never runs and "
                             "vLLM's own code cannot check: no oracle reference for its tensors",
}
UNRELIABLE_TOWERS = frozenset({"MiniMaxM3SparseForConditionalGeneration", "MiniCPMV", "DeepseekVLV2ForCausalLM",
                               "Phi3VForCausalLM", "CLIPModel", "SiglipModel"})


def _fixtures() -> dict[str, list[dict]]:
    by_arch: dict[str, list[dict]] = {}
    for path in sorted(FIXTURES.glob("*.json")):
        fx = json.loads(path.read_text())
        # the class vLLM resolved (a config may be routed: DeepSeek-V4 with a vision tower), else the case's
        arch = fx.get("oracle", {}).get("architecture") or fx.get("architecture_expected")
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
    return ", ".join(dict.fromkeys(parts))  # one entry per distinct verdict (several configs may share a TP)


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


def _language_model(entry: dict, adapters: dict) -> str:
    """The language model an architecture's vLLM class builds, and whether vmemplan plans it."""
    lms = entry.get("language_models") or []
    if not lms:
        return "none found (attention-free)" if entry.get("attention_free") else "not determined"
    parts = []
    for lm in lms:
        if lm == "text_config":
            parts.append("from the checkpoint's `text_config`")
        elif lm == "own":
            parts.append(f"own decoder (`{entry.get('own_decoder') or '?'}`)")
        else:
            parts.append(f"`{lm}` ({'planned' if lm in adapters else 'not planned'})")
    return " or ".join(parts) + ("; encoder-decoder" if entry.get("encoder_decoder") else "")


def _towers(arch: str, entry: dict) -> str:
    """The vision / audio encoder classes vmemplan does not model ("not determined" where the
    source reading is known to be wrong)."""
    towers = entry.get("towers") or []
    if arch in UNRELIABLE_TOWERS or any(t["class"].endswith("Config") for t in towers):
        return "not determined"
    if not towers:
        return "—"
    seen: list[str] = []
    for t in towers:
        label = f"{t['kind']} `{t['class']}`"
        if label not in seen:
            seen.append(label)
    return ", ".join(seen)


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
    mm = json.loads(MM_JSON.read_text())
    other = []
    for cat in ("multimodal", "embedding"):
        names = sorted(a for a, c in cats.items() if cat in c)
        have = [a for a in names if a in ADAPTERS]
        checked = [a for a in have if any(not _refused(fx) for fx in fixtures.get(a, []))]
        exact = [a for a in checked if all(fx["id"] not in weight_gaps and fx["id"] not in kv_gaps
                                           for fx in fixtures[a] if not _refused(fx))]
        other += ["", f"- {cat}: **{len(have)} of {len(names)} planned**; {len(checked)} checked against vLLM's own "
                  f"code (oracle fixtures, the towers included), exact at every checked TP for {len(exact)}:", "",
                  "| architecture | vLLM module | vmemplan family | weights vs vLLM | KV pool vs vLLM | config |",
                  "|---|---|---|---|---|---|"]
        for arch in have:
            fxs = fixtures.get(arch, [])
            module = (mm[cat].get(arch) or {}).get("module", "")
            other.append(f"| `{arch}` | `{module}` | {_family(ADAPTERS[arch])} | {_verdict(fxs, weight_gaps)} | "
                         f"{_verdict(fxs, kv_gaps)} | {_config(fxs)} |")
        left = len(names) - len(have)
        other += ["", f"The other {left} {'is' if left == 1 else 'are'} refused with what vLLM would do with "
                  f"{'it' if left == 1 else 'them'} (exit 4); what {'it' if left == 1 else 'each'} lacks:", "",
                  "| architecture | vLLM module | language model | towers not modelled |", "|---|---|---|---|"]
        for arch in names:
            if arch in ADAPTERS:
                continue
            e = mm[cat].get(arch)
            if e is None:
                other.append(f"| `{arch}` | | not determined | not determined |")
                continue
            other.append(f"| `{arch}` | `{e['module']}` | {_language_model(e, ADAPTERS)} | {_towers(arch, e)} |")
        why = [f"- `{a}`: {NOT_PLANNED_WHY[a]}." for a in names if a not in ADAPTERS and a in NOT_PLANNED_WHY]
        if why:
            other += ["", *why]
    return "\n".join([head, "", *rows, "", "Other categories of vLLM 0.33.0's registry "
                      "(`registry/vllm_architectures.yaml`); the language model each builds and its towers are "
                      "read from vLLM's source by `bench/vllm_architectures/mm_language_models.py`:", *other,
                      "", "Generated by `bench/coverage.py` from the adapters, `registry/architectures/` and the "
                      "oracle fixtures."])


if __name__ == "__main__":
    print(coverage_table())
