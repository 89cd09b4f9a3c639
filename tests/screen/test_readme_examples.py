"""The README's examples are what `bench/update_readme.py` renders, at the width the README states."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from tests._forkserver import SubprocessShim

ROOT = Path(__file__).resolve().parents[2]


def _update_readme():
    spec = importlib.util.spec_from_file_location("update_readme", ROOT / "bench" / "update_readme.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    # its `python -m vmemplan` runs fork from a pre-imported server: the same fresh process and
    # output, without the imports each time (tests/_forkserver.py)
    module.subprocess = SubprocessShim()
    return module


def test_readme_states_the_width_it_is_rendered_at():
    module = _update_readme()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"rendered at {module.README_COLUMNS} columns" in readme
    assert "fixed 100 columns" in readme


def test_readme_size_example_is_current():
    module = _update_readme()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    body = re.search(r"<!-- BEGIN example-size -->\n(.*?)<!-- END example-size -->", readme, re.S).group(1)
    vm = [module.sys.executable, "-m", "vmemplan"]
    first = ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92"]
    expected = module.fence("vmemplan " + " ".join(first), module.run(vm + first))
    assert body.startswith(expected), "README is stale: run python bench/update_readme.py --skip-startup"


def test_every_readme_example_is_current():
    """Each generated example section (size, paste, concurrency, simulate, sweep, explain-log, the
    registry) is byte for byte what bench/update_readme.py renders now."""
    module = _update_readme()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, body in module.sections(include_slow=False).items():
        found = re.search(rf"<!-- BEGIN {re.escape(name)} -->\n(.*?)<!-- END {re.escape(name)} -->", readme, re.S)
        assert found is not None, f"README.md has no section {name}"
        assert found.group(1) == body + "\n", f"README section {name} is stale: run python bench/update_readme.py"
