"""`vmemplan concurrency`: how many requests run at once, which limit binds, and (with
--simulate) what the scheduler does with synthetic traffic."""

from __future__ import annotations

from typing import Any

import typer

from vmemplan.cli._common import console, emit, reports_errors
from vmemplan.cli._options import (
    ArrivalOpt,
    GateOn,
    GateOnOpt,
    GpuOpt,
    ImageSizeOpt,
    ImagesOpt,
    LengthsOpt,
    MinConcurrencyOpt,
    MinKvTokensOpt,
    ModelArg,
    NoColorOpt,
    OutputTokensOpt,
    PromptTokensOpt,
    ReferenceTokensOpt,
    RequestsOpt,
    SeedOpt,
    SimulateOpt,
    VideoFramesOpt,
    VideoSizeOpt,
    VideosOpt,
    with_engine_flags,
)
from vmemplan.core.errors import TargetNotMet, UsageError
from vmemplan.render import ConcurrencyFormat, assert_never


def parse_size(text: str, what: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` → (width, height)."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise UsageError(f"{what} {text!r} is not WIDTHxHEIGHT", hint="e.g. 1280x720") from None
    if w < 1 or h < 1:
        raise UsageError(f"{what} {text!r}: both sides must be positive")
    return w, h


def parse_lengths(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise UsageError(f"--lengths: {part!r} is not a whole number of tokens", hint="e.g. --lengths 1000,4000,32768") from None
        if n < 1:
            raise UsageError("--lengths: every length must be at least 1 token")
        out.append(n)
    if not out:
        raise UsageError("--lengths is empty")
    return out


def _dist_upper(text: str | None) -> tuple[Any, int | None]:
    """The parsed distribution and a representative count for the table (a constant's value,
    else the largest value it can draw, None when unbounded)."""
    if text is None:
        return None, None
    from vmemplan.sim.traffic import Constant, parse_dist

    d = parse_dist(text)
    if isinstance(d, Constant):
        return d, d.tokens
    return d, d.max_tokens


def _multimodal(req: Any, images: int | None, image_size: str | None, videos: int | None, frames: int,
                video_size: str) -> tuple[int, str | None, dict[str, Any] | None]:
    if not images and not videos:
        if image_size is not None:
            raise UsageError("--image-size needs --images-per-request")
        return 0, None, None
    from vmemplan.concurrency import image_tokens, video_tokens

    raw = req.source.config
    total, notes, info = 0, [], {}
    if images:
        size = parse_size(image_size, "--image-size") if image_size else None
        per, how = image_tokens(raw, size)
        total += images * per
        notes.append(f"{images} image(s) × {per:,} tokens ({how})")
        info.update(images_per_request=images, tokens_per_image=per)
    if videos:
        per, how = video_tokens(raw, frames, parse_size(video_size, "--video-size"))
        total += videos * per
        notes.append(f"{videos} video(s) × {per:,} tokens ({how})")
        info.update(videos_per_request=videos, tokens_per_video=per)
    info["mm_tokens_per_request"] = total
    return total, "vision tokens per request: " + "; ".join(notes) + f" = {total:,}, added to every row", info


@reports_errors
@with_engine_flags
def concurrency(
    model: ModelArg,
    gpu: GpuOpt = None,
    lengths: LengthsOpt = None,
    prompt_tokens: PromptTokensOpt = None,
    output_tokens: OutputTokensOpt = None,
    images_per_request: ImagesOpt = None,
    image_size: ImageSizeOpt = None,
    videos_per_request: VideosOpt = None,
    video_frames: VideoFramesOpt = 16,
    video_size: VideoSizeOpt = "640x360",
    request_tokens: ReferenceTokensOpt = None,
    simulate: SimulateOpt = False,
    requests: RequestsOpt = 100,
    arrival_rate: ArrivalOpt = "all-at-once",
    seed: SeedOpt = 0,
    min_concurrency: MinConcurrencyOpt = None,
    min_kv_tokens: MinKvTokensOpt = None,
    gate_on: GateOnOpt = GateOn.central,
    output_format: ConcurrencyFormat = typer.Option(ConcurrencyFormat.table, "--format", "-f", help="table or json."),
    no_color: NoColorOpt = False,
    *,
    engine: dict[str, Any],
) -> None:
    """How many requests run at once: --max-num-seqs, the KV pool and --max-num-batched-tokens.

    Examples:

        vmemplan concurrency meta-llama/Llama-3.1-8B --gpu h100 --util 0.92 --max-model-len 32768 --max-num-seqs 256

        vmemplan concurrency meta-llama/Llama-3.1-8B --gpu h100 --simulate --requests 60 --prompt-tokens 500:3000 --output-tokens 150:400
    """
    from vmemplan.api import concurrency_speed_rows, plan_with_request, speed_setup
    from vmemplan.concurrency import report_from_plan, request_shapes

    req, plan = plan_with_request(model=model, gpu=gpu, spinner=True, **engine)
    mml = req.max_model_len
    mm_tokens, mm_note, mm_info = _multimodal(req, images_per_request, image_size, videos_per_request,
                                              video_frames, video_size)
    prompt_dist, prompt_n = _dist_upper(prompt_tokens)
    output_dist, output_n = _dist_upper(output_tokens)
    notes: list[str] = []
    asked = parse_lengths(lengths) if lengths else None
    pair = _pair_row(prompt_tokens, output_tokens, prompt_dist, prompt_n, output_dist, output_n, mm_tokens, notes)
    shapes = request_shapes(asked, mml, mm_tokens, pair)
    reference = request_tokens or (pair.request_tokens if pair is not None else None) or mml
    report = report_from_plan(plan, shapes, reference_tokens=reference, notes=notes)

    setup = speed_setup(req, plan)
    speed_rows, speed_context = concurrency_speed_rows(req, plan, setup, reference, prompt_n, mm_tokens)

    sim = timed = sim_json = None
    if simulate:
        sim, timed, sim_json = _simulate(plan, setup, requests, prompt_tokens or "1000", output_tokens or "300",
                                         arrival_rate, seed, mm_tokens, mml)

    from vmemplan.gates import evaluate_gates

    gates = evaluate_gates(plan, min_concurrency=min_concurrency, min_kv_tokens=min_kv_tokens,
                           request_tokens=request_tokens or reference, gate_on=gate_on.value)
    if output_format is ConcurrencyFormat.json:
        _emit_json(report, plan, setup, gates, sim_json, speed_rows, mm_info)
    elif output_format is ConcurrencyFormat.table:
        _print_table(report, plan, setup, no_color, sim=sim, timed=timed, sim_json=sim_json, speed_rows=speed_rows,
                     speed_context=speed_context, mm_note=mm_note)
    else:
        assert_never(output_format)
    if not plan.verdict.starts:
        _refuse_start(plan, model=model, gpu=gpu, engine=engine)
    fail_gates(gates, model=model, gpu=gpu, engine=engine)


def _pair_row(prompt_tokens: str | None, output_tokens: str | None, prompt_dist: Any, prompt_n: int | None,
              output_dist: Any, output_n: int | None, mm_tokens: int, notes: list[str]) -> Any:
    """The row of the --prompt-tokens + --output-tokens request (a distribution's largest draw),
    or None; an unbounded distribution adds a note instead."""
    from vmemplan.concurrency import RequestShape

    if prompt_tokens is None and output_tokens is None:
        return None
    p = prompt_n if prompt_tokens is not None else 0
    o = output_n if output_tokens is not None else 0
    if p is None or o is None:
        notes.append("an unbounded length distribution has no single row; simulate it with --simulate")
        return None
    if p + o < 1:
        return None
    label = f"{p:,} + {o:,}" + (" (largest draw)" if not (
        (prompt_dist is None or prompt_n == getattr(prompt_dist, "tokens", None))
        and (output_dist is None or output_n == getattr(output_dist, "tokens", None))) else "")
    return RequestShape(p + o, max(p, 1), mm_tokens, label=label)


def _emit_json(report: Any, plan: Any, setup: Any, gates: Any, sim_json: dict[str, Any] | None,
               speed_rows: list[dict[str, Any]] | None, mm_info: dict[str, Any] | None) -> None:
    from vmemplan.render.concurrency import concurrency_json
    from vmemplan.render.json_out import dumps

    data = concurrency_json(report, plan, simulation=sim_json, speed=speed_rows, mm=mm_info)
    data["speed_model"] = {"estimate": True, "notes": list(setup.notes), "unavailable": setup.reason}
    data["verdict"] = {"starts": plan.verdict.starts, "reason": plan.verdict.reason,
                       "outcome": plan.verdict.outcome}
    data["gates"] = [g.to_json() for g in gates]
    emit(dumps(data))


def _print_table(report: Any, plan: Any, setup: Any, no_color: bool, **parts: Any) -> None:
    """The tables (``parts``: the simulation, speed rows and vision note), after a refusal line
    when vLLM would not start."""
    from vmemplan.render.concurrency import render_concurrency

    out = console(no_color=no_color)
    if not plan.verdict.starts:
        from rich.text import Text

        out.print(Text(f"✘ vLLM would not start: {plan.verdict.reason}", style="bold red"))
    out.print(render_concurrency(report, plan, speed_notes=setup.notes, speed_reason=setup.reason, **parts))


def _refuse_start(plan: Any, *, model: str, gpu: str | None, engine: dict[str, Any]) -> None:
    """Report why vLLM would not start, with the fixes that would, and exit 3."""
    from vmemplan.advice import find_fixes
    from vmemplan.cli._common import report as report_error
    from vmemplan.render.hints import fix_hint

    report_error(f"vLLM would not start: {plan.verdict.reason}",
                 hint=fix_hint(find_fixes(dict(model=model, gpu=gpu, **engine), plan)))
    raise typer.Exit(3)


def check_gates(plan: Any, report: Any, min_concurrency: int | None, at_tokens: int, min_kv_tokens: int | None) -> None:
    """Raise TargetNotMet (exit 3) when a gate fails (kept for callers of the old name)."""
    from vmemplan.gates import evaluate_gates

    fail_gates(evaluate_gates(plan, min_concurrency=min_concurrency, min_kv_tokens=min_kv_tokens,
                              request_tokens=at_tokens))


def fail_gates(gates: Any, *, model: str | None = None, gpu: str | None = None,
               engine: dict[str, Any] | None = None) -> None:
    """Raise TargetNotMet (exit 3) for the first gate not met, with a sweep command that can be pasted."""
    from vmemplan.render.hints import solve_command

    for g in gates:
        if g.ok:
            continue
        if g.name == "min_concurrency":
            message = (f"target not met: {g.value:,} requests of {g.request_tokens:,} tokens run at once, "
                       f"fewer than --min-concurrency {g.target:,}")
        else:
            message = f"target not met: the KV cache holds {g.value:,} tokens, fewer than --min-kv-tokens {g.target:,}"
        if g.on == "low":
            message += " (at the error band's low end, --gate-on low)"
        hint = "a sweep finds flags that meet it"
        if model and gpu:
            hint = "find flags that meet it: " + solve_command(model, gpu, engine or {}, gates)
        raise TargetNotMet(message, hint=hint)


def _simulate(plan: Any, setup: Any, requests: int, prompt: str, output: str, arrival: str, seed: int,
              mm_tokens: int, max_model_len: int) -> tuple[Any, Any, dict[str, Any] | None]:
    from dataclasses import replace

    from vmemplan.concurrency import sim_config_from_plan
    from vmemplan.render.concurrency import simulation_json
    from vmemplan.sim import Traffic, attach_timing

    if not plan.verdict.starts:
        return None, None, None
    from vmemplan.concurrency import simulate_arrivals
    from vmemplan.sim.traffic import parse_arrival_rate

    rate = parse_arrival_rate(arrival)
    cfg, notes = sim_config_from_plan(plan)
    notes = list(notes)

    def specs_for(per_step: Any) -> Any:
        specs = Traffic(num_requests=requests, prompt_tokens=prompt, output_tokens=output, arrival=per_step,
                        seed=seed).generate()
        if mm_tokens:
            specs = tuple(replace(s, prompt_tokens=s.prompt_tokens + mm_tokens) for s in specs)
        kept = tuple(s for s in specs if s.prompt_tokens + s.output_tokens <= max_model_len)
        if not kept:
            raise UsageError(f"every simulated request is longer than max_model_len {max_model_len:,}",
                             hint="lower --prompt-tokens / --output-tokens")
        return kept

    timing = (lambda sim: attach_timing(sim, setup.model, setup.gpu, setup.constants)) if setup.ok else None
    traffic = Traffic(num_requests=requests, prompt_tokens=prompt, output_tokens=output, seed=seed)
    total = len(traffic.generate())
    run = simulate_arrivals(cfg, rate, specs_for, timing)
    sim, timed = run.sim, run.timed
    if sim.num_requests < total:
        notes.append(f"{total - sim.num_requests} of {total} requests are longer than max_model_len "
                     f"{max_model_len:,}: vLLM refuses them, so they are left out")
    if run.step_s is not None:
        notes.append(f"arrivals {rate} = {run.arrival.requests_per_step:.4g} requests per scheduler step, at the "
                     f"simulation's mean step time of {run.step_s * 1e3:.1f} ms (estimate)")
    if not sim.finished_all:
        notes.append(f"the run stopped after {sim.steps:,} steps with {sim.num_requests - sim.completed} "
                     "request(s) unfinished")
    text = (f"{requests} requests, prompt {traffic.prompt_tokens}, output {traffic.output_tokens}"
            + (f" + {mm_tokens:,} vision tokens" if mm_tokens else "") + f", arrival {rate}, seed {seed}")
    return sim, timed, simulation_json(sim, timed, cfg, traffic=text, notes=tuple(notes), speed_notes=setup.notes)
