"""Shared helpers for the rules-pack tests (no fixtures in conftest: we may not edit it)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from vmemplan.rules import RulesPack, load_rules_packs, select_pack

REPO = Path(__file__).resolve().parents[2]
PACK_DIR = REPO / "registry" / "vllm"
CORPUS_LOGS = REPO.parent / "shared" / "corpus" / "logs"

GIB = 1 << 30
MIB = 1 << 20

# NVML (nvidia-smi) totals and names from /work/shared/reference/gpus.yaml
H100 = ("NVIDIA H100 80GB HBM3", 81559 * MIB)
A100_80 = ("NVIDIA A100-SXM4-80GB", 81920 * MIB)
L40S = ("NVIDIA L40S", 46068 * MIB)
B200 = ("NVIDIA B200", 183359 * MIB)


@lru_cache(maxsize=1)
def packs() -> tuple[RulesPack, ...]:
    return load_rules_packs(PACK_DIR)


def pack_for(version: str) -> RulesPack:
    pack, warning = select_pack(packs(), version)
    assert warning is None, warning
    return pack
