"""Explain every logged startup: link its model, run the model cross-checks, apply the what-ifs.

Pure apart from the model link (:func:`vmemplan.explain.model_link.link_model` reads config files).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import UsageError, VmemplanError
from vmemplan.explain.baseline import resolve_baseline
from vmemplan.explain.parse import Startup
from vmemplan.explain.whatif import model_check_inputs, what_if

if TYPE_CHECKING:
    from vmemplan.registry import Gpu, Registry

__all__ = ["header_hints", "explain_startups"]


# --------------------------------------------------------------------------------------------
# Everything together: one report per startup
# --------------------------------------------------------------------------------------------


def header_hints(header: Mapping[str, Any] | None, registry: Registry) -> dict[str, Any]:
    """What a corpus-style YAML header (``---`` ... ``---``) adds when the log itself lacks it: the
    vLLM version, the model id and the GPU (only when the text names a registry GPU exactly)."""
    out: dict[str, Any] = {}
    if not header:
        return out
    from vmemplan.rules import parse_version

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
        forced = link_model(model, allow_hub=allow_hub, registry=registry, strict=True,
                            config_format=_config_format(startups[0]) if startups else "auto")
    reports = []
    for s in startups:
        if forced is not None:
            link, link_note = forced
        else:
            ref = s.model or hints.get("model")
            link, link_note = link_model(ref, allow_hub=allow_hub, registry=registry, config_format=_config_format(s))
            if link is not None and not s.model:
                link = replace(link, how=link.how + ", the model named in the file's YAML header")
                link_note = link.how
        base = resolve_baseline(s, registry, vllm_version=vllm_version, version_source=version_source, gpu=gpu,
                                link=link)
        bpt = weights = None
        slack = 0
        note = link_note
        if link is not None:
            try:
                bpt, weights, note, slack = model_check_inputs(s, link, base, registry=registry, gpu=gpu)
            except VmemplanError as error:
                note = f"model checks skipped: {error.message}"
        report = explain(s, bytes_per_token=bpt, model_weights_bytes=weights, model_weights_slack_bytes=slack)
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
        from vmemplan.explain.apriori import a_priori_plan

        prior = a_priori_plan(s, link=link, gpu=gpu, vllm_version=vllm_version)
        reports.append(replace(report, checks=checks, suggestions=suggestions, what_if=what, a_priori=prior))
    return reports


def _config_format(startup: Any) -> str:
    """The ``--config-format`` the log's non-default args name (vLLM's default ``auto`` otherwise)."""
    engine = startup.engine if isinstance(startup.engine, Mapping) else {}
    args = engine.get("non_default_args")
    value = args.get("config_format") if isinstance(args, Mapping) else None
    return value if value in ("auto", "hf", "mistral") else "auto"
