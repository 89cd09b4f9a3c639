"""Speculative decoding: --speculative-config, drafter weights and KV, tokens in flight.
Expected numbers are worked by hand in the comments (vLLM 0.33.0 unless a release is named)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import UsageError
from vmemplan.laws import speculative as sp
from vmemplan.models import drafters
from vmemplan.request.flags import parse_speculative_config
from vmemplan.laws.kv_pool import PoolContext, plan_pool
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.core.graph import GraphContext

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30


def llama8b() -> ModelConfig:
    return ModelConfig.from_dict(json.loads((ROOT / "registry/models/meta-llama--Llama-3.1-8B.json").read_text()))


# ---------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------


def test_parse_explicit_eagle3():
    s = parse_speculative_config('{"method": "eagle3", "model": "org/head", "num_speculative_tokens": 3}')
    assert (s.method, s.num_speculative_tokens, s.model) == ("eagle3", 3, "org/head")
    assert s.adds_kv and not s.uses_draft_model


@pytest.mark.parametrize("model, method", [
    ("yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "eagle"),   # "eagle-" in the name
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3"),  # "eagle3" in the name
    ("meta-llama/Llama-3.2-1B-Instruct", "draft_model"),
    ("ngram", "ngram"),
])
def test_method_inferred_from_model(model, method):
    assert parse_speculative_config({"model": model, "num_speculative_tokens": 2}).method == method


def test_parse_ngram_defaults_and_mtp_alias():
    s = parse_speculative_config('{"method": "ngram", "num_speculative_tokens": 4}')
    assert (s.prompt_lookup_min, s.prompt_lookup_max) == (5, 5) and not s.adds_kv
    s = parse_speculative_config({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3})
    assert (s.prompt_lookup_min, s.prompt_lookup_max) == (3, 3)
    # deepseek_mtp is an alias of mtp; k defaults to the target's nextn layers
    s = parse_speculative_config({"method": "deepseek_mtp"}, target_num_nextn_layers=1)
    assert (s.method, s.num_speculative_tokens) == ("mtp", 1)


@pytest.mark.parametrize("bad", [
    "{not json", "[1]", '{"method": "eagle"}', '{"method": "eagle", "num_speculative_tokens": 2}',
    '{"method": "ngram", "num_speculative_tokens": 0}', '{"method": "warp", "num_speculative_tokens": 1}',
    '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4, "prompt_lookup_max": 2}',
    '{"method": "ngram", "num_speculative_tokens": 2, "bogus": 1}',
])
def test_parse_rejects(bad):
    with pytest.raises(UsageError):
        parse_speculative_config(bad)


def test_mtp_k_must_divide():
    with pytest.raises(UsageError):  # 3 > 2 nextn layers and 3 % 2 != 0
        parse_speculative_config({"method": "mtp", "num_speculative_tokens": 3}, target_num_nextn_layers=2)


# ---------------------------------------------------------------------------------------
# tokens in flight
# ---------------------------------------------------------------------------------------


def test_uniform_decode_query_len():
    assert sp.uniform_decode_query_len(0) == 1
    assert sp.uniform_decode_query_len(3) == 4


def test_new_slots_for_drafting():
    mk = lambda **kw: sp.SpeculativeConfig(**{"method": "eagle3", "num_speculative_tokens": 4, **kw})  # noqa: E731
    assert sp.max_num_new_slots_for_drafting(None) == 0
    assert sp.max_num_new_slots_for_drafting(mk()) == 0                                   # EAGLE-3
    assert sp.max_num_new_slots_for_drafting(mk(parallel_drafting=True)) == 3             # P-EAGLE: k - 1
    assert sp.max_num_new_slots_for_drafting(mk(method="draft_model")) == 1               # draft model
    assert sp.max_num_new_slots_for_drafting(mk(method="draft_model", parallel_drafting=True)) == 4  # PARD: k
    assert sp.max_num_new_slots_for_drafting(mk(method="dspark", parallel_drafting=True)) == 0
    assert sp.max_num_new_slots_for_drafting(mk(method="mtp")) == 0


def test_max_num_scheduled_tokens_by_release():
    draft = sp.SpeculativeConfig("draft_model", 4, model="x")
    peagle = sp.SpeculativeConfig("eagle3", 4, model="x", parallel_drafting=True)
    # 0.24.0: 8192 - 1 * 256 = 7936 ; P-EAGLE: 8192 - 3 * 256 = 7424
    assert sp.max_num_scheduled_tokens(max_num_batched_tokens=8192, max_num_seqs=256, spec=draft,
                                       vllm_version="0.24.0") == 7936
    assert sp.max_num_scheduled_tokens(max_num_batched_tokens=8192, max_num_seqs=256, spec=peagle,
                                       vllm_version="0.24.0") == 7424
    # 0.28+ (0.33.0): the whole budget; slots are charged per scheduled request instead
    assert sp.max_num_scheduled_tokens(max_num_batched_tokens=8192, max_num_seqs=256, spec=draft,
                                       vllm_version="0.33.0") == 8192
    assert sp.max_num_scheduled_tokens(max_num_batched_tokens=8192, max_num_seqs=256, spec=None) == 8192
    # 0.24.0 with 256 seqs and mnbt 256: 256 - 256 = 0 -> vLLM refuses
    with pytest.raises(UsageError):
        sp.max_num_scheduled_tokens(max_num_batched_tokens=256, max_num_seqs=256, spec=draft, vllm_version="0.24.0")


def test_capture_sizes_with_speculative_tokens():
    from vmemplan.registry import load_registry

    rules, _ = load_registry().rules("0.33.0")
    cg = rules.cuda_graphs
    base = cg.capture_sizes(max_num_seqs=256, max_num_batched_tokens=8192)
    k2 = cg.capture_sizes(max_num_seqs=256, max_num_batched_tokens=8192, num_speculative_tokens=2)
    # max size: min(256 * (1 + k) * 2, 512) = 512 either way
    assert max(base) == max(k2) == 512
    # uniform decode sizes n * 3 for n in 1, 2, 4, 8, ..., 88 ...: 3, 6, 12 and 264 (= 88 * 3) are new
    assert {3, 6, 12, 264} <= set(k2)
    assert not {3, 6, 12, 264} & set(base)
    # the decode query length grows the default max when max_num_seqs is small:
    # 16 seqs: min(16 * 1 * 2, 512) = 32 ; with k = 3: min(16 * 4 * 2, 512) = 128
    assert cg.max_capture_size(max_num_seqs=16, max_num_batched_tokens=8192) == 32
    assert cg.max_capture_size(max_num_seqs=16, max_num_batched_tokens=8192, num_speculative_tokens=3) == 128


# ---------------------------------------------------------------------------------------
# drafter weights and KV
# ---------------------------------------------------------------------------------------


def test_eagle_head_adds_one_layer_to_the_pool():
    # Llama-3.1-8B + a 1-layer EAGLE head: 33 full-attention layers of
    # 16 tokens * 8 KV heads * 128 * 2 (K, V) * 2 B = 65,536 B per block per layer
    # num_blocks = avail // 65,536 // 33 ; avail 20 GiB: 21,474,836,480 // 2,162,688 = 9929
    cfg = llama8b()
    spec = sp.SpeculativeConfig("eagle", 3, model="yuhuili/EAGLE-LLaMA3.1-Instruct-8B")
    ctx = GraphContext()
    specs = {**adapter_for(cfg).kv_cache_specs(ctx), **drafters.drafter_kv_specs(spec, cfg, ctx)}
    assert len(specs) == 33 and "model.layers.32.self_attn.attn" in specs
    pool = plan_pool(specs, 20 * GIB, PoolContext(max_model_len=8192, max_num_batched_tokens=8192,
                                                  num_speculative_tokens=3))
    assert pool.num_blocks == 20 * GIB // 65536 // 33 == 9929
    no_draft = plan_pool(adapter_for(cfg).kv_cache_specs(ctx), 20 * GIB,
                         PoolContext(max_model_len=8192, max_num_batched_tokens=8192))
    assert no_draft.num_blocks == 20 * GIB // 65536 // 32 == 10240


def test_eagle_head_weights():
    cfg = llama8b()
    spec = sp.SpeculativeConfig("eagle", 3, model="x")
    t = drafters.drafter_weight_tensors(spec, cfg, GraphContext())
    # one Llama-3.1-8B layer: qkv 6144*4096 = 25,165,824 ; o 16,777,216 ; gate_up 28672*4096 = 117,440,512 ;
    # down 58,720,256 ; one norm (the first layer has no input_layernorm) 4096 -> 218,108,... :
    # 25,165,824 + 16,777,216 + 117,440,512 + 58,720,256 + 4096 = 218,107,904
    # fc Linear(8192 -> 4096) = 33,554,432 ; embedding and head shared with the target
    assert sum(x.elements for x in t) == 218_107_904 + 33_554_432
    assert weight_bytes_per_rank(t, model_dtype="bfloat16").total_bytes == 2 * 251_662_336
    own = drafters.drafter_weight_tensors(spec, cfg, GraphContext(), share_embeddings=False)
    assert sum(x.elements for x in own) - sum(x.elements for x in t) == 128256 * 4096


def test_eagle3_head_weights_with_draft_vocab():
    cfg = llama8b()
    draft = ModelConfig.from_dict({
        "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "num_hidden_layers": 1,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        "draft_vocab_size": 32000,
    })
    spec = sp.SpeculativeConfig("eagle3", 3, model="x")
    t = drafters.drafter_weight_tensors(spec, cfg, GraphContext(), draft)
    # first-layer qkv reads 2h: 6144 * 8192 = 50,331,648 ; o 16,777,216 ; gate_up 117,440,512 ; down 58,720,256
    # norms: input, post-attention and hidden_norm = 3 * 4096 ; fc 4096 x (3 * 4096) = 50,331,648 ;
    # final norm 4096 ; lm_head 32000 x 4096 = 131,072,000
    params = 50_331_648 + 16_777_216 + 117_440_512 + 58_720_256 + 3 * 4096 + 50_331_648 + 4096 + 131_072_000
    assert sum(x.elements for x in t if x.kind != "buffer") == params
    # + the draft->target id map: 32000 int64 = 256,000 B
    assert weight_bytes_per_rank(t, model_dtype="bfloat16").total_bytes == 2 * params + 256_000


def test_ngram_and_mtp_add_nothing_here():
    cfg = llama8b()
    for spec in (sp.SpeculativeConfig("ngram", 4), sp.SpeculativeConfig("mtp", 1)):
        assert drafters.drafter_weight_tensors(spec, cfg, GraphContext()) == []
        assert drafters.drafter_kv_specs(spec, cfg, GraphContext()) == {}


def test_drafter_lives_on_the_last_pp_stage_only():
    cfg = llama8b()
    spec = sp.SpeculativeConfig("eagle", 1, model="x")
    first = GraphContext(pipeline_parallel_size=2, pipeline_rank=0)
    last = GraphContext(pipeline_parallel_size=2, pipeline_rank=1)
    assert drafters.drafter_kv_specs(spec, cfg, first) == {}
    assert len(drafters.drafter_kv_specs(spec, cfg, last)) == 1


def test_draft_model_uses_its_own_adapter():
    target = llama8b()
    draft = ModelConfig.from_dict(json.loads((ROOT / "registry/models/meta-llama--Llama-3.2-1B-Instruct.json").read_text()))
    spec = sp.SpeculativeConfig("draft_model", 4, model="meta-llama/Llama-3.2-1B-Instruct")
    ctx = GraphContext()
    t = drafters.drafter_weight_tensors(spec, target, ctx, draft)
    assert sum(x.elements for x in t if x.kind != "buffer") == adapter_for(draft).total_params()
    kv = drafters.drafter_kv_specs(spec, target, ctx, draft)
    assert len(kv) == draft.num_hidden_layers and all(k.startswith("draft_model.") for k in kv)
    with pytest.raises(UsageError):  # no drafter config at hand
        drafters.drafter_weight_tensors(spec, target, ctx)


@given(k=st.integers(1, 8), tp=st.sampled_from([1, 2, 4, 8]))
def test_eagle_kv_is_one_target_layer(k, tp):
    cfg = llama8b()
    ctx = GraphContext(tensor_parallel_size=tp)
    main = adapter_for(cfg).kv_cache_specs(ctx)
    extra = drafters.drafter_kv_specs(sp.SpeculativeConfig("eagle", k, model="x"), cfg, ctx)
    (spec,) = extra.values()
    assert spec.page_size_bytes == next(iter(main.values())).page_size_bytes


def test_plan_end_to_end_eagle_and_ngram():
    from vmemplan.api import plan

    kw = dict(gpu="h100", max_model_len=8192, kv_cache_memory="20G")
    base = plan("meta-llama/Llama-3.1-8B", **kw)
    eagle = plan("meta-llama/Llama-3.1-8B", speculative_config=json.dumps(
        {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}), **kw)
    ngram = plan("meta-llama/Llama-3.1-8B", speculative_config='{"method": "ngram", "num_speculative_tokens": 4}',
                 **kw)
    assert (base.kv_cache.num_blocks, eagle.kv_cache.num_blocks, ngram.kv_cache.num_blocks) == (10240, 9929, 10240)
    # the head's 503,324,672 B (one layer + fc, see above) join "Model loading took"
    assert eagle.per_rank.weights_bytes - base.per_rank.weights_bytes == pytest.approx(503_324_672, rel=0.01)
    assert ngram.per_rank.weights_bytes == base.per_rank.weights_bytes
