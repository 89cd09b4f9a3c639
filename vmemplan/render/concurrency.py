"""Rendering for `vmemplan concurrency`: the limits table, a picture of effective concurrency
against request length, the simulation summary and timeline, the speed table, and JSON."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vmemplan.concurrency import ConcurrencyReport

__all__ = ["concurrency_json", "simulation_json", "render_concurrency", "concurrency_chart", "timeline_chart",
           "speed_table", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_SPARK = "▁▂▃▄▅▆▇█"
#: One glyph per binding limit, so that the chart reads the same without colour (NO_COLOR).
_BAR_GLYPH = {"max_num_seqs": "█", "kv_cache": "▒"}


def _fmt(n: int | None) -> str:
    return "∞" if n is None else f"{n:,}"


def simulation_json(sim: Any, timed: Any, config: Any, *, traffic: str, notes: tuple[str, ...] = (),
                    speed_notes: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``simulation`` object of the concurrency JSON contract (ms figures are estimates)."""

    def pct(p: Any) -> dict[str, Any]:
        return {"p50": p.p50, "p90": p.p90, "p99": p.p99}

    out: dict[str, Any] = {
        "steps": sim.steps,
        "preemptions": sim.preemptions,
        "peak_running": sim.peak_running,
        "peak_pool_fraction": sim.peak_pool_fraction,
        "peak_pool_blocks_used": sim.peak_pool_blocks_used,
        "requests": sim.num_requests,
        "completed": sim.completed,
        "finished_all": sim.finished_all,
        "ttft_steps": pct(sim.ttft_steps),
        "itl_steps": pct(sim.itl_steps),
        "ttft_ms": pct(timed.ttft_ms) if timed else None,
        "itl_ms": pct(timed.itl_ms) if timed else None,
        "e2e_ms": pct(timed.e2e_ms) if timed else None,
        "output_tokens_per_s": timed.output_tokens_per_s if timed else None,
        "total_time_s": timed.total_time_s if timed else None,
        "timing_is_estimate": True,
        "traffic": traffic,
        "pool": {"num_blocks": config.num_blocks, "block_size": config.block_size,
                 "fixed_blocks_per_request": config.fixed_blocks_per_request,
                 "max_num_batched_tokens": config.max_num_batched_tokens, "max_num_seqs": config.max_num_seqs},
        "notes": list(notes),
        "speed_model": list(speed_notes),
    }
    return out


def concurrency_json(report: ConcurrencyReport, plan: Any, *, simulation: dict[str, Any] | None = None,
                     speed: list[dict[str, Any]] | None = None, mm: dict[str, Any] | None = None) -> dict[str, Any]:
    """The concurrency JSON contract (schema_version 1): fields may be added, never renamed."""
    lim = report.limits
    return {
        "schema_version": SCHEMA_VERSION,
        "model": plan.model_id,
        "gpu": plan.gpu_id,
        "limits": {
            "max_num_seqs": lim.max_num_seqs,
            "kv_cache_requests_at_max_model_len": lim.kv_cache_requests_at_max_model_len,
            "max_num_batched_tokens": lim.max_num_batched_tokens,
            "max_model_len": lim.max_model_len,
            "num_blocks": lim.num_blocks,
            "usable_blocks": lim.usable_blocks,
            "fixed_blocks_per_request": lim.fixed_blocks_per_request,
            "admission_blocks_per_request": lim.admission_blocks_per_request,
            "kv_cache_tokens": plan.kv_cache.tokens,
        },
        "binding": report.binding,
        "reference_tokens": report.reference_tokens,
        "crossover_tokens": report.crossover_tokens,
        "rows": [r.to_json() for r in report.rows],
        "multimodal": mm,
        "simulation": simulation,
        "speed": speed,
        "notes": list(report.notes),
    }


def concurrency_chart(report: ConcurrencyReport, width: int = 50) -> RenderableType:
    """Effective concurrency against request length, one bar per row on a log scale; bars where
    max_num_seqs binds in blue, the pool in green; a line marks the crossover."""
    from rich.text import Text

    rows = [r for r in report.rows if r.within_max_model_len]
    text = Text()
    if not rows:
        return text
    top = max(max(r.effective for r in rows), 1)
    scale = math.log2(top + 1)
    label_w = max(len(f"{r.request_tokens:,}") for r in rows)
    text.append("effective concurrency by request length (log scale)\n", style="bold")
    crossed = False
    cross = report.crossover_tokens
    for r in rows:
        if cross and not crossed and r.request_tokens > cross:
            crossed = True
            text.append(f"{'':>{label_w}} ┄┄ crossover {cross:,} tokens: --max-num-seqs above, KV pool below ┄┄\n",
                        style="yellow")
        cells = round(math.log2(r.effective + 1) / scale * width) if r.effective else 0
        colour = "blue" if r.binding == "max_num_seqs" else "green"
        text.append(f"{r.request_tokens:>{label_w},} │")
        text.append(_BAR_GLYPH[r.binding] * cells, style=colour)
        text.append(f" {r.effective:,}" + (" (max_num_seqs)" if r.binding == "max_num_seqs" else " (KV pool)") + "\n")
    text.append(_BAR_GLYPH["max_num_seqs"] + " ", style="blue")
    text.append("capped by --max-num-seqs  ")
    text.append(_BAR_GLYPH["kv_cache"] + " ", style="green")
    text.append("capped by the KV pool\n")
    return text


def _spark(values: list[float], top: float) -> str:
    if top <= 0:
        return _SPARK[0] * len(values)
    return "".join(_SPARK[min(int(v / top * (len(_SPARK) - 1) + 0.5), len(_SPARK) - 1)] for v in values)


def timeline_chart(sim: Any, buckets: int = 60) -> RenderableType:
    """Running, waiting and pool use over the run, one character per stretch of steps."""
    from rich.text import Text

    tl = sim.timeline(buckets)
    text = Text()
    if not tl:
        return text
    run = [b.running for b in tl]
    wait = [b.waiting for b in tl]
    pool = [b.pool_fraction * 100 for b in tl]
    text.append(f"timeline: {sim.steps:,} steps, {len(tl)} columns of ~{tl[0].last_step - tl[0].first_step + 1} steps "
                "(maximum in each column)\n", style="bold")
    text.append(f"running {max(run):>6,} ")
    text.append(_spark(run, max(run)) + "\n", style="green")
    text.append(f"waiting {max(wait):>6,} ")
    text.append(_spark(wait, max(wait)) + "\n", style="red")
    text.append(f"pool %  {max(pool):>6.1f} ")
    text.append(_spark(pool, 100.0) + "\n", style="blue")
    return text


def speed_table(rows: list[dict[str, Any]], context_tokens: int, prompt_tokens: int) -> RenderableType:
    from rich.table import Table

    t = Table(title=f"speed model (estimates): decode at {context_tokens:,} tokens of context, "
                    f"TTFT of {prompt_tokens:,}-token prompts arriving together", title_justify="left")
    for col in ("batch", "TTFT ms", "ITL ms", "tokens/s (all)", "tokens/s (each)"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(f"{r['batch']:,}", f"{r['ttft_ms']:,.1f}", f"{r['itl_ms']:,.2f}",
                  f"{r['throughput_tokens_per_s']:,.0f}", f"{r['throughput_tokens_per_s'] / r['batch']:,.1f}")
    return t


def render_concurrency(report: ConcurrencyReport, plan: Any, *, sim: Any = None, timed: Any = None,
                       sim_json: dict[str, Any] | None = None, speed_rows: list[dict[str, Any]] | None = None,
                       speed_context: tuple[int, int] | None = None, speed_notes: tuple[str, ...] = (),
                       speed_reason: str | None = None, mm_note: str | None = None) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [_limits_table(report, plan), _lengths_table(report, plan)]
    parts.extend(_lengths_notes(report, mm_note))
    parts.append(Text(""))
    parts.append(concurrency_chart(report))

    if sim is not None and sim_json is not None:
        parts.extend(_simulation_parts(report, sim, timed, sim_json))
    if speed_rows and speed_context:
        parts.append(speed_table(speed_rows, *speed_context))
    if speed_reason:
        parts.append(Text(f"speed model: not available — {speed_reason}", style="yellow"))
    elif speed_notes and (speed_rows or timed):
        parts.append(Text("Every millisecond above is an estimate from the roofline speed model: "
                          + "; ".join(speed_notes), style="dim"))
    return Group(*parts)


def _limits_table(report: ConcurrencyReport, plan: Any) -> RenderableType:
    """The three limits: --max-num-seqs, the KV pool, --max-num-batched-tokens."""
    from rich.table import Table

    lim = report.limits
    head = Table(title=f"{plan.model_id} on {plan.gpu_name}: the three concurrency limits", title_justify="left")
    head.add_column("limit")
    head.add_column("value", justify="right")
    head.add_column("what it caps")
    head.add_row("--max-num-seqs", f"{lim.max_num_seqs:,}", "requests running at once")
    head.add_row("KV pool", f"{lim.usable_blocks:,} blocks",
                 f"requests resident at once ({plan.kv_cache.tokens:,} tokens; vLLM: "
                 f"{lim.kv_cache_requests_at_max_model_len:.2f}× at {lim.max_model_len:,})")
    head.add_row("--max-num-batched-tokens", f"{lim.max_num_batched_tokens:,}",
                 "tokens per step: how fast prompts enter, not how many run")
    return head


def _lengths_table(report: ConcurrencyReport, plan: Any) -> RenderableType:
    """Concurrency by request length: one row per length, beyond max_model_len dimmed."""
    from rich.table import Table

    e = plan.engine
    t = Table(title=f"concurrency by request length (block size {plan.kv_cache.block_size}, "
                    f"tp {e.tensor_parallel_size})", title_justify="left")
    for col, just in (("tokens", "right"), ("blocks", "right"), ("by KV", "right"),
                      ("by seqs", "right"), ("effective", "right"), ("binds", "left"),
                      ("prefill", "right"), ("fill", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in report.rows:
        label = f"{r.request_tokens:,}" + (" ←" if r.label else "")
        if not r.within_max_model_len:
            t.add_row(label, f"{r.blocks_per_request:,}", _fmt(r.by_kv_cache), f"{r.by_max_num_seqs:,}", "0",
                      "> max_model_len", "", "", style="dim")
            continue
        t.add_row(label, f"{r.blocks_per_request:,}", _fmt(r.by_kv_cache), f"{r.by_max_num_seqs:,}",
                  f"{r.effective:,}", "seqs" if r.binding == "max_num_seqs" else "KV",
                  f"{r.prefill_steps:,}", f"{r.fill_steps:,}")
    return t


def _lengths_notes(report: ConcurrencyReport, mm_note: str | None) -> list[Any]:
    """Under the lengths table: the crossover, what binds at the reference length, the column key,
    the labelled lengths and the notes."""
    from rich.text import Text

    lim = report.limits
    parts: list[Any] = []
    cross = report.crossover_tokens
    if cross is None:
        parts.append(Text(f"The KV pool holds {lim.max_num_seqs:,} requests even at {lim.max_model_len:,} tokens: "
                          "--max-num-seqs binds at every length.", style="bold"))
    elif cross == 0:
        parts.append(Text(f"The KV pool cannot hold {lim.max_num_seqs:,} requests of any length: it binds everywhere.",
                          style="bold"))
    else:
        parts.append(Text(f"Crossover at {cross:,} tokens per request: up to there --max-num-seqs "
                          f"({lim.max_num_seqs:,}) binds, beyond it the KV pool does.", style="bold"))
    ref_row = report.row_at(report.reference_tokens)
    binding = "--max-num-seqs" if report.binding == "max_num_seqs" else "the KV pool"
    parts.append(Text(f"At {report.reference_tokens:,} tokens per request, {binding} binds"
                      + (f": {ref_row.effective:,} requests at once." if ref_row else ".")))
    parts.append(Text("blocks: KV blocks one request holds; by KV: requests the pool holds; by seqs: --max-num-seqs; "
                      "binds: seqs or KV; prefill: steps one prompt needs alone (prompt ÷ max_num_batched_tokens); "
                      "fill: steps until `effective` prompts have all entered.", style="dim"))
    for r in report.rows:
        if r.label:
            parts.append(Text(f"← {r.request_tokens:,} tokens = {r.label}" + (f" + {r.mm_tokens:,} vision tokens"
                                                                             if r.mm_tokens else ""), style="dim"))
    if mm_note:
        parts.append(Text(mm_note, style="dim"))
    for n in report.notes:
        parts.append(Text("note: " + n, style="dim"))
    return parts


def _simulation_parts(report: ConcurrencyReport, sim: Any, timed: Any, sim_json: dict[str, Any]) -> list[Any]:
    """The simulation summary table, its notes and its timeline."""
    from rich.table import Table
    from rich.text import Text

    lim = report.limits
    parts: list[Any] = []
    st = Table(title=f"simulation: {sim_json['traffic']}", title_justify="left")
    st.add_column("figure")
    st.add_column("steps", justify="right")
    st.add_column("ms (estimate)", justify="right")
    st.add_row("steps", f"{sim.steps:,}", f"{timed.total_time_s * 1e3:,.0f}" if timed else "")
    st.add_row("completed", f"{sim.completed:,} of {sim.num_requests:,}", "")
    st.add_row("preemptions", f"{sim.preemptions:,}", "")
    st.add_row("peak running", f"{sim.peak_running:,} (cap {lim.max_num_seqs:,})", "")
    st.add_row("peak pool use", f"{sim.peak_pool_fraction * 100:.1f} % ({sim.peak_pool_blocks_used:,} blocks)", "")

    def p(x: Any, digits: int = 0) -> str:
        return "–" if x is None else f"{x:,.{digits}f}"

    for name, steps_p, ms_p in (("TTFT p50", sim.ttft_steps.p50, timed.ttft_ms.p50 if timed else None),
                                ("TTFT p99", sim.ttft_steps.p99, timed.ttft_ms.p99 if timed else None),
                                ("ITL p50", sim.itl_steps.p50, timed.itl_ms.p50 if timed else None),
                                ("ITL p99", sim.itl_steps.p99, timed.itl_ms.p99 if timed else None)):
        st.add_row(name, p(steps_p), p(ms_p, 1))
    if timed:
        st.add_row("output tokens/s (all)", "", f"{timed.output_tokens_per_s:,.0f}")
    parts.append(st)
    for n in sim_json.get("notes", []):
        parts.append(Text("note: " + n, style="dim"))
    parts.append(timeline_chart(sim))
    return parts
