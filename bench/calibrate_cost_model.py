#!/usr/bin/env python3
"""Check registry/cost_model.yaml against the real vLLM startup logs of the shared corpus.

For every dense, single-model log whose GPU is known, this script reads from the log itself the
vLLM version, the weights figure and the available-KV figure (and the device total when the log
prints one), then predicts the available KV memory from the *logged* weights with the cost model:

    available = requested - weights - activation peak - non-torch growth (- CUDA-graph estimate)

and prints, per log, the residual non-KV memory (requested - weights - available), the predicted
one, and the error of the predicted available KV in percent.  Where a log prints the activation and
non-torch terms separately (V0 0.6.6-0.8 "PyTorch activation peak memory takes", 0.10.2+ "Actual
usage is ... for peak activation"), they are shown next to the prediction.

Usage:
    python bench/calibrate_cost_model.py [--corpus ../shared/corpus] [--registry registry/cost_model.yaml]

Model shapes come from the corpus configs where the exact model is there, otherwise from the
published configs of the same architecture (each noted in MODELS below).  The per-log flags
(max_num_batched_tokens, max_num_seqs, parallel sizes) come from each log's header and lines.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vmemplan.laws.activation import activation_peak_bytes  # noqa: E402
from vmemplan.laws.overhead import cuda_graph_bytes, non_torch_bytes
from vmemplan.registry_schema import parse_cost_model

GIB = 1 << 30

# --------------------------------------------------------------------------- model shapes
# name: (config file in corpus/configs or None, hidden, intermediate, heads, head_dim, vocab, layers)
# Where config is None the numbers are the published dimensions of that architecture:
MODELS: dict[str, tuple[str | None, int, int, int, int, int, int]] = {
    # Qwen2-7B-Instruct has the same shapes as Qwen2.5-7B (3584 / 18944 / 28 heads / 152064 vocab /
    # 28 layers); SOURCES.md notes the same-shape Qwen2-7B index matches the Qwen2.5-7B size.
    "qwen2-7b": ("Qwen--Qwen2.5-7B.json", 0, 0, 0, 0, 0, 0),
    "qwen25-7b": ("Qwen--Qwen2.5-7B.json", 0, 0, 0, 0, 0, 0),
    "llama31-8b": ("meta-llama--Llama-3.1-8B.json", 0, 0, 0, 0, 0, 0),
    # Llama-2-7b-hf: the corpus holds TheBloke's GPTQ copy of the same architecture (L32 H4096 I11008 V32000).
    "llama2-7b": ("TheBloke--Llama-2-7B-GPTQ.json", 0, 0, 0, 0, 0, 0),
    # Qwen2.5-3B(-Instruct) published config: hidden 2048, intermediate 11008, 16 heads x 128, vocab 151936, 36 layers.
    "qwen25-3b": (None, 2048, 11008, 16, 128, 151936, 36),
    # Qwen2.5-14B family (Instruct, Coder-14B, R1-Distill-Qwen-14B, AWQ copies): 5120 / 13824 / 40 x 128 / 152064 / 48.
    "qwen25-14b": (None, 5120, 13824, 40, 128, 152064, 48),
    # Qwen2.5-32B family (QwQ-32B, Coder-32B, R1-Distill-Qwen-32B): 5120 / 27648 / 40 x 128 / 152064 / 64.
    "qwen25-32b": (None, 5120, 27648, 40, 128, 152064, 64),
    # CodeLlama-34b-Instruct-hf published config: 8192 / 22016 / 64 x 128 / 32000 / 48.
    "codellama-34b": (None, 8192, 22016, 64, 128, 32000, 48),
}


def model_shape(corpus: Path, key: str) -> tuple[int, int, int, int, int, int]:
    cfg_name, h, i, nh, hd, v, nl = MODELS[key]
    if cfg_name is None:
        return h, i, nh, hd, v, nl
    cfg = json.loads((corpus / "configs" / cfg_name).read_text())
    h = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    hd = cfg.get("head_dim") or h // nh
    return h, cfg["intermediate_size"], nh, hd, cfg["vocab_size"], cfg["num_hidden_layers"]


# --------------------------------------------------------------------------- per-log facts
@dataclass(frozen=True)
class LogCase:
    num: str
    model: str
    gpu: str | None  # gpus.yaml id; None when the log prints the total itself
    engine: str
    tokens: int  # profile tokens (max_num_batched_tokens, or max_model_len without chunked prefill)
    seqs: int
    tp: int = 1
    pp: int = 1
    stage: int | None = None  # pipeline stage (0-based) whose figures are used
    dtype_bytes: int = 2
    cudagraph_mode: str = "FULL_AND_PIECEWISE"
    capture_max: int = 512
    extra_bytes: int = 0
    extra_note: str = ""
    target: bool = True  # counts toward the "dense, known GPU" 2% target
    note: str = ""


CASES: list[LogCase] = [
    LogCase("001", "qwen2-7b", "a100-80g", "v1", 2048, 256, cudagraph_mode="PIECEWISE",
            note="A100 80GB default batch tier (mnbt 2048, 256 seqs)"),
    LogCase("003", "qwen2-7b", "a100-80g", "v1", 2048, 256, tp=2, cudagraph_mode="PIECEWISE",
            note="TP2 on one node; NCCL inside the budget in 0.10.x"),
    LogCase("005", "qwen2-7b", "a100-40g", "v1", 2048, 256, tp=2, cudagraph_mode="PIECEWISE",
            note="TP2 across two nodes (Ray): cross-node NCCL buffers"),
    LogCase("007", "llama31-8b", None, "v0", 20000, 256, note="no chunked prefill: 20000-token profile"),
    LogCase("008", "llama31-8b", None, "v0", 29000, 256, note="no chunked prefill: 29000-token profile"),
    LogCase("015", "qwen25-32b", None, "v0", 2048, 256, pp=2, stage=0,
            extra_bytes=5120 * 2 * 27648 * 2,
            extra_note="bnb 4-bit: gate_up dequantised to fp16 for the matmul (5120 x 55296 x 2 B)",
            note="QwQ-32B bnb-4bit, PP stage 0 (no sampler)"),
    LogCase("015", "qwen25-32b", None, "v0", 2048, 256, pp=2, stage=1,
            extra_bytes=5120 * 2 * 27648 * 2,
            extra_note="bnb 4-bit dequantised gate_up",
            note="QwQ-32B bnb-4bit, PP stage 1 (last: sampler)"),
    LogCase("029", "qwen25-3b", None, "v1", 2048, 1, cudagraph_mode="PIECEWISE", capture_max=2,
            note="max_num_seqs 1"),
    LogCase("033", "qwen25-14b", "l40s", "v1", 2048, 256),
    LogCase("040", "llama31-8b", "a100-40g", "v1", 2048, 256, note="A100 40GB inferred in the header"),
    LogCase("042", "qwen25-32b", "l40s", "v1", 2048, 256, note="FP8 checkpoint, fp16 activations"),
    LogCase("047", "qwen25-7b", "h100", "v1", 4096, 256),
    LogCase("049", "codellama-34b", "h100", "v1", 64, 32, capture_max=64),
    LogCase("050", "llama2-7b", "h100", "v1", 4096, 256),
    LogCase("035", "qwen25-32b", "a100-40g", "v1", 2048, 256,
            note="AWQ 32B; GPU 'likely A100 40GB' (repo notes + arithmetic)"),
    LogCase("056", "qwen25-7b", None, "v0", 4096, 256, target=False,
            note="4-bit checkpoint not identified (bnb/GPTQ/AWQ unknown): excluded from the target"),
]

_FLOAT = r"(-?\d+(?:\.\d+)?)"


def read_log(path: Path) -> tuple[dict, str]:
    text = path.read_text(errors="replace")
    parts = text.split("\n---\n", 1)
    header = yaml.safe_load(parts[0].lstrip("-\n")) if len(parts) == 2 else {}
    body = parts[1] if len(parts) == 2 else text
    return header or {}, body


def all_floats(pattern: str, body: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(pattern, body)]


def log_figures(body: str) -> dict[str, list[float]]:
    """The memory figures a log prints, in order of appearance (one per rank/stage)."""
    figs: dict[str, list[float]] = {}
    figs["weights"] = (
        all_floats(r"Model loading took " + _FLOAT + r" ?GiB", body)
        or all_floats(r"model weights take " + _FLOAT + r"GiB", body)
        or all_floats(r"Loading model weights took " + _FLOAT + r" GB", body)
    )
    figs["available"] = (
        all_floats(r"Available KV cache memory: " + _FLOAT + r" GiB", body)
        or all_floats(r"reserved for KV Cache is " + _FLOAT + r"GiB", body)
        or all_floats(r"kv_cache_size=" + _FLOAT + r"GiB", body)
    )
    figs["total"] = (
        all_floats(r"total_gpu_memory \(" + _FLOAT + r"GiB\)", body)
        or all_floats(r"total_gpu_memory=" + _FLOAT + r"GiB", body)
        or all_floats(r"Free memory on device \([0-9.]+/" + _FLOAT + r" GiB\)", body)
    )
    figs["activation"] = all_floats(r"PyTorch activation peak memory takes " + _FLOAT + r"GiB", body) or all_floats(
        _FLOAT + r" GiB for peak activation", body
    )
    figs["non_torch"] = all_floats(r"non_torch_memory takes " + _FLOAT + r"GiB", body) or all_floats(
        _FLOAT + r" GiB for non-torch memory", body
    )
    figs["peak_torch_incl_weights"] = all_floats(r"peak_torch_memory=" + _FLOAT + r"GiB", body)
    figs["legacy_non_torch"] = all_floats(r"non_torch_memory=" + _FLOAT + r"GiB", body)
    return figs


def gpu_totals(corpus: Path) -> dict[str, int]:
    data = yaml.safe_load((corpus.parent / "reference" / "gpus.yaml").read_text())
    return {g["id"]: int(g["total_memory_bytes"]) for g in data["gpus"]}


def capture_sizes(max_size: int) -> list[int]:
    """vLLM's default capture list up to ``max_size`` (0.11-era rule: 1, 2, 4, then steps of 8/16)."""
    sizes = [i for i in (1, 2, 4) if i <= max_size]
    sizes += list(range(8, min(max_size + 1, 256), 8))
    sizes += list(range(256, max_size + 1, 16))
    return sorted(set(sizes))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--registry", type=Path, default=ROOT / "registry" / "cost_model.yaml")
    args = ap.parse_args(argv)
    corpus: Path = args.corpus
    if not corpus.is_dir():
        print(f"error: corpus not found at {corpus}", file=sys.stderr)
        return 4
    cm = parse_cost_model(yaml.safe_load(args.registry.read_text()))
    totals = gpu_totals(corpus)
    logs = {p.name[:3]: p for p in (corpus / "logs").glob("[0-9][0-9][0-9]-*.log")}

    rows = []
    for case in CASES:
        header, body = read_log(logs[case.num])
        version = str(header.get("vllm_version") or "")
        m = re.search(r"\d+\.\d+(?:\.\d+)?", version)
        version = m.group(0) if m else version
        if case.num in ("007", "008"):
            version = "0.6.4"  # header: "0.6.4.x (inferred)" from the one-line profiling format
        if case.num == "056":
            version = "0.7.0"
        era = cm.era_for(version, engine=case.engine)
        figs = log_figures(body)
        idx = case.stage or 0
        weights = figs["weights"][idx if len(figs["weights"]) > idx else 0] * GIB
        avail_logged = figs["available"][idx if len(figs["available"]) > idx else 0] * GIB
        if figs["total"]:
            total = figs["total"][0] * GIB
            total_src = "log"
        else:
            total = totals[case.gpu]
            total_src = f"gpus.yaml:{case.gpu}"
        util = float(str(header.get("flags", {}).get("gpu_memory_utilization", 0.9)).split()[0])
        requested = total * util
        h, i, nh, hd, v, nl = model_shape(corpus, case.model)
        flashinfer = "Using FlashInfer for top-p & top-k sampling" in body
        act_c = cm.activation_constants(version, engine=case.engine, sampler_path="flashinfer" if flashinfer else None)
        is_last_stage = case.stage is None or case.stage == case.pp - 1
        act = activation_peak_bytes(
            family="dense", hidden_size=h, num_attention_heads=nh, head_dim=hd, intermediate_size=i,
            vocab_size=v, tensor_parallel_size=case.tp, max_num_batched_tokens=case.tokens,
            max_num_seqs=case.seqs if is_last_stage else 1, dtype_bytes=case.dtype_bytes,
            constants=act_c, extra_model_buffers_bytes=case.extra_bytes,
        )
        peak = act.peak_bytes if is_last_stage else act.forward_bytes + act.extra_model_bytes
        nt = non_torch_bytes(
            world_size=case.tp * case.pp, nccl_inside_budget=era.nccl_inside_budget,
            constants=cm.non_torch_constants(version, engine=case.engine),
        )
        cg = 0
        if era.cudagraph_estimate == "default":
            cg = cuda_graph_bytes(
                mode=case.cudagraph_mode, capture_sizes=capture_sizes(case.capture_max),
                max_num_seqs=case.seqs, constants=cm.cuda_graph_constants(), hidden_size=h,
                num_layers=nl, tensor_parallel_size=case.tp,
            ).total_bytes
        predicted = requested - weights - peak - nt - cg
        err = 100.0 * (predicted - avail_logged) / avail_logged if avail_logged else float("nan")
        rows.append(
            dict(
                case=case, version=version, era=era.id, total_src=total_src, total=total, util=util,
                residual=(requested - weights - avail_logged) / GIB,
                pred_residual=(peak + nt + cg) / GIB, peak=peak / GIB, nt=nt / GIB,
                fwd=act.forward_bytes / GIB, samp=act.sampler_bytes / GIB, sampler=act_c.sampler_path,
                logged=avail_logged / GIB, predicted=predicted / GIB, err=err,
                logged_act=figs["activation"][idx] if len(figs["activation"]) > idx else None,
                logged_nt=figs["non_torch"][idx] if len(figs["non_torch"]) > idx else (
                    figs["non_torch"][0] if figs["non_torch"] else None),
            )
        )

    print("| log | model | vLLM | era | sampler | total from | residual GiB (logged) | predicted residual "
          "(act + non-torch) | logged act / non-torch | logged avail GiB | predicted avail GiB | error % | within 2% |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    hits = n = 0
    for r in rows:
        c = r["case"]
        tag = c.num + (f" s{c.stage}" if c.stage is not None else "")
        within = abs(r["err"]) <= 2.0
        if c.target:
            n += 1
            hits += within
        la = "—" if r["logged_act"] is None else f"{r['logged_act']:.2f}"
        ln = "—" if r["logged_nt"] is None else f"{r['logged_nt']:.2f}"
        print(
            f"| {tag} | {c.model} | {r['version']} | {r['era']} | {r['sampler']} | {r['total_src']} | "
            f"{r['residual']:.3f} | {r['pred_residual']:.3f} ({r['peak']:.3f} + {r['nt']:.3f}) | {la} / {ln} | "
            f"{r['logged']:.2f} | {r['predicted']:.2f} | {r['err']:+.2f} | "
            f"{'yes' if within else 'NO'}{'' if c.target else ' (not in target)'} |"
        )
    print()
    print(f"within 2%: {hits} of {n} target logs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
