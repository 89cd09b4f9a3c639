from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.core.errors import RegistryInvalid, UsageError
from vmemplan.sim.scheduler import SimConfig, simulate
from vmemplan.sim.speed import GpuSpeed, SpeedModelInputs, allreduce_time_s, attach_timing, compute_time_s, decode_time_s, latency_table, memory_time_s, prefill_time_s, step_time_s
from vmemplan.registry_schema import SpeedConstants, parse_speed_constants
from vmemplan.sim.traffic import RequestSpec, Traffic

REGISTRY = Path(__file__).resolve().parents[2] / "registry" / "speed.yaml"

# The seed's worked example: H100 SXM peaks 989 TFLOP/s BF16 dense and 3.35 TB/s;
# Llama-3.1-8B: 8.03e9 parameters in BF16, 32 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes
# = 131,072 bytes of KV per token; hidden 4096.
H100 = GpuSpeed(bandwidth_bytes_per_s=3.35e12, bf16_dense_flops=989e12)
LLAMA8B = SpeedModelInputs(
    active_params=8.03e9,
    weight_bytes_per_rank=16_060_000_000,  # 8.03e9 x 2 bytes
    kv_bytes_per_token_per_rank=32 * 8 * 128 * 2 * 2,
    hidden_size=4096,
    num_layers=32,
)


@pytest.fixture(scope="module")
def consts() -> SpeedConstants:
    return parse_speed_constants(yaml.safe_load(REGISTRY.read_text()))


def test_registry_file_parses_with_the_seed_efficiencies(consts):
    assert consts.efficiency_compute == 0.6
    assert consts.efficiency_bandwidth == 0.6
    assert set(consts.sources) == {
        "efficiency_compute", "efficiency_bandwidth", "efficiency_interconnect",
        "allreduce_latency_s", "default_interconnect_bytes_per_s", "allreduce_bytes_per_element",
    }
    assert all("estimate" in text.lower() or "datasheet" in text.lower() or "exact" in text.lower()
               for text in consts.sources.values())


def test_seed_ttft_for_1000_tokens(consts):
    # compute: 2 x 8.03e9 x 1000 = 1.606e13 FLOP / (989e12 x 0.6 = 5.934e14 FLOP/s) = 0.027064 s
    # memory:  (16.06e9 + 1000 x 131072 = 16.191e9 B) / (3.35e12 x 0.6 = 2.01e12 B/s) = 0.008055 s
    # the step takes the larger: ~27.06 ms ("~27 ms" in the seed)
    t = prefill_time_s(1000, LLAMA8B, H100, consts)
    assert t == pytest.approx(0.027064, rel=1e-4)
    assert round(t * 1e3) == 27


def test_seed_itl_at_1000_tokens(consts):
    # memory: (16.06e9 + 1000 x 131072) / 2.01e12 = 16.191072e9 / 2.01e12 = 8.0553 ms
    # compute for one token: 1.606e10 / 5.934e14 = 0.027 ms, far smaller
    t = decode_time_s(1000, LLAMA8B, H100, consts)
    assert t == pytest.approx(8.0553e-3, rel=1e-4)
    assert round(t * 1e3, 1) == 8.1


def test_seed_throughput_table(consts):
    # one user at 1,500 context: (16.06e9 + 1500 x 131072) / 2.01e12 = 8.0878 ms -> 123.6 tok/s
    # 256 users: (16.06e9 + 256 x 1500 x 131072 = 66.393e9) / 2.01e12 = 33.031 ms
    #   compute 2 x 8.03e9 x 256 / 5.934e14 = 6.93 ms is smaller -> 256 / 0.033031 = 7750 tok/s
    rows = latency_table([1, 256], 1500, LLAMA8B, H100, consts)
    assert rows[0].batch == 1 and rows[0].itl_ms == pytest.approx(8.0878, rel=1e-4)
    assert rows[0].throughput_tokens_per_s == pytest.approx(123.64, rel=1e-3)
    assert rows[1].itl_ms == pytest.approx(33.031, rel=1e-4)
    assert rows[1].throughput_tokens_per_s == pytest.approx(7750, rel=1e-3)


def test_mixed_step_is_the_max_not_the_sum(consts):
    # 8,192 prefill tokens + 60 decodes: compute 2 x 8.03e9 x 8252 / 5.934e14 = 0.22334 s;
    # memory with 100,000 KV tokens: (16.06e9 + 1.31072e10) / 2.01e12 = 0.014511 s -> max = compute
    t = step_time_s(8192, 60, 100_000, LLAMA8B, H100, consts)
    assert t == pytest.approx(2 * 8.03e9 * 8252 / (989e12 * 0.6), rel=1e-9)
    assert step_time_s(0, 0, 0, LLAMA8B, H100, consts) == 0.0


def test_chunked_ttft_sums_its_steps(consts):
    # 16,000 tokens with an 8,192 cap: chunks 8192 then 7808; both compute-bound
    # -> 2 x 8.03e9 x 16000 / 5.934e14 = 0.43303 s (compute is linear, so chunking adds nothing here)
    t = prefill_time_s(16_000, LLAMA8B, H100, consts, max_num_batched_tokens=8192)
    assert t == pytest.approx(2 * 8.03e9 * 16000 / 5.934e14, rel=1e-9)


def test_tensor_parallel_divides_and_adds_allreduce(consts):
    # TP 2 over NVLink 900 GB/s bidirectional -> 450e9 B/s each way (efficiency 0.6 -> 270e9 B/s).
    gpu = GpuSpeed.from_registry_figures(3.35, 989.0, 1978.9, 900)
    assert gpu.interconnect_bytes_per_s == 450e9 and gpu.bf16_dense_flops == 989e12
    tp2 = SpeedModelInputs(8.03e9, 8_030_000_000, 65_536, 4096, 32, tensor_parallel_size=2)
    # one decode token: payload 1 x 4096 x 2 = 8192 B; ring factor 2 (2-1)/2 = 1
    # per call 1e-5 + 8192 / 270e9 = 1.0030341e-5 s; 2 calls x 32 layers = 6.4194e-4 s
    ar = allreduce_time_s(1, tp2, gpu, consts)
    assert ar == pytest.approx(64 * (1e-5 + 8192 / 270e9), rel=1e-9)
    # memory per rank: (8.03e9 + 1000 x 65536) / 2.01e12 = 4.0276 ms; plus all-reduce 0.642 ms
    assert decode_time_s(1000, tp2, gpu, consts) == pytest.approx((8.03e9 + 65_536_000) / 2.01e12 + ar, rel=1e-9)
    # compute per rank is halved
    assert compute_time_s(1000, tp2, gpu, consts) == pytest.approx(compute_time_s(1000, LLAMA8B, gpu, consts) / 2)
    # no link figure: the registry default (32e9 B/s each way) is used
    slow = GpuSpeed(3.35e12, 989e12)
    assert allreduce_time_s(1, tp2, slow, consts) == pytest.approx(64 * (1e-5 + 8192 / (32e9 * 0.6)), rel=1e-9)
    assert allreduce_time_s(100, LLAMA8B, gpu, consts) == 0.0  # a single rank talks to nobody


def test_fp8_compute_needs_an_fp8_figure(consts):
    fp8_model = SpeedModelInputs(8.03e9, 8_030_000_000, 65_536, 4096, 32, compute_dtype="fp8")
    with pytest.raises(UsageError):
        compute_time_s(10, fp8_model, H100, consts)
    gpu = GpuSpeed(3.35e12, 989e12, fp8_dense_flops=1978e12)
    assert compute_time_s(1000, fp8_model, gpu, consts) == pytest.approx(2 * 8.03e9 * 1000 / (1978e12 * 0.6))


@given(st.integers(1, 512), st.integers(1, 512), st.integers(0, 10**6))
@settings(max_examples=100, deadline=None)
def test_step_time_is_monotonic(decodes, more, kv, ):
    c = parse_speed_constants(yaml.safe_load(REGISTRY.read_text()))
    a = step_time_s(0, decodes, kv, LLAMA8B, H100, c)
    assert step_time_s(0, decodes + more, kv, LLAMA8B, H100, c) >= a
    assert step_time_s(0, decodes, kv + more, LLAMA8B, H100, c) >= a
    assert a >= memory_time_s(kv, LLAMA8B, H100, c)


def _good() -> dict:
    return yaml.safe_load(REGISTRY.read_text())


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m.update(schema_version=2),
        lambda m: m.update(extra=1),
        lambda m: m.pop("constants"),
        lambda m: m["constants"].pop("efficiency_compute"),
        lambda m: m["constants"]["efficiency_compute"].update(value=1.5),
        lambda m: m["constants"]["efficiency_bandwidth"].update(value=0),
        lambda m: m["constants"]["allreduce_latency_s"].update(source=""),
        lambda m: m["constants"]["allreduce_latency_s"].pop("source"),
        lambda m: m["constants"].update(mystery={"value": 1, "source": "x"}),
        lambda m: m["constants"]["efficiency_compute"].update(value="fast"),
    ],
)
def test_bad_registry_is_refused(mutate):
    m = _good()
    mutate(m)
    with pytest.raises(RegistryInvalid):
        parse_speed_constants(m)
    with pytest.raises(RegistryInvalid):
        parse_speed_constants(["not", "a", "mapping"])


def test_constants_are_frozen(consts):
    with pytest.raises(Exception):
        consts.efficiency_compute = 0.9  # type: ignore[misc]


def test_bad_gpu_and_model_inputs():
    with pytest.raises(UsageError):
        GpuSpeed(0, 989e12)
    with pytest.raises(UsageError):
        GpuSpeed(3.35e12, 989e12, interconnect_bytes_per_s=-1)
    with pytest.raises(UsageError):
        SpeedModelInputs(8e9, 1, 1, 4096, 32, tensor_parallel_size=0)
    with pytest.raises(UsageError):
        SpeedModelInputs(0, 1, 1, 4096, 32)


def test_attach_timing_single_request(consts):
    # 1,000-token prompt, 3 outputs: step 0 prefill (KV read 1000), steps 1 and 2 decode at
    # contexts 1001 and 1002.
    r = simulate(SimConfig(100_000, 16, 8192, 256), [RequestSpec(0, 1000, 3)])
    timed = attach_timing(r, LLAMA8B, H100, consts)
    t0 = 2 * 8.03e9 * 1000 / 5.934e14
    t1 = (16.06e9 + 1001 * 131072) / 2.01e12
    t2 = (16.06e9 + 1002 * 131072) / 2.01e12
    assert timed.step_times_s == pytest.approx((t0, t1, t2), rel=1e-9)
    assert timed.total_time_s == pytest.approx(t0 + t1 + t2)
    assert timed.ttft_ms.p50 == pytest.approx(t0 * 1e3)
    # ITLs are t1 and t2: nearest-rank p50 of two values is the smaller, p99 the larger
    assert timed.itl_ms.p50 == pytest.approx(t1 * 1e3) and timed.itl_ms.p99 == pytest.approx(t2 * 1e3)
    assert timed.e2e_ms.p50 == pytest.approx((t0 + t1 + t2) * 1e3)
    assert timed.output_tokens_per_s == pytest.approx(3 / (t0 + t1 + t2))


def test_attach_timing_counts_preemption_stall_as_one_gap(consts):
    # The hand-traced preemption of test_sim_scheduler: B's token 5 at step 4, token 6 at step 8.
    cfg = SimConfig(num_blocks=5, block_size=4, max_num_batched_tokens=64, max_num_seqs=8)
    r = simulate(cfg, [RequestSpec(0, 4, 8), RequestSpec(0, 4, 8)])
    timed = attach_timing(r, LLAMA8B, H100, consts)
    stall = sum(timed.step_times_s[5:9])
    assert timed.itl_ms.p99 == pytest.approx(stall * 1e3)


def test_attach_timing_idle_steps_cost_nothing(consts):
    r = simulate(SimConfig(100_000, 16, 8192, 256), Traffic(2, "100", "2", "uniform:0.1"))
    timed = attach_timing(r, LLAMA8B, H100, consts)
    assert all(t == 0.0 for t in timed.step_times_s[2:10])
    # both requests see the same TTFT: one 100-token prefill step
    assert timed.request_ttft_ms[0] == pytest.approx(timed.request_ttft_ms[1])
