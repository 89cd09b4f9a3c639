"""GLM-5.3-Flash (vLLM 0.33.0 vllm/models/glm5next/, ``Glm5NextForCausalLM``): worked examples
by hand for the pieces the oracle fixtures check only in aggregate."""

from __future__ import annotations

import math

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import CircularBufferSpec, MambaSpec, MLAAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.glm5next import flashkda_workspace_bytes, sparse_topk_width, tail_ring_tokens

GLM53 = {
    "architectures": ["Glm5NextForCausalLM"], "model_type": "glm5_next_text", "torch_dtype": "bfloat16",
    "vocab_size": 1024, "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8, "n_shared_experts": 1,
    "n_routed_experts": 4, "num_experts_per_tok": 2, "kv_lora_rank": 512, "q_lora_rank": 128,
    "qk_rope_head_dim": 0, "qk_nope_head_dim": 64, "v_head_dim": 64, "max_position_embeddings": 4096,
    "layer_types": ["linear_attention"] * 3 + ["indexed_attention"], "mlp_layer_types": ["dense"] + ["sparse"] * 3,
    "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 32, "index_kpool": 16,
    "linear_head_dim": 128, "linear_num_heads": 8, "linear_conv_kernel_dim": 4, "linear_lower_bound": -5.0,
    "hc_mult": 4, "mhc": True, "mla_use_nope": True, "topk_method": "noaux_tc",
}


def test_helpers_by_hand() -> None:
    assert sparse_topk_width(2048, 16) == 2176  # round_up(2048 + 15, 128)
    assert tail_ring_tokens(16, 0) == 16 and tail_ring_tokens(16, 3) == 32 and tail_ring_tokens(4, 9) == 16
    # (cdiv(8192, 16) + 1024) x 64 heads x 13,824 B
    assert flashkda_workspace_bytes(8192, 64, 1024) == 1536 * 64 * 13824 == 1358954496


def test_specs_and_tensors_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(GLM53))
    ctx = GraphContext(tensor_parallel_size=2, max_model_len=4096, block_size=1024)
    # KDA state at TP 2: conv [3, 3·8·128/2] bf16 + recurrent [4, 128, 128] fp32 = 9,216 + 262,144 B;
    # one 1,024-B latent token a row, kernel alignment lcm(128, FlashKDA 16) = 128 -> 3 x 128 = 384
    # tokens, then rounded up to the backends' lcm(64, indexer 16 x 32) = 512
    assert a.resolve_block_size(ctx, user_block_size=None, default=16) == 512
    ctx = GraphContext(tensor_parallel_size=2, max_model_len=4096, block_size=512)
    specs = a.kv_cache_specs(ctx)
    kda = specs["model.layers.0.self_attn"]
    assert isinstance(kda, MambaSpec) and kda.num_prefill_checkpoint_blocks == 1
    assert kda.page_size_bytes == 512 * 1024  # padded to the attention page
    idx = specs["model.layers.3.self_attn.indexer.k_cache"]
    assert isinstance(idx, MLAAttentionSpec) and idx.page_size_bytes == 512 // 16 * 132
    # MultipleOf(1024) at a 512-token block: gcd = 512 = the block, so no stride alignment
    assert idx.block_stride_alignment is None
    tail = specs["model.layers.3.self_attn.indexer.tail_cache"]
    assert isinstance(tail, CircularBufferSpec) and tail.page_size_bytes == 16 * 2 * 128 * 2
    # the 4,608-token block of the oracle fixtures: kernel block gcd(1024, 4608) = 512 -> 32 x 132 B,
    # and vLLM's block-outermost stride round_up(9,513,216, lcm(1024, 4224)) = 9,529,344 B
    big = a.kv_cache_specs(GraphContext(max_model_len=4096, block_size=4608))
    assert big["model.layers.3.self_attn.indexer.k_cache"].block_stride_alignment == 4224
    assert -(-9513216 // math.lcm(1024, 4224)) * math.lcm(1024, 4224) == 9529344
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    # [q, k, v (1024/2 each), beta (8/2), f_a, g_a (128 each, replicated)], never quantized
    w = ts["self_attn.in_proj_qkvbfg_a"]
    assert (w.rows, w.cols, w.count, w.quantizable) == (3 * 512 + 4 + 256, 256, 3, False)
    assert ts["hc_attn_fn+hc_ffn_fn"].rows == 24 and ts["hc_attn_fn+hc_ffn_fn"].cols == 1024
    assert ts["model.topk_indices_buffer"].cols == 2176
    assert ts["self_attn.indexer.index_kpool_compress_ape"].rows == 16
    assert ts["mlp.gate_up_proj"].count == 1 and ts["mlp.gate"].count == 3


def test_flashkda_buffers_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(GLM53))
    ctx = GraphContext(tensor_parallel_size=2, max_num_seqs=16, max_num_batched_tokens=256)
    # two fp32 states [16, 4, 128, 128] = 4 MiB each, workspace (16 + 16) x 4 x 13,824 = 1,769,472 B,
    # bf16 output [256, 4, 128] = 262,144 B (all multiples of 256)
    assert a.flashkda_buffer_bytes(ctx) == 2 * 4194304 + 1769472 + 262144
    assert a.flashkda_buffer_bytes(GraphContext(sm_major=8)) == 0  # Triton prefill off SM9x/10x/12x
    assert a.extra_activation_bytes(ctx, max_num_batched_tokens=256, max_num_seqs=16)[0] == 0
