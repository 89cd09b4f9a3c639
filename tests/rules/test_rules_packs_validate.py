"""Every shipped rules pack validates, is sourced, and the packs tile the release history."""

from __future__ import annotations

import pytest
import yaml

from vmemplan.core.records import set_fields
from vmemplan.core.version import parse_version
from vmemplan.rules import RulesPack, parse_rules_pack

from ._rules_helpers import PACK_DIR, packs

# Every vLLM release on PyPI from 0.5.0 to 0.33.0 (pip index versions vllm).
ALL_RELEASES = """
0.33.0 0.32.0 0.31.0 0.30.0 0.29.0 0.28.0 0.27.1 0.27.0 0.26.0 0.25.1 0.25.0 0.24.0 0.23.0 0.22.1
0.22.0 0.21.0 0.20.2 0.20.1 0.20.0 0.19.1 0.19.0 0.18.1 0.18.0 0.17.1 0.17.0 0.16.0 0.15.1 0.15.0
0.14.1 0.14.0 0.13.0 0.12.0 0.11.2 0.11.1 0.11.0 0.10.2 0.10.1.1 0.10.1 0.10.0 0.9.2 0.9.1 0.9.0.1
0.9.0 0.8.5.post1 0.8.5 0.8.4 0.8.3 0.8.2 0.8.1 0.8.0 0.7.3 0.7.2 0.7.1 0.7.0 0.6.6.post1 0.6.6
0.6.5 0.6.4.post1 0.6.4 0.6.3.post1 0.6.3 0.6.2 0.6.1.post2 0.6.1.post1 0.6.1 0.6.0 0.5.5 0.5.4
0.5.3.post1 0.5.3 0.5.2 0.5.1 0.5.0.post1 0.5.0
""".split()


def test_all_packs_load() -> None:
    loaded = packs()
    assert len(loaded) >= 12
    assert {p.id for p in loaded} >= {"v0.5", "v0.6.4", "v0.6.5", "v0.8", "v0.11", "v0.14", "v0.21", "v0.33"}


@pytest.mark.parametrize("path", sorted(PACK_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_each_file_validates_and_matches_its_name(path) -> None:
    pack = parse_rules_pack(yaml.safe_load(path.read_text()), label=path.name)
    assert isinstance(pack, RulesPack)
    assert pack.id == path.stem
    assert pack.summary.strip()
    # a Sourced default: value and source both readable
    assert 0 < pack.defaults.gpu_memory_utilization.value <= 1
    assert "vllm/" in pack.defaults.gpu_memory_utilization.source


@pytest.mark.parametrize("version", ALL_RELEASES)
def test_every_release_has_exactly_one_default_pack(version: str) -> None:
    covering = [p for p in packs() if p.engine_default and p.contains(version)]
    assert len(covering) == 1, (version, [p.id for p in covering])


def test_only_one_open_ended_pack_and_it_is_the_newest() -> None:
    open_ended = [p for p in packs() if p.max_version is None]
    assert [p.id for p in open_ended] == ["v0.33"]


def test_fallback_v0_pack_covers_the_v1_default_era() -> None:
    v0 = [p for p in packs() if not p.engine_default]
    assert [p.id for p in v0] == ["v0.8-v0"]
    assert v0[0].engine == "v0"
    assert v0[0].contains("0.8.5") and v0[0].contains("0.10.1.1")


def test_every_set_rule_field_has_a_source() -> None:
    for pack in packs():
        for section in (pack.batch_defaults, pack.cuda_graphs, pack.budget, pack.kv_cache, pack.log):
            for name in set(set_fields(section)) - {"sources"}:
                value = getattr(section, name)
                if value not in (None, (), {}):
                    assert section.sources.get(name), (pack.id, type(section).__name__, name)
        for tier in pack.batch_defaults.tiers:
            assert tier.source


def test_engine_switch_and_milestones() -> None:
    by_id = {p.id: p for p in packs()}
    assert by_id["v0.7"].engine == "v0" and by_id["v0.8"].engine == "v1"
    assert by_id["v0.33"].defaults.gpu_memory_utilization.value == 0.92
    assert by_id["v0.18"].defaults.gpu_memory_utilization.value == 0.9
    assert by_id["v0.20"].cuda_graphs.estimate_subtracted_by_default is True
    assert by_id["v0.18"].cuda_graphs.estimate_subtracted_by_default is False
    assert by_id["v0.18"].cuda_graphs.estimate_computed is True
    assert by_id["v0.10.2"].budget.nccl_inside_budget is True
    assert by_id["v0.11"].budget.nccl_inside_budget is False
    assert by_id["v0.11"].cuda_graphs.default_mode == "FULL_AND_PIECEWISE"
    assert by_id["v0.10.2"].cuda_graphs.default_mode == "PIECEWISE"
    assert by_id["v0.13"].budget.requested_rounding == "float"
    assert by_id["v0.14"].budget.requested_rounding == "ceil"
    assert [by_id[i].kv_cache.hybrid_group_threshold for i in ("v0.11.1", "v0.12", "v0.14", "v0.18", "v0.33")] == [None, 1.25, 1.25, 1.5, 1.5]
    assert by_id["v0.20"].kv_cache.tokens_formula == "blocks_div_groups_x_min_block"
    assert by_id["v0.21"].kv_cache.tokens_formula == "concurrency_x_max_model_len"
    assert by_id["v0.8"].kv_cache.tokens_formula == "blocks_x_block_size"


def test_0_33_budget_facts_recorded_as_data() -> None:
    budget = {p.id: p for p in packs()}["v0.33"].budget
    assert budget.nccl_inside_budget is False
    assert budget.custom_all_reduce_inside_budget is False
    assert budget.cuda_context_inside_budget is False
    assert budget.suggestion_redundancy_buffer_bytes == 150 * 1024 * 1024  # 157,286,400
    assert budget.formula == "requested_minus_non_kv_minus_cudagraph"
    assert budget.non_kv_measure == "consumed_plus_transient_headroom"
    assert any("150 MiB" in note for note in budget.notes)


def test_version_bounds_parse() -> None:
    for pack in packs():
        parse_version(pack.min_version)
        if pack.max_version is not None:
            parse_version(pack.max_version)
