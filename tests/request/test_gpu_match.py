"""--gpu: any name nvidia-smi or torch print, ambiguous names ask, MIG slices, given totals."""

from __future__ import annotations

import pytest

from tests.request._cli import error_lines, run
from vmemplan.core.errors import ExitCode, UnknownGpu, UsageError
from vmemplan.registry import load_registry
from vmemplan.request.gpu_match import AmbiguousGpu, normalise_gpu_name, select_gpu


@pytest.mark.parametrize(("name", "gpu_id"), [
    ("NVIDIA H100 80GB HBM3", "h100"),          # nvidia-smi and torch.cuda.get_device_name()
    ("nvidia h100 80gb hbm3", "h100"),
    ("H100-80GB", "h100"),
    ("NVIDIA A100-SXM4-80GB", "a100-80g"),
    ("a100-80gb", "a100-80g"),
    ("A100 80GB PCIe", "a100-pcie-80g"),
    ("RTX 4090", "rtx4090"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("Tesla T4", "t4"),
    ("NVIDIA L40S", "l40s"),
    ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA A100-SXM4-80GB MIG 1g.10gb", "a100-80g-mig-1g.10gb"),
    ("h100-mig-3g.40gb", "h100-mig-3g.40gb"),
])
def test_names_as_tools_print_them(name, gpu_id):
    assert load_registry().gpu(name).id == gpu_id


def test_normalisation():
    assert normalise_gpu_name("NVIDIA A100-SXM4-80GB") == "a100sxm480g"
    assert normalise_gpu_name("NVIDIA GeForce RTX 4090") == "rtx4090"


@pytest.mark.parametrize("name", ["a100", "A100", "v100", "gh200"])
def test_ambiguous_names_list_the_candidates(name):
    with pytest.raises(AmbiguousGpu) as err:
        load_registry().gpu(name)
    assert "is ambiguous" in err.value.message and "," in err.value.message
    assert err.value.exit_code == ExitCode.BAD_INPUT


def test_ambiguous_name_on_the_command_line(capsys):
    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "a100"], capsys)
    assert r.code == 4
    error, hint = error_lines(r.stderr)
    assert error == "error: GPU 'a100' is ambiguous: it may be a100-80g, a100-40g, a100-pcie-80g, a100-pcie-40g"
    assert "--gpu a100-80g" in hint


def test_unknown_gpu_suggests_and_mentions_total_memory():
    with pytest.raises(UnknownGpu) as err:
        load_registry().gpu("quantum-9000")
    assert "--gpu-total-memory" in err.value.hint


def test_mig_slices_are_nominal_fractions_of_the_parent():
    reg = load_registry()
    parent = reg.gpu("a100-80g")
    for profile, eighths in (("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4), ("7g.80gb", 8)):
        mig = reg.gpu(f"a100-80g-mig-{profile}")
        assert mig.total_memory_bytes == parent.total_memory_bytes * eighths // 8
        assert mig.total_memory_evidence == "estimate" and "NOMINAL" in (mig.notes or "")
        assert mig.arch == parent.arch


def test_gpu_total_memory_alone_and_over_a_registry_gpu():
    reg = load_registry()
    gpu, warnings = select_gpu(reg, None, "24G")
    assert gpu.total_memory_bytes == 24 << 30 and gpu.id == "custom" and "sm_90" in warnings[0]
    gpu, warnings = select_gpu(reg, "h100", "70G")
    assert gpu.total_memory_bytes == 70 << 30 and gpu.name == "NVIDIA H100 80GB HBM3" and warnings
    with pytest.raises(UsageError):
        select_gpu(reg, None, None)
    with pytest.raises(UsageError):
        select_gpu(reg, "h100", "lots")


def test_gpu_total_memory_on_the_command_line(capsys):
    """A WSL H100 that reports 70 GiB: the budget is 0.92 x 70 GiB, exactly."""
    import json
    import math

    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--gpu-total-memory", "70G", "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["gpu"]["total_memory_bytes"] == 70 << 30
    assert d["per_rank"]["requested_memory_bytes"] == math.ceil((70 << 30) * 0.92)
    r = run(["size", "meta-llama/Llama-3.1-8B", "--gpu-total-memory", "48G", "-f", "json"], capsys)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["gpu"]["total_memory_bytes"] == 48 << 30


def test_a_mig_slice_says_its_memory_is_nominal():
    gpu, warnings = select_gpu(load_registry(), "A100-SXM4-80GB MIG 3g.40gb", None)
    assert gpu.id == "a100-80g-mig-3g.40gb" and "nominal" in warnings[0]
