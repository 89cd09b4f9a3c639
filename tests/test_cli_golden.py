"""Golden files of CLI output: any change to a printed figure shows up as a reviewable diff.

Regenerate with `pytest tests/test_cli_golden.py --update-golden` and read the diff.
"""

from __future__ import annotations

import pytest

from vmemplan.cli import app

CASES = {
    "size_llama31-8b_h100_util092": ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92"],
    "size_llama31-8b_h100_32k_seqs256": ["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--util", "0.92",
                                         "--max-model-len", "32768", "--max-num-seqs", "256"],
    "size_llama31-70b_h100_tp4_fp8kv": ["size", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "-tp", "4",
                                        "--kv-cache-dtype", "fp8", "--max-model-len", "65536"],
    "size_qwen3-8b_l40s_v0111": ["size", "Qwen/Qwen3-8B", "--gpu", "l40s", "--vllm-version", "0.11.0",
                                 "--max-model-len", "16384"],
    "size_llama31-8b_rtx3090_v064": ["size", "meta-llama/Llama-3.1-8B", "--gpu", "rtx3090", "--vllm-version", "0.6.4",
                                     "--max-model-len", "20000", "--util", "0.9"],
    "size_mistral7b_h100_window": ["size", "mistralai/Mistral-7B-v0.1", "--gpu", "h100"],
    "size_too_big_70b_l4": ["size", "meta-llama/Llama-3.1-70B", "--gpu", "l4", "--max-model-len", "8192"],
}
FORMATS = [("table", "txt"), ("json", "json"), ("log", "log"), ("tree", "tree.txt")]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_size_output_matches_golden(case, fmt, ext, golden, runner):
    result = runner.invoke(app, [*CASES[case], "--format", fmt])
    assert result.exit_code in (0, 3), result.output
    golden(result.stdout, f"size/{case}.{ext}")


@pytest.mark.parametrize("args,name", [
    (["gpus", "--format", "json"], "gpus.json"),
    (["models", "--format", "json"], "models.json"),
])
def test_registry_listings_match_golden(args, name, golden, runner):
    result = runner.invoke(app, args)
    assert result.exit_code == 0
    golden(result.stdout, name)
