"""The frozen result of a plan, and its JSON contract.

Renderers read these objects; nothing here formats for a terminal.  Integers are bytes
or tokens.  ``MemoryPlan.to_json()`` is the contract CI scripts depend on: fields may be
added, never renamed or dropped (``schema_version`` 1).
"""

from __future__ import annotations

from dataclasses import asdict, field
from typing import TYPE_CHECKING, Any, Literal

from vmemplan.core.frozen import frozen

if TYPE_CHECKING:
    from vmemplan.laws.bands import KvBand
    from vmemplan.laws.kv_pool import PoolPlan
    from vmemplan.rules import RulesPack

__all__ = ["Provenance", "PerRank", "KvCacheSummary", "Verdict", "EngineSettings", "MemoryPlan", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1

Kind = Literal["exact", "estimated", "given"]


@frozen
class Provenance:
    """Where one figure came from: exact (config + vLLM's rules), estimated (cost model, with
    which constant), or given (by the user or a log)."""

    figure: str
    value: Any
    kind: Kind
    source: str


@frozen
class PerRank:
    weights_bytes: int
    activation_peak_bytes: int
    cuda_graph_bytes: int
    eplb_bytes: int
    comm_buffer_bytes: int
    non_torch_bytes: int
    fixed_total_bytes: int
    pre_budget_bytes: int
    requested_memory_bytes: int
    available_kv_cache_bytes: int
    # extra detail (added fields; the contract above is the first ten)
    cuda_graph_subtracted: bool = True
    communicator_bytes: int = 0
    cuda_context_bytes: int = 0
    workspace_bytes: int = 0
    rank: int = 0
    stage: int = 0


@frozen
class KvGroup:
    kind: str
    layers: int
    block_size: int
    page_size_bytes: int
    blocks_per_request: int


@frozen
class KvCacheSummary:
    bytes_per_token: int | None
    block_size: int
    page_size_bytes: int  # bytes of one pool block across every layer of the rank
    num_blocks: int
    tokens: int
    max_concurrency: float | None  # None: no KV cache, so none bounds the requests
    groups: tuple[KvGroup, ...] = ()
    sequence_fixed_bytes: int = 0
    sequence_admission_bytes: int = 0
    request_bytes: int | None = None
    request_tokens: int | None = None
    needed_bytes: int = 0  # KV bytes vLLM demands for one max_model_len request
    cache_dtype: str = "auto"
    no_bytes_per_token_reason: str | None = None


@frozen
class Verdict:
    """``starts``: the central estimate starts.  ``outcome`` adds the error band: "starts" only
    when the band's low end starts too, "may_not_start" when the band straddles the line,
    "does_not_start" when even its high end fails (exact plans: as ``starts`` says)."""

    starts: bool
    reason: str | None = None
    max_model_len_that_fits: int | None = None
    outcome: Literal["starts", "may_not_start", "does_not_start"] | None = None


@frozen
class EngineSettings:
    """The engine settings a plan was made with, every default applied (vLLM's names)."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_cache_dtype: str
    dtype: str
    gpu_memory_utilization: float
    enforce_eager: bool
    enable_prefix_caching: bool
    kv_cache_memory_bytes: int | None
    cudagraph_mode: str
    cudagraph_capture_sizes: int  # how many sizes are captured
    runner: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@frozen
class MemoryPlan:
    """Everything vmemplan knows about one deployment, per rank."""

    model_id: str
    model_source: str
    architecture: str
    gpu_id: str
    gpu_name: str
    gpu_total_memory_bytes: int
    vllm_version: str
    rules_pack: str
    engine: EngineSettings
    defaulted: tuple[str, ...]
    per_rank: PerRank
    kv_cache: KvCacheSummary
    verdict: Verdict
    provenance: tuple[Provenance, ...]
    warnings: tuple[str, ...]
    ranks: tuple[PerRank, ...] = ()
    parameters: int = 0
    # the KV pool law's frozen result, for per-length request figures (concurrency,
    # simulation); not part of the JSON contract
    pool: PoolPlan | None = field(default=None, compare=False, repr=False)
    notes: tuple[str, ...] = field(default=())
    # startup lines the request layer knows vLLM prints before the memory lines
    # (e.g. "Auto-fit max_model_len: ..."); the log renderer prints them first
    preface_log_lines: tuple[str, ...] = field(default=())
    # the release's rules the plan was made under (renderers read its log formats)
    rules: RulesPack | None = field(default=None, compare=False, repr=False)
    # the error band on the estimated KV figures (laws/bands.py); None for exact plans
    band: KvBand | None = None

    def to_json(self) -> dict[str, Any]:
        """The data of the JSON contract (``render.json_out.plan_json`` adds the rendered log lines)."""
        per_rank = asdict(self.per_rank)
        kv = asdict(self.kv_cache)
        kv["groups"] = [asdict(g) for g in self.kv_cache.groups]
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "model": {"id": self.model_id, "source": self.model_source, "architecture": self.architecture,
                      "parameters": self.parameters},
            "gpu": {"id": self.gpu_id, "name": self.gpu_name, "total_memory_bytes": self.gpu_total_memory_bytes},
            "vllm_version": self.vllm_version,
            "rules_pack": self.rules_pack,
            "engine": {**self.engine.to_json(), "defaulted": list(self.defaulted)},
            "per_rank": per_rank,
            "kv_cache": kv,
            "verdict": asdict(self.verdict),
            "provenance": [asdict(p) for p in self.provenance],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }
        if self.ranks:
            out["ranks"] = [asdict(r) for r in self.ranks]
        if self.band is not None:
            b = self.band
            per_rank["available_kv_cache_bytes_range"] = list(b.available_kv_cache_bytes_range)
            for r in out.get("ranks", ()):  # every stage's figure carries the same half-width
                r["available_kv_cache_bytes_range"] = [r["available_kv_cache_bytes"] - b.half_width_bytes,
                                                       r["available_kv_cache_bytes"] + b.half_width_bytes]
            for t in b.terms:  # the estimated terms' own bands, where some corpus log prints the term
                per_rank[f"{t.term}_range"] = list(t.range_bytes)
            kv["num_blocks_range"] = list(b.num_blocks_range)
            kv["tokens_range"] = list(b.tokens_range)
            kv["max_concurrency_range"] = list(b.max_concurrency_range)
            out["band"] = {"half_width_bytes": b.half_width_bytes,
                           "half_width_fraction_of_budget": b.width.half_width_fraction,
                           "level": b.width.level, "group": b.width.group, "logs": len(b.width.logs),
                           "source": "registry bands.yaml (bench/calibrate_bands.py)"}
        return out
