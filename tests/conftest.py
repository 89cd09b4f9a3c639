"""Test environment: pinned terminal, no colour, no network, golden-file support."""

from __future__ import annotations

import os

# Set before anything imports typer or rich (they read these at import time).
os.environ["TERMINAL_WIDTH"] = "120"
os.environ["COLUMNS"] = "120"
os.environ["_TYPER_FORCE_DISABLE_TERMINAL"] = "1"
os.environ["NO_COLOR"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
for _var in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "VMEMPLAN_DEBUG", "VMEMPLAN_REGISTRY"):
    os.environ.pop(_var, None)

from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None)
    settings.register_profile("dev", max_examples=60, deadline=None)
    settings.load_profile("ci" if os.environ.get("CI") else "dev")
except ImportError:  # pragma: no cover
    pass

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).parent / "golden"
CONFIGS = ROOT / "registry" / "models"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    update = request.config.getoption("--update-golden")

    def check(actual: str, name: str) -> None:
        path = GOLDEN_DIR / name
        text = "\n".join(line.rstrip() for line in actual.splitlines()) + "\n"
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"no golden file {name}; run pytest --update-golden"
        assert text == path.read_text(encoding="utf-8")

    return check


@pytest.fixture
def runner():
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture
def config_dict() -> Callable[[str], dict]:
    import json

    def load(name: str) -> dict:
        return json.loads((CONFIGS / name).read_text(encoding="utf-8"))

    return load
