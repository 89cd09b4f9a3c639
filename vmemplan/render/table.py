"""Terminal rendering of a MemoryPlan: a table, a tree and a proportional bar (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vmemplan.core.units import GIB
from vmemplan.render.vllm_log import log_lines

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vmemplan.concurrency import Headline
    from vmemplan.result import MemoryPlan

__all__ = ["render_table", "render_tree", "memory_bar", "segments"]

def _g(n: int) -> str:
    """GiB with two decimals; exact integer arithmetic, so an astronomically large figure prints
    instead of overflowing a float."""
    if isinstance(n, int) and abs(n) >= 1 << 900:
        digits = str(abs(n) // GIB)
        return f"{'-' if n < 0 else ''}{digits[0]}.{digits[1:3]}e{len(digits) - 1}"
    return f"{n / GIB:,.2f}"


_GLYPHS = {"weights": "█", "non-torch": "▓", "activation peak": "▒", "CUDA graphs": "▚",
           "KV cache pool": "░", "outside the budget": "·"}


def segments(plan: MemoryPlan) -> list[tuple[str, int, str]]:
    """(label, bytes, colour) of one rank's memory, left to right, for the bar and tree."""
    r = plan.per_rank
    total = plan.gpu_total_memory_bytes
    kv = max(r.available_kv_cache_bytes, 0)
    cg_inside = r.cuda_graph_bytes if r.cuda_graph_subtracted else 0
    used = r.weights_bytes + r.non_torch_bytes + r.activation_peak_bytes + cg_inside + kv
    outside = max(total - max(r.requested_memory_bytes, used), 0)
    segs = [
        ("weights", r.weights_bytes, "blue"),
        ("non-torch", r.non_torch_bytes, "bright_black"),
        ("activation peak", r.activation_peak_bytes, "dark_orange"),
        ("CUDA graphs", cg_inside, "yellow"),
        ("KV cache pool", kv, "green"),
        ("outside the budget", outside, "red"),
    ]
    return [s for s in segs if s[1] > 0]


_MAX_BAR_CELLS = 1_000


def memory_bar(plan: MemoryPlan, width: int = 60, columns: int = 80) -> RenderableType:
    """A proportional bar of one rank's memory, with a legend packed into ``columns`` so that no
    entry (a label and its figure) is ever split across lines."""
    from rich.text import Text

    segs = segments(plan)
    # a plan whose parts exceed the GPU (weights that do not fit) is drawn to the parts' scale
    total = max(plan.gpu_total_memory_bytes, sum(n for _, n, _ in segs))
    text = Text()
    used_cells = 0
    width = min(width, columns)
    for i, (label, n, colour) in enumerate(segs):
        # proportional (a figure larger than the GPU runs past the bar), but bounded: an
        # astronomically large figure neither overflows a float nor draws millions of cells
        try:
            share = round(n / total * width) if total > 0 else width
        except OverflowError:
            share = _MAX_BAR_CELLS
        cells = min(share, _MAX_BAR_CELLS) if i < len(segs) - 1 else max(width - used_cells, 0)
        cells = max(cells, 1) if n > 0 else 0
        text.append(_GLYPHS.get(label, "█") * cells, style=colour)
        used_cells += cells
    line = 0
    for label, n, colour in segs:
        entry = f"{label} {_g(n)} GiB"
        need = len(entry) + 2
        if line == 0 or line + 2 + need > columns:
            text.append("\n")
            line = 0
        else:
            text.append("  ")
            line += 2
        text.append(_GLYPHS.get(label, "■") + " ", style=colour)
        text.append(entry)
        line += need
    return text


def render_tree(plan: MemoryPlan, headline: Headline | None = None, columns: int = 80) -> RenderableType:
    """One rank's memory as a tree: total → outside the budget / the budget → its parts (between
    two verdict lines when ``headline`` is given)."""
    from rich.console import Group
    from rich.tree import Tree

    r = plan.per_rank
    e = plan.engine
    total = plan.gpu_total_memory_bytes
    req = r.requested_memory_bytes
    tree = Tree(f"[bold]GPU total {_g(total)} GiB[/] ({plan.gpu_name}, rank {r.rank})")
    tree.add(f"outside the budget (1 − util) {_g(total - req)} GiB — CUDA context, communicator "
             f"(~{_g(r.pre_budget_bytes)} GiB before the budget), other processes")
    budget = tree.add(f"budget = util {e.gpu_memory_utilization} × total = {_g(req)} GiB")
    budget.add(f"weights {_g(r.weights_bytes)} GiB — parameters × bytes per parameter, sharded over tp "
               f"{e.tensor_parallel_size}")
    budget.add(f"non-torch {_g(r.non_torch_bytes)} GiB — cuBLAS/attention workspaces (estimated)")
    budget.add(f"activation peak {_g(r.activation_peak_bytes)} GiB — the profile run at "
               f"{e.max_num_batched_tokens:,} batched tokens, sampler over {e.max_num_seqs} rows (estimated)")
    cg = f"CUDA graphs {_g(r.cuda_graph_bytes)} GiB — {e.cudagraph_capture_sizes} capture sizes, mode {e.cudagraph_mode}"
    if r.cuda_graph_subtracted:
        budget.add(cg + " (estimate subtracted before the pool)")
    else:
        tree.add(cg + " (captured after the pool: comes out of the margin)")
    kv = plan.kv_cache
    band = plan.band
    pm = f" ± {band.half_width_bytes / (1 << 30):.2f}" if band is not None else ""
    budget.add(f"KV cache pool {_g(max(r.available_kv_cache_bytes, 0))}{pm} GiB — the remainder: "
               f"{kv.num_blocks:,} blocks, {kv.tokens:,} tokens, "
               + (f"{kv.max_concurrency:.2f}× at {e.max_model_len:,} tokens" if kv.max_concurrency is not None
                  else "no KV cache to bound the requests")
               + (f" (band: {band.tokens_range[0]:,} – {band.tokens_range[1]:,} tokens)" if band is not None else ""))
    parts: list[RenderableType] = [tree, memory_bar(plan, columns=columns)]
    if headline is not None:
        verdict = _verdict(headline)
        parts = [verdict, *parts, verdict]
    return Group(*parts)


def _verdict(headline: Headline) -> RenderableType:
    from rich.text import Text

    from vmemplan.render.verdict import verdict_line

    style = ("yellow" if headline.outcome == "may_not_start" else "green" if headline.starts else "bold red")
    return Text(verdict_line(headline), style=style)


def _rng(central: str, pair: tuple | None, fmt: str) -> str:
    return central if pair is None else f"{central} ({format(pair[0], fmt)} – {format(pair[1], fmt)})"


def _kv_table(plan: MemoryPlan) -> RenderableType:
    """The KV cache figures: per token, blocks, tokens, concurrency (with the band's range)."""
    from rich.table import Table

    kv, band, e = plan.kv_cache, plan.band, plan.engine
    kvt = Table(title="KV cache", title_justify="left")
    kvt.add_column("figure")
    kvt.add_column("value", justify="right")
    bpt = f"{kv.bytes_per_token:,}" if kv.bytes_per_token is not None else "n/a"
    kvt.add_row("bytes per token", bpt)
    if kv.bytes_per_token is None and kv.no_bytes_per_token_reason:
        kvt.add_row("why no per-token figure", kv.no_bytes_per_token_reason)
    kvt.add_row("block size (tokens)", str(kv.block_size))
    kvt.add_row("bytes per pool block", f"{kv.page_size_bytes:,}")
    kvt.add_row("blocks", _rng(f"{kv.num_blocks:,}", band and band.num_blocks_range, ","))
    kvt.add_row("tokens (GPU KV cache size)", _rng(f"{kv.tokens:,}", band and band.tokens_range, ","))
    kvt.add_row(f"max concurrency at {e.max_model_len:,} tokens",
                _rng(f"{kv.max_concurrency:.2f}x", band and band.max_concurrency_range, ".2f")
                if kv.max_concurrency is not None else "not bounded by a KV cache (the model has none)")
    if kv.groups and len(kv.groups) > 1:
        kvt.add_row("KV cache groups", ", ".join(f"{g.kind}×{g.layers}" for g in kv.groups))
    if kv.sequence_fixed_bytes:
        kvt.add_row("fixed bytes per request", f"{kv.sequence_fixed_bytes:,}")
    if kv.request_bytes is not None:
        kvt.add_row(f"one {kv.request_tokens:,}-token request", f"{kv.request_bytes:,} bytes")
    return kvt


def render_table(plan: MemoryPlan, headline: Headline | None = None, columns: int = 80) -> RenderableType:
    """The default view: the verdict line, the per-rank breakdown, vLLM's lines, the bar, and the
    verdict line again (first and last, where the eye lands)."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    r = plan.per_rank
    e = plan.engine
    kinds = {p.figure: p.kind for p in plan.provenance}
    # the title as its own line: a table title wraps at the table's width and would split it
    title = Text(f"{plan.model_id} on {plan.gpu_name} — vLLM {plan.vllm_version} rules "
                 f"(pack {plan.rules_pack}), per rank", style="italic")
    table = Table()
    table.add_column("figure")
    table.add_column("GiB", justify="right")
    table.add_column("bytes", justify="right")
    table.add_column("kind")
    # (label, bytes, kind, the PerRank field: a band is keyed by it)
    rows = [
        ("GPU total (CUDA)", plan.gpu_total_memory_bytes, kinds.get("gpu.total_memory_bytes", "given"), None),
        (f"budget (util {e.gpu_memory_utilization})", r.requested_memory_bytes, "exact", None),
        ("weights", r.weights_bytes, kinds.get("weights_bytes", "exact"), None),
        ("activation peak", r.activation_peak_bytes, "estimated", "activation_peak_bytes"),
        ("non-torch", r.non_torch_bytes, "estimated", "non_torch_bytes"),
        ("CUDA graphs" + ("" if r.cuda_graph_subtracted else " (after the pool)"), r.cuda_graph_bytes, "estimated",
         "cuda_graph_bytes"),
        ("available KV cache", r.available_kv_cache_bytes, kinds.get("available_kv_cache_bytes", "estimated"),
         "available_kv_cache_bytes"),
        ("before the budget", r.pre_budget_bytes, "estimated", None),
    ]
    band = plan.band
    # the available KV cache's band, and each estimated term's own where some corpus log prints it
    halves = ({"available_kv_cache_bytes": band.half_width_bytes, **{t.term: t.half_width_bytes for t in band.terms}}
              if band is not None else {})
    for label, n, kind, field in rows:
        gib = _g(n)
        if field in halves:
            gib += f" ± {halves[field] / (1 << 30):.2f}"
        table.add_row(label, gib, f"{n:,}", kind)
    kvt = _kv_table(plan)
    if headline is None:
        from vmemplan.concurrency import headline as make_headline

        headline = make_headline(plan)
    verdict = _verdict(headline)
    parts: list[RenderableType] = [verdict, Text(""), title, table, kvt]
    parts.append(Text("\nvLLM would log:", style="bold"))
    # a long line wraps inside its indent, so the lines stay told apart
    parts.extend(Padding(Text(line), (0, 0, 0, 2), expand=False) for line in log_lines(plan))
    if plan.defaulted:
        parts.append(Text("\ndefaults applied (" + plan.rules_pack + "): " + ", ".join(
            f"{name}={getattr(e, name, None)}" for name in plan.defaulted), style="dim"))
    for w in plan.warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    for n in plan.notes:
        parts.append(Text(f"note: {n}", style="dim"))
    parts.append(Text(""))
    parts.append(memory_bar(plan, columns=columns))
    parts.append(Text(""))
    parts.append(verdict)
    return Group(*parts)
