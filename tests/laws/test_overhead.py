"""Tests for vmemplan.laws.overhead: CUDA graphs, pre-budget, non-torch, registry validation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vmemplan.core.errors import RegistryInvalid, UsageError
from vmemplan.laws.overhead import CudaGraphConstants, CudaGraphFamily, NonTorchConstants, PreBudgetConstants, cuda_graph_bytes, non_torch_bytes, pre_budget_bytes
from vmemplan.registry_schema import parse_cost_model, parse_vllm_version

MIB = 1 << 20
GIB = 1 << 30
REGISTRY = Path(__file__).resolve().parents[2] / "registry" / "cost_model.yaml"

FLAT = {"NONE": 0, "PIECEWISE": 512 * MIB, "FULL": GIB, "FULL_DECODE_ONLY": 512 * MIB,
        "FULL_AND_PIECEWISE": GIB}
CG = CudaGraphConstants(
    vllm_version="test",
    flat_bytes_by_mode=FLAT,
    families={
        "piecewise": CudaGraphFamily(floor_bytes=10 * MIB, per_token_hidden_layer_bytes=7, per_graph_bytes=MIB),
        "full": CudaGraphFamily(floor_bytes=20 * MIB, per_token_hidden_layer_bytes=2, per_graph_bytes=2 * MIB),
    },
)
# vLLM's default list for max_num_seqs 256: [1, 2, 4, 8, 16, ..., 248, 256, 272, ..., 512] = 3 + 31 + 17 = 51 sizes
SIZES = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))


def test_default_capture_list_has_51_sizes():
    assert len(SIZES) == 51 and SIZES[-1] == 512


def test_mode_none_is_zero():
    est = cuda_graph_bytes(mode="NONE", capture_sizes=SIZES, max_num_seqs=256, constants=CG,
                           hidden_size=4096, num_layers=32)
    assert est.total_bytes == 0


def test_full_and_piecewise_per_family():
    # Llama-3.1-8B: hidden 4096, 32 layers, tp 1, max_num_seqs 256, decode_query_len 1.
    est = cuda_graph_bytes(mode="FULL_AND_PIECEWISE", capture_sizes=SIZES, max_num_seqs=256,
                           constants=CG, hidden_size=4096, num_layers=32)
    # piecewise: 51 graphs up to 512 -> first = 10 MiB + 7 x 512 x 4096 x 32 = 10,485,760 + 469,762,048 = 480,247,808
    # full decode: sizes 1..256 (x <= 1 x 256) = 3 + 31 + 1 = 35 graphs up to 256
    #              first = 20 MiB + 2 x 256 x 4096 x 32 = 20,971,520 + 67,108,864 = 88,080,384
    # total = max(first) + 1 MiB x 50 + 2 MiB x 34 = 480,247,808 + 52,428,800 + 71,303,168 = 603,979,776
    assert est.num_graphs == {"piecewise": 51, "full": 35}
    assert est.largest_graph_tokens == {"piecewise": 512, "full": 256}
    assert est.total_bytes == 603_979_776
    assert est.method == "per_family"


def test_full_decode_only_respects_spec_decode_query_len():
    # decode_query_len 2, max_num_seqs 8: FULL sizes x with 2 <= x <= 16 from the list: 2, 4, 8, 16 -> 4 graphs
    est = cuda_graph_bytes(mode="FULL_DECODE_ONLY", capture_sizes=SIZES, max_num_seqs=8, decode_query_len=2,
                           constants=CG, hidden_size=1024, num_layers=10)
    # first = 20 MiB + 2 x 16 x 1024 x 10 = 20,971,520 + 327,680; + 2 MiB x 3 = 6,291,456 -> 27,590,656
    assert est.num_graphs == {"full": 4}
    assert est.total_bytes == 27_590_656


def test_flat_when_shapes_unknown():
    est = cuda_graph_bytes(mode="piecewise", capture_sizes=SIZES, max_num_seqs=256, constants=CG)
    assert est.total_bytes == 512 * MIB and est.method == "flat"


def test_unknown_mode_is_a_usage_error():
    with pytest.raises(UsageError):
        cuda_graph_bytes(mode="SOMETIMES", capture_sizes=SIZES, max_num_seqs=1, constants=CG)


@settings(max_examples=50, deadline=None)
@given(ceiling=st.integers(1, 1024), extra=st.integers(0, 1024), seqs=st.integers(1, 1024),
       mode=st.sampled_from(["PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]))
def test_higher_capture_ceiling_never_lowers_graphs(ceiling, extra, seqs, mode):
    def est(m):
        sizes = [s for s in SIZES if s <= m] or [m]
        return cuda_graph_bytes(mode=mode, capture_sizes=sizes, max_num_seqs=seqs, constants=CG,
                                hidden_size=2048, num_layers=24).total_bytes
    assert est(ceiling + extra) >= est(ceiling)


PB = PreBudgetConstants(vllm_version="t", cuda_context_bytes=450 * MIB, workspace_bytes=0,
                        communicator_bytes_by_world_size={1: 0, 2: 342 * MIB, 4: 392 * MIB, 8: 392 * MIB})


def test_world_size_one_has_no_communicator():
    pb = pre_budget_bytes(world_size=1, tensor_parallel_size=1, pipeline_parallel_size=1, constants=PB)
    assert pb.communicator_bytes == 0
    assert pb.total_bytes == 450 * MIB


def test_communicator_table_lookup():
    # world 3 -> largest listed key <= 3 is 2 -> 342 MiB; world 16 -> 8 -> 392 MiB
    assert pre_budget_bytes(world_size=3, tensor_parallel_size=3, pipeline_parallel_size=1,
                            constants=PB).communicator_bytes == 342 * MIB
    pb = pre_budget_bytes(world_size=16, tensor_parallel_size=8, pipeline_parallel_size=2, constants=PB)
    assert pb.communicator_bytes == 392 * MIB
    assert pb.total_bytes == 392 * MIB + 450 * MIB


NT = NonTorchConstants(era="t", vllm_version="t", base_bytes=32 * MIB,
                       communicator_bytes_by_world_size={1: 0, 2: 342 * MIB, 8: 392 * MIB})


def test_non_torch_inside_and_outside_budget():
    assert non_torch_bytes(world_size=1, nccl_inside_budget=True, constants=NT) == 32 * MIB
    assert non_torch_bytes(world_size=2, nccl_inside_budget=True, constants=NT) == 32 * MIB + 342 * MIB
    assert non_torch_bytes(world_size=2, nccl_inside_budget=False, constants=NT) == 32 * MIB


# --------------------------------------------------------------------------- registry


def _registry() -> dict:
    return yaml.safe_load(REGISTRY.read_text())


def test_cost_model_yaml_validates_and_resolves():
    cm = parse_cost_model(_registry())
    assert cm.era_for("0.33.0").id == "v1-0.28"
    assert cm.era_for("0.11.0").nccl_inside_budget is False
    assert cm.era_for("0.10.1.1").nccl_inside_budget is True
    assert cm.era_for("0.6.4", engine="v0").cuda_context_inside_budget is True
    assert cm.era_for("0.20.0").cudagraph_estimate == "default"
    assert cm.era_for("0.19.0").cudagraph_estimate == "opt_in"
    act = cm.activation_constants("0.11.0")
    assert act.sampler_path == "native_sort" and act.sampler_fp32_copies == 9
    assert cm.activation_constants("0.11.0", sampler_path="flashinfer").sampler_fp32_copies == 3
    assert cm.pre_budget_constants().communicator_bytes_by_world_size[1] == 0
    assert cm.cuda_graph_constants().flat_bytes_by_mode["NONE"] == 0


def test_every_constant_has_provenance():
    cm = parse_cost_model(_registry())
    for era in cm.eras:
        for const in (era.non_torch_base_bytes, era.activation.floor_bytes,
                      *era.activation.sampler.paths.values()):
            assert const.source and const.obtained and const.vllm_version


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("pre_budget"),
        lambda d: d["eras"][0]["non_torch_base_bytes"].pop("source"),
        lambda d: d["eras"][0].__setitem__("surprise", 1),
        lambda d: d["eras"][0]["activation"]["sampler"].__setitem__("default_path", "nope"),
        lambda d: d["cuda_graphs"]["flat_bytes_by_mode"]["values"].__setitem__("SOMETIMES", 1),
        lambda d: d.__setitem__("schema_version", 2),
        lambda d: d["eras"][1].__setitem__("id", d["eras"][0]["id"]),
        lambda d: d["eras"][0].__setitem__("engine", "v9"),
    ],
)
def test_malformed_registry_raises_registry_invalid(mutate):
    data = copy.deepcopy(_registry())
    mutate(data)
    with pytest.raises(RegistryInvalid):
        parse_cost_model(data)


def test_non_mapping_raises_registry_invalid():
    with pytest.raises(RegistryInvalid):
        parse_cost_model(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_missing_era_raises_registry_invalid():
    data = _registry()
    data["eras"] = [e for e in data["eras"] if e["engine"] == "v0"]
    with pytest.raises(RegistryInvalid):
        parse_cost_model(data).era_for("0.33.0")


def test_version_parsing():
    assert parse_vllm_version("0.13.0+faa43dbf.nv26.01") == (0, 13, 0)
    assert parse_vllm_version("0.8.5.dev169+gce17db808") == (0, 8, 5)
    assert parse_vllm_version("0.14.0rc1.dev2") == (0, 14, 0)
    with pytest.raises(RegistryInvalid):
        parse_vllm_version("latest")
