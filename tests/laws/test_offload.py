"""--cpu-offload-gb: decoder-layer weights moved to host memory (vmemplan/laws/offload.py)."""

from __future__ import annotations

from vmemplan.api import plan_from_flags
from vmemplan.laws.offload import uva_offloaded_bytes

MODEL = "meta-llama/Llama-3.1-8B"


def test_llama_8b_four_gib_by_hand():
    """One decoder layer at bf16, in registration order: qkv_proj 6144×4096×2 = 50,331,648 B,
    o_proj 33,554,432 B, gate_up_proj 28672×4096×2 = 234,881,024 B, down_proj 117,440,512 B, two
    norms of 8,192 B: 436,224,000 B.  4 GiB = 4,294,967,296 B: nine whole layers (3,926,016,000 B),
    then layer 10's qkv, o, gate_up (4,244,783,104 B, still under) and down_proj, which crosses the
    limit: 4,362,223,616 B (vllm/model_executor/offloader/uva.py checks before each parameter)."""
    layer = [50_331_648, 33_554_432, 234_881_024, 117_440_512, 8_192, 8_192]
    assert sum(layer) == 436_224_000
    assert uva_offloaded_bytes(layer, 32, 4 * 2**30) == 4_362_223_616
    base = plan_from_flags(model=MODEL, gpu="h100")
    off = plan_from_flags(model=MODEL, gpu="h100", cpu_offload_gb=4)
    assert base.per_rank.weights_bytes - off.per_rank.weights_bytes == 4_362_223_616
    assert off.per_rank.available_kv_cache_bytes - base.per_rank.available_kv_cache_bytes == 4_362_223_616


def test_offload_never_moves_more_than_the_decoder_layers():
    layer = [10, 20]
    assert uva_offloaded_bytes(layer, 3, 10**9) == 90
    assert uva_offloaded_bytes(layer, 3, 0) == 0
    assert uva_offloaded_bytes(layer, 3, 1) == 10


def test_cpu_offload_on_the_command_line(capsys):
    import json

    from tests.request._cli import run

    r = run(["size", MODEL, "--gpu", "l4", "--cpu-offload-gb", "8", "--max-model-len", "64k", "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert "--cpu-offload-gb" in d["vllm_args"]["modelled"]
    assert any(p["figure"] == "weights_bytes.cpu_offload" for p in d["provenance"])
