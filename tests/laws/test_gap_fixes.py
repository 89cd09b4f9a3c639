"""Worked examples for oracle weight gaps closed in the families vmemplan already plans.

Each figure is computed by hand from the config and the vLLM 0.33.0 code it mirrors.
"""

from __future__ import annotations

from vmemplan.api import resolve_request
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.pipeline import graph_context


def _tensors(model: str, tp: int, max_model_len: int = 32768, **kw):
    req = resolve_request(model=model, gpu="h200", tensor_parallel_size=tp, max_model_len=max_model_len, **kw)
    return req, {t.name: t for t in req.adapter.weight_tensors(graph_context(req))}


def _bytes(req, t) -> int:
    return weight_bytes_per_rank([t], model_dtype="bfloat16", scheme=req.quant_scheme).unrounded_bytes


# -- DeepSeek-V4 (vllm/models/deepseek_v4/) --------------------------------------------------
def test_v4_flash_tp8_buffers_and_small_tensors():
    """DeepSeek-V4-Flash at TP 8 (43 layers: 2 window-only, 21 ratio 4, 20 ratio 128; 3 hash layers):

    * two fp32 cos/sin caches (plain rope_theta 10,000 on the window layers, YaRN
      compress_rope_theta 160,000 on the compressed ones), each 65,536 x 16 = 1,048,576 rows x 64:
      2 x 1,048,576 x 64 x 4 = 536,870,912 B (common/rope.py, DeepseekV4ScalingRotaryEmbedding);
    * topk_indices_buffer [8192, 512] int32 = 16,777,216 B (DeepseekV4Model.__init__);
    * attn_sink padded to FlashMLA's 64 heads (8 local heads): 43 x 64 x 4 = 11,008 B;
    * tid2eid [129,280, 6] int32 on the 3 hash layers = 9,308,160 B; the correction bias on the
      other 40 only: 40 x 256 x 4 = 40,960 B;
    * compressor ape: 21 x [4, 1024] + 20 x [128, 512] fp32 = 344,064 + 5,242,880 B;
    * the indexer's compressor: 21 x ([512, 4096] bf16 + [128] bf16 + [4, 256] fp32)
      = 88,080,384 + 5,376 + 86,016 B;
    * fused_wqa_wkv's block scales in e8m0 (expert_dtype fp4): [12, 32] x 1 B = 384 B a layer.
    """
    req, ts = _tensors("deepseek-ai/DeepSeek-V4-Flash", 8, kv_cache_dtype="fp8")
    rope = [t for n, t in ts.items() if n.startswith("attn.rotary_emb.cos_sin_cache")]
    assert sum(_bytes(req, t) for t in rope) == 2 * 1_048_576 * 64 * 4 == 536_870_912
    assert _bytes(req, ts["model.topk_indices_buffer"]) == 16_777_216
    assert _bytes(req, ts["attn.attn_sink"]) == 43 * 64 * 4
    assert _bytes(req, ts["ffn.gate.tid2eid"]) == 129_280 * 6 * 4 * 3 == 9_308_160
    assert _bytes(req, ts["ffn.gate.bias"]) == 40 * 256 * 4
    assert _bytes(req, ts["attn.compressor.ape[ratio 4]"]) == 21 * 4 * 1024 * 4
    assert _bytes(req, ts["attn.compressor.ape[ratio 128]"]) == 20 * 128 * 512 * 4
    assert _bytes(req, ts["attn.indexer.compressor.fused_wkv_wgate"]) == 21 * 512 * 4096 * 2
    assert _bytes(req, ts["attn.indexer.compressor.ape"]) == 21 * 4 * 256 * 4
    parts = dict((n, b) for n, b, _ in req.quant_scheme.tensor_parts(ts["attn.fused_wqa_wkv"], 2))
    assert parts["weight_scale_inv"] == 12 * 32 * 1


# -- block-FP8 MoE scales on vLLM's refined grid (fused_moe/oracle/fp8.py) -------------------
def test_fp8_moe_scales_refined_to_64_when_the_shard_splits_a_block():
    """Qwen3-235B-A22B-FP8 at TP 8: moe_intermediate_size 1536 / 8 = 192 per rank, not a
    multiple of the checkpoint's 128 block, so vLLM's default (auto) MoE backend refines the scale
    grid to gcd(128, 128, 192, 4096) = 64 (refine_fp8_moe_block_shape; Fp8MoEMethod.create_weights):
    w13_weight_scale_inv [128, 2 x 192/64 = 6, 4096/64 = 64] and w2_weight_scale_inv
    [128, 64, 3] fp32 per layer -- (6 x 64 + 64 x 3) x 128 x 4 = 294,912 B, where the
    checkpoint's 128 grid gives [128, 4, 32] + [128, 32, 2] = 98,304 B."""
    req, ts = _tensors("Qwen/Qwen3-235B-A22B-FP8", 8)
    layers = int(req.config.text["num_hidden_layers"])
    scales = 0
    for name in ("mlp.experts.w13_weight", "mlp.experts.w2_weight"):
        parts = req.quant_scheme.tensor_parts(ts[name], 2)
        scales += sum(b * n for p, b, n in parts if p == "weight_scale_inv")
    assert scales == layers * (6 * 64 + 64 * 3) * 128 * 4


# -- GPTQ on SM 9.0: Machete keeps qzeros (quantization/auto_gptq.py) -------------------------
def test_gptq_machete_keeps_qzeros_on_sm90():
    """TheBloke/Llama-2-7B-GPTQ (4-bit, group 128, sym) at TP 1 on an H200: every linear goes
    to Machete (K % 64, N % 128), which keeps AutoGPTQLinearMethod's int32 qzeros
    [K/128, N/8].  Per layer: qkv [4096 -> 12288], o [4096 -> 4096], gate_up [4096 -> 22016],
    down [11008 -> 4096]: qzeros = 32 x (12288 + 4096 + 22016) / 8 x 4 + 86 x 4096 / 8 x 4
    = 614,400 + 176,128 = 790,528 B; 32 layers = 25,296,896 B (the oracle's figure)."""
    req, ts = _tensors("TheBloke/Llama-2-7B-GPTQ", 1, max_model_len=4096)
    qzeros = 0
    for t in ts.values():
        parts = req.quant_scheme.tensor_parts(t, 2) if t.quantizable else None
        qzeros += sum(b * n for p, b, n in parts or [] if p == "qzeros")
    assert qzeros == 32 * ((12288 + 4096 + 22016) // 8 * 32 * 4 + 4096 // 8 * 86 * 4) == 25_296_896


# -- the four fp32 attention scale scalars (attention.py::set_default_quant_scales) ----------
def test_attention_scales_on_gemma_and_mamba_hybrids():
    """16 B (four fp32 scalars) per Attention layer: gemma-2-9b 42 layers = 672 B; gemma-3-1b
    26 = 416 B; Jamba-v0.1 4 attention layers (period 8 of 32) = 64 B."""
    for model, want, ml in (("google/gemma-2-9b", 42 * 16, 8192), ("google/gemma-3-1b-it", 26 * 16, 32768),
                            ("ai21labs/Jamba-v0.1", 4 * 16, 32768)):
        req, ts = _tensors(model, 1, max_model_len=ml)
        got = sum(_bytes(req, t) for n, t in ts.items() if n.endswith("k/v/q/prob_scale"))
        assert got == want, model
