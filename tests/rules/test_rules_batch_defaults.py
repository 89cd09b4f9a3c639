"""Serve-mode max_num_batched_tokens / max_num_seqs per release and device."""

from __future__ import annotations

import pytest

from ._rules_helpers import A100_80, B200, H100, L40S, pack_for, packs


def serve(version: str, gpu: tuple[str, int], *, max_model_len: int = 8192, chunked: bool = True, cc=None):
    name, total = gpu
    return pack_for(version).batch_defaults.for_device(
        device_name=name, nvml_total_bytes=total, max_model_len=max_model_len, chunked_prefill=chunked,
        compute_capability=cc,
    )


# H100 NVML 81559 MiB = 85,520,809,984 B >= 70 GiB (75,161,927,680 B); A100-80GB 81920 MiB also >= 70 GiB;
# L40S 46068 MiB = 48,305,799,168 B < 70 GiB.
@pytest.mark.parametrize(
    ("version", "h100", "a100", "l40s"),
    [
        ("0.8.0", (8192, 1024), (2048, 256), (2048, 256)),  # name rule: 'h100'/'h200' only
        ("0.8.4", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.8.5", (8192, 1024), (8192, 1024), (2048, 256)),  # memory rule, no A100 exclusion yet
        ("0.9.0", (8192, 1024), (2048, 256), (2048, 256)),   # 'a100' excluded from here on
        ("0.10.1.1", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.11.0", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.13.0", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.17.0", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.21.0", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.24.0", (8192, 1024), (2048, 256), (2048, 256)),
        ("0.33.0", (8192, 1024), (2048, 256), (2048, 256)),
    ],
)
def test_v1_tiers(version, h100, a100, l40s) -> None:
    assert serve(version, H100) == h100
    assert serve(version, A100_80) == a100
    assert serve(version, L40S) == l40s


def test_v0_no_tiering() -> None:
    # V0 without chunked prefill: max(max_model_len, 2048); 256 seqs on every device
    for gpu in (H100, A100_80, L40S):
        assert serve("0.5.5", gpu, max_model_len=8192, chunked=False) == (8192, 256)
        assert serve("0.6.5", gpu, max_model_len=1024, chunked=False) == (2048, 256)
    # with chunked prefill: 512 up to 0.6.4, 2048 from 0.6.5
    assert serve("0.6.4", H100, max_model_len=131072, chunked=True) == (512, 256)
    assert serve("0.6.5", H100, max_model_len=131072, chunked=True) == (2048, 256)
    assert serve("0.8.5", H100, chunked=False) == (8192, 1024)  # V1 0.8.5 ignores it (always chunked)
    v0_fallback = next(p for p in packs() if p.id == "v0.8-v0")
    assert v0_fallback.batch_defaults.for_device(
        device_name=H100[0], nvml_total_bytes=H100[1], max_model_len=32768, chunked_prefill=False
    ) == (32768, 256)


def test_160_gib_tier_from_0_28() -> None:
    # B200 NVML 183359 MiB >= 160 GiB (171,798,691,840 B)
    assert serve("0.27.0", B200) == (8192, 1024)
    assert serve("0.28.0", B200) == (16384, 1024)
    assert serve("0.33.0", B200) == (16384, 1024)


def test_gb10_small_tier_only_in_0_33() -> None:
    gb10 = ("NVIDIA GB10", 128 * 1024 ** 3)  # CUDA total fallback; 128 GiB >= 70 GiB
    assert serve("0.32.0", gb10, cc=(12, 1)) == (8192, 1024)
    assert serve("0.33.0", gb10, cc=(12, 1)) == (2048, 256)
    assert serve("0.33.0", gb10) == (2048, 256)  # name fallback when the capability is unknown
    assert serve("0.33.0", H100, cc=(9, 0)) == (8192, 1024)


def test_post_processing() -> None:
    # 0.33, H100, chunked prefill off, L=100: max(100, 8192)=8192; min(1024*100=102,400, 8192)=8192
    assert serve("0.33.0", H100, max_model_len=100, chunked=False) == (8192, 1024)
    # 0.10.1.1: chunked off -> mnbt = L = 100; seqs = min(1024, 100) = 100
    assert serve("0.10.1.1", H100, max_model_len=100, chunked=False) == (100, 100)
    # 0.33, L=4: min(1024*4=4096, 8192) = 4096; seqs min(1024, 4096) = 1024
    assert serve("0.33.0", H100, max_model_len=4) == (4096, 1024)
    # L40S, L=4: min(256*4=1024, 2048) = 1024
    assert serve("0.33.0", L40S, max_model_len=4) == (1024, 256)
    # 0.33, long context, chunked off: max(131072, 8192) = 131072
    assert serve("0.33.0", H100, max_model_len=131072, chunked=False) == (131072, 1024)
