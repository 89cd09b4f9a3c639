"""What vmemplan says for one oracle fixture, in the fixture's terms.

Shared by tests/oracle/test_oracle_fixtures.py and bench/oracle/compare.py.  Needs only
vmemplan and the committed fixture JSON (never vLLM or the oracle's venv).

vmemplan is asked with the fixture's resolved engine figures (TP, dtype, max_model_len,
max_num_seqs, max_num_batched_tokens) on an H200 (the oracle's emulated GPU, SM 9.0) with
``kv_cache_memory`` = the fixture's ``available_bytes``, so that the pool is sized from the
same bytes and only the laws are compared.  Weights are the plain sum of tensor bytes one
rank holds (``WeightBreakdown.unrounded_bytes``), i.e. before the CUDA caching allocator's
rounding, which is what the oracle's ``weights.total_bytes`` counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "oracle"
GPU = "h200"  # the oracle's platform: CudaPlatform SM 9.0 "NVIDIA H200"


def fixture_paths() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def oracle_figures(fx: dict[str, Any]) -> dict[str, Any]:
    """The figures the comparison uses, from a fixture."""
    o = fx["oracle"]
    w = o["weights"]
    return {
        # bytes on a GPU: a view of another tensor shares its storage (bench/oracle/annotate_aliases.py)
        "weights_bytes": w["total_bytes"] - w.get("aliased_views_bytes", 0),
        "block_size": o["cache_config_block_size"],
        "pool_block_bytes": o.get("pool_block_bytes"),
        # (layers, block size, the group's bytes per pool block over all its layers)
        "groups": sorted((g["num_layers"], g["block_size"], g["page_size_bytes"] * g["num_layers"])
                         for g in o["groups"]),
        "blocks_per_request": sum(g["blocks_per_request"] for g in o["groups"]),
        "num_blocks": o["num_blocks"],
        "tokens": o["kv_cache_size_tokens"],
        # no KV cache groups: vLLM computes no concurrency (EngineCore._initialize_kv_caches skips
        # update_kv_cache_capacity); the oracle writes inf, vmemplan None: both say no KV cache bounds it
        "max_concurrency": None if o["max_concurrency"] == float("inf") else round(float(o["max_concurrency"]), 2),
    }


def _dtype(o: dict[str, Any]) -> str:
    return str(o["dtype"]).replace("torch.", "")


def vmemplan_figures(fx: dict[str, Any]) -> dict[str, Any]:
    """vmemplan's figures for the fixture's case; ``{"error": ..., "exit_code": ...}`` when it refuses."""
    from vmemplan.api import plan_with_request
    from vmemplan.core.errors import VmemplanError
    from vmemplan.laws.weights import weight_bytes_per_rank
    from vmemplan.pipeline import graph_context as _graph_context

    o = fx["oracle"]
    flags = {
        "model": str(ROOT / fx["config"]),
        "gpu": GPU,
        "vllm_version": o["vllm_version"],
        "tensor_parallel_size": o["tp"],
        "dtype": _dtype(o),
        "max_model_len": o["max_model_len"],
        "max_num_seqs": o["max_num_seqs"],
        "max_num_batched_tokens": o["max_num_batched_tokens"],
        "kv_cache_memory": o["available_bytes"],
    }
    # the case's --attention-backend (bench/oracle/build_cases.py OVERRIDES: Step1, Rnj1), passed as the user would
    words = fx["command"].split()
    if "--attention-backend" in words:
        flags["attention_backend"] = words[words.index("--attention-backend") + 1]
    try:
        req, plan = plan_with_request(**flags)
        wb = weight_bytes_per_rank(req.adapter.weight_tensors(_graph_context(req, 0)), model_dtype=req.dtype,
                                   scheme=req.quant_scheme, allocator_rounding=False)
    except VmemplanError as exc:
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300], "exit_code": int(exc.exit_code)}
    kv = plan.kv_cache
    return {
        "weights_bytes": wb.unrounded_bytes,
        "block_size": kv.block_size,
        "pool_block_bytes": kv.page_size_bytes,
        "groups": sorted((g.layers, g.block_size, g.page_size_bytes) for g in kv.groups),
        "blocks_per_request": sum(g.blocks_per_request for g in kv.groups),
        "num_blocks": kv.num_blocks,
        "tokens": kv.tokens,
        "max_concurrency": None if kv.max_concurrency is None else round(kv.max_concurrency, 2),
        "adapter": type(req.adapter).__name__,
        "fidelity": getattr(req.adapter, "fidelity", None),
    }


WEIGHT_KEYS = ("weights_bytes",)
KV_KEYS = ("num_blocks", "tokens", "max_concurrency")
EXACT_KEYS = WEIGHT_KEYS + KV_KEYS


def mismatches(fx: dict[str, Any], vm: dict[str, Any] | None = None,
               keys: tuple[str, ...] = EXACT_KEYS) -> list[str]:
    """The exact comparisons among ``keys`` that fail, as readable strings (empty when all agree)."""
    vm = vm if vm is not None else vmemplan_figures(fx)
    if "error" in vm:
        return [f"vmemplan refused (exit {vm['exit_code']}): {vm['error']}"]
    ref = oracle_figures(fx)
    return [f"{k}: vmemplan {vm[k]!r} != oracle {ref[k]!r}" for k in keys if vm[k] != ref[k]]
