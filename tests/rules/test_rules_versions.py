"""Version parsing and pack selection."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.rules import format_version, select_pack
from vmemplan.core.version import parse_version

from ._rules_helpers import CORPUS_LOGS, packs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.10.1.1", (0, 10, 1, 1)),
        ("0.17.1", (0, 17, 1)),
        ("0.33.0", (0, 33, 0)),
        ("0.6.4.post1", (0, 6, 4)),
        ("0.8.5.dev169+gce17db808", (0, 8, 5)),
        ("v0.11.0", (0, 11, 0)),
        ("V0.11.0", (0, 11, 0)),
        ("0.14.0rc1.dev2+g7d9f6663a", (0, 14, 0)),
        ("0.13.0+faa43dbf.nv26.01", (0, 13, 0)),
        ("0.11.0+torch271", (0, 11, 0)),
        ("0.19.2rc1.dev206+g95995bbef", (0, 19, 2)),
        ("0.6.6.post2.dev", (0, 6, 6)),
        ("0.19.x", (0, 19)),
        (" 0.9.2 ", (0, 9, 2)),
    ],
)
def test_parse_version(text: str, expected: tuple[int, ...]) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "latest", "0..1", "1.2.3-beta-x-y", "0.10.1 (approx)", "v", "0.1.2+", "abc1.0"])
def test_parse_version_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_version(text)


# Expected pack per version, read off the pack table in the module docstring of each YAML.
@pytest.mark.parametrize(
    ("version", "pack_id"),
    [
        ("0.5.5", "v0.5"),
        ("0.6.1", "v0.6"),
        ("0.6.3.post1", "v0.6.3"),
        ("0.6.4", "v0.6.4"),
        ("0.6.4.post1", "v0.6.4"),
        ("0.6.5", "v0.6.5"),
        ("0.6.6.post1", "v0.6.5"),
        ("0.7.3", "v0.7"),
        ("0.8.0", "v0.8"),
        ("0.8.4", "v0.8"),
        ("0.8.5", "v0.8.5"),
        ("0.8.5.post1", "v0.8.5"),
        ("0.8.5.dev169+gce17db808", "v0.8.5"),
        ("0.9.0.1", "v0.9"),
        ("0.9.2", "v0.9.1"),
        ("0.10.0", "v0.10"),
        ("0.10.1.1", "v0.10"),
        ("0.10.2", "v0.10.2"),
        ("v0.11.0", "v0.11"),
        ("0.11.2", "v0.11.1"),
        ("0.12.0", "v0.12"),
        ("0.13.0+faa43dbf.nv26.01", "v0.13"),
        ("0.14.0rc1.dev2+g7d9f6663a", "v0.14"),
        ("0.17.1", "v0.14"),
        ("0.18.1", "v0.18"),
        ("0.19.0", "v0.18"),
        ("0.20.1", "v0.20"),
        ("0.21.0", "v0.21"),
        ("0.24.0", "v0.21"),
        ("0.25.1", "v0.21"),
        ("0.26.0", "v0.26"),
        ("0.27.1", "v0.27"),
        ("0.28.0", "v0.28"),
        ("0.29.0", "v0.28"),
        ("0.30.0", "v0.30"),
        ("0.32.0", "v0.31"),
        ("0.33.0", "v0.33"),
    ],
)
def test_select_pack(version: str, pack_id: str) -> None:
    pack, warning = select_pack(packs(), version)
    assert (pack.id, warning) == (pack_id, None)
    assert pack.contains(version)


def test_default_is_newest() -> None:
    pack, warning = select_pack(packs(), None)
    assert (pack.id, warning) == ("v0.33", None)


def test_older_than_oldest_warns() -> None:
    pack, warning = select_pack(packs(), "0.4.2")
    assert pack.id == "v0.5"
    assert warning is not None and "older" in warning and "0.4.2" in warning


def test_newer_than_newest_warns() -> None:
    pack, warning = select_pack(packs(), "0.34.0")
    assert pack.id == "v0.33"
    assert warning is not None and "newer" in warning
    # a patch release of the newest line is not flagged
    assert select_pack(packs(), "0.33.1") == (pack, None)


def test_malformed_version_usage_error_with_range_hint() -> None:
    with pytest.raises(UsageError) as info:
        select_pack(packs(), "zero point ten")
    assert info.value.hint is not None
    assert "0.5.0" in info.value.hint and "0.33.0" in info.value.hint


def test_engine_choice_for_v0_fallback() -> None:
    pack, _ = select_pack(packs(), "0.8.5.dev169+gce17db808", engine="v0")
    assert (pack.id, pack.engine) == ("v0.8-v0", "v0")
    pack, _ = select_pack(packs(), "0.8.5", engine="v1")
    assert pack.id == "v0.8.5"
    # asking for v0 where no v0 pack exists keeps the default pack
    pack, _ = select_pack(packs(), "0.33.0", engine="v0")
    assert pack.id == "v0.33"


def _corpus_versions() -> list[str]:
    found = []
    for path in sorted(CORPUS_LOGS.glob("*.log")):
        for line in path.read_text(errors="replace").splitlines()[:20]:
            if line.startswith("vllm_version:"):
                raw = line.split(":", 1)[1].strip().strip("'\"")
                if raw and raw != "null":
                    found.append(raw.split()[0])  # drop "(approx., ...)" comments
                break
    return found


CORPUS = _corpus_versions()


@pytest.mark.skipif(not CORPUS, reason="shared corpus not present")
@pytest.mark.parametrize("version", CORPUS)
def test_corpus_versions_select_a_covering_pack(version: str) -> None:
    pack, warning = select_pack(packs(), version)
    assert warning is None
    assert pack.contains(version)


def test_corpus_engine_hints() -> None:
    # 0.6.1 / 0.5.5 / 0.7.x corpus logs are V0; 0.8.5.post1 and later are V1
    assert select_pack(packs(), "0.6.1")[0].engine == "v0"
    assert select_pack(packs(), "0.7.1.dev")[0].engine == "v0"
    assert select_pack(packs(), "0.8.5.post1")[0].engine == "v1"


@given(st.lists(st.integers(min_value=0, max_value=99), min_size=1, max_size=4))
def test_format_parse_round_trip(parts: list[int]) -> None:
    assert parse_version(format_version(parts)) == tuple(parts)
    assert parse_version("v" + format_version(parts) + ".post3+local.1") == tuple(parts)


@given(
    st.integers(min_value=5, max_value=33),
    st.integers(min_value=0, max_value=6),
)
def test_any_release_in_range_has_one_default_pack(minor: int, patch: int) -> None:
    version = f"0.{minor}.{patch}"
    covering = [p for p in packs() if p.engine_default and p.contains(version)]
    assert len(covering) == 1
    assert select_pack(packs(), version)[0] is covering[0]


def test_id_pattern() -> None:
    for pack in packs():
        assert re.fullmatch(r"v\d+\.\d+(\.\d+)?(-v0)?", pack.id)
