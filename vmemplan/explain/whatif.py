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

from dataclasses import field
from typing import TYPE_CHECKING, Any, Mapping

from vmemplan.core.errors import VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.explain.baseline import (
    WHAT_IF_FLAGS,
    Baseline,
    batch_defaults,
    check_what_if_heads,
    convert_value,
    parse_what_if,
    resolve_baseline,
    select_rules,
    version_from_format,
)
from vmemplan.explain.parse import GIB, Figures, Startup
from vmemplan.explain.whatif_steps import (
    Setting,
    Steps,
    model_check_inputs,
    model_free_cuda_graph,
    model_free_non_torch,
    setting_of,
)

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
]


# --------------------------------------------------------------------------------------------
# The what-if
# --------------------------------------------------------------------------------------------


@frozen
class WhatIf:
    """One re-plan of a logged startup with ``changes`` applied together.

    ``measured`` names the log figures the result stands on; ``estimated`` the figures that had to be
    computed (moved by a law, or missing from the log; never also measured); ``steps`` says how, one
    line each.  When the log lacks what a change needs, the figures are ``None`` and ``reason`` says why.
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "measured", tuple(m for m in self.measured if m not in self.estimated))

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


class _Walk:
    """One what-if while it is priced: the log's figures, the old and new settings with their
    pipeline steps, the available KV bytes as each change moves them, and the trace (steps,
    figures read from the log, figures estimated)."""

    def __init__(self, startup: Startup, base: Baseline, registry: Registry, gpu: Gpu | None,
                 link: ModelLink | None) -> None:
        self.f = startup.figures
        self.base, self.registry, self.gpu, self.link = base, registry, gpu, link
        self.cost = registry.cost_model
        self.steps: list[str] = [base.version_note]
        self.measured: list[str] = []
        self.estimated: list[str] = []
        self.K_new = 0
        self.p_old: Steps | None = None
        self.p_new: Steps | None = None

    @property
    def linked(self) -> bool:
        return self.p_old is not None and self.p_new is not None


def what_if(startup: Startup, changes: Mapping[str, str], *, registry: Registry, link: ModelLink | None = None,
            gpu: Gpu | None = None, base: Baseline | None = None, vllm_version: str | None = None,
            version_source: str = "") -> WhatIf:
    """Re-plan ``startup`` with every change in ``changes`` (vLLM flag -> value text) applied at once.

    See the module docstring for the formula.  Never raises for a log that lacks figures: the result
    then carries ``reason``.
    """
    if base is None:
        base = resolve_baseline(startup, registry, vllm_version=vllm_version, version_source=version_source,
                                gpu=gpu, link=link)
    w = _Walk(startup, base, registry, gpu, link)
    vals = {WHAT_IF_FLAGS[k][0]: convert_value(k, v, WHAT_IF_FLAGS[k][1]) for k, v in changes.items()}
    changes = dict(changes)

    def fail(reason: str) -> WhatIf:
        return WhatIf(changes, None, None, None, None, tuple(dict.fromkeys(w.measured)),
                      tuple(dict.fromkeys(w.estimated)), tuple(w.steps), base.rules.id, reason)

    old, new = _settings(w, vals)
    reason = _linked_steps(w, old, new, vals)
    if reason is not None:
        return fail(reason)
    # ---- the KV bytes the log measured
    K = w.f.available_kv_cache_bytes
    if K is None:
        return fail("the log does not print the KV cache memory (no 'Available KV cache memory' or profiler"
                    " line), so there is nothing to calibrate from")
    w.measured.append("available_kv_cache_bytes")
    w.K_new = K
    if w.f.kv_cache_memory_override_bytes is not None:
        w.measured.append("kv_cache_memory_override_bytes")
        w.steps.append("--kv-cache-memory-bytes fixed the pool: utilization, weights and activations do not move it")
    else:
        for term in (_budget_term, _weights_term):
            reason = term(w, old, new)
            if reason is not None:
                return fail(reason)
        _activation_term(w, old, new)
        _non_torch_term(w, old, new)
        _cuda_graph_term(w, old, new)
        w.steps.append(f"available KV cache: {_gib(K)} GiB (log) -> {w.K_new / GIB:.3f} GiB")
    # ---- the pool
    return _pool_result(startup, changes, base, old, new, int(w.K_new), link, w.steps, w.measured, w.estimated,
                        w.p_old, w.p_new)


def _settings(w: _Walk, vals: Mapping[str, Any]) -> tuple[Setting, Setting]:
    """The log's settings and the settings after the changes (batch sizes following the new
    release's defaults where the log did not print them)."""
    base, f, steps = w.base, w.f, w.steps
    old_version = base.vllm_version or base.rules.min_version
    old = setting_of(base, old_version)
    new_rules, new_version = base.rules, old_version
    if "vllm_version" in vals:
        new_version = str(vals["vllm_version"])
        new_rules, warning = select_rules(w.registry, new_version, "v0" if base.rules.engine == "v0" else "v1")
        steps.append(f"re-planned under the rules of {new_rules.id} (vLLM {new_version})"
                     + (f"; {warning}" if warning else ""))
    L_new = vals.get("max_model_len", old.max_model_len)
    mnbt_new = vals.get("max_num_batched_tokens")
    seqs_new = vals.get("max_num_seqs")
    if mnbt_new is None or seqs_new is None:
        d_mnbt, d_seqs = batch_defaults(new_rules, w.gpu, L_new, f.total_memory_bytes)
        if mnbt_new is None:
            mnbt_new = old.mnbt if base.mnbt_printed else d_mnbt
            if not base.mnbt_printed and mnbt_new != old.mnbt:
                w.estimated.append("max_num_batched_tokens")
                steps.append(f"max_num_batched_tokens follows the release's default: {old.mnbt:,} -> {mnbt_new:,}")
        if seqs_new is None:
            seqs_new = old.seqs if base.seqs_printed else d_seqs
            if not base.seqs_printed and new_rules.batch_defaults.cap_seqs_by_tokens:
                seqs_new = min(seqs_new, mnbt_new)
    new = Setting(version=new_version, rules=new_rules, util=vals.get("gpu_memory_utilization", old.util),
                  tp=vals.get("tensor_parallel_size", old.tp), pp=old.pp,
                  kv_cache_dtype=vals.get("kv_cache_dtype", old.kv_cache_dtype),
                  block_size=vals.get("block_size", old.block_size), max_model_len=L_new, mnbt=int(mnbt_new),
                  seqs=int(seqs_new), eager=vals.get("enforce_eager", old.eager), dtype=old.dtype)
    if base.assumed:
        steps.append("not in the log, assumed: " + "; ".join(base.assumed))
    return old, new


def _linked_steps(w: _Walk, old: Setting, new: Setting, vals: Mapping[str, Any]) -> str | None:
    """The pipeline's steps at the old and the new settings (only with a linked model); why the
    what-if cannot be priced, when vLLM would refuse the new flags."""
    link = w.link
    check_what_if_heads(link, vals.get("tensor_parallel_size"))  # heads known: size's refusal, exit 2
    if link is None:
        return None
    w.p_old, w.p_new = Steps(link, old, w.registry, w.gpu), Steps(link, new, w.registry, w.gpu)
    try:
        w.p_old.req
    except VmemplanError as error:
        w.steps.append(f"the model's laws cannot be applied at the log's own settings ({error.message}); the log's"
                       " figures are scaled instead")
        w.p_old = w.p_new = None
        return None
    try:
        w.p_new.req  # the new settings get size's own refusals (heads vs tp, lengths, batches)
    except VmemplanError as error:
        return f"vLLM would refuse these flags: {error.message}"
    return None


def _budget_term(w: _Walk, old: Setting, new: Setting) -> str | None:
    """A change of utilization (or of the release's rounding) moves the budget."""
    f = w.f
    T = f.total_memory_bytes
    t_src = "measured"
    if T is not None:
        w.measured.append("total_memory_bytes")
    elif w.gpu is not None:
        T, t_src = w.gpu.total_memory_bytes, f"--gpu {w.gpu.id}"
    elif f.requested_memory_bytes is not None and f.gpu_memory_utilization:
        T, t_src = round(f.requested_memory_bytes / f.gpu_memory_utilization), "requested / util"
    if f.gpu_memory_utilization is not None:
        w.measured.append("gpu_memory_utilization")
    rounding_changes = old.rules.budget.requested_rounding != new.rules.budget.requested_rounding
    if not (new.util != old.util or (rounding_changes and T is not None)):
        return None
    if T is None:
        return ("the log does not print the GPU's total memory; pass --gpu GPU so a change of"
                " gpu-memory-utilization can be priced")
    from vmemplan.laws.budget import requested_memory_bytes

    if t_src != "measured":
        w.estimated.append("total_memory_bytes")
    R_old = requested_memory_bytes(T, old.util, rounding=old.rules.budget.requested_rounding)
    R_new = requested_memory_bytes(T, new.util, rounding=new.rules.budget.requested_rounding)
    w.K_new += R_new - R_old
    w.estimated.append("requested_memory_bytes")
    w.steps.append(f"budget: total {_gib(T)} GiB ({t_src}) x util {old.util} -> {new.util}:"
                   f" {R_old / GIB:.3f} -> {R_new / GIB:.3f} GiB ({(R_new - R_old) / GIB:+.3f} GiB)")
    return None


def _weights_term(w: _Walk, old: Setting, new: Setting) -> str | None:
    """A change of tensor parallelism re-splits the weights (by the weights law when linked)."""
    W = w.f.weights_bytes
    if W is not None:
        w.measured.append("weights_bytes")
    if new.tp == old.tp:
        return None
    p_old, p_new = w.p_old, w.p_new
    if W is None and p_old is not None:
        W = p_old.weights()
        w.estimated.append("weights_bytes")
        w.steps.append(f"weights not in the log: {_gib(W)} GiB from the model")
    if W is None:
        return ("the log does not print the weights, so a change of tensor-parallel-size cannot be"
                " priced; pass --model")
    if p_old is not None and p_new is not None and w.link is not None:
        w_old, w_new = p_old.weights(), p_new.weights()
        W_new = (W * w_new + w_old // 2) // w_old if w_old else W
        how = (f"x {w_new / GIB:.4f} / {w_old / GIB:.4f} (weights law at tp {new.tp} vs {old.tp},"
               f" {w.link.model_id})")
    else:
        W_new = round(W * old.tp / new.tp)
        how = f"x {old.tp} / {new.tp} (model unknown: every weight assumed split evenly)"
    w.K_new -= W_new - W
    w.estimated.append("weights_bytes")
    w.steps.append(f"weights per rank: {_gib(W)} GiB {how} = {W_new / GIB:.4f} GiB ({(W_new - W) / GIB:+.3f} GiB)")
    return None


def _activation_term(w: _Walk, old: Setting, new: Setting) -> None:
    """The profile batch, the sampler rows, tensor parallelism or the release move the peak."""
    f = w.f
    A = f.activation_peak_bytes
    if A is not None:
        w.measured.append("activation_peak_bytes")
    elif f.peak_torch_bytes is not None and f.weights_bytes is not None:
        A = f.peak_torch_bytes - f.weights_bytes
        w.measured += ["peak_torch_bytes", "weights_bytes"]
    moves_act = (new.profile_tokens != old.profile_tokens or new.seqs != old.seqs or new.tp != old.tp
                 or new.version != old.version)
    if not moves_act:
        return
    if w.p_old is not None and w.p_new is not None:
        a_old, a_new = w.p_old.activation(), w.p_new.activation()
        d = a_new - a_old
        base_txt = f"{_gib(A)} GiB (log)" if A is not None else f"{_gib(a_old)} GiB (law; not in the log)"
        w.steps.append(f"activation peak: {base_txt} {d / GIB:+.3f} GiB by the activation law (profile batch"
                       f" {old.profile_tokens:,} -> {new.profile_tokens:,} tokens, sampler rows"
                       f" {min(old.seqs, old.profile_tokens)} -> {min(new.seqs, new.profile_tokens)},"
                       f" tp {old.tp} -> {new.tp})")
        w.K_new -= d
    elif A is not None and new.profile_tokens != old.profile_tokens:
        A_new = round(A * new.profile_tokens / old.profile_tokens)
        w.steps.append(f"activation peak: {_gib(A)} GiB x {new.profile_tokens:,} / {old.profile_tokens:,} profile"
                       f" tokens = {_gib(A_new)} GiB (model unknown: the forward pass is assumed to dominate"
                       " and to grow linearly with the profile batch)")
        w.K_new -= A_new - A
    else:
        w.steps.append("activation peak: not moved (the model is unknown, so its shapes cannot scale the"
                       " sampler or tensor-parallel terms; pass --model)")
    w.estimated.append("activation_peak_bytes")


def _non_torch_term(w: _Walk, old: Setting, new: Setting) -> None:
    """The communicator grows with the world size (the cost model's era constants)."""
    if w.f.non_torch_bytes is not None:
        w.measured.append("non_torch_bytes")
    if w.p_old is not None and w.p_new is not None:
        n_old, n_new = w.p_old.non_torch(), w.p_new.non_torch()
    else:
        n_old, n_new = model_free_non_torch(old, w.cost), model_free_non_torch(new, w.cost)
    if n_new != n_old:
        w.K_new -= n_new - n_old
        w.estimated.append("non_torch_bytes")
        w.steps.append(f"non-torch memory: {(n_new - n_old) / GIB:+.3f} GiB (cost model: NCCL communicator at world"
                       f" size {old.tp * old.pp} -> {new.tp * new.pp}"
                       f"{', inside the budget' if new.rules.budget.nccl_inside_budget else ''}; era constants)")


def _cuda_graph_term(w: _Walk, old: Setting, new: Setting) -> None:
    """The CUDA-graph estimate taken from the budget, where either release subtracts it."""
    f, cost, p_old, p_new = w.f, w.cost, w.p_old, w.p_new
    if not (old.subtracts_cuda_graph or new.subtracts_cuda_graph):
        if new.eager != old.eager:
            w.steps.append("enforce-eager: this release captures CUDA graphs after sizing the KV pool, so the pool"
                           " does not change; the graphs' memory (" + (f"{_gib(f.cuda_graph_bytes)} GiB in the log"
                                                                       if f.cuda_graph_bytes is not None
                                                                       else "not in the log")
                           + ") is freed from the (1 - util) headroom instead")
        return
    g_old = 0
    if old.subtracts_cuda_graph:
        if f.cuda_graph_estimate_bytes is not None:
            g_old = f.cuda_graph_estimate_bytes
            w.measured.append("cuda_graph_estimate_bytes")
        else:
            g_old = p_old.cuda_graph() if p_old is not None else model_free_cuda_graph(old, cost)
            w.estimated.append("cuda_graph_estimate_bytes")
    g_new = 0
    if new.subtracts_cuda_graph:
        if p_old is not None and p_new is not None:
            law_old, law_new = p_old.cuda_graph(), p_new.cuda_graph()
        else:
            law_old, law_new = model_free_cuda_graph(old, cost), model_free_cuda_graph(new, cost)
        g_new = max(0, g_old + law_new - law_old) if old.subtracts_cuda_graph else law_new
    if g_new != g_old:
        w.K_new -= g_new - g_old
        if not new.eager:  # eager captures nothing: 0 is known, not estimated
            w.estimated.append("cuda_graph_estimate_bytes")
        why = "enforce-eager captures no CUDA graphs" if new.eager else "the capture sizes change"
        w.steps.append(f"CUDA graph estimate taken from the budget: {_gib(g_old)} -> {_gib(g_new)} GiB ({why})")


def _pool_result(startup: Startup, changes: dict[str, str], base: Baseline, old: Setting, new: Setting,
                 K_new: int, link: ModelLink | None, steps: list[str], measured: list[str],
                 estimated: list[str], p_old: Steps | None = None, p_new: Steps | None = None) -> WhatIf:
    """The pool at the new settings: the model's own KV layout when it is linked and agrees with
    the log, else the log's bytes per block, scaled."""
    pool = _model_pool(startup, old, K_new, steps, p_old, p_new) if link is not None else None
    if pool is not None and link is not None:
        return _pool_from_model(changes, new, K_new, pool, link, steps, measured, estimated)
    return _pool_from_log(startup, changes, old, new, K_new, steps, measured, estimated)


def _model_pool(startup: Startup, old: Setting, K_new: int, steps: list[str], p_old: Steps | None,
                p_new: Steps | None) -> Any:
    """The linked model's pool for ``K_new`` bytes, or None when it cannot be planned or its block
    disagrees with the log's."""
    if p_old is None or p_new is None:
        return None
    f = startup.figures
    try:
        pool_old = p_old.pool(1 << 40)
        pool = p_new.pool(max(K_new, 0))
    except VmemplanError as error:
        steps.append(f"the model's KV layout could not be planned ({error.message}); the log's bytes per block"
                     " are used")
        return None
    log_bb = _log_block_bytes(startup, f, old.block_size, [])
    if log_bb and pool_old.block_bytes and pool_old.bytes_per_token is not None:
        tol = 0.005 * GIB / max(f.num_gpu_blocks or (f.kv_cache_tokens or 0) / old.block_size or 1, 1)
        if abs(log_bb - pool_old.block_bytes) > max(tol, 0.01 * log_bb):
            steps.append(f"the model's block ({pool_old.block_bytes:,} B at the log's settings) disagrees with"
                         f" the log's ({log_bb:,.0f} B): the log's bytes per block are used instead")
            return None
    return pool


def _pool_from_model(changes: dict[str, str], new: Setting, K_new: int, pool: Any, link: ModelLink,
                     steps: list[str], measured: list[str], estimated: list[str]) -> WhatIf:
    rules = new.rules
    v0_conc = rules.kv_cache.concurrency_formula == "tokens_div_max_model_len"
    L = new.max_model_len
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


def _pool_from_log(startup: Startup, changes: dict[str, str], old: Setting, new: Setting, K_new: int,
                   steps: list[str], measured: list[str], estimated: list[str]) -> WhatIf:
    """No model (or one whose layout cannot be used): the log's own bytes per block, scaled."""
    f = startup.figures
    rules = new.rules
    v0_conc = rules.kv_cache.concurrency_formula == "tokens_div_max_model_len"
    L = new.max_model_len
    bpt_note = ""
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



