"""AWQ on SM 9.0 (vLLM 0.33): Machete's pre-scaled zero points (hand-computed).

quantization/auto_awq.py::AutoAWQMarlinLinearMethod picks the kernel with choose_mp_linear_kernel;
on SM 9.0 Machete takes a zero-point uint4 linear whose per-rank K is a multiple of 64 and N of 128
(kernels/linear/mixed_precision/machete.py::MacheteLinearKernel).  Its process_weights_after_loading
unpacks qzeros ``[K/g, N/8]`` int32 and multiplies them by the scales: ``[K/g, N]`` fp16.
Qwen2.5-72B's gate_up_proj at TP 1 (K 8,192, N 59,136, g 128): 64 x 59,136 x 2 = 7,569,408 B
(vs 64 x 7,392 x 4 = 1,892,352 B packed) - the oracle measures 605,552,640 B over 80 layers.
"""

from __future__ import annotations

from vmemplan.core.graph import WeightTensor
from vmemplan.laws.quant_config import scheme_for

QC = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GATE_UP = WeightTensor("mlp.gate_up_proj", "linear", 59136, 8192, 80, True, in_features_full=8192)


def test_machete_prescaled_zero_points_on_sm90():
    parts = dict(scheme_for(QC, sm_major=9).unit_parts(GATE_UP, 1, 2))
    assert parts["qzeros"] == 64 * 59136 * 2 == 7_569_408
    assert 80 * parts["qzeros"] == 605_552_640
    assert parts["qweight"] == 8192 * 59136 // 2 and parts["scales"] == 64 * 59136 * 2


def test_marlin_keeps_packed_zero_points_elsewhere():
    assert dict(scheme_for(QC, sm_major=8).unit_parts(GATE_UP, 1, 2))["qzeros"] == 64 * 7392 * 4
    assert dict(scheme_for(QC, sm_major=9, vllm_version=(0, 13, 0)).unit_parts(GATE_UP, 1, 2))["qzeros"] == 64 * 7392 * 4
