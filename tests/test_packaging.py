"""Packaging: the wheel and sdist hold what vmemplan needs at run time, and the wheel works.

Builds both with hatchling's PEP 517 hooks (the build backend pyproject.toml names, already in
the test environment, so no network) into a temporary directory -- about a second -- then runs
the unpacked wheel from a directory outside the checkout, so that the registry it reads is the
packed ``vmemplan/_registry`` and not the checkout's ``registry/``.
"""

from __future__ import annotations

import email.parser
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("hatchling", reason="hatchling (the build backend) is not installed")


def _version() -> str:
    text = (ROOT / "vmemplan" / "_version.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    assert match, "vmemplan/_version.py must set __version__"
    return match.group(1)


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    code = ("import sys, hatchling.build as b; "
            "print(b.build_wheel(sys.argv[1])); print(b.build_sdist(sys.argv[1]))")
    result = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    wheel, sdist = result.stdout.split()
    return {"wheel": out / wheel, "sdist": out / sdist}


@pytest.fixture(scope="module")
def wheel_names(dists: dict[str, Path]) -> set[str]:
    with zipfile.ZipFile(dists["wheel"]) as zf:
        return set(zf.namelist())


def test_wheel_is_named_after_the_version(dists: dict[str, Path]) -> None:
    assert dists["wheel"].name == f"vmemplan-{_version()}-py3-none-any.whl"
    assert dists["sdist"].name == f"vmemplan-{_version()}.tar.gz"


def test_wheel_holds_the_registry(wheel_names: set[str]) -> None:
    for name in ("gpus.yaml", "cost_model.yaml", "bands.yaml", "speed.yaml", "models/aliases.yaml", "models/provenance.yaml",
                 "models/meta-llama--Llama-3.1-8B.json"):
        assert f"vmemplan/_registry/{name}" in wheel_names, name
    packs = {n for n in wheel_names if n.startswith("vmemplan/_registry/vllm/") and n.endswith(".yaml")}
    shipped = {f"vmemplan/_registry/vllm/{p.name}" for p in (ROOT / "registry" / "vllm").glob("*.yaml")}
    assert packs == shipped and len(packs) >= 10
    models = {n for n in wheel_names if n.startswith("vmemplan/_registry/models/") and n.endswith(".json")}
    assert len(models) == len(list((ROOT / "registry" / "models").glob("*.json")))


def test_wheel_holds_the_completions(wheel_names: set[str]) -> None:
    for shell in ("bash", "zsh", "fish"):
        assert f"vmemplan/_completions/vmemplan.{shell}" in wheel_names


def test_wheel_holds_the_package_and_nothing_else(wheel_names: set[str]) -> None:
    for name in ("vmemplan/__init__.py", "vmemplan/__main__.py", "vmemplan/_version.py", "vmemplan/cli/__init__.py",
                 "vmemplan/api.py", "vmemplan/core/errors.py"):
        assert name in wheel_names, name
    for name in wheel_names:
        assert name.startswith(("vmemplan/", f"vmemplan-{_version()}.dist-info/")), name
        assert "__pycache__" not in name and not name.endswith(".pyc"), name


def test_wheel_metadata(dists: dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as zf:
        info = f"vmemplan-{_version()}.dist-info"
        meta = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
    assert meta["Name"] == "vmemplan" and meta["Version"] == _version()
    assert meta["Requires-Python"] == ">=3.10"
    requires = " ".join(meta.get_all("Requires-Dist") or [])
    for dep in ("typer", "rich", "pydantic", "pyyaml", "huggingface-hub"):
        assert dep in requires.lower().replace("_", "-"), dep
    assert re.search(r"^vmemplan\s*=\s*vmemplan\.__main__:entry$", entry_points, re.M)


def test_sdist_holds_sources_registry_completions_and_tests(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for name in ("pyproject.toml", "README.md", "vmemplan/cli/__init__.py", "registry/gpus.yaml",
                 "registry/cost_model.yaml", "completions/vmemplan.bash", "completions/vmemplan.zsh",
                 "completions/vmemplan.fish", "tests/conftest.py"):
        assert name in names, name


def _run_unpacked(dists: dict[str, Path], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    if not site.exists():
        with zipfile.ZipFile(dists["wheel"]) as zf:
            zf.extractall(site)
    env = {k: v for k, v in os.environ.items() if k not in ("VMEMPLAN_REGISTRY", "VMEMPLAN_DEBUG", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)  # the unpacked wheel first; typer & co. from this environment
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-m", "vmemplan", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


def test_unpacked_wheel_prints_its_version(dists: dict[str, Path], tmp_path: Path) -> None:
    result = _run_unpacked(dists, tmp_path, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"vmemplan {_version()}\n"


def test_unpacked_wheel_plans_offline_from_the_packed_registry(dists: dict[str, Path], tmp_path: Path) -> None:
    import json

    result = _run_unpacked(dists, tmp_path, "size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"]["source"] == "bundled"
    check = ("import vmemplan.sources as s, vmemplan.registry as r; "
             "print(s.default_registry_dir()); print(r.registry_dir())")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    env.pop("VMEMPLAN_REGISTRY", None)
    where = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=60)
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert Path(line) == tmp_path / "site" / "vmemplan" / "_registry"


def test_checkout_version_flag_matches_version_file() -> None:
    result = subprocess.run([sys.executable, "-m", "vmemplan", "--version"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout == f"vmemplan {_version()}\n"
