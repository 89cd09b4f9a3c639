"""Configs that are not causal decoders, and that vmemplan does not plan, are refused, never sized as a
Llama (issue 14 item 5, issue 15's Whisper before it was planned); the architecture list comes from vLLM 0.33's own registry (issue 11 item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import check_contract, cli

ROOT = Path(__file__).resolve().parents[2]
BERT = {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12, "intermediate_size": 3072,
        "vocab_size": 30522, "max_position_embeddings": 512}


def _write(tmp_path: Path, **fields) -> str:
    (tmp_path / "config.json").write_text(json.dumps({**BERT, **fields}), encoding="utf-8")
    return str(tmp_path)


@pytest.mark.parametrize(("fields", "said"), [
    # BERT / RoBERTa / XLM-R, GTE and Nomic encoders are planned now (models/bert.py, models/bert_rope.py);
    # Terratorch (a geospatial model built by the terratorch library) is not
    ({"architectures": ["Terratorch"], "model_type": "terratorch"}, "embedding model vLLM serves with --runner pooling"),
    ({"architectures": ["XLMRobertaForSequenceClassification"], "model_type": "xlm-roberta"}, "scoring"),
    # Whisper is planned now (models/whisper.py: encoder-decoder, a cross-attention KV group); NVIDIA's
    # Llama-Nemotron-Nano-VL builds its tower with remote code (AutoModel, trust_remote_code) and is not
    ({"architectures": ["Llama_Nemotron_Nano_VL"], "model_type": "Llama_Nemotron_Nano_VL"}, "multimodal"),
    ({"architectures": ["FooBarForSequenceClassification"], "model_type": "foobar"}, "not a causal decoder"),
])
@pytest.mark.parametrize("runner", [[], ["--runner", "pooling"]])
def test_non_decoders_are_refused_with_what_vllm_would_do(tmp_path, fields, said, runner):
    run = cli("size", _write(tmp_path, **fields), "--gpu", "h100", *runner)
    check_contract(run, 4)
    assert said in run.stderr and "will not size it as a decoder" in run.stderr
    assert "KV tokens" not in run.stdout


def test_an_unknown_causal_decoder_is_still_sized_generically_with_a_warning(tmp_path):
    run = cli("size", _write(tmp_path, architectures=["FooBarForCausalLM"], model_type="foobar"), "--gpu", "h100",
              "--format", "json")
    assert run.code == 0, run.stderr
    assert any("generic Llama-shaped decoder" in w for w in json.loads(run.stdout)["warnings"])


def test_vllm_architecture_list_is_vllms_own():
    """registry/vllm_architectures.yaml (bench/vllm_architectures/generate.py over the 0.33.0 wheel)
    holds vLLM's 124 text-generation architectures: the same list bench/oracle/architectures.json
    took from vLLM 0.33.0's registry for the reference fixtures; 127 multimodal, 34 embedding."""
    from vmemplan.registry import load_registry

    archs = load_registry().vllm_architectures
    text = {a for a, cats in archs.items() if "text_generation" in cats}
    oracle = {e["architecture"] for e in json.loads((ROOT / "bench/oracle/architectures.json").read_text())["architectures"]}
    assert text == oracle and len(text) == 124
    assert sum("multimodal" in c for c in archs.values()) == 127
    assert sum("embedding" in c for c in archs.values()) == 34
    assert "embedding" in archs["BertForMaskedLM"] and "multimodal" in archs["WhisperForConditionalGeneration"]
