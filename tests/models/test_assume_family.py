"""An architecture vmemplan has no family for: the refusal names the family it resembles, and
``--assume-family ARCH`` plans it with that family's graph, flagged estimated (issue 11 item 6)."""

from __future__ import annotations

import json

from tests.request._cli import error_lines, run


def test_the_refusal_names_the_family_it_resembles(capsys):
    r = run(["size", "zai-org/GLM-5", "--gpu", "h200", "-tp", "8"], capsys)
    assert r.code == 4
    err, hint = error_lines(r.stderr)
    assert "GlmMoeDsaForCausalLM" in err and "resembles DeepseekV32ForCausalLM" in err  # MLA + index_topk
    assert "--assume-family DeepseekV32ForCausalLM" in hint


def test_assume_family_plans_it_and_says_every_figure_is_estimated(capsys):
    r = run(["size", "zai-org/GLM-5", "--gpu", "h200", "-tp", "8", "--max-model-len", "8192",
             "--assume-family", "deepseekv32forcausallm", "--format", "json"], capsys)
    assert r.code in (0, 3), r.stderr
    d = json.loads(r.stdout)
    weights = next(p for p in d["provenance"] if p["figure"] == "weights_bytes")
    assert weights["kind"] == "estimated" and "--assume-family" in weights["source"]
    assert any("sized with the DeepseekV32 graph (--assume-family)" in w for w in d["warnings"])
    assert d["per_rank"]["weights_bytes"] > 0


def test_a_known_architecture_keeps_its_own_family(capsys):
    plain = json.loads(run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json"], capsys).stdout)
    assumed = json.loads(run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json",
                              "--assume-family", "MixtralForCausalLM"], capsys).stdout)
    assert plain["per_rank"] == assumed["per_rank"]
    assert next(p for p in assumed["provenance"] if p["figure"] == "weights_bytes")["kind"] == "exact"


def test_an_unknown_family_name_is_a_usage_error(capsys):
    r = run(["size", "zai-org/GLM-5", "--gpu", "h200", "--assume-family", "NoSuchForCausalLM"], capsys)
    assert r.code == 2
    err, hint = error_lines(r.stderr)
    assert "NoSuchForCausalLM" in err and "LlamaForCausalLM" in hint
