"""Default CUDA-graph capture sizes per release, with counts worked out by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ._rules_helpers import pack_for


def ladder(largest: int, step_above: int = 16) -> list[int]:
    """Hand-written reference ladder: 1,2,4, then 8..<256 by 8, then 256.. by step_above."""
    out = [s for s in (1, 2, 4) if s <= largest]
    out += [s for s in range(8, 256, 8) if s <= largest]
    out += [s for s in range(256, largest + 1, step_above)]
    return out


# vllm-facts.md §8 T6 (default, no spec decode):
#   1024/8192: largest = min(1024*2, 512) = 512 -> 3 + 31 (8..248) + 17 (256..512 by 16) = 51
#   128/2048:  largest = min(128*2, 512) = 256  -> 3 + 31 + 1 (256) = 35
#   16/8192:   largest = min(16*2, 512)  = 32   -> [1,2,4,8,16,24,32] = 7
#   256/2048:  largest = 512 -> 51
@pytest.mark.parametrize("version", ["0.11.1", "0.13.0", "0.17.0", "0.21.0", "0.24.0", "0.33.0"])
@pytest.mark.parametrize(
    ("seqs", "mnbt", "count", "largest"),
    [(1024, 8192, 51, 512), (128, 2048, 35, 256), (16, 8192, 7, 32), (256, 2048, 51, 512)],
)
def test_t6_counts(version: str, seqs: int, mnbt: int, count: int, largest: int) -> None:
    sizes = pack_for(version).cuda_graphs.capture_sizes(max_num_seqs=seqs, max_num_batched_tokens=mnbt)
    assert len(sizes) == count
    assert sizes[-1] == largest
    assert sizes == sorted(set(sizes))


def test_t6_small_list_exact() -> None:
    sizes = pack_for("0.33.0").cuda_graphs.capture_sizes(max_num_seqs=16, max_num_batched_tokens=8192)
    assert sizes == [1, 2, 4, 8, 16, 24, 32]


def test_t6_large_list_exact() -> None:
    sizes = pack_for("0.33.0").cuda_graphs.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192)
    assert sizes == ladder(512)
    assert sizes[32:38] == [240, 248, 256, 272, 288, 304]  # 8*k sits at index 2+k


def test_step_8_above_256_before_0_11_1() -> None:
    # 0.10.x/0.11.0: range(8, min(2*seqs, 512)+1, 8): 1024/8192 -> 3 + 64 = 67 sizes
    for version in ("0.10.1.1", "0.11.0"):
        sizes = pack_for(version).cuda_graphs.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192)
        assert len(sizes) == 67 and sizes[-1] == 512
    # but the seqs multiplier already applies: 128 seqs -> largest 256 -> 3 + 32 = 35
    sizes = pack_for("0.10.1.1").cuda_graphs.capture_sizes(max_num_seqs=128, max_num_batched_tokens=2048)
    assert len(sizes) == 35 and sizes[-1] == 256


def test_fixed_512_ladder_in_early_v1() -> None:
    # 0.8.x / 0.9.x: [1,2,4] + range(8, 513, 8) filtered <= mnbt, independent of max_num_seqs
    cg = pack_for("0.8.5").cuda_graphs
    assert len(cg.capture_sizes(max_num_seqs=16, max_num_batched_tokens=8192)) == 67
    # mnbt 300: 3 + 37 (8..296) = 40
    sizes = cg.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=300)
    assert len(sizes) == 40 and sizes[-1] == 296


def test_v0_padded_max_num_seqs() -> None:
    # V0 default 256 seqs -> [1,2,4] + 8..256 = 35 sizes in every V0 line
    for version in ("0.5.5", "0.6.4", "0.7.3"):
        cg = pack_for(version).cuda_graphs
        assert cg.default_mode == "FULL_DECODE_ONLY"
        assert len(cg.capture_sizes(max_num_seqs=256, max_num_batched_tokens=2048)) == 35
    # 300 seqs: 0.5 caps the list at 256 (35 sizes); 0.6+ pads 300 -> 304: 3 + 38 = 41
    assert len(pack_for("0.5.5").cuda_graphs.capture_sizes(max_num_seqs=300, max_num_batched_tokens=2048)) == 35
    sizes = pack_for("0.6.5").cuda_graphs.capture_sizes(max_num_seqs=300, max_num_batched_tokens=2048)
    assert len(sizes) == 41 and sizes[-1] == 304
    # 5 seqs -> padded to 8: [1, 2, 4, 8]
    assert pack_for("0.6.4").cuda_graphs.capture_sizes(max_num_seqs=5, max_num_batched_tokens=2048) == [1, 2, 4, 8]


def test_max_num_batched_tokens_joins_from_0_21() -> None:
    # 1024 seqs, mnbt 300: largest = min(512, 300) = 300 -> 3 + 31 + [256, 272, 288] = 37
    assert len(pack_for("0.17.0").cuda_graphs.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=300)) == 37
    sizes = pack_for("0.21.0").cuda_graphs.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=300)
    assert len(sizes) == 38 and sizes[-1] == 300


def test_uniform_decode_size_from_0_31() -> None:
    # 100 seqs: largest = min(200, 512) = 200 -> 3 + 25 (8..200) = 28; 0.31+ also adds 100
    assert len(pack_for("0.30.0").cuda_graphs.capture_sizes(max_num_seqs=100, max_num_batched_tokens=8192)) == 28
    sizes = pack_for("0.33.0").cuda_graphs.capture_sizes(max_num_seqs=100, max_num_batched_tokens=8192)
    assert len(sizes) == 29 and 100 in sizes


def test_spec_decode_multiplier() -> None:
    # 16 seqs, 2 draft tokens: query len 3, largest = min(16*3*2, 512) = 96 -> 3 + 12 = 15
    assert len(pack_for("0.13.0").cuda_graphs.capture_sizes(max_num_seqs=16, max_num_batched_tokens=8192, num_speculative_tokens=2)) == 15
    # 0.12 ignores draft tokens: largest 32 -> 7
    assert len(pack_for("0.12.0").cuda_graphs.capture_sizes(max_num_seqs=16, max_num_batched_tokens=8192, num_speculative_tokens=2)) == 7
    # 0.33 adds uniform-decode sizes n*3 for n in [1,2,4,8,16]: 3, 6, 12 are new (24, 48 in the ladder) -> 18
    sizes = pack_for("0.33.0").cuda_graphs.capture_sizes(max_num_seqs=16, max_num_batched_tokens=8192, num_speculative_tokens=2)
    assert len(sizes) == 18 and {3, 6, 12} <= set(sizes)


def test_sm100_cap() -> None:
    # 0.28+: Blackwell cap 1024: 3 + 31 + len(range(256, 1025, 16)) = 3 + 31 + 49 = 83
    cg = pack_for("0.33.0").cuda_graphs
    assert len(cg.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, sm100=True)) == 83
    assert len(pack_for("0.27.0").cuda_graphs.capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, sm100=True)) == 51


@given(st.integers(min_value=1, max_value=4096), st.integers(min_value=1, max_value=65536))
def test_capture_sizes_properties(seqs: int, mnbt: int) -> None:
    cg = pack_for("0.33.0").cuda_graphs
    sizes = cg.capture_sizes(max_num_seqs=seqs, max_num_batched_tokens=mnbt)
    assert sizes == sorted(set(sizes))
    assert sizes[0] == 1
    largest = min(seqs * 2, 512, mnbt)
    assert all(s <= largest for s in sizes)
    on_ladder = set(ladder(largest))
    assert all(s in on_ladder or s in (seqs, mnbt) for s in sizes)
    assert on_ladder <= set(sizes)
