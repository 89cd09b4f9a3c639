"""Invalid packs are reported with file and field; every bad file is reported."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from vmemplan.core.errors import ExitCode, RegistryInvalid
from vmemplan.rules import load_rules_packs, parse_rules_pack

from ._rules_helpers import PACK_DIR


def good() -> dict:
    return yaml.safe_load((PACK_DIR / "v0.33.yaml").read_text())


def write(tmp: Path, name: str, data) -> None:
    (tmp / name).write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)


def test_missing_field(tmp_path: Path) -> None:
    data = good()
    del data["defaults"]["block_size"]
    write(tmp_path, "v0.33.yaml", data)
    with pytest.raises(RegistryInvalid) as info:
        load_rules_packs(tmp_path)
    assert "v0.33.yaml: defaults.block_size: Field required" in info.value.message
    assert info.value.exit_code == ExitCode.BAD_REGISTRY


def test_extra_field() -> None:
    data = good()
    data["cuda_graphs"]["max_capture_size_capp"] = 512
    with pytest.raises(RegistryInvalid) as info:
        parse_rules_pack(data, label="v0.33.yaml")
    assert "v0.33.yaml: cuda_graphs.max_capture_size_capp: Extra inputs are not permitted" in info.value.message


def test_wrong_type() -> None:
    data = good()
    data["defaults"]["gpu_memory_utilization"]["value"] = "ninety percent"
    with pytest.raises(RegistryInvalid) as info:
        parse_rules_pack(data, label="v0.33.yaml")
    assert "v0.33.yaml: defaults.gpu_memory_utilization.value:" in info.value.message


def test_missing_source() -> None:
    data = good()
    del data["budget"]["sources"]["formula"]
    with pytest.raises(RegistryInvalid) as info:
        parse_rules_pack(data, label="x.yaml")
    assert "x.yaml: budget:" in info.value.message and "formula" in info.value.message


def test_bad_version_bound() -> None:
    data = good()
    data["max_version"] = "0.2"
    with pytest.raises(RegistryInvalid) as info:
        parse_rules_pack(data, label="x.yaml")
    assert "x.yaml: max_version:" in info.value.message
    data["max_version"] = "soon"
    with pytest.raises(RegistryInvalid) as info:
        parse_rules_pack(data, label="x.yaml")
    assert "x.yaml: max_version:" in info.value.message


def test_two_bad_files_both_reported(tmp_path: Path) -> None:
    a = good()
    del a["summary"]
    write(tmp_path, "v0.33.yaml", a)
    b = copy.deepcopy(good())
    b["id"] = "v0.30"
    b["min_version"], b["max_version"] = "0.30.0", "0.30"
    b["kv_cache"]["tokens_formula"] = "blocks_times_magic"
    write(tmp_path, "v0.30.yaml", b)
    write(tmp_path, "v0.31.yaml", "id: [unclosed\n")
    with pytest.raises(RegistryInvalid) as info:
        load_rules_packs(tmp_path)
    message = info.value.message
    assert "v0.33.yaml: summary: Field required" in message
    assert "v0.30.yaml: kv_cache.tokens_formula:" in message
    assert "v0.31.yaml: (yaml):" in message


def test_id_must_match_file_and_ranges_must_not_overlap(tmp_path: Path) -> None:
    write(tmp_path, "v0.33.yaml", good())
    other = good()
    other["id"] = "v0.31"
    other["min_version"], other["max_version"] = "0.31.0", "0.33.0"  # overlaps v0.33
    write(tmp_path, "v0.32.yaml", other)
    with pytest.raises(RegistryInvalid) as info:
        load_rules_packs(tmp_path)
    assert "v0.32.yaml: id:" in info.value.message
    assert "overlaps" in info.value.message


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(RegistryInvalid):
        load_rules_packs(tmp_path)


def test_not_a_mapping() -> None:
    with pytest.raises(RegistryInvalid) as info:
        parse_rules_pack(["a", "b"], label="list.yaml")  # type: ignore[arg-type]
    assert info.value.message.startswith("list.yaml: (top level):")


def test_models_are_frozen() -> None:
    pack = parse_rules_pack(good(), label="v0.33.yaml")
    with pytest.raises(Exception):
        pack.defaults.gpu_memory_utilization.value = 0.5  # type: ignore[misc]
