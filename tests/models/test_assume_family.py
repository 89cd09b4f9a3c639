"""An architecture vmemplan has no family for: the refusal names the family it resembles, and
``--assume-family ARCH`` plans it with that family's graph, flagged estimated (issue 11 item 6)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.request._cli import error_lines, run

#: A config of an architecture no family plans (a made-up name, so that no family added later
#: plans it), with DeepSeek's MoE marker ``n_routed_experts``.
UNPLANNED_MOE = {
    "architectures": ["UnplannedMoEForCausalLM"], "model_type": "unplanned_moe", "torch_dtype": "bfloat16",
    "hidden_size": 1024, "intermediate_size": 2048, "moe_intermediate_size": 256, "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 32000,
    "n_routed_experts": 16, "num_experts_per_tok": 2, "max_position_embeddings": 4096,
}


def test_the_refusal_names_the_family_it_resembles(capsys, tmp_path: Path):
    config = tmp_path / "unplanned_moe.json"
    config.write_text(json.dumps(UNPLANNED_MOE))
    r = run(["size", str(config), "--gpu", "h100"], capsys)
    assert r.code == 4
    err, hint = error_lines(r.stderr)
    assert "UnplannedMoEForCausalLM" in err and "resembles DeepseekV3ForCausalLM" in err  # n_routed_experts
    assert "--assume-family DeepseekV3ForCausalLM" in hint
    # MiniMax-M1 (served until vLLM 0.23.0): its lightning-attention layers match no planned family, and it says so
    r = run(["size", "MiniMaxAI/MiniMax-M1", "--vllm-version", "0.23.0", "--gpu", "h200", "-tp", "8"], capsys)
    assert r.code == 4
    err, hint = error_lines(r.stderr)
    assert "none of its families is close" in err and "KV cache would be wrong" in hint


def test_assume_family_plans_it_and_says_every_figure_is_estimated(capsys):
    r = run(["size", "MiniMaxAI/MiniMax-M1", "--vllm-version", "0.23.0", "--gpu", "h200", "-tp", "8", "--max-model-len", "8192",
             "--assume-family", "mixtralforcausallm", "--format", "json"], capsys)
    assert r.code in (0, 3), r.stderr
    d = json.loads(r.stdout)
    weights = next(p for p in d["provenance"] if p["figure"] == "weights_bytes")
    assert weights["kind"] == "estimated" and "--assume-family" in weights["source"]
    assert any("graph (--assume-family)" in w for w in d["warnings"])
    assert d["per_rank"]["weights_bytes"] > 0


def test_a_known_architecture_keeps_its_own_family(capsys):
    plain = json.loads(run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json"], capsys).stdout)
    assumed = json.loads(run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--format", "json",
                              "--assume-family", "MixtralForCausalLM"], capsys).stdout)
    assert plain["per_rank"] == assumed["per_rank"]
    assert next(p for p in assumed["provenance"] if p["figure"] == "weights_bytes")["kind"] == "exact"


def test_an_unknown_family_name_is_a_usage_error(capsys):
    r = run(["size", "MiniMaxAI/MiniMax-M1", "--vllm-version", "0.23.0", "--gpu", "h200", "--assume-family", "NoSuchForCausalLM"], capsys)
    assert r.code == 2
    err, hint = error_lines(r.stderr)
    assert "NoSuchForCausalLM" in err and "LlamaForCausalLM" in hint


def test_glm5_is_deepseek_v32s_class(capsys):
    """GLM-5 (GlmMoeDsaForCausalLM) is DeepseekV32ForCausalLM in vLLM 0.33 (vllm/models/deepseek_v32/
    __init__.py imports it under that name): planned exactly, not assumed.  Per token and layer the
    bf16 latent cache holds (kv_lora_rank 512 + rope 64) x 2 B = 1,152 B and the indexer's fp8 K
    cache 128 + 128 // 128 x 4 = 132 B; 78 layers, 39 a pipeline stage -> 50,076 B a token a rank
    (MLA's latent cache is not split by tensor parallelism)."""
    d = json.loads(run(["size", "zai-org/GLM-5", "--gpu", "h200", "-tp", "8", "-pp", "2", "--max-model-len", "8192",
                        "--format", "json"], capsys).stdout)
    assert not any("--assume-family" in w for w in d["warnings"])
    assert next(p for p in d["provenance"] if p["figure"] == "weights_bytes")["kind"] == "exact"
    assert {g["kind"] for g in d["kv_cache"]["groups"]} == {"mla_attention"}
    assert d["kv_cache"]["bytes_per_token"] == 39 * ((512 + 64) * 2 + 132)
