"""vmemplan/models/_index.py names the module that registers each architecture, so that a
plan imports one family module instead of all of them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_index_is_current():
    spec = importlib.util.spec_from_file_location("models_index", ROOT / "bench" / "models_index.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    assert (ROOT / "vmemplan" / "models" / "_index.py").read_text() == module.render(), \
        "stale: run python bench/models_index.py"


def test_a_plan_imports_only_the_family_it_needs():
    code = ("import sys; from vmemplan.api import plan_from_flags; "
            "plan_from_flags(model='meta-llama/Llama-3.1-8B', gpu='h100'); "
            "print(sorted(m for m in sys.modules if m.startswith('vmemplan.models.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    loaded = eval(out)  # noqa: S307 - our own repr of a list of strings
    assert "vmemplan.models.dense" in loaded
    for other in ("vmemplan.models.deepseek_v4", "vmemplan.models.hybrid_mamba", "vmemplan.models.gemma4"):
        assert other not in loaded, loaded
