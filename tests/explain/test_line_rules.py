"""The catalogue of vLLM startup lines (vmemplan/explain/line_rules.py): every rule is cited,
fires on its own example line, and writes the figures that line carries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vmemplan.explain import parse_log
from vmemplan.explain.accumulator import Acc
from vmemplan.explain.line_handlers import Hit
from vmemplan.explain.line_rules import BOUNDARY_KINDS, RULES, rules_for
from vmemplan.explain.records import process_key

GIB = 2**30
KINDS = [r.kind for r in RULES]


def test_one_rule_per_kind_each_cited_with_an_example():
    assert len(set(KINDS)) == len(KINDS)
    assert set(BOUNDARY_KINDS) <= set(KINDS)
    for rule in RULES:
        assert rule.anchors and all(rule.anchors), rule.kind
        assert (".py" in rule.printed_by or ".cpp" in rule.printed_by) and "::" in rule.printed_by, rule.kind
        assert rule.example, rule.kind


def _state(acc: Acc) -> tuple:
    return (len(acc.lines), dict(acc.workers), dict(acc.eng), dict(acc.eng_weak), dict(acc.model_sources),
            list(acc.errors), list(acc.generic_errors), list(acc.notes), dict(acc.stats), len(acc.kv_entries),
            acc.version, acc.preempt_v0_count)


@pytest.mark.parametrize("rule", RULES, ids=KINDS)
def test_each_rule_fires_on_its_example_and_reads_something(rule):
    text = rule.example
    fired = rules_for(text)
    assert rule in fired
    acc = Acc()
    before = _state(acc)
    rule.handle(acc, Hit(1, text, process_key(text), frozenset(r.kind for r in fired)))
    assert _state(acc) != before, rule.kind


def _figures(kind: str):
    rule = next(r for r in RULES if r.kind == kind)
    startups = parse_log(rule.example)
    assert len(startups) == 1, kind
    return startups[0]


def test_examples_yield_their_figures():
    # each expected value is the number printed in the example line, converted by hand
    assert _figures("weights").figures.weights_bytes == round(15.27 * GIB)
    assert _figures("avail").figures.available_kv_cache_bytes == round(53.78 * GIB)
    f = _figures("kvsize").figures
    assert (f.kv_cache_tokens, f.max_model_len, f.max_concurrency) == (391_632, 32_768, 11.95)
    f = _figures("blocks").figures
    assert (f.num_gpu_blocks, f.num_cpu_blocks) == (7299, 2048)
    assert _figures("numblocks").figures.num_gpu_blocks == 5867
    f = _figures("budget").figures
    assert (f.total_memory_bytes, f.gpu_memory_utilization, f.requested_memory_bytes) == (
        round(79.19 * GIB), 0.90, round(71.27 * GIB))
    f = _figures("weightstake").figures
    assert (f.weights_bytes, f.non_torch_bytes, f.activation_peak_bytes, f.available_kv_cache_bytes) == (
        round(14.99 * GIB), round(0.40 * GIB), round(1.20 * GIB), round(54.68 * GIB))
    f = _figures("proftakes").figures
    assert (f.non_kv_cache_bytes, f.activation_peak_bytes, f.non_torch_bytes) == (
        round(17.2 * GIB), round(1.4 * GIB), round(0.5 * GIB))
    f = _figures("graph").figures
    assert (f.graph_capture_seconds, f.cuda_graph_bytes) == (12.0, round(0.55 * GIB))
    f = _figures("cgpool").figures
    assert (f.cuda_graph_bytes, f.cuda_graph_estimate_bytes) == (round(0.55 * GIB), round(0.61 * GIB))
    f = _figures("cgutil").figures
    assert (f.gpu_memory_utilization, f.cuda_graph_equivalent_util, f.cuda_graph_suggested_util) == (
        0.9, 0.8923, 0.9077)
    f = _figures("freemem").figures
    assert (f.free_memory_bytes, f.total_memory_bytes, f.requested_memory_bytes) == (
        round(78.7 * GIB), round(79.19 * GIB), round(71.27 * GIB))
    s = _figures("toserve")
    assert s.outcome == "failed" and s.figures.estimated_max_model_len == 75136
    assert s.figures.kv_cache_needed_bytes == 16 * GIB
    s = _figures("v0maxlen")
    assert (s.figures.max_model_len, s.figures.kv_cache_tokens) == (29000, 23648)
    assert _figures("maxlen").figures.max_model_len == 32768
    assert _figures("autofit").figures.max_model_len == 50304
    assert _figures("chunked").figures.max_num_batched_tokens == 8192
    assert _figures("blocksize").figures.block_size == 1072
    assert _figures("banner").vllm_version == "0.33.0"


# ---- rooms of a livable size (issue 10): the parser and explainer modules stay small

MODULES = ["parse", "records", "pyliteral", "accumulator", "line_rules", "line_handlers", "memory_lines",
           "failure_lines", "freeze", "startup", "explain", "report", "checks", "suggestions", "line_notes",
           "figtext"]
ROOT = Path(__file__).resolve().parents[2] / "vmemplan"


@pytest.mark.parametrize("path", [ROOT / "explain" / f"{m}.py" for m in MODULES] + [ROOT / "render" / "explain.py"],
                         ids=MODULES + ["render.explain"])
def test_no_function_over_80_lines_no_module_over_600(path: Path):
    source = path.read_text()
    assert source.count("\n") <= 600
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno + 1 <= 80, f"{path.name}::{node.name}"
