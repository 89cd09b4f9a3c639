"""Calibrated what-ifs: re-plan a logged startup with some flags changed, starting from what the log
measured.

A plan from scratch estimates every term of vLLM's budget.  A log already holds most of them as
measured on the real GPU (total memory, utilization, weights, activation peak, non-torch memory,
the CUDA-graph estimate, and the KV bytes left), so a what-if keeps those and moves only what the
changed flags move, by the laws::

    K' = K + (R' - R) - (W' - W) - (A' - A) - (N' - N) - (G'_sub - G_sub)

* ``R = requested(total, util)``, rounded as the release does (vllm/v1/worker/utils.py::request_memory,
  0.33.0 ceil; ``total * util`` before) -- moves with ``gpu-memory-utilization``;
* ``W`` -- moves with ``tensor-parallel-size``: the measured weights times the ratio of the weights law
  at the two sizes (vmemplan/laws/weights.py), or ``tp / tp'`` when the model is unknown;
* ``A`` -- the profile run's activation peak (vmemplan/laws/activation.py): its forward term grows with
  the profile batch (``max-num-batched-tokens``, or ``max-model-len`` where the release profiles at the
  context length without chunked prefill), its sampler term with ``max-num-seqs``;
* ``N`` -- non-torch memory: the NCCL communicator lands inside the budget in releases that initialise
  it after the memory snapshot (vmemplan/laws/overhead.py::non_torch_bytes);
* ``G_sub`` -- the CUDA-graph estimate where the release subtracts it from the budget
  (vllm/v1/worker/gpu_worker.py::determine_available_memory, 0.21+); ``enforce-eager`` drops it.

The new pool is then sized with the rules of the release (tokens formula, concurrency formula, null
block, grouping threshold from the rules pack), through the pool law when the model is known, or from
the log's own bytes per block when it is not.

Pure: a parsed :class:`~vmemplan.explain.parse.Startup`, the registry, and optional model link in; a
frozen :class:`WhatIf` out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from vmemplan.core.errors import RegistryInvalid, UsageError, VmemplanError
from vmemplan.explain.parse import GIB, Figures, Startup

if TYPE_CHECKING:
    from vmemplan.explain.model_link import ModelLink
    from vmemplan.registry import Gpu, Registry
    from vmemplan.rules import RulesPack

__all__ = [
    "WHAT_IF_FLAGS",
    "Baseline",
    "WhatIf",
    "parse_what_if",
    "resolve_baseline",
    "version_from_format",
    "what_if",
    "model_check_inputs",
    "explain_startups",
    "header_hints",
]

#: what-if flag (vLLM's spelling) -> (field name, type)
WHAT_IF_FLAGS: dict[str, tuple[str, type]] = {
    "gpu-memory-utilization": ("gpu_memory_utilization", float),
    "kv-cache-dtype": ("kv_cache_dtype", str),
    "max-model-len": ("max_model_len", int),
    "max-num-seqs": ("max_num_seqs", int),
    "max-num-batched-tokens": ("max_num_batched_tokens", int),
    "tensor-parallel-size": ("tensor_parallel_size", int),
    "enforce-eager": ("enforce_eager", bool),
    "block-size": ("block_size", int),
    "vllm-version": ("vllm_version", str),
}
_ALIASES = {"util": "gpu-memory-utilization", "tp": "tensor-parallel-size", "kv-dtype": "kv-cache-dtype",
            "mnbt": "max-num-batched-tokens"}
_KV_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
              "fp8_per_token_head", "int8_per_token_head", "nvfp4")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

#: a log format that pins its release when the log prints no version
_FORMAT_VERSION = {"v0.6.4-oneline": "0.6.4", "v0.6.5-multiline": "0.6.5", "v1-joined": "0.33.0"}


# --------------------------------------------------------------------------------------------
# Parsing --what-if
# --------------------------------------------------------------------------------------------


def parse_what_if(items: Sequence[str]) -> dict[str, str]:
    """``["gpu-memory-utilization=0.95", "tp=2"]`` -> ``{"gpu-memory-utilization": "0.95",
    "tensor-parallel-size": "2"}`` (vLLM's flag names; a leading ``--`` and underscores are
    accepted).  Raises :class:`UsageError` for an unknown flag or a bad value."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key = key.strip().lstrip("-").replace("_", "-").lower()
        key = _ALIASES.get(key, key)
        value = value.strip()
        if not sep or not key:
            raise UsageError(f"--what-if {item!r} is not FLAG=VALUE",
                             hint="e.g. --what-if gpu-memory-utilization=0.95")
        if key not in WHAT_IF_FLAGS:
            raise UsageError(f"--what-if: unknown flag {key!r}", hint="one of " + ", ".join(WHAT_IF_FLAGS))
        _, kind = WHAT_IF_FLAGS[key]
        _convert(key, value, kind)  # validate now: a bad value is a usage error
        out[key] = value
    return out


def _convert(key: str, value: str, kind: type) -> Any:
    try:
        if kind is bool:
            low = value.lower()
            if low in _TRUE or low == "":
                return True
            if low in _FALSE:
                return False
            raise ValueError(value)
        if kind is int:
            n = int(value.replace(",", "").replace("_", ""))
            if n < 1:
                raise ValueError(value)
            return n
        if kind is float:
            x = float(value)
            if not 0 < x <= 1:
                raise UsageError(f"--what-if {key}={value}: outside (0, 1]", hint="a fraction such as 0.92")
            return x
    except ValueError:
        raise UsageError(f"--what-if {key}={value!r}: not a valid {kind.__name__}") from None
    if key == "kv-cache-dtype" and value not in _KV_DTYPES:
        raise UsageError(f"--what-if kv-cache-dtype={value!r}: unknown", hint="one of " + ", ".join(_KV_DTYPES))
    if key == "vllm-version":
        from vmemplan.core.version import parse_version

        parse_version(value)
    return value


# --------------------------------------------------------------------------------------------
# Baseline: the settings the log ran with
# --------------------------------------------------------------------------------------------


def version_from_format(fmt: str) -> str | None:
    """The release a log format pins when the log prints no version (0.6.4's one-line profiler
    summary, 0.6.5's three-line one, 0.33.0's joined KV line); ``None`` when the format spans
    several releases."""
    return _FORMAT_VERSION.get(fmt)


@dataclass(frozen=True)
class Baseline:
    """The engine settings a startup ran with, with the ones that were not in the log named."""

    vllm_version: str | None
    version_note: str
    rules: RulesPack
    gpu_memory_utilization: float
    tensor_parallel_size: int
    pipeline_parallel_size: int
    kv_cache_dtype: str
    block_size: int
    max_model_len: int | None
    max_num_batched_tokens: int
    max_num_seqs: int
    enforce_eager: bool
    model_dtype: str
    mnbt_printed: bool
    seqs_printed: bool
    assumed: tuple[str, ...] = ()


def _select(registry: Registry, version: str | None, fmt: str) -> tuple[RulesPack, str | None]:
    from vmemplan.rules import select_pack

    engine = "v0" if fmt.startswith("v0") else ("v1" if fmt.startswith("v1") else None)
    try:
        return select_pack(registry.rules_packs, version, engine=engine)  # type: ignore[arg-type]
    except UsageError:
        return select_pack(registry.rules_packs, None)


def _batch_defaults(rules: RulesPack, gpu: Gpu | None, max_model_len: int | None,
                    total_bytes: int | None) -> tuple[int, int]:
    """Default (max_num_batched_tokens, max_num_seqs) for ``vllm serve`` under ``rules``."""
    L = max_model_len or 2048
    chunked = bool(rules.defaults.enable_chunked_prefill.value)
    auto = rules.defaults.chunked_prefill_auto_above_max_model_len
    if not chunked and auto is not None and L > auto.value:
        chunked = True
    name = gpu.device_name if gpu is not None else ""
    nvml = gpu.batch_default_total_bytes if gpu is not None else (total_bytes or 0)
    return rules.batch_defaults.for_device(device_name=name, nvml_total_bytes=nvml, max_model_len=L,
                                           chunked_prefill=chunked)


def resolve_baseline(startup: Startup, registry: Registry, *, vllm_version: str | None = None,
                     version_source: str = "", gpu: Gpu | None = None,
                     link: ModelLink | None = None) -> Baseline:
    """The settings the startup ran with: the log's figures, else ``vllm_version`` (from
    ``--vllm-version`` or a corpus header), else the rules pack's defaults (named in ``assumed``)."""
    f = startup.figures
    assumed: list[str] = []
    version = startup.vllm_version
    note = f"vLLM {version} (printed in the log)" if version else ""
    if version is None and vllm_version:
        version, note = vllm_version, f"vLLM {vllm_version} ({version_source or 'given'})"
    if version is None:
        pinned = version_from_format(startup.format)
        if pinned:
            version, note = pinned, f"vLLM {pinned} (the log's {startup.format} format is only printed by it)"
    rules, warning = _select(registry, version, startup.format)
    if version is None:
        note = f"vLLM version not in the log: the rules of {rules.id} (newest) are used"
    elif warning:
        note += f"; {warning}"
    else:
        note += f"; rules pack {rules.id}"
    util = f.gpu_memory_utilization
    if util is None:
        util = float(rules.defaults.gpu_memory_utilization.value)
        assumed.append(f"gpu_memory_utilization {util} (the release's default)")
    tp = f.tensor_parallel_size or 1
    if f.tensor_parallel_size is None:
        assumed.append("tensor_parallel_size 1")
    kv_dtype = f.kv_cache_dtype or str(rules.defaults.kv_cache_dtype.value)
    bs = f.block_size or int(rules.defaults.block_size.value)
    L = f.max_model_len
    if L is None and link is not None:
        try:
            L = link.adapter.derived_max_model_len()
            assumed.append(f"max_model_len {L:,} (the model's own context length)")
        except VmemplanError:
            L = None
    mnbt_d, seqs_d = _batch_defaults(rules, gpu, L, f.total_memory_bytes)
    mnbt = f.max_num_batched_tokens or mnbt_d
    if f.max_num_batched_tokens is None:
        assumed.append(f"max_num_batched_tokens {mnbt:,} (the release's default)")
    seqs = f.max_num_seqs or seqs_d
    if f.max_num_seqs is None:
        if rules.batch_defaults.cap_seqs_by_tokens:
            seqs = min(seqs, mnbt)
        assumed.append(f"max_num_seqs {seqs} (the release's default)")
    from vmemplan.explain.model_link import model_dtype_name

    if link is not None:
        dtype = model_dtype_name(f.dtype, link.config)
    else:
        dtype = (f.dtype or "bfloat16").removeprefix("torch.")
    return Baseline(vllm_version=version, version_note=note, rules=rules, gpu_memory_utilization=float(util),
                    tensor_parallel_size=int(tp), pipeline_parallel_size=int(f.pipeline_parallel_size or 1),
                    kv_cache_dtype=kv_dtype, block_size=int(bs), max_model_len=L, max_num_batched_tokens=int(mnbt),
                    max_num_seqs=int(seqs), enforce_eager=bool(f.enforce_eager), model_dtype=dtype,
                    mnbt_printed=f.max_num_batched_tokens is not None, seqs_printed=f.max_num_seqs is not None,
                    assumed=tuple(assumed))


# --------------------------------------------------------------------------------------------
# Laws, applied to one setting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Setting:
    version: str
    rules: RulesPack
    util: float
    tp: int
    pp: int
    kv_cache_dtype: str
    block_size: int
    max_model_len: int | None
    mnbt: int
    seqs: int
    eager: bool
    dtype: str

    @property
    def engine(self) -> str:
        return self.rules.engine

    @property
    def profile_tokens(self) -> int:
        if self.rules.budget.profile_tokens == "max_model_len" and self.max_model_len:
            return max(self.max_model_len, self.mnbt)
        return self.mnbt

    @property
    def subtracts_cuda_graph(self) -> bool:
        return (bool(self.rules.cuda_graphs.estimate_subtracted_by_default)
                or self.rules.budget.formula == "requested_minus_non_kv_minus_cudagraph") and not self.eager


def _era_version(cost: Any, version: str, rules: RulesPack) -> str:
    try:
        cost.era_for(version, engine=rules.engine)
        return version
    except (RegistryInvalid, VmemplanError):
        return rules.min_version


def _activation(link: ModelLink, s: _Setting, cost: Any) -> int:
    from vmemplan.core.graph import GraphContext
    from vmemplan.core.units import dtype_bytes
    from vmemplan.laws import activation as act_law

    cfg, adapter = link.config, link.adapter
    ctx = GraphContext(tensor_parallel_size=s.tp, pipeline_parallel_size=s.pp, block_size=s.block_size,
                       cache_dtype=s.kv_cache_dtype, model_dtype=s.dtype, max_model_len=s.max_model_len or 2048,
                       max_num_batched_tokens=s.mnbt, max_num_seqs=s.seqs)
    extra, _ = adapter.extra_activation_bytes(ctx, max_num_batched_tokens=s.mnbt, max_num_seqs=s.seqs)
    est = act_law.activation_peak_bytes(
        family=adapter.family, hidden_size=cfg.hidden_size, num_attention_heads=cfg.num_attention_heads,
        head_dim=cfg.head_dim, intermediate_size=adapter.intermediate_size, vocab_size=cfg.vocab_size,
        tensor_parallel_size=s.tp, max_num_batched_tokens=s.profile_tokens, max_num_seqs=s.seqs,
        dtype_bytes=dtype_bytes(s.dtype),
        constants=cost.activation_constants(_era_version(cost, s.version, s.rules), engine=s.engine),
        extra_model_buffers_bytes=extra)
    return est.peak_bytes


def _non_torch(s: _Setting, cost: Any) -> int:
    from vmemplan.laws import overhead as oh_law

    return oh_law.non_torch_bytes(world_size=s.tp * s.pp, nccl_inside_budget=s.rules.budget.nccl_inside_budget,
                                  constants=cost.non_torch_constants(_era_version(cost, s.version, s.rules),
                                                                     engine=s.engine))


def _cuda_graph(link: ModelLink | None, s: _Setting, cost: Any) -> int:
    from vmemplan.laws import overhead as oh_law

    if s.eager:
        return 0
    cg = s.rules.cuda_graphs
    sizes = cg.capture_sizes(max_num_seqs=s.seqs, max_num_batched_tokens=s.mnbt)
    return oh_law.cuda_graph_bytes(
        mode=cg.default_mode, capture_sizes=sizes, max_num_seqs=s.seqs, constants=cost.cuda_graph_constants(),
        hidden_size=link.config.hidden_size if link else None,
        num_layers=link.config.num_hidden_layers if link else None, tensor_parallel_size=s.tp).total_bytes


def _model_weights(link: ModelLink, s: _Setting) -> int:
    from vmemplan.core.graph import GraphContext
    from vmemplan.laws.weights import weight_bytes_per_rank

    ctx = GraphContext(tensor_parallel_size=s.tp, pipeline_parallel_size=s.pp, model_dtype=s.dtype,
                       cache_dtype=s.kv_cache_dtype, block_size=s.block_size)
    return weight_bytes_per_rank(link.adapter.weight_tensors(ctx), model_dtype=s.dtype).total_bytes


def _pool_context(s: _Setting, max_model_len: int) -> Any:
    from vmemplan.laws.kv_pool import PoolContext

    kv = s.rules.kv_cache
    return PoolContext(max_model_len=max_model_len, max_num_batched_tokens=s.mnbt,
                       async_scheduling=bool(s.rules.defaults.async_scheduling.value),
                       hybrid_group_threshold=kv.hybrid_group_threshold, tokens_formula=kv.tokens_formula,
                       pipeline_parallel_size=s.pp, reserve_null_block=bool(kv.null_block))


def _model_pool(link: ModelLink, s: _Setting, available: int) -> Any:
    from vmemplan.core.graph import GraphContext
    from vmemplan.laws.kv_pool import UngroupableSpecs, plan_pool, plan_pool_ungrouped

    L = s.max_model_len or link.adapter.derived_max_model_len()
    ctx = GraphContext(tensor_parallel_size=s.tp, pipeline_parallel_size=s.pp, block_size=s.block_size,
                       cache_dtype=s.kv_cache_dtype, model_dtype=s.dtype, max_model_len=L,
                       max_num_batched_tokens=s.mnbt, max_num_seqs=s.seqs)
    specs = link.adapter.kv_cache_specs(ctx)
    pctx = _pool_context(s, L)
    try:
        return plan_pool(specs, available, pctx)
    except UngroupableSpecs:
        return plan_pool_ungrouped(specs, available, pctx)


def model_check_inputs(startup: Startup, link: ModelLink, base: Baseline) -> tuple[int | None, int | None, str]:
    """(bytes per token, weights per rank, note) for :func:`vmemplan.explain.explain`'s model checks,
    at the log's tp / kv_cache_dtype / block size.  Weights are left out (``None``) for a quantized
    checkpoint, whose packing the weights law does not price."""
    s = _setting_of(base, base.vllm_version or base.rules.min_version)
    try:
        pool = _model_pool(link, s, 1 << 40)
        bpt = pool.bytes_per_token
    except VmemplanError:
        bpt = None
    weights: int | None = None
    note = (f"model checks use the {link.how}, at tp={s.tp}, kv_cache_dtype={s.kv_cache_dtype}, block size"
            f" {s.block_size}, {s.dtype}")
    quant = startup.figures.quantization
    if link.quantized or (quant and quant.lower() not in ("none", "null")):
        note += "; the weights check is skipped: the checkpoint is quantized"
    else:
        try:
            weights = _model_weights(link, s)
        except VmemplanError:
            weights = None
    if bpt is None:
        note += "; no single bytes-per-token figure (sliding-window, linear-attention or mamba layers)"
    return bpt, weights, note


def _setting_of(base: Baseline, version: str) -> _Setting:
    return _Setting(version=version, rules=base.rules, util=base.gpu_memory_utilization,
                    tp=base.tensor_parallel_size, pp=base.pipeline_parallel_size, kv_cache_dtype=base.kv_cache_dtype,
                    block_size=base.block_size, max_model_len=base.max_model_len, mnbt=base.max_num_batched_tokens,
                    seqs=base.max_num_seqs, eager=base.enforce_eager, dtype=base.model_dtype)


# --------------------------------------------------------------------------------------------
# The what-if
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WhatIf:
    """One re-plan of a logged startup with ``changes`` applied together.

    ``measured`` names the log figures the result stands on; ``estimated`` the figures that had to be
    computed (moved by a law, or missing from the log); ``steps`` says how, one line each.  When the
    log lacks what a change needs, the figures are ``None`` and ``reason`` says what is missing.
    """

    changes: Mapping[str, str]
    available_kv_cache_bytes: int | None
    kv_cache_tokens: int | None
    max_concurrency: float | None
    starts: bool | None
    measured: tuple[str, ...]
    estimated: tuple[str, ...]
    steps: tuple[str, ...] = ()
    rules_pack: str | None = None
    reason: str | None = None
    num_gpu_blocks: int | None = None
    estimated_max_model_len: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "changes": dict(self.changes),
            "available_kv_cache_bytes": self.available_kv_cache_bytes,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "starts": self.starts,
            "measured": list(self.measured),
            "estimated": list(self.estimated),
            "num_gpu_blocks": self.num_gpu_blocks,
            "rules_pack": self.rules_pack,
            "steps": list(self.steps),
            "reason": self.reason,
        }
        return out


def _gib(n: float | int | None) -> str:
    return "?" if n is None else f"{n / GIB:.2f}"


def _kv_width(kv_cache_dtype: str, model_dtype: str) -> int:
    from vmemplan.explain.model_link import kv_dtype_bytes

    try:
        return kv_dtype_bytes(kv_cache_dtype, model_dtype)
    except VmemplanError:
        return 2


def _log_block_bytes(startup: Startup, f: Figures, bs: int, steps: list[str]) -> float | None:
    """Bytes one KV block costs, from the log alone: available / blocks, or available / (tokens /
    block size) for a model whose layers are all full attention."""
    K = f.available_kv_cache_bytes
    if K is None or K <= 0:
        return None
    if f.num_gpu_blocks:
        steps.append(f"bytes per block from the log: {_gib(K)} GiB / {f.num_gpu_blocks:,} blocks ="
                     f" {K / f.num_gpu_blocks:,.0f} B ({K / f.num_gpu_blocks / bs:,.0f} B per token at block size {bs})")
        return K / f.num_gpu_blocks
    hybrid = "hybrid" in startup.notes or "padding_layers" in startup.notes
    if f.kv_cache_tokens and not hybrid:
        blocks = f.kv_cache_tokens / bs
        steps.append(f"bytes per token from the log (full attention assumed): {_gib(K)} GiB / {f.kv_cache_tokens:,}"
                     f" tokens = {K / f.kv_cache_tokens:,.0f} B")
        return K / blocks
    return None


def what_if(startup: Startup, changes: Mapping[str, str], *, registry: Registry, link: ModelLink | None = None,
            gpu: Gpu | None = None, base: Baseline | None = None, vllm_version: str | None = None,
            version_source: str = "") -> WhatIf:
    """Re-plan ``startup`` with every change in ``changes`` (vLLM flag -> value text) applied at once.

    See the module docstring for the formula.  Never raises for a log that lacks figures: the result
    then carries ``reason``.
    """
    cost = registry.cost_model
    if base is None:
        base = resolve_baseline(startup, registry, vllm_version=vllm_version, version_source=version_source,
                                gpu=gpu, link=link)
    f = startup.figures
    steps: list[str] = [base.version_note]
    measured: list[str] = []
    estimated: list[str] = []
    vals = {WHAT_IF_FLAGS[k][0]: _convert(k, v, WHAT_IF_FLAGS[k][1]) for k, v in changes.items()}
    changes = dict(changes)

    def fail(reason: str) -> WhatIf:
        return WhatIf(changes, None, None, None, None, tuple(dict.fromkeys(measured)),
                      tuple(dict.fromkeys(estimated)), tuple(steps), base.rules.id, reason)

    old_version = base.vllm_version or base.rules.min_version
    old = _setting_of(base, old_version)
    new_rules, new_version = base.rules, old_version
    if "vllm_version" in vals:
        new_version = str(vals["vllm_version"])
        new_rules, warning = _select(registry, new_version, "v0" if base.rules.engine == "v0" else "v1")
        steps.append(f"re-planned under the rules of {new_rules.id} (vLLM {new_version})"
                     + (f"; {warning}" if warning else ""))
    L_new = vals.get("max_model_len", old.max_model_len)
    mnbt_new = vals.get("max_num_batched_tokens")
    seqs_new = vals.get("max_num_seqs")
    if mnbt_new is None or seqs_new is None:
        d_mnbt, d_seqs = _batch_defaults(new_rules, gpu, L_new, f.total_memory_bytes)
        if mnbt_new is None:
            mnbt_new = old.mnbt if base.mnbt_printed else d_mnbt
            if not base.mnbt_printed and mnbt_new != old.mnbt:
                estimated.append("max_num_batched_tokens")
                steps.append(f"max_num_batched_tokens follows the release's default: {old.mnbt:,} -> {mnbt_new:,}")
        if seqs_new is None:
            seqs_new = old.seqs if base.seqs_printed else d_seqs
            if not base.seqs_printed and new_rules.batch_defaults.cap_seqs_by_tokens:
                seqs_new = min(seqs_new, mnbt_new)
    new = _Setting(version=new_version, rules=new_rules, util=vals.get("gpu_memory_utilization", old.util),
                   tp=vals.get("tensor_parallel_size", old.tp), pp=old.pp,
                   kv_cache_dtype=vals.get("kv_cache_dtype", old.kv_cache_dtype),
                   block_size=vals.get("block_size", old.block_size), max_model_len=L_new, mnbt=int(mnbt_new),
                   seqs=int(seqs_new), eager=vals.get("enforce_eager", old.eager), dtype=old.dtype)
    if base.assumed:
        steps.append("not in the log, assumed: " + "; ".join(base.assumed))

    # ---- the KV bytes the log measured
    K = f.available_kv_cache_bytes
    if K is None:
        return fail("the log does not print the KV cache memory (no 'Available KV cache memory' or profiler"
                    " line), so there is nothing to calibrate from")
    measured.append("available_kv_cache_bytes")
    if f.kv_cache_memory_override_bytes is not None:
        measured.append("kv_cache_memory_override_bytes")
        steps.append("--kv-cache-memory-bytes fixed the pool: utilization, weights and activations do not move it")
        K_new = K
    else:
        K_new = K
        # ---- budget
        T = f.total_memory_bytes
        t_src = "measured"
        if T is not None:
            measured.append("total_memory_bytes")
        elif gpu is not None:
            T, t_src = gpu.total_memory_bytes, f"--gpu {gpu.id}"
        elif f.requested_memory_bytes is not None and f.gpu_memory_utilization:
            T, t_src = round(f.requested_memory_bytes / f.gpu_memory_utilization), "requested / util"
        if f.gpu_memory_utilization is not None:
            measured.append("gpu_memory_utilization")
        rounding_changes = old.rules.budget.requested_rounding != new.rules.budget.requested_rounding
        if new.util != old.util or (rounding_changes and T is not None):
            if T is None:
                return fail("the log does not print the GPU's total memory; pass --gpu GPU so a change of"
                            " gpu-memory-utilization can be priced")
            from vmemplan.laws.budget import requested_memory_bytes

            if t_src != "measured":
                estimated.append("total_memory_bytes")
            R_old = requested_memory_bytes(T, old.util, rounding=old.rules.budget.requested_rounding)
            R_new = requested_memory_bytes(T, new.util, rounding=new.rules.budget.requested_rounding)
            K_new += R_new - R_old
            estimated.append("requested_memory_bytes")
            steps.append(f"budget: total {_gib(T)} GiB ({t_src}) x util {old.util} -> {new.util}:"
                         f" {R_old / GIB:.3f} -> {R_new / GIB:.3f} GiB ({(R_new - R_old) / GIB:+.3f} GiB)")
        # ---- weights
        W = f.weights_bytes
        if W is not None:
            measured.append("weights_bytes")
        if new.tp != old.tp:
            if W is None and link is not None:
                W = _model_weights(link, old)
                estimated.append("weights_bytes")
                steps.append(f"weights not in the log: {_gib(W)} GiB from the model")
            if W is None:
                return fail("the log does not print the weights, so a change of tensor-parallel-size cannot be"
                            " priced; pass --model")
            if link is not None:
                w_old, w_new = _model_weights(link, old), _model_weights(link, new)
                W_new = round(W * w_new / w_old) if w_old else W
                how = (f"x {w_new / GIB:.4f} / {w_old / GIB:.4f} (weights law at tp {new.tp} vs {old.tp},"
                       f" {link.model_id})")
            else:
                W_new = round(W * old.tp / new.tp)
                how = f"x {old.tp} / {new.tp} (model unknown: every weight assumed split evenly)"
            K_new -= W_new - W
            estimated.append("weights_bytes")
            steps.append(f"weights per rank: {_gib(W)} GiB {how} = {W_new / GIB:.4f} GiB ({(W_new - W) / GIB:+.3f} GiB)")
        # ---- activation peak
        A = f.activation_peak_bytes
        if A is not None:
            measured.append("activation_peak_bytes")
        elif f.peak_torch_bytes is not None and f.weights_bytes is not None:
            A = f.peak_torch_bytes - f.weights_bytes
            measured += ["peak_torch_bytes", "weights_bytes"]
        moves_act = (new.profile_tokens != old.profile_tokens or new.seqs != old.seqs or new.tp != old.tp
                     or new.version != old.version)
        if moves_act:
            if link is not None:
                a_old, a_new = _activation(link, old, cost), _activation(link, new, cost)
                d = a_new - a_old
                base_txt = f"{_gib(A)} GiB (log)" if A is not None else f"{_gib(a_old)} GiB (law; not in the log)"
                steps.append(f"activation peak: {base_txt} {d / GIB:+.3f} GiB by the activation law (profile batch"
                             f" {old.profile_tokens:,} -> {new.profile_tokens:,} tokens, sampler rows"
                             f" {min(old.seqs, old.profile_tokens)} -> {min(new.seqs, new.profile_tokens)},"
                             f" tp {old.tp} -> {new.tp})")
                K_new -= d
                estimated.append("activation_peak_bytes")
            elif A is not None and new.profile_tokens != old.profile_tokens:
                A_new = round(A * new.profile_tokens / old.profile_tokens)
                steps.append(f"activation peak: {_gib(A)} GiB x {new.profile_tokens:,} / {old.profile_tokens:,} profile"
                             f" tokens = {_gib(A_new)} GiB (model unknown: the forward pass is assumed to dominate"
                             " and to grow linearly with the profile batch)")
                K_new -= A_new - A
                estimated.append("activation_peak_bytes")
            else:
                steps.append("activation peak: not moved (the model is unknown, so its shapes cannot scale the"
                             " sampler or tensor-parallel terms; pass --model)")
                estimated.append("activation_peak_bytes")
        # ---- non-torch memory
        N = f.non_torch_bytes
        if N is not None:
            measured.append("non_torch_bytes")
        n_old, n_new = _non_torch(old, cost), _non_torch(new, cost)
        if n_new != n_old:
            K_new -= n_new - n_old
            estimated.append("non_torch_bytes")
            steps.append(f"non-torch memory: {(n_new - n_old) / GIB:+.3f} GiB (cost model: NCCL communicator at world"
                         f" size {old.tp * old.pp} -> {new.tp * new.pp}"
                         f"{', inside the budget' if new.rules.budget.nccl_inside_budget else ''}; era constants)")
        # ---- CUDA graph estimate taken from the budget
        if old.subtracts_cuda_graph or new.subtracts_cuda_graph:
            g_old = 0
            if old.subtracts_cuda_graph:
                if f.cuda_graph_estimate_bytes is not None:
                    g_old = f.cuda_graph_estimate_bytes
                    measured.append("cuda_graph_estimate_bytes")
                else:
                    g_old = _cuda_graph(link, old, cost)
                    estimated.append("cuda_graph_estimate_bytes")
            g_new = 0
            if new.subtracts_cuda_graph:
                law_old, law_new = _cuda_graph(link, old, cost), _cuda_graph(link, new, cost)
                g_new = max(0, g_old + law_new - law_old) if old.subtracts_cuda_graph else law_new
            if g_new != g_old:
                K_new -= g_new - g_old
                estimated.append("cuda_graph_estimate_bytes")
                why = "enforce-eager captures no CUDA graphs" if new.eager else "the capture sizes change"
                steps.append(f"CUDA graph estimate taken from the budget: {_gib(g_old)} -> {_gib(g_new)} GiB ({why})")
        elif new.eager != old.eager:
            steps.append("enforce-eager: this release captures CUDA graphs after sizing the KV pool, so the pool does"
                         " not change; the graphs' memory (" + (f"{_gib(f.cuda_graph_bytes)} GiB in the log"
                                                                if f.cuda_graph_bytes is not None else "not in the log")
                         + ") is freed from the (1 - util) headroom instead")
        steps.append(f"available KV cache: {_gib(K)} GiB (log) -> {K_new / GIB:.3f} GiB")

    # ---- the pool
    return _pool_result(startup, changes, base, old, new, int(K_new), link, steps, measured, estimated)


def _pool_result(startup: Startup, changes: dict[str, str], base: Baseline, old: _Setting, new: _Setting,
                 K_new: int, link: ModelLink | None, steps: list[str], measured: list[str],
                 estimated: list[str]) -> WhatIf:
    f = startup.figures
    rules = new.rules
    v0_conc = rules.kv_cache.concurrency_formula == "tokens_div_max_model_len"
    L = new.max_model_len
    block_bytes: float | None = None
    bpt_note = ""
    pool = None
    if link is not None:
        try:
            pool_old = _model_pool(link, old, 1 << 40)
            pool = _model_pool(link, new, max(K_new, 0))
        except VmemplanError as error:
            steps.append(f"the model's KV layout could not be planned ({error.message}); the log's bytes per block"
                         " are used")
            pool = None
        if pool is not None:
            log_bb = _log_block_bytes(startup, f, old.block_size, [])
            if log_bb and pool_old.block_bytes and pool_old.bytes_per_token is not None:
                tol = 0.005 * GIB / max(f.num_gpu_blocks or (f.kv_cache_tokens or 0) / old.block_size or 1, 1)
                if abs(log_bb - pool_old.block_bytes) > max(tol, 0.01 * log_bb):
                    steps.append(f"the model's block ({pool_old.block_bytes:,} B at the log's settings) disagrees with"
                                 f" the log's ({log_bb:,.0f} B): the log's bytes per block are used instead")
                    pool = None
    if pool is not None:
        L = L or pool.ctx.max_model_len if pool.ctx is not None else L
        estimated.append("kv_cache_tokens")
        steps.append(f"pool: the KV specs of {link.model_id} (tp {new.tp}, kv_cache_dtype {new.kv_cache_dtype}, block"
                     f" size {new.block_size}) grouped by the {rules.id} rules: {pool.block_bytes:,} B per block"
                     f" ({len(pool.groups)} group{'s' if len(pool.groups) != 1 else ''})")
        blocks = pool.num_blocks
        bb = pool.block_bytes
        if v0_conc:
            tokens = blocks * new.block_size
            conc = tokens / L if L else None
            starts = K_new > 0 and blocks > 0 and (L is None or tokens >= L)
        else:
            tokens = pool.kv_cache_tokens
            conc = pool.max_concurrency
            starts = K_new > 0 and pool.fits_one_request
        return _finish(changes, K_new, tokens, conc, starts, blocks, measured, estimated, steps, rules, L, bb)

    # ---- no model: the log's own bytes per block, scaled
    if "hybrid" in startup.notes or "padding_layers" in startup.notes:
        if not f.num_gpu_blocks:
            return WhatIf(changes, K_new, None, None, K_new > 0 if K_new is not None else None,
                          tuple(dict.fromkeys(measured)), tuple(dict.fromkeys(estimated)), tuple(steps), rules.id,
                          "the model mixes KV-cache layer kinds, so tokens cannot be derived from the log alone;"
                          " pass --model")
    log_steps: list[str] = []
    block_bytes = _log_block_bytes(startup, f, old.block_size, log_steps)
    if block_bytes is None:
        return WhatIf(changes, K_new, None, None, K_new > 0, tuple(dict.fromkeys(measured)),
                      tuple(dict.fromkeys(estimated)), tuple(steps), rules.id,
                      "the log prints neither blocks nor tokens next to the KV memory, so the bytes per token are"
                      " unknown; pass --model")
    steps.extend(log_steps)
    measured.append("num_gpu_blocks" if f.num_gpu_blocks else "kv_cache_tokens")
    scale = 1.0
    w_old, w_new = _kv_width(old.kv_cache_dtype, old.dtype), _kv_width(new.kv_cache_dtype, new.dtype)
    if w_new != w_old:
        scale *= w_new / w_old
        bpt_note += f"; KV element {w_old} -> {w_new} B ({old.kv_cache_dtype} -> {new.kv_cache_dtype})"
    if new.tp != old.tp:
        scale *= old.tp / new.tp
        bpt_note += f"; x {old.tp}/{new.tp} for tensor parallel (KV heads assumed to split evenly)"
    if new.block_size != old.block_size:
        scale *= new.block_size / old.block_size
        bpt_note += f"; block size {old.block_size} -> {new.block_size}"
    bb = block_bytes * scale
    if bpt_note:
        estimated.append("bytes_per_block")
        steps.append(f"bytes per block: {block_bytes:,.0f} B{bpt_note} = {bb:,.0f} B")
    bs = new.block_size
    # (the tiny epsilon keeps K / (K / n) from flooring to n - 1 in floating point)
    blocks = max(int(K_new / bb + 1e-9), 0) if K_new > 0 else 0
    estimated.append("kv_cache_tokens")
    if L:
        per_req = -(-L // bs)
        conc = (blocks * bs / L) if v0_conc else blocks / per_req
    else:
        conc = None
    tf = rules.kv_cache.tokens_formula
    if tf == "concurrency_x_max_model_len" and conc is not None and L:
        tokens = int(conc * L)
    else:
        tokens = blocks * bs
    if L is None:
        starts = blocks > 0
    elif v0_conc:
        starts = blocks > 0 and tokens >= L
    else:
        null = bb if rules.kv_cache.null_block else 0
        starts = K_new > 0 and -(-L // bs) * bb <= K_new - null
    return _finish(changes, K_new, tokens, conc, starts, blocks, measured, estimated, steps, rules, L, bb)


def _finish(changes: dict[str, str], K_new: int, tokens: int | None, conc: float | None, starts: bool, blocks: int,
            measured: list[str], estimated: list[str], steps: list[str], rules: RulesPack, L: int | None,
            block_bytes: float) -> WhatIf:
    line = f"pool: {blocks:,} blocks = {tokens:,} tokens" if tokens is not None else f"pool: {blocks:,} blocks"
    if conc is not None and L:
        line += f"; concurrency at {L:,} tokens per request {conc:.2f}x"
    line += " - vLLM would start" if starts else " - vLLM would NOT start"
    if not starts:
        if K_new <= 0:
            line += " (no memory left for KV cache blocks)"
        elif L:
            fit = int(max(K_new - block_bytes, 0) // block_bytes) * (tokens // blocks if blocks and tokens else 16)
            line += f" (one {L:,}-token request does not fit; about {fit:,} tokens would)"
    steps.append(line)
    return WhatIf(changes=changes, available_kv_cache_bytes=int(K_new), kv_cache_tokens=tokens,
                  max_concurrency=None if conc is None else round(conc, 2), starts=bool(starts),
                  measured=tuple(dict.fromkeys(measured)), estimated=tuple(dict.fromkeys(estimated)),
                  steps=tuple(steps), rules_pack=rules.id, num_gpu_blocks=blocks)


# --------------------------------------------------------------------------------------------
# Everything together: one report per startup
# --------------------------------------------------------------------------------------------


def header_hints(header: Mapping[str, Any] | None, registry: Registry) -> dict[str, Any]:
    """What a corpus-style YAML header (``---`` ... ``---``) adds when the log itself lacks it: the
    vLLM version, the model id and the GPU (only when the text names a registry GPU exactly)."""
    out: dict[str, Any] = {}
    if not header:
        return out
    from vmemplan.core.version import parse_version

    ver = header.get("vllm_version")
    if ver not in (None, "", "null"):
        first = str(ver).split()[0].strip(",;()")
        try:
            parse_version(first)
            out["vllm_version"] = first
        except UsageError:
            pass
    model = header.get("model")
    if isinstance(model, str) and model.strip():
        out["model"] = model.split(" (")[0].strip()
    gpu_text = header.get("gpu")
    if isinstance(gpu_text, str):
        text = gpu_text.split(" (")[0].strip()
        if text[:1].isdigit() and "x " in text[:4]:
            text = text.split("x ", 1)[1]
        for g in registry.gpus:
            names = {g.id.lower(), g.name.lower(), *(a.lower() for a in g.aliases), *(n.lower() for n in g.name_variants)}
            if text.lower() in names:
                out["gpu"] = g
                break
    return out


def explain_startups(startups: Sequence[Startup], *, registry: Registry, changes: Mapping[str, str] | None = None,
                     model: str | None = None, allow_hub: bool = False, gpu: Gpu | None = None,
                     vllm_version: str | None = None, header: Mapping[str, Any] | None = None) -> list[Any]:
    """Explain every startup: link its model (``model`` = ``--model`` wins over the log's own name,
    then a corpus header's), run the model cross-checks, and apply ``changes`` as one what-if.

    Returns :class:`vmemplan.explain.explain.Report` objects with ``what_if`` filled.
    """
    from dataclasses import replace

    from vmemplan.explain.explain import Suggestion, explain
    from vmemplan.explain.model_link import link_model

    hints = header_hints(header, registry)
    version_source = "--vllm-version" if vllm_version else "the file's YAML header"
    vllm_version = vllm_version or hints.get("vllm_version")
    gpu = gpu or hints.get("gpu")
    forced = None
    if model:
        forced = link_model(model, allow_hub=allow_hub, registry=registry, strict=True)
    reports = []
    for s in startups:
        if forced is not None:
            link, link_note = forced
        else:
            ref = s.model or hints.get("model")
            link, link_note = link_model(ref, allow_hub=allow_hub, registry=registry)
            if link is not None and not s.model:
                link = replace(link, how=link.how + ", the model named in the file's YAML header")
                link_note = link.how
        base = resolve_baseline(s, registry, vllm_version=vllm_version, version_source=version_source, gpu=gpu,
                                link=link)
        bpt = weights = None
        note = link_note
        if link is not None:
            try:
                bpt, weights, note = model_check_inputs(s, link, base)
            except VmemplanError as error:
                note = f"model checks skipped: {error.message}"
        report = explain(s, bytes_per_token=bpt, model_weights_bytes=weights)
        model_checks = ("tokens_vs_available_bytes", "blocks_vs_available_bytes", "weights_vs_model")
        checks = tuple(replace(c, detail=f"{c.detail} [{note}]") if c.name in model_checks else c
                       for c in report.checks)
        suggestions = tuple(report.suggestions)
        if link is None:
            suggestions += (Suggestion("model_not_linked", link_note, severity="info"),)
        elif not any(c.name in model_checks for c in checks):
            suggestions += (Suggestion("model_linked", note, severity="info"),)
        what = ()
        if changes:
            w = what_if(s, changes, registry=registry, link=link, gpu=gpu, base=base)
            what = (w.to_json(),)
        reports.append(replace(report, checks=checks, suggestions=suggestions, what_if=what))
    return reports
