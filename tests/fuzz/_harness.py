"""Shared pieces of the fuzz suites: the pipelines under test and the rule they must obey.

The rule: any input either works or fails with a :class:`vmemplan.core.errors.VmemplanError`.
Anything else (a ValueError, a KeyError, a ZeroDivisionError, a RecursionError, a hang) is a
bug that would reach a user as a traceback.

``KNOWN_BUGS`` lists failures the fuzzers found in modules this suite does not own; each has a
strict-xfail regression test in ``tests/test_fuzz_regressions.py``.  When a bug is fixed, that
regression test XPASSes (and so fails): delete its xfail marker and its entry here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from vmemplan.core.errors import VmemplanError

ROOT = Path(__file__).resolve().parents[2]
LOGS_DIR = ROOT / "tests" / "fixtures" / "logs"
MODELS_DIR = ROOT / "registry" / "models"
FIXTURE_CONFIGS = ROOT / "tests" / "fixtures" / "configs"

class Bug(NamedTuple):
    """A config failure the fuzzers found: ``model_file`` with ``key`` (under ``where``, or at
    the top level) set to ``BAD_VALUES[bad]`` raised ``exc`` at ``site`` instead of a
    VmemplanError.  Each is a regression test in tests/test_fuzz_regressions.py; ``fixed=False``
    makes it a strict xfail there and tolerated by the fuzzers, until the owner of ``site``
    fixes it and flips the flag."""

    exc: str
    site: str
    model_file: str
    where: str | None
    key: str
    bad: str
    fixed: bool = True  # every row found so far is fixed (model_config.config_value_guard)


#: The wrong-typed / degenerate values the single-key scan tries.
BAD_VALUES: dict[str, Any] = {"list": [], "dict": {}, "none": None, "str": "x", "inf": float("inf"), "zero": 0,
                              "neg": -1, "tiny": 1e-300, "list1": [1], "list_none": [None], "list_str": [""]}

#: Found by setting one key of one bundled config to each of BAD_VALUES (one row per distinct
#: raising site; regenerate with tests/fuzz/scan_config_bugs.py) and by the hypothesis fuzzers.  Almost all are adapters calling int() or
#: arithmetic on a raw config value without checking its type.
CONFIG_BUGS: tuple[Bug, ...] = (
    Bug('OverflowError', 'vmemplan/models/base.py::rope_cache_positions', 'PrimeIntellect--INTELLECT-3-Base.json', None, 'partial_rotary_factor', 'inf'),
    Bug('TypeError', 'vmemplan/models/hybrid_qwen.py::is_moe_layer', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'decoder_sparse_step', 'str'),
    Bug('TypeError', 'vmemplan/models/hybrid_qwen.py::<genexpr>', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'full_attention_interval', 'str'),
    Bug('TypeError', 'vmemplan/models/hybrid_qwen.py::weight_tensors', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'moe_intermediate_size', 'list'),
    Bug('OverflowError', 'vmemplan/models/hybrid_qwen.py::intermediate_size', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'moe_intermediate_size', 'inf'),
    Bug('TypeError', 'vmemplan/laws/moe.py::expert_placement', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'num_experts', 'str'),
    Bug('TypeError', 'vmemplan/models/hybrid_qwen.py::intermediate_size', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'num_experts_per_tok', 'list'),
    Bug('ValueError', 'vmemplan/models/hybrid_qwen.py::intermediate_size', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'num_experts_per_tok', 'str'),
    Bug('OverflowError', 'vmemplan/models/hybrid_qwen.py::weight_tensors', 'Qwen--Qwen3-Next-80B-A3B-Thinking.json', None, 'partial_rotary_factor', 'inf'),
    Bug('AttributeError', 'vmemplan/models/hybrid.py::_normalise_dtype', 'Qwen--Qwen3.5-27B.json', 'text_config', 'mamba_ssm_dtype', 'list'),
    Bug('TypeError', 'vmemplan/models/hybrid_mamba.py::<genexpr>', 'ai21labs--Jamba-v0.1.json', None, 'attn_layer_period', 'list'),
    Bug('ZeroDivisionError', 'vmemplan/models/hybrid_mamba.py::<genexpr>', 'ai21labs--Jamba-v0.1.json', None, 'attn_layer_period', 'zero'),
    Bug('TypeError', 'vmemplan/models/hybrid.py::_divide', 'ai21labs--Jamba-v0.1.json', None, 'mamba_expand', 'list'),
    Bug('TypeError', 'vmemplan/models/hybrid_mamba.py::_inner', 'ai21labs--Jamba-v0.1.json', None, 'mamba_expand', 'dict'),
    Bug('ValueError', 'vmemplan/models/deepseek.py::is_moe_layer', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'first_k_dense_replace', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek.py::is_moe_layer', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'first_k_dense_replace', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek.py::is_moe_layer', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'first_k_dense_replace', 'list1'),
    Bug('TypeError', 'vmemplan/models/deepseek.py::_text_int', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'kv_lora_rank', 'list'),
    Bug('ValueError', 'vmemplan/models/deepseek.py::_text_int', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'kv_lora_rank', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek.py::_text_int', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'kv_lora_rank', 'inf'),
    Bug('ZeroDivisionError', 'vmemplan/models/deepseek.py::is_moe_layer', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'moe_layer_freq', 'tiny'),
    Bug('ValueError', 'vmemplan/models/deepseek.py::mlp_tensors', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'n_routed_experts', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek.py::mlp_tensors', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'n_routed_experts', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek.py::mlp_tensors', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'n_routed_experts', 'list1'),
    Bug('ValueError', 'vmemplan/models/deepseek.py::q_lora_rank', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'q_lora_rank', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek.py::q_lora_rank', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'q_lora_rank', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek.py::q_lora_rank', 'deepseek-ai--DeepSeek-Coder-V2-Lite-Base.json', None, 'q_lora_rank', 'list1'),
    Bug('ZeroDivisionError', 'vmemplan/core/units.py::cdiv', 'deepseek-ai--DeepSeek-V3.2.json', None, 'index_head_dim', 'zero'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::weight_tensors', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'hc_mult', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek_v4.py::weight_tensors', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'hc_mult', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::weight_tensors', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'hc_mult', 'list1'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::extra_activation_bytes', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'index_topk', 'list'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::extra_activation_bytes', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'index_topk', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek_v4.py::extra_activation_bytes', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'index_topk', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::validate_parallel', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'o_groups', 'list'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::validate_parallel', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'o_groups', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek_v4.py::validate_parallel', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'o_groups', 'inf'),
    Bug('ZeroDivisionError', 'vmemplan/models/deepseek_v4.py::weight_tensors', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'o_groups', 'zero'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::window', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'sliding_window', 'list'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::window', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'sliding_window', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek_v4.py::window', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'sliding_window', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::<listcomp>', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'compress_ratios', 'list_none'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::<listcomp>', 'deepseek-ai--DeepSeek-V4-Flash.json', None, 'compress_ratios', 'list_str'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::<genexpr>', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'kv_source_layer_ids', 'str'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::kv_sources', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'kv_source_layer_ids', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::<genexpr>', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'kv_source_layer_ids', 'list_none'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::index_sources', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'index_source_layer_ids', 'inf'),
    Bug('TypeError', 'vmemplan/models/deepseek_v4.py::_has_candidates', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'candidate_source_layer_id', 'list'),
    Bug('ValueError', 'vmemplan/models/deepseek_v4.py::_has_candidates', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'candidate_source_layer_id', 'str'),
    Bug('OverflowError', 'vmemplan/models/deepseek_v4.py::_has_candidates', 'deepseek-ai--DeepSeek-V4.1-Flash.json', 'text_config', 'candidate_source_layer_id', 'inf'),
    Bug('OverflowError', 'vmemplan/models/windowed.py::_window', 'google--gemma-2-9b.json', None, 'sliding_window', 'inf'),
    Bug('OverflowError', 'vmemplan/models/windowed.py::_int', 'google--gemma-4-26B-A4B.json', 'text_config', 'global_head_dim', 'inf'),
    Bug('ZeroDivisionError', 'vmemplan/laws/kv_pool.py::_unify_page_sizes', 'google--gemma-4-26B-A4B.json', 'text_config', 'global_head_dim', 'zero'),
    Bug('ZeroDivisionError', 'vmemplan/models/windowed.py::_check_heads', 'google--gemma-4-26B-A4B.json', 'text_config', 'num_global_key_value_heads', 'zero'),
    Bug('TypeError', 'vmemplan/models/multimodal.py::vision_weight_tensors', 'mistralai--Mistral-Small-3.1-24B-Instruct-2503.json', None, 'spatial_merge_size', 'list'),
    Bug('ValueError', 'vmemplan/models/multimodal.py::vision_weight_tensors', 'mistralai--Mistral-Small-3.1-24B-Instruct-2503.json', None, 'spatial_merge_size', 'str'),
    Bug('OverflowError', 'vmemplan/models/multimodal.py::vision_weight_tensors', 'mistralai--Mistral-Small-3.1-24B-Instruct-2503.json', None, 'spatial_merge_size', 'inf'),
    Bug('ZeroDivisionError', 'vmemplan/laws/multimodal.py::pixtral_image_tokens', 'mistralai--Mistral-Small-3.1-24B-Instruct-2503.json', None, 'spatial_merge_size', 'zero'),
    Bug('TypeError', 'vmemplan/models/multimodal.py::_feature_layers', 'mistralai--Mistral-Small-3.1-24B-Instruct-2503.json', None, 'vision_feature_layer', 'list_none'),
    Bug('TypeError', 'vmemplan/models/hybrid_kimi.py::is_moe_layer', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'first_k_dense_replace', 'list'),
    Bug('TypeError', 'vmemplan/models/hybrid_kimi.py::mla_head_size', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'kv_lora_rank', 'list'),
    Bug('ValueError', 'vmemplan/models/hybrid_kimi.py::mla_head_size', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'kv_lora_rank', 'str'),
    Bug('OverflowError', 'vmemplan/models/hybrid_kimi.py::mla_head_size', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'kv_lora_rank', 'inf'),
    Bug('TypeError', 'vmemplan/models/hybrid_kimi.py::weight_tensors', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'moe_intermediate_size', 'list'),
    Bug('ValueError', 'vmemplan/models/hybrid_kimi.py::weight_tensors', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'moe_intermediate_size', 'str'),
    Bug('OverflowError', 'vmemplan/models/hybrid_kimi.py::weight_tensors', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'moe_intermediate_size', 'inf'),
    Bug('TypeError', 'vmemplan/models/hybrid_kimi.py::intermediate_size', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'num_experts_per_token', 'list'),
    Bug('ValueError', 'vmemplan/models/hybrid_kimi.py::intermediate_size', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'num_experts_per_token', 'str'),
    Bug('OverflowError', 'vmemplan/models/hybrid_kimi.py::intermediate_size', 'moonshotai--Kimi-Linear-48B-A3B-Instruct.json', None, 'num_experts_per_token', 'inf'),
    Bug('TypeError', 'vmemplan/models/hybrid_mamba.py::weight_tensors', 'nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json', None, 'moe_shared_expert_intermediate_size', 'str'),
    Bug('TypeError', 'vmemplan/models/hybrid_mamba.py::intermediate_size', 'nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json', None, 'num_experts_per_tok', 'list'),
    Bug('ValueError', 'vmemplan/models/hybrid_mamba.py::intermediate_size', 'nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json', None, 'num_experts_per_tok', 'str'),
    Bug('OverflowError', 'vmemplan/models/hybrid_mamba.py::intermediate_size', 'nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json', None, 'num_experts_per_tok', 'inf'),
)

#: Failures that are not a one-key config mutation; name -> regression test.
OTHER_BUGS: dict[tuple[str, str], str] = {
    # none open: the API's ValidationError is now a UsageError, a negative rope factor a
    # ModelConfigError (see the regression tests)
}

#: Failures tolerated by the fuzzers until fixed: (exception type, raising site) -> where pinned.
KNOWN_BUGS: dict[tuple[str, str], str] = {
    **{(b.exc, b.site): "test_config_bug_regression" for b in CONFIG_BUGS if not b.fixed},
    **OTHER_BUGS,
}

#: Layer counts above this make the planner walk every layer (about 16 s for 10**6 layers; DeepSeek-V3.2 is quadratic: 4 s at 2,048), and
#: ModelConfig accepts up to 2**40; the fuzzers stay below it (see
#: test_fuzz_regressions.py::test_absurd_layer_count_is_rejected_quickly).
LAYER_CAP = 512
LAYER_KEYS = frozenset({"num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_nextn_predict_layers"})

#: Expert counts above this make a plan price that many expert tensors in a few laws; the
#: fuzzers stay below it (the work per example is bounded by the inputs, never by a clock).
EXPERT_CAP = 1024
EXPERT_KEYS = frozenset({"num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"})

#: The long campaign in bench/ may set VMEMPLAN_FUZZ_HANG_S to report hangs; the test suite
#: sets no clock (a deadline on a shared 2-core machine flakes).
HANG_SECONDS = float(os.environ.get("VMEMPLAN_FUZZ_HANG_S", "0") or 0)


class Hang(Exception):
    """An example that ran past VMEMPLAN_FUZZ_HANG_S (only when that is set)."""


@contextlib.contextmanager
def time_limit(seconds: float | None = None) -> Iterator[None]:
    """Raise :class:`Hang` after ``seconds`` when a hang detector is asked for
    (``VMEMPLAN_FUZZ_HANG_S`` in bench campaigns); a no-op in the test suite."""
    seconds = HANG_SECONDS if seconds is None else seconds
    if (not seconds or not HANG_SECONDS or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "SIGALRM")):
        yield
        return

    def _raise(_signum: int, _frame: Any) -> None:
        raise Hang(f"example ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def raising_site(error: BaseException) -> str:
    """``vmemplan/<path>.py::<function>`` of the innermost vmemplan frame of ``error``."""
    import traceback

    site = "?"
    for frame in traceback.extract_tb(error.__traceback__):
        path = frame.filename.replace("\\", "/")
        if "/vmemplan/" in path and "/tests/" not in path:
            site = "vmemplan/" + path.rsplit("/vmemplan/", 1)[1] + "::" + frame.name
    return site


def signature(error: BaseException) -> tuple[str, str]:
    return type(error).__name__, raising_site(error)


def is_known_bug(error: BaseException) -> bool:
    return signature(error) in KNOWN_BUGS


def must_be_vmemplan_error(error: BaseException, what: Any) -> None:
    """Re-raise ``error`` with the failing input attached unless it is allowed.

    With ``VMEMPLAN_FUZZ_COLLECT=<file>`` set, unexpected failures are appended to that file
    (one JSON line: signature, message, input) instead, so that one run lists every distinct bug.
    """
    if isinstance(error, VmemplanError) or is_known_bug(error):
        return
    text = repr(what)
    if len(text) > 2000:
        text = text[:2000] + "..."
    collect = os.environ.get("VMEMPLAN_FUZZ_COLLECT")
    if collect:
        with open(collect, "a", encoding="utf-8") as fh:
            try:
                full = json.dumps(what, allow_nan=True)
            except (TypeError, ValueError):
                full = None
            fh.write(json.dumps({"signature": list(signature(error)), "message": str(error)[:300],
                                 "input": text, "input_json": full}) + "\n")
        return
    raise AssertionError(f"{type(error).__name__} at {raising_site(error)}: {error}\ninput: {text}") from error


# --------------------------------------------------------------------------------------------
# inputs


@functools.cache
def base_configs() -> tuple[dict[str, Any], ...]:
    """Every bundled and fixture config.json, parsed (the seeds the config fuzzer mutates)."""
    paths = sorted(MODELS_DIR.glob("*.json")) + sorted(FIXTURE_CONFIGS.rglob("*.json"))
    out = []
    for path in paths:
        if ".hf_quant_config" in path.name:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            out.append(data)
    return tuple(out)


@functools.cache
def real_logs() -> tuple[bytes, ...]:
    return tuple(p.read_bytes() for p in sorted(LOGS_DIR.glob("*.log")))


@functools.cache
def registry() -> Any:
    from vmemplan.registry import load_registry

    return load_registry()


def gpu_ids() -> list[str]:
    return sorted(g.id for g in registry().gpus)


# --------------------------------------------------------------------------------------------
# pipelines


def plan_config(config: Any, *, gpu: str = "h100", **flags: Any) -> Any:
    """config.json dict -> ModelConfig -> adapter -> resolved request -> plan -> JSON text.

    The same steps ``vmemplan size ./config.json --format json`` takes, minus file I/O.
    """
    from vmemplan.model_config import ModelConfig
    from vmemplan.models import adapter_for
    from vmemplan.planner import plan_memory
    from vmemplan.render.json_out import dumps
    from vmemplan.resolve import PlanInputs, resolve_with
    from vmemplan.sources import ModelSource

    model_config = ModelConfig.from_dict(config)
    adapter_for(model_config)
    source = ModelSource(model_id="fuzz/model", source="local", config=config, extra={}, revision=None,
                         path=None, safetensors_params=None, notes=())
    inputs = PlanInputs(model="fuzz/model", gpu=gpu, **flags)
    plan = plan_memory(resolve_with(inputs, registry=registry(), source=source))
    text = dumps(plan.to_json())
    from vmemplan.render.vllm_log import log_lines

    _ = log_lines(plan)
    return text


def plan_flags(**flags: Any) -> Any:
    """The public API the CLI calls, with a bundled model (no network)."""
    from vmemplan.api import plan_from_flags
    from vmemplan.render.json_out import dumps

    plan = plan_from_flags(**flags)
    return dumps(plan.to_json())


def explain_log_bytes(data: bytes) -> int:
    """Bytes of a log file -> text -> startups -> explanations -> text and JSON renderings."""
    from vmemplan.explain import explain, parse_log, read_log_bytes, report_to_json
    from vmemplan.render.explain import render_text

    startups = parse_log(read_log_bytes(data))
    reports = [explain(s) for s in startups]
    if reports:
        render_text(reports)
        json.dumps(report_to_json(reports), allow_nan=True)
    return len(reports)


def mapping_depth(value: Any, depth: int = 0) -> int:
    if isinstance(value, Mapping):
        return max([depth + 1, *(mapping_depth(v, depth + 1) for v in value.values())])
    if isinstance(value, list):
        return max([depth, *(mapping_depth(v, depth) for v in value)])
    return depth
