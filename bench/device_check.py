"""Measurements on a real GPU that check vmemplan's laws where they rest on the device.

Run on a machine with a CUDA GPU and PyTorch (no vLLM needed); it writes JSON to the path
given (default: stdout).  What it measures, and which law each number checks:

1. ``device``: the total CUDA reports (``torch.cuda.mem_get_info``), the figure vLLM
   multiplies by ``gpu_memory_utilization`` - checks registry/gpus.yaml.
2. ``context``: device memory in use right after the CUDA context is created and before
   any tensor, minus what torch reserved - checks cost_model.yaml ``cuda_context_bytes``.
3. ``cublas``: non-torch growth at the first bf16 GEMM (cuBLAS workspace) - part of the
   non-torch figure inside the budget.
4. ``weights``: every tensor a vLLM rank holds for a dense model (per vmemplan's adapter),
   allocated one by one in module order as vLLM builds the model; torch's allocated bytes
   against vmemplan's weights law and against the "Model loading took" figure of corpus logs.
5. ``sampler``: the peak of a top-k/top-p sampling pass over [rows, vocab] logits, written
   here from the mechanism (fp32 logits, a full sort, softmax + cumulative sum, scatter back,
   exponential race) - checks the cost model's ``sampler_fp32_copies`` for the sort path.
6. ``forward``: the peak of a Llama-shaped decoder layer over ``T`` tokens with attention
   output left empty (vLLM's profile run builds no attention metadata) - checks the
   activation law's buffer counts.

    python bench/device_check.py out.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

GIB = 1 << 30
DEV = torch.device("cuda:0")


def _nvml_total() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total,name", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
        return int(out.split(",")[0].strip()) * (1 << 20)
    except Exception:
        return None


def device_and_context() -> dict:
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info(DEV)
    props = torch.cuda.get_device_properties(DEV)
    in_use_no_tensors = total - free - torch.cuda.memory_reserved(DEV)
    return {
        "name": torch.cuda.get_device_name(DEV),
        "total_memory_bytes": total,
        "props_total_memory": props.total_memory,
        "nvml_total_bytes": _nvml_total(),
        "context_bytes": in_use_no_tensors,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }


def cublas_workspace() -> dict:
    torch.cuda.synchronize()
    free0, _ = torch.cuda.mem_get_info(DEV)
    reserved0 = torch.cuda.memory_reserved(DEV)
    a = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16)
    c = a @ b
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info(DEV)
    reserved1 = torch.cuda.memory_reserved(DEV)
    del a, b, c
    torch.cuda.empty_cache()
    return {"non_torch_growth_bytes": (free0 - free1) - (reserved1 - reserved0)}


def _ordered_tensors(adapter, ctx):
    """Tensors in the order vLLM's model constructor creates them: embedding, then each layer's
    modules, then the final norm, LM head and rotary cache."""
    from vmemplan.core.units import dtype_bytes

    tensors = adapter.weight_tensors(ctx)
    layers = max((t.count for t in tensors if t.kind in ("linear", "expert")), default=0)
    pre, per_layer, post = [], [], []
    for t in tensors:
        if t.kind == "embedding":
            pre.append((t, 1))
        elif t.kind in ("lm_head", "buffer") or (t.count == 1 and t.kind == "norm"):
            post.append((t, 1))
        else:
            per = t.count // layers if layers and t.count % layers == 0 else t.count
            per_layer.append((t, per))
    order = [(t, n) for t, n in pre]
    for _ in range(layers):
        order += per_layer
    order += post
    width = dtype_bytes(ctx.model_dtype)
    return [(t, n, dtype_bytes(t.dtype) if t.dtype else width) for t, n in order]


def weights(cases: list[dict]) -> list[dict]:
    from vmemplan.laws import weights as wl
    from vmemplan.model_config import ModelConfig
    from vmemplan.core.graph import GraphContext
    from vmemplan.models.dense import LlamaLike, Qwen2, Qwen3

    classes = {"Qwen2ForCausalLM": Qwen2, "Qwen3ForCausalLM": Qwen3, "LlamaForCausalLM": LlamaLike}
    out = []
    for case in cases:
        cfg = json.loads((ROOT / case["config"]).read_text())
        mc = ModelConfig.from_dict(cfg)
        adapter = classes[mc.architecture](mc)
        ctx = GraphContext(tensor_parallel_size=case.get("tp", 1), model_dtype="bfloat16")
        law = wl.weight_bytes_per_rank(adapter.weight_tensors(ctx), model_dtype="bfloat16").total_bytes
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated(DEV)
        keep = []
        plain = 0
        for t, n, nbytes in _ordered_tensors(adapter, ctx):
            for _ in range(n):
                keep.append(torch.empty(t.rows * t.cols * nbytes, dtype=torch.uint8, device=DEV))
                plain += t.rows * t.cols * nbytes
        torch.cuda.synchronize()
        measured = torch.cuda.memory_allocated(DEV) - before
        rounded = None
        if hasattr(wl, "cuda_allocated_bytes"):
            rounded = sum(wl.cuda_allocated_bytes(t.rows * t.cols * nb) * n for t, n, nb in _ordered_tensors(adapter, ctx))
        del keep
        torch.cuda.empty_cache()
        out.append({**case, "measured_allocated_bytes": measured, "plain_sum_bytes": plain,
                    "law_bytes": law, "allocator_rounded_bytes": rounded,
                    "measured_gib_4": round(measured / GIB, 4)})
    return out


def _sample_sort_path(logits: torch.Tensor, k: int, p: float) -> torch.Tensor:
    # fp32 logits, a full ascending sort, top-k by threshold, top-p through a cumulative sum
    # of softmax, scatter back to vocabulary order, then the exponential race.
    logits = logits.float()
    sorted_vals, sorted_idx = logits.sort(dim=-1, descending=False)
    kth = sorted_vals.gather(-1, (sorted_vals.size(-1) - k) * torch.ones_like(sorted_idx[:, :1]))
    sorted_vals.masked_fill_(sorted_vals < kth, float("-inf"))
    probs = sorted_vals.softmax(dim=-1)
    cum = torch.cumsum(probs, dim=-1, out=probs)
    mask = cum <= 1 - p
    mask[:, -1] = False
    sorted_vals.masked_fill_(mask, float("-inf"))
    logits = sorted_vals.scatter(dim=-1, index=sorted_idx, src=sorted_vals)
    probs = logits.softmax(dim=-1, dtype=torch.float32)
    q = torch.empty_like(probs).exponential_()
    return probs.div_(q).argmax(dim=-1)


def sampler(shapes: list[tuple[int, int]]) -> list[dict]:
    out = []
    for rows, vocab in shapes:
        torch.cuda.empty_cache()
        logits = torch.randn(rows, vocab, device=DEV, dtype=torch.bfloat16)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(DEV)
        base = torch.cuda.memory_allocated(DEV)
        _sample_sort_path(logits, k=vocab - 1, p=0.9)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated(DEV) - base
        del logits
        out.append({"rows": rows, "vocab": vocab, "peak_bytes": peak,
                    "fp32_copies": round(peak / (rows * vocab * 4), 3)})
    return out


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(var + 1e-6)).to(x.dtype) * w


def forward(cases: list[dict]) -> list[dict]:
    out = []
    for c in cases:
        h, inter, q, kv, tokens = c["hidden"], c["intermediate"], c["q_dim"], c["kv_dim"], c["tokens"]
        bf = torch.bfloat16
        w_qkv = torch.randn(q + 2 * kv, h, device=DEV, dtype=bf) * 0.02
        w_o = torch.randn(h, q, device=DEV, dtype=bf) * 0.02
        w_gu = torch.randn(2 * inter, h, device=DEV, dtype=bf) * 0.02
        w_d = torch.randn(h, inter, device=DEV, dtype=bf) * 0.02
        n1 = torch.ones(h, device=DEV, dtype=bf)
        n2 = torch.ones(h, device=DEV, dtype=bf)
        x = torch.randn(tokens, h, device=DEV, dtype=bf)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(DEV)
        base = torch.cuda.memory_allocated(DEV)
        with torch.inference_mode():
            residual = x
            for _ in range(2):
                hs = _rms(residual, n1)
                qkv = hs @ w_qkv.t()
                del hs
                attn = torch.empty(tokens, q, device=DEV, dtype=bf)  # no metadata: output left empty
                del qkv
                o = attn @ w_o.t()
                del attn
                residual = residual + o
                del o
                hs = _rms(residual, n2)
                gu = hs @ w_gu.t()
                del hs
                act = torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:]
                del gu
                d = act @ w_d.t()
                del act
                residual = residual + d
                del d
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated(DEV) - base
        out.append({**c, "peak_bytes": peak, "peak_per_token_bytes": peak / tokens,
                    "law_hidden_units": round(peak / (tokens * 2), 1),
                    "law_form": "compare with (3*hidden + 3*intermediate) per token x 2 B"})
        del w_qkv, w_o, w_gu, w_d, x, residual
        torch.cuda.empty_cache()
    return out


def main() -> int:
    t0 = time.time()
    result: dict = {"device": device_and_context()}
    result["cublas"] = cublas_workspace()
    result["weights"] = weights([
        {"name": "Llama-3.1-8B tp1", "config": "registry/models/meta-llama--Llama-3.1-8B.json", "logged_gib": 14.9888},
        {"name": "Qwen2.5-7B-Instruct tp1", "config": "tests/fixtures/configs/dense/Qwen--Qwen2.5-7B-Instruct.json",
         "logged_gib": 14.2488},
        {"name": "Qwen2-7B-Instruct tp2", "config": "tests/fixtures/configs/dense/Qwen--Qwen2-7B-Instruct.json", "tp": 2,
         "logged_gib": 7.1217},
        {"name": "Qwen2.5-3B tp1", "config": "tests/fixtures/configs/dense/Qwen--Qwen2.5-3B.json", "logged_gib": 5.7916},
        {"name": "Qwen2.5-Coder-14B tp1", "config": "tests/fixtures/configs/dense/Qwen--Qwen2.5-Coder-14B-Instruct.json",
         "logged_gib": 27.5681},
        {"name": "Qwen3-32B tp8", "config": "registry/models/Qwen--Qwen3-32B.json", "tp": 8, "logged_gib": 7.6871},
        {"name": "Llama-2-7b tp1", "config": "tests/fixtures/configs/dense/meta-llama--Llama-2-7b-hf.json",
         "logged_gib": 12.5524},
        {"name": "CodeLlama-34b tp1", "config": "tests/fixtures/configs/dense/codellama--CodeLlama-34b-Instruct-hf.json",
         "logged_gib": 62.8571},
    ])
    result["sampler"] = sampler([(256, 152064), (1024, 128256), (256, 128256), (32, 32000)])
    result["forward"] = forward([
        {"name": "Llama-3.1-8B 8192 tok", "hidden": 4096, "intermediate": 14336, "q_dim": 4096, "kv_dim": 1024,
         "tokens": 8192},
        {"name": "Qwen2.5-7B 4096 tok", "hidden": 3584, "intermediate": 18944, "q_dim": 3584, "kv_dim": 512,
         "tokens": 4096},
        {"name": "Qwen2.5-7B 2048 tok", "hidden": 3584, "intermediate": 18944, "q_dim": 3584, "kv_dim": 512,
         "tokens": 2048},
    ])
    result["seconds"] = round(time.time() - t0, 1)
    text = json.dumps(result, indent=2)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
