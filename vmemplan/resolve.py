"""From the user's choices to a fully resolved request: every default applied here, once.

``PlanInputs`` holds what the user said (None = unset).  ``resolve`` reads the registry,
the model source and the rules pack of the selected vLLM release, fills every unset flag
with that release's default (remembering which ones it filled), and validates the values
vLLM itself would reject.  I/O happens only through ``load_registry`` and
``load_model_source``.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import UsageError, VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig, config_value_guard
from vmemplan.models import adapter_for
from vmemplan.request.flags import parse_limit_mm_per_prompt, parse_speculative_config
from vmemplan.request.inputs import PlanInputs

if TYPE_CHECKING:
    from vmemplan.models.base import Adapter
    from vmemplan.registry import Gpu, Registry
    from vmemplan.rules import RulesPack
    from vmemplan.sources import ModelSource

__all__ = ["PlanInputs", "ResolvedRequest", "resolve", "resolve_with"]

KV_CACHE_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
                   "fp8_ds_mla", "fp8_per_token_head", "int8_per_token_head", "nvfp4")
DTYPES = ("auto", "bfloat16", "float16", "half", "float32", "float")


@frozen
class ResolvedRequest:
    """Every value the laws need, defaults applied, plus where each came from."""

    inputs: PlanInputs
    source: ModelSource
    config: ModelConfig
    adapter: Adapter
    gpu: Gpu
    rules: RulesPack
    vllm_version: str
    dtype: str
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_cache_dtype: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    enforce_eager: bool
    enable_prefix_caching: bool
    kv_cache_memory_bytes: int | None
    defaulted: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())
    registry: Any = None
    notes: tuple[str, ...] = field(default=())
    limit_mm_per_prompt: tuple[tuple[str, int], ...] = ()
    skip_mm_profiling: bool = False
    mm_encoder_tp_mode: str = "weights"
    speculative: Any = None  # vmemplan.laws.speculative.SpeculativeConfig
    draft_config: Any = None  # the drafter's ModelConfig (EAGLE head / draft model), when resolved
    quant_scheme: Any = None  # vmemplan.laws.quant.QuantScheme, None for 16-bit weights
    runner: str = "generate"  # "pooling" for embedding and scoring models
    lora: Any = None  # vmemplan.laws.lora.LoraConfig with --enable-lora
    cpu_offload_bytes: int = 0  # --cpu-offload-gb × 2^30, where modelled
    prefetch_offload: Any = None  # vmemplan.request.offload.PrefetchOffload, when that offloader is built
    cudagraph_capture_sizes: tuple[int, ...] | None = None  # the user's capture sizes as vLLM keeps them
    cudagraph_mode: str | None = None  # the mode -O / --compilation-config leave (None: the release default)
    #: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS from the environment (None: the release's default)
    cudagraph_estimate_env: bool | None = None

    @property
    def world_size(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


def _estimate_env() -> bool | None:
    from vmemplan.request.env import cudagraph_estimate_env

    return cudagraph_estimate_env()


def _resolve_dtype(requested: str | None, config_dtype: str, gpu: Gpu) -> str:
    """vLLM's ``--dtype auto``: the checkpoint dtype, fp32 checkpoints cast down, bf16 only
    where the chip supports it.  Mirrors vllm/config/model.py::_resolve_auto_dtype (0.33.0):
    CUDA lists bf16 first from compute capability 8.0, fp16 first below it."""
    bf16_ok = gpu.vendor == "amd" or (gpu.sm_major or 0) >= 8
    if requested and requested != "auto":
        name = {"half": "float16", "float": "float32"}.get(requested, requested)
        return name
    preferred = "bfloat16" if bf16_ok else "float16"
    dtype = config_dtype.lower()
    if dtype in ("float32", "float"):
        return preferred
    if dtype == "bfloat16" and not bf16_ok:
        return "float16"
    if dtype not in ("bfloat16", "float16"):
        return preferred
    return dtype


def resolve(inputs: PlanInputs, *, registry: Registry | None = None, source: ModelSource | None = None,
            progress: Any = None) -> ResolvedRequest:
    """Resolve ``inputs`` against the registry and the model's config."""
    from vmemplan.registry import load_registry
    from vmemplan.sources import load_model_source

    registry = registry or load_registry()
    if source is None:
        source = load_model_source(inputs.model, revision=inputs.revision, bundled_dir=registry.models_dir,
                                   progress=progress, config_format=inputs.config_format or "auto")
    req = resolve_with(inputs, registry=registry, source=source)
    spec = req.speculative
    if spec is not None and spec.model and spec.method in ("eagle", "eagle3", "draft_model"):
        # The drafter's config.json is resolved like the target's.
        from dataclasses import replace


        try:
            draft = load_model_source(spec.model, bundled_dir=registry.models_dir, progress=progress)
            req = replace(req, draft_config=ModelConfig.from_dict(draft.config))
        except VmemplanError as exc:
            if spec.method == "draft_model":
                raise
            req = replace(req, warnings=req.warnings + (
                f"drafter config {spec.model} unavailable ({exc.message}); the EAGLE head is sized as one "
                "decoder layer of the target's width",))
    return req


def resolve_with(inputs: PlanInputs, *, registry: Registry, source: ModelSource,
                 parsed: tuple[ModelConfig, Adapter] | None = None) -> ResolvedRequest:
    """:func:`resolve` with the registry and model source already in hand (pure)."""
    if inputs.hf_overrides:
        from dataclasses import replace as _replace

        from vmemplan.request.overrides import apply_hf_overrides

        source = _replace(source, config=apply_hf_overrides(source.config, inputs.hf_overrides))

    with config_value_guard(source.model_id):
        return _resolve_with(inputs, registry=registry, source=source, parsed=parsed)


class _Draft:
    """One request while it is resolved: the values decided so far, the flags left to their
    defaults (in the order they were decided) and the warnings (in the order they arose).
    :func:`_resolve_with` runs its steps over one draft, in vLLM's order of checks."""

    def __init__(self, inputs: PlanInputs, registry: Registry, source: ModelSource) -> None:
        self.inputs, self.registry, self.source = inputs, registry, source
        self.defaulted: list[str] = []
        self.warnings: list[str] = []
        self.adapter_notes: tuple[str, ...] = ()

    def pick(self, name: str, value: Any, default: Any) -> Any:
        """``value``, or ``default`` (recorded as defaulted) when the flag is unset."""
        if value is None:
            self.defaulted.append(name)
            return default
        return value


def _resolve_with(inputs: PlanInputs, *, registry: Registry, source: ModelSource,
                  parsed: tuple[ModelConfig, Adapter] | None = None) -> ResolvedRequest:
    d = _Draft(inputs, registry, source)
    _model_and_release(d, parsed)
    _engine_sizes(d)
    _parallel_and_backend(d)
    _weights_runner_and_memory(d)
    req = ResolvedRequest(
        lora=d.lora, cpu_offload_bytes=d.cpu_offload_bytes, cudagraph_estimate_env=_estimate_env(),
        prefetch_offload=d.prefetch_offload,
        quant_scheme=d.quant_scheme, runner=d.runner,
        inputs=inputs, source=source, config=d.config, adapter=d.adapter, gpu=d.gpu, rules=d.rules,
        vllm_version=d.version_text,
        dtype=d.dtype, gpu_memory_utilization=float(d.util), max_model_len=int(d.max_model_len),
        max_num_seqs=int(d.max_num_seqs), max_num_batched_tokens=int(d.mnbt), block_size=int(d.block_size),
        kv_cache_dtype=d.kv_dtype, tensor_parallel_size=int(d.tp), pipeline_parallel_size=int(d.pp),
        enforce_eager=bool(d.enforce_eager), enable_prefix_caching=bool(d.prefix),
        kv_cache_memory_bytes=d.kv_cache_memory_bytes, defaulted=tuple(d.defaulted),
        warnings=tuple(d.warnings), registry=registry, notes=d.adapter_notes,
        **_mm_and_spec(inputs, d.config),
    )
    if inputs.disable_hybrid_kv_cache_manager is False:
        req = _check_hybrid_manager_enabled(req)
    if inputs.optimization_level is not None or inputs.compilation_config is not None:
        from vmemplan.request.compilation import with_compilation

        req = with_compilation(req)
    if (req.inputs.cudagraph_capture_sizes is not None or req.inputs.max_cudagraph_capture_size is not None) \
            and req.cudagraph_mode != "NONE":
        req = _with_capture_sizes(req)
    return req


def _model_and_release(d: _Draft, parsed: tuple[ModelConfig, Adapter] | None) -> None:
    """The GPU, the release's rules, the config and the model family's adapter (``parsed``: the
    config and adapter of this source, already built: a sweep parses once)."""
    from vmemplan.request.gpu_match import select_gpu

    inputs, registry = d.inputs, d.registry
    d.gpu, gpu_warnings = select_gpu(registry, inputs.gpu, inputs.gpu_total_memory)
    d.rules, version_warning = registry.rules(inputs.vllm_version)
    d.version_text = inputs.vllm_version or d.rules.max_version or d.rules.min_version  # the release planned for
    d.warnings.extend(gpu_warnings)
    if version_warning:
        d.warnings.append(version_warning)
    config, adapter = parsed if parsed is not None else (None, None)
    if config is None or adapter is None:
        config = ModelConfig.from_dict(d.source.config)
        from vmemplan.core.version import version_tuple_or_none
        from vmemplan.request.architecture import refuse_removed

        refuse_removed(config, registry.vllm_removed_architectures, version_tuple_or_none(d.version_text))
        adapter = adapter_for(config, assume=inputs.assume_family)
    d.config, d.adapter = config, adapter
    # The generic fallback is a warning (its figures may be wrong); a family's notes inform.
    d.adapter_notes = tuple(adapter.notes())
    if adapter.fidelity == "assumed":
        d.warnings.append(f"{config.architecture or config.model_type} is not a family vmemplan plans: sized with "
                          f"the {type(adapter).__name__} graph (--assume-family), so the weights, KV cache and every "
                          "figure after them are estimates; check the weights against the checkpoint")
    if adapter.fidelity == "generic":
        from vmemplan.request.architecture import refuse_non_decoder

        refuse_non_decoder(config, registry.vllm_architectures)
        d.warnings.extend(d.adapter_notes)
        d.adapter_notes = ()


def _engine_sizes(d: _Draft) -> None:
    """Utilization, dtypes, the context length (with vLLM's refusals) and the batch sizes."""
    inputs, rules, config, adapter, gpu = d.inputs, d.rules, d.config, d.adapter, d.gpu
    d.util = d.pick("gpu_memory_utilization", inputs.gpu_memory_utilization,
                    rules.defaults.gpu_memory_utilization.value)
    if not 0 < d.util <= 1:
        raise UsageError(f"--gpu-memory-utilization {d.util} is outside (0, 1]",
                         hint="vLLM takes a fraction of the GPU, e.g. 0.92")
    if inputs.dtype is not None and inputs.dtype not in DTYPES:
        raise UsageError(f"unknown --dtype {inputs.dtype!r}", hint="one of " + ", ".join(DTYPES))
    d.dtype = _resolve_dtype(inputs.dtype, config.torch_dtype, gpu)
    if inputs.dtype is None:
        d.defaulted.append("dtype")
    d.kv_dtype = d.pick("kv_cache_dtype", inputs.kv_cache_dtype, rules.defaults.kv_cache_dtype.value)
    if d.kv_dtype not in KV_CACHE_DTYPES:
        raise UsageError(f"unknown --kv-cache-dtype {d.kv_dtype!r}", hint="one of " + ", ".join(KV_CACHE_DTYPES))
    _context_length(d)
    d.tp = d.pick("tensor_parallel_size", inputs.tensor_parallel_size, 1)
    d.pp = d.pick("pipeline_parallel_size", inputs.pipeline_parallel_size, 1)
    d.enforce_eager = d.pick("enforce_eager", inputs.enforce_eager, False)
    d.prefix = d.pick("enable_prefix_caching", inputs.enable_prefix_caching,
                      bool(rules.defaults.enable_prefix_caching.value) and adapter.prefix_caching_supported())
    d.block_size = d.pick("block_size", inputs.block_size, rules.defaults.block_size.value)
    chunked = bool(rules.defaults.enable_chunked_prefill.value) and adapter.chunked_prefill_supported()
    mnbt_default, seqs_default = rules.batch_defaults.for_device(
        device_name=gpu.device_name, nvml_total_bytes=gpu.batch_default_total_bytes,
        max_model_len=d.max_model_len, chunked_prefill=chunked,
    )
    d.max_num_seqs = d.pick("max_num_seqs", inputs.max_num_seqs, seqs_default)
    d.mnbt = d.pick("max_num_batched_tokens", inputs.max_num_batched_tokens, mnbt_default)
    if inputs.max_num_seqs is None and d.max_num_seqs > d.mnbt:
        # vllm/engine/arg_utils.py: max_num_seqs = min(max_num_seqs, max_num_batched_tokens)
        d.max_num_seqs = d.mnbt
    d.max_num_seqs = adapter.adjust_max_num_seqs(int(d.max_num_seqs))
    from vmemplan.request import refusals

    refusals.check_scheduler(max_num_batched_tokens=int(d.mnbt), max_num_seqs=int(d.max_num_seqs),
                             max_model_len=int(d.max_model_len), chunked_prefill=chunked)


def _context_length(d: _Draft) -> None:
    """``max_model_len``: the flag or the model's own, checked as vLLM checks it."""
    inputs, config, adapter = d.inputs, d.config, d.adapter
    derived_len = adapter.derived_max_model_len()
    if inputs.disable_sliding_window:
        from vmemplan.models.sliding import disabled_window_max_len

        derived_len = disabled_window_max_len(config.text, derived_len)
    d.max_model_len = max_model_len = d.pick("max_model_len", inputs.max_model_len,
                                             min(adapter.default_max_model_len(), derived_len))
    from vmemplan.request import refusals  # vLLM's own refusals, with vLLM's messages

    if inputs.max_model_len is not None:
        refusals.check_max_model_len(max_model_len, derived_len, config.text)
    if max_model_len > derived_len and refusals.long_max_model_len_allowed():
        d.warnings.append(f"max_model_len {max_model_len} is longer than the model's {derived_len} "
                          "(VLLM_ALLOW_LONG_MAX_MODEL_LEN=1): positions past the trained length may give NaNs")
    elif max_model_len > derived_len:
        raise UsageError(
            f"--max-model-len {max_model_len} is longer than the model's {derived_len} tokens",
            hint="vLLM refuses this unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; lower --max-model-len",
        )


def _parallel_and_backend(d: _Draft) -> None:
    """The parallel layout's checks, then the cache dtype and block size the attention backend
    runs (vllm/platforms/cuda.py backend selection, Platform.update_block_size_for_backend)."""
    inputs, config, adapter, gpu, tp, pp = d.inputs, d.config, d.adapter, d.gpu, d.tp, d.pp
    from vmemplan.request import refusals

    if not getattr(adapter, "attention_free", False):
        # an attention-free model has no num_attention_heads: vLLM reads 0, which any tp divides
        refusals.check_tp_heads(int(config.num_attention_heads), int(tp))
    adapter.validate_parallel(GraphContext(tensor_parallel_size=tp, pipeline_parallel_size=pp))
    if pp > config.num_hidden_layers:
        raise UsageError(f"--pipeline-parallel-size {pp} exceeds the {config.num_hidden_layers} layers")
    from vmemplan.request import mamba

    mamba.check_mamba_dtypes(inputs)
    from vmemplan.core.version import version_tuple_or_none

    # the planned release: the backend's block-size rules are per release (e.g. 0.33.0's FlashInfer
    # gated-delta checkpoints align a hybrid's attention block to 64 tokens on SM 9.0; 0.32 has none)
    backend_ctx = GraphContext(
        vllm_version=version_tuple_or_none(d.version_text),
        tensor_parallel_size=tp, pipeline_parallel_size=pp, cache_dtype=d.kv_dtype, model_dtype=d.dtype,
        sm_major=gpu.sm_major, max_model_len=int(d.max_model_len), enable_prefix_caching=bool(d.prefix),
        max_num_batched_tokens=int(d.mnbt), max_num_seqs=int(d.max_num_seqs),
        mamba_cache_dtype=inputs.mamba_cache_dtype or "auto", mamba_ssm_cache_dtype=inputs.mamba_ssm_cache_dtype or "auto",
    )
    resolved_kv = adapter.resolve_cache_dtype(backend_ctx, d.kv_dtype)
    if resolved_kv != d.kv_dtype:
        d.warnings.append(f"the attention backend runs --kv-cache-dtype {d.kv_dtype} as {resolved_kv}")
        d.kv_dtype = resolved_kv
        backend_ctx = GraphContext(**{**backend_ctx.__dict__, "cache_dtype": d.kv_dtype})
    resolved_block = adapter.resolve_block_size(
        backend_ctx, user_block_size=inputs.block_size, default=int(d.block_size))
    if inputs.block_size is not None and resolved_block != inputs.block_size:
        d.warnings.append(f"--block-size {inputs.block_size} becomes {resolved_block}, as vLLM's backend requires")
    d.block_size = resolved_block

    d.warnings.extend(mamba.mamba_dtype_warnings(inputs, adapter, config))
    d.warnings.extend(mamba.mamba_block_size_warnings(
        inputs, adapter, enable_prefix_caching=bool(d.prefix), max_model_len=int(d.max_model_len),
        block_size=int(d.block_size), version=version_tuple_or_none(d.version_text)))
    from vmemplan.request.attention_backend import check_backend_block_size, check_required_backend

    check_backend_block_size(inputs.attention_backend, inputs.block_size, sm_major=gpu.sm_major,
                             kv_cache_dtype=d.kv_dtype,
                             mla=bool(config.raw.get("kv_lora_rank")) or hasattr(adapter, "latent_head_size"))
    if (version_tuple_or_none(d.version_text) or (0, 33)) >= (0, 33):  # the check as 0.33.0 makes it
        check_required_backend(inputs.attention_backend, adapter, vendor=gpu.vendor, arch=gpu.arch, dtype=d.dtype)
    _check_layout(inputs, tp)


def _weights_runner_and_memory(d: _Draft) -> None:
    """The checkpoint's quantization scheme, the runner, --kv-cache-memory, LoRA, offloading
    and the flags vmemplan plans only in part (each with its warning)."""
    inputs, config, adapter, gpu, source = d.inputs, d.config, d.adapter, d.gpu, d.source
    from vmemplan.rules import parse_version

    d.quant_scheme = quant_scheme = None
    if config.quantization_config is not None or inputs.quantization or "hf_quant_config.json" in (source.extra or {}):
        from vmemplan.laws.quant_config import scheme_for  # a 16-bit checkpoint needs no scheme

        quant_scheme = scheme_for(config.quantization_config, source.extra, inputs.quantization,
                                  sm_major=gpu.sm_major, vllm_version=parse_version(d.version_text))
    if quant_scheme is not None and hasattr(adapter, "adapt_quant_scheme"):
        quant_scheme = adapter.adapt_quant_scheme(quant_scheme)  # e.g. DeepSeek-V4's e8m0 scales
    if quant_scheme is not None:
        d.adapter_notes = (*d.adapter_notes, f"weights: {quant_scheme.describe()}")
    d.quant_scheme = quant_scheme
    d.runner = _resolve_runner(inputs.runner, config)
    if inputs.runner is None and getattr(adapter, "default_runner", None) == "pooling":
        d.runner = "pooling"  # an embedding architecture (vmemplan/models/pooling_decoders.py)
    if inputs.runner is None:
        d.defaulted.append("runner")
    d.kv_cache_memory_bytes = inputs.kv_cache_memory_bytes
    if d.kv_cache_memory_bytes == 0:
        # vllm/v1/worker/gpu_worker.py::Worker.determine_available_memory (0.33.0) tests the flag for
        # truth (`if kv_cache_memory_bytes := ...`): 0 means "unset", and the budget decides.
        d.kv_cache_memory_bytes = None
        d.warnings.append("--kv-cache-memory 0 is treated as unset by vLLM: the KV cache is sized from "
                          "--gpu-memory-utilization")
    _lora_and_offload(d)
    if inputs.async_scheduling and d.pp > 1:
        d.warnings.append("--async-scheduling with pipeline parallelism: vLLM 0.33.0 runs it only on Model Runner "
                          "V2 (pipeline stages + 1 batches in flight) and refuses it on the V1 runner ('Async "
                          "scheduling is not supported by the V1 model runner with pipeline parallelism.', "
                          "vllm/config/vllm.py::VllmConfig.__post_init__); which runner vLLM picks is not modelled, "
                          "so windowed layers' admission is planned with one batch per stage")
    if inputs.num_gpu_blocks_override is not None:
        d.warnings.extend(_override_warnings(d.rules, d.version_text))


def _lora_and_offload(d: _Draft) -> None:
    """--enable-lora and the two offloaders, where vmemplan models them (warnings where not)."""
    inputs, warnings, quant_scheme = d.inputs, d.warnings, d.quant_scheme
    from vmemplan.laws.lora import lora_config_from

    lora = lora_config_from(inputs)
    if lora is not None and any(d.config.text.get(k) for k in ("num_experts", "n_routed_experts", "num_local_experts")):
        warnings.append("--enable-lora on a mixture-of-experts model: the expert adapters (FusedMoEWithLoRA) are "
                        "not modelled, so no LoRA buffers are counted and the KV pool is overstated")
        lora = None
    elif lora is not None:
        warnings.append("--enable-lora: the stacked adapter buffers are counted in the weights; the extra CUDA "
                        "graphs captured per adapter state (cudagraph_specialize_lora) and the dummy adapters of "
                        "the profile run are not, so the CUDA-graph and activation figures are low estimates")
    d.lora = lora
    from vmemplan.request.offload import resolve_offload

    prefetch_offload, uva = resolve_offload(inputs, warnings)
    cpu_offload_bytes = int((inputs.cpu_offload_gb or 0) * 1024**3) if uva else 0
    if prefetch_offload is not None and quant_scheme is not None:
        warnings.append("prefetch offloading of a quantized checkpoint is not modelled: no weights are moved off the "
                        "GPU in this plan, so the weights are overstated and the KV pool understated")
        prefetch_offload = None
    if cpu_offload_bytes and quant_scheme is not None:
        warnings.append("--cpu-offload-gb on a quantized checkpoint is not modelled: no weights are moved off the "
                        "GPU in this plan, so the weights are overstated and the KV pool understated")
        cpu_offload_bytes = 0
    d.prefetch_offload, d.cpu_offload_bytes = prefetch_offload, cpu_offload_bytes


def _with_capture_sizes(req: ResolvedRequest) -> ResolvedRequest:
    """--cudagraph-capture-sizes / --max-cudagraph-capture-size, as vLLM 0.33.0 keeps them
    (vmemplan/laws/cudagraph_sizes.py); the release default's sizes, with a warning, where vmemplan
    has not read the rule (older releases, speculative decoding's rounding)."""
    from dataclasses import replace as _replace

    from vmemplan.core.version import version_tuple_or_none
    from vmemplan.laws.cudagraph_sizes import user_capture_sizes

    inputs = req.inputs
    if req.enforce_eager:
        return _replace(req, warnings=req.warnings + (
            "--enforce-eager captures no CUDA graphs: the capture sizes are ignored, as vLLM ignores them",))
    version = version_tuple_or_none(req.vllm_version)
    spec = req.speculative
    why = None
    if version is not None and version[:2] < (0, 33):
        why = f"vmemplan read the rule from vLLM 0.33.0, not {req.vllm_version}"
    elif spec is not None and spec.num_speculative_tokens:
        why = "with speculative decoding vLLM rounds the sizes to the decode query length (not modelled)"
    if why is not None:
        return _replace(req, warnings=req.warnings + (
            f"not modelled: --cudagraph-capture-sizes / --max-cudagraph-capture-size ({why}); the CUDA-graph figure "
            "uses the release's default sizes, so it and the KV pool are estimates",))
    sizes, notes = user_capture_sizes(sizes=inputs.cudagraph_capture_sizes,
                                      max_size=inputs.max_cudagraph_capture_size,
                                      max_num_batched_tokens=req.max_num_batched_tokens)
    return _replace(req, cudagraph_capture_sizes=tuple(sizes), warnings=req.warnings + tuple(notes))


def _check_hybrid_manager_enabled(req: ResolvedRequest) -> ResolvedRequest:
    """--enable-hybrid-kv-cache-manager where vLLM would turn the manager off itself (chunked local
    attention with EAGLE, or with VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0): vLLM 0.33.0
    refuses (vllm/config/vllm.py::VllmConfig.__post_init__).  Read from 0.33.0 only: an older
    release keeps its own choice, with a warning."""
    from dataclasses import replace as _replace

    from vmemplan.core.version import version_tuple_or_none
    from vmemplan.pipeline import graph_context

    version = version_tuple_or_none(req.vllm_version)
    if not req.adapter.disables_hybrid_kv_cache_manager(graph_context(req, 0), version):
        return req
    if version is None or version[:2] >= (0, 33):
        raise UsageError(
            "Hybrid KV cache manager was explicitly enabled but is not supported in this configuration. Consider "
            "omitting the --enable-hybrid-kv-cache-manager flag to let vLLM decide automatically.",
            hint="drop --enable-hybrid-kv-cache-manager (vLLM turns it off for chunked local attention with EAGLE)")
    return _replace(req, warnings=req.warnings + (
        f"--enable-hybrid-kv-cache-manager under vLLM {req.vllm_version}: vmemplan read vLLM 0.33.0, which refuses "
        "it here; this release's own handling is not modelled, so the plan keeps the manager off as the release "
        "does by default",))


def _override_warnings(rules: RulesPack, version: str) -> list[str]:
    """--num-gpu-blocks-override is read from vLLM 0.33.0, which replaces the available memory
    with ``N × bytes per block`` before its one-request check (kv_cache_planning.py::
    get_kv_cache_configs); older releases applied it inside get_num_blocks, after checking the
    profiled memory, so their verdict may differ."""
    from vmemplan.rules import parse_version

    if parse_version(version)[:2] >= (0, 33):
        return []
    return [f"--num-gpu-blocks-override under the {rules.id} rules: the pool gets the override's blocks, but the "
            "one-request check is 0.33.0's (against the override's blocks); releases before 0.33 checked the "
            "profiled memory first, so the verdict may differ from this release's"]


#: Architecture suffixes vLLM serves with the pooling runner by default
#: (vllm/config/model.py::ModelConfig._get_default_runner_type, 0.33.0, by name).
_POOLING_SUFFIXES = ("ForEmbedding", "ForSequenceClassification", "ForRewardModel", "ForTokenClassification",
                     "EmbeddingModel", "ForScore")


def _resolve_runner(runner: str | None, config: ModelConfig) -> str:
    if runner is not None:
        if runner not in ("generate", "pooling"):
            raise UsageError(f"unknown --runner {runner!r}", hint="generate or pooling")
        return runner
    if any(a.endswith(_POOLING_SUFFIXES) for a in config.architectures):
        return "pooling"
    return "generate"


def _check_layout(inputs: PlanInputs, tp: int) -> None:
    """Reject parallel layouts vLLM rejects (vllm/config/parallel.py::ParallelConfig, 0.33.0)."""
    if inputs.enable_eplb and not inputs.enable_expert_parallel:
        raise UsageError("--enable-eplb needs --enable-expert-parallel",
                         hint="EPLB balances experts across expert-parallel ranks")
    if inputs.num_redundant_experts and not inputs.enable_eplb:
        raise UsageError("--num-redundant-experts needs --enable-eplb")
    dcp = inputs.decode_context_parallel_size or 1
    if tp % dcp:
        raise UsageError(f"--decode-context-parallel-size {dcp} must divide --tensor-parallel-size {tp}",
                         hint="decode context parallelism shards tokens inside the tensor-parallel group")


def _mm_and_spec(inputs: PlanInputs, config: ModelConfig) -> dict[str, Any]:
    """--limit-mm-per-prompt, --skip-mm-profiling, --mm-encoder-tp-mode and --speculative-config,
    parsed as vLLM parses them (vllm/config/multimodal.py, vllm/config/speculative.py, 0.33.0)."""

    mode = inputs.mm_encoder_tp_mode or "weights"
    if mode not in ("weights", "data"):
        raise UsageError(f"unknown --mm-encoder-tp-mode {mode!r}", hint="weights or data")
    nextn = config.text.get("num_nextn_predict_layers")
    return {
        "limit_mm_per_prompt": parse_limit_mm_per_prompt(inputs.limit_mm_per_prompt),
        "skip_mm_profiling": bool(inputs.skip_mm_profiling),
        "mm_encoder_tp_mode": mode,
        "speculative": parse_speculative_config(
            inputs.speculative_config, target_num_nextn_layers=nextn if isinstance(nextn, int) else None),
    }
