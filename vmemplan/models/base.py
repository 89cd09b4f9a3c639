"""The adapter protocol and the registry of adapters.

Design: an adapter is a small object built from a :class:`ModelConfig`.  It answers two
questions for one rank of a deployment (a :class:`GraphContext`):

* ``weight_tensors(ctx)``: every parameter tensor (and persistent buffer such as the rotary
  cache) that rank holds, with its per-rank shape and whether a quantization scheme applies;
* ``kv_cache_specs(ctx)``: the KV cache spec of every layer that owns a cache on that rank,
  keyed by layer name, as vLLM's ``GPUModelRunner.get_kv_cache_spec`` would list them.

Laws turn those into bytes; adapters do no arithmetic beyond shapes.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vmemplan.core.errors import ModelConfigError, UnsupportedArchitecture, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor

if TYPE_CHECKING:
    from vmemplan.laws.kv_groups import LayoutChoice
    from vmemplan.model_config import ModelConfig

__all__ = [
    "ADAPTERS",
    "Adapter",
    "adapter_for",
    "register",
    "register_generic",
    "supported_architectures",
    "rope_cache_positions",
    "RankSpan",
    "pad_vocab",
    "pp_layer_range",
]

VOCAB_PADDING = 64  # vllm/model_executor/layers/vocab_parallel_embedding.py::DEFAULT_VOCAB_PADDING_SIZE


def pad_vocab(vocab_size: int, pad_to: int = VOCAB_PADDING) -> int:
    """Rows of a vocab-parallel table: the vocabulary rounded up to a multiple of 64.

    Mirrors vllm/model_executor/layers/vocab_parallel_embedding.py::pad_vocab_size.
    """
    return -(-vocab_size // pad_to) * pad_to


def pp_layer_range(num_layers: int, pp_size: int, pp_rank: int) -> tuple[int, int]:
    """The [start, end) layers a pipeline stage holds.

    Mirrors vllm/distributed/utils.py::get_pp_indices (0.33.0) without a
    ``VLLM_PP_LAYER_PARTITION`` override: every stage gets ``num_layers // pp`` layers and
    each of the ``num_layers % pp`` left over goes to one stage, counting back from the
    second-to-last (the last stage also holds the final norm and the LM head).
    """
    parts = [num_layers // pp_size] * pp_size
    for i in range(2, num_layers % pp_size + 2):
        parts[-i] += 1
    start = sum(parts[:pp_rank])
    return start, start + parts[pp_rank]


@dataclass(frozen=True, slots=True)
class RankSpan:
    """The slice of a model one rank holds: its tensor-parallel degree, the hidden width,
    the [start, end) layers of its pipeline stage, whether it holds the embedding (first
    stage) and the final norm and LM head (last stage), and its rows of the vocab-parallel
    tables.  Every family's ``weight_tensors`` starts from one (:meth:`Adapter.rank_span`)."""

    tp: int
    hidden: int
    start: int
    end: int
    first: bool
    last: bool
    vocab_rows: int

    @property
    def layers(self) -> int:
        return self.end - self.start

class Adapter:
    """Base adapter: subclasses set ``architectures`` and ``family`` and override the methods."""

    architectures: tuple[str, ...] = ()
    family: Literal["dense", "moe"] = "dense"
    #: "exact" when the adapter mirrors the vLLM model file; "generic" for the fallback; "assumed"
    #: when the user chose the family (``--assume-family``) for an architecture vmemplan lacks
    fidelity: Literal["exact", "generic", "assumed"] = "exact"
    #: whether the graph (weights, KV specs, the extra activation) reads ``ctx.max_model_len``;
    #: when not, ``sweep`` reuses one graph for every context length (families that size a
    #: state, a workspace or an encoder budget by it keep the safe default)
    reads_max_model_len: bool = True
    #: whether the weights include a buffer sized by max_num_batched_tokens (Qwen3-VL's deepstack
    #: input embeddings): a sweep's weights memo then keys on it
    weights_read_batch_tokens: bool = False

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    # -- shapes -------------------------------------------------------------------
    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:  # pragma: no cover
        raise NotImplementedError

    def layer_range(self, ctx: GraphContext) -> tuple[int, int]:
        """The [start, end) decoder layers ``ctx``'s pipeline stage holds."""
        return pp_layer_range(self.config.num_hidden_layers, ctx.pipeline_parallel_size, ctx.pipeline_rank)

    def rank_span(self, ctx: GraphContext) -> RankSpan:
        """What ``ctx``'s rank holds of the layer stack and the vocab tables."""
        start, end = self.layer_range(ctx)
        tp = ctx.tensor_parallel_size
        return RankSpan(
            tp=tp, hidden=self.config.hidden_size, start=start, end=end,
            first=ctx.pipeline_rank == 0, last=ctx.pipeline_rank == ctx.pipeline_parallel_size - 1,
            vocab_rows=pad_vocab(self.config.vocab_size) // tp,
        )

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def builds_drafter(self, method: str) -> bool:
        """Whether this adapter lists the drafter's layers itself (weights and caches) for
        speculative ``method``, as MTP layers are the target's own.  Default: MTP only."""
        return method == "mtp"

    # -- facts the planner needs -----------------------------------------------------
    def derived_max_model_len(self) -> int:
        """The context length vLLM derives from the config when ``--max-model-len`` is unset.

        Mirrors vllm/config/model.py::_get_and_verify_max_len (0.33.0): the first of the
        known length keys, multiplied by the rope-scaling factor except for the types that
        already state the extended length (llama3, longrope/su, mrope, default, and the YaRN
        family: yarn, deepseek_yarn, deepseek_llama_scaling, telechat3-yarn).
        """
        cfg = self.config
        length = cfg.max_position_embeddings
        rs = cfg.rope_scaling()
        # "Gemma3's max_model_len (128K) is already scaled by RoPE scaling, so we skip applying
        # the scaling factor again": the test is `"gemma3" not in hf_config.model_type` on the
        # text config (gemma3 and gemma3_text), _get_and_verify_max_len (0.33.0).
        if "gemma3" in cfg.model_type or "gemma3" in str(cfg.raw.get("model_type") or ""):
            rs = None
        if rs:
            rtype = str(rs.get("rope_type", rs.get("type", "")))
            factor = rs.get("factor")
            # "YaRN variants leave max_position_embeddings already scaled ... so `factor` must not
            # be applied to it again" (yarn, deepseek_yarn, deepseek_llama_scaling; TeleChat3's
            # "telechat3-yarn" is rewritten to "yarn" on load by
            # vllm/transformers_utils/config.py::patch_rope_parameters, 0.33.0)
            yarn_family = ("yarn", "deepseek_yarn", "deepseek_llama_scaling", "telechat3-yarn")
            if rtype not in ("", "default", "llama3", "longrope", "su", "mrope", "dynamic", *yarn_family) and isinstance(
                factor, (int, float)
            ):
                length = int(length * factor)
        if length < 1:
            raise ModelConfigError(
                f"config.json: the rope scaling {rs} gives a context of {length} tokens",
                hint="a rope-scaling factor must be positive")
        return length

    def default_max_model_len(self) -> int:
        """The context vLLM picks when ``--max-model-len`` is unset: the derived length, except that
        LongRoPE defaults to ``original_max_position_embeddings`` "to avoid performance degradation
        for shorter sequences" (vllm/config/model.py::_get_and_verify_max_len, 0.33.0).  A length
        the user sets is still checked against :meth:`derived_max_model_len`."""
        derived = self.derived_max_model_len()
        cfg = self.config
        rs = cfg.rope_scaling()
        if rs and str(rs.get("rope_type", rs.get("type", ""))) in ("longrope", "su"):  # su is patched to longrope
            orig = cfg.text.get("original_max_position_embeddings", rs.get("original_max_position_embeddings"))
            if isinstance(orig, int) and not isinstance(orig, bool) and 0 < orig <= derived:
                return orig
        return derived

    def validate_parallel(self, ctx: GraphContext) -> None:
        """Reject layouts vLLM rejects: tp must divide the attention heads, and divide or be
        divided by the KV heads (vllm/model_executor/models/llama.py::LlamaAttention)."""
        cfg = self.config
        tp = ctx.tensor_parallel_size
        if cfg.num_attention_heads % tp:
            raise UsageError(
                f"--tensor-parallel-size {tp} does not divide the {cfg.num_attention_heads} attention heads",
                hint=f"use a divisor of {cfg.num_attention_heads}",
            )
        kv = cfg.num_key_value_heads
        if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
            raise UsageError(
                f"--tensor-parallel-size {tp} and the {kv} KV heads do not divide one another",
                hint="vLLM splits or replicates whole KV heads",
            )

    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def intermediate_size(self) -> int:
        return self.config.intermediate_size

    def total_params(self) -> int:
        """Parameters of the checkpoint (tp 1, no buffers), for provenance and cross-checks."""
        return sum(
            t.elements
            for t in self.weight_tensors(GraphContext(model_dtype=self.config.torch_dtype))
            if t.kind != "buffer"
        )

    def notes(self) -> tuple[str, ...]:
        return ()

    # -- hooks a family overrides when vLLM treats it specially ------------------------
    def prefix_caching_supported(self) -> bool:
        """Whether vLLM enables prefix caching by default for this model.

        Mirrors vllm/config/model.py::ModelConfig.is_prefix_caching_supported (0.33.0):
        decoder-only attention models yes; hybrid, attention-free and encoder-decoder
        generative models no."""
        return True

    def chunked_prefill_supported(self) -> bool:
        """Whether vLLM enables chunked prefill by default for this model.

        Mirrors vllm/config/model.py::ModelConfig.is_chunked_prefill_supported (0.33.0): generative
        models yes, encoder-decoder ones no (vllm/config/scheduler.py::SchedulerConfig.__post_init__
        also turns it off for them); without it an unset ``--max-num-batched-tokens`` is raised to
        ``max_model_len`` (vllm/engine/arg_utils.py)."""
        return True

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        """The KV block size vLLM ends up with: the user's, else the attention backend's
        preferred size.  Families override this for backends that force a size (MLA
        backends, DeepSeek-V4) and for the hybrid attention/mamba page alignment
        (vllm/platforms/interface.py::Platform.update_block_size_for_backend)."""
        return user_block_size if user_block_size is not None else default

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        """The KV cache dtype the attention backend actually runs (e.g. fp8 → fp8_ds_mla on
        the sparse MLA backend).  Default: as given."""
        return cache_dtype

    def adjust_max_num_seqs(self, max_num_seqs: int) -> int:
        """``max_num_seqs`` after the model's own config hook (vllm/model_executor/models/config.py
        ``verify_and_update_config``, run after the engine's defaults).  Default: unchanged."""
        return max_num_seqs

    def extra_activation_bytes(self, ctx: GraphContext, *, max_num_batched_tokens: int,
                               max_num_seqs: int) -> tuple[int, str]:
        """Profile-time buffers the model's own code allocates (added to the activation peak),
        with a provenance string.  Default: none."""
        return 0, ""

    def kv_cache_layout(self, ctx: GraphContext) -> LayoutChoice:
        """The KV cache layout vLLM resolves for this model's backends, as
        ``PoolContext.kv_cache_layout`` spells it: "auto" (let the pool law decide),
        "layer_outermost" or "block_outermost".  Mirrors
        vllm/v1/attention/backends/utils.py::resolve_kv_cache_layout (0.33.0), which
        takes the backends' declared layouts.  Default: "auto"."""
        return "auto"

    def eplb_bytes(self, ctx: GraphContext) -> int:
        """Bytes of redundant expert copies moved out of the weights figure (EPLB)."""
        return 0

    def eplb_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        """The redundant expert copies (EPLB) this rank holds, as tensors to be priced with
        the checkpoint's quantization scheme; they are left out of ``weight_tensors`` so that
        weights + EPLB counts every byte once.  Default: none."""
        return []

    def disables_hybrid_kv_cache_manager(self, ctx: GraphContext, vllm_version: tuple[int, ...] | None = None) -> bool:
        """Whether vLLM turns the hybrid KV cache manager off for this model on its own
        (then window / chunked layers are allocated as full attention: pass
        ``PoolContext(disable_hybrid_kv_cache_manager=True)``).  ``vllm_version`` is the
        release being predicted (None = 0.33.0).  Default: no."""
        return False

    def multimodal_profile(self, ctx: GraphContext, *, hidden_buffers: float = 3.0,
                           intermediate_buffers: float = 3.0) -> Any:
        """The multimodal encoder's part of the profile run (a
        :class:`vmemplan.laws.multimodal.MmProfile`: encoder budget, encoder activation
        estimate, encoder-cache bytes held through the language-model step), or None for a
        text-only model.  ``*_buffers`` are the activation model's per-token buffer counts.
        Vision adapters get it from :class:`vmemplan.models.multimodal.VisionEncoderMixin`."""
        return None


ADAPTERS: dict[str, type[Adapter]] = {}
#: The fallback for an unknown plain decoder (``models.dense.GenericDecoder`` registers itself).
_GENERIC: list[type[Adapter]] = []
_FAMILY_DIR = Path(__file__).resolve().parent


def register(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: make an adapter answer for its ``architectures``."""
    for arch in cls.architectures:
        ADAPTERS[arch] = cls
    return cls


def register_generic(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: make an adapter the fallback for configs no family claims."""
    _GENERIC[:] = [cls]
    return cls


_LOADED: list[bool] = []


def _load_families() -> None:
    # Import every family module (by file name, so this module imports none of them) so
    # that each registers itself: a new family is one new module.  Then the architectures
    # declared as data (registry/architectures/*.yaml, models/declared.py) on top of them.
    if _LOADED:
        return
    for info in pkgutil.iter_modules([str(_FAMILY_DIR)]):
        if info.name not in ("base", "__init__"):
            importlib.import_module(f"{__package__}.{info.name}")
    from vmemplan.models.declared import declared_adapters
    from vmemplan.registry import load_registry

    for arch, cls in declared_adapters(load_registry().declared_architectures, dict(ADAPTERS)).items():
        ADAPTERS.setdefault(arch, cls)
    _LOADED.append(True)


def supported_architectures() -> list[str]:
    _load_families()
    return sorted(ADAPTERS)


def _declared_entries() -> Mapping[str, Mapping[str, Any]]:
    from vmemplan.registry import load_registry

    return load_registry().declared_architectures


def adapter_class(arch: str) -> type[Adapter] | None:
    """The adapter class for ``arch``, importing only the family module that registers it
    (vmemplan/models/_index.py, generated by bench/models_index.py) or building only its
    declared entry; every family module when the index does not know it (a new module)."""
    found = ADAPTERS.get(arch)
    if found is not None:
        return found
    from vmemplan.models._index import ARCHITECTURE_MODULES

    module = ARCHITECTURE_MODULES.get(arch)
    if module is not None:
        importlib.import_module(f"{__package__}.{module}")
        if arch in ADAPTERS:
            return ADAPTERS[arch]
    entry = _declared_entries().get(arch)
    if entry is not None and not _LOADED:
        base = adapter_class(str(entry["base"]))
        if base is not None:
            from vmemplan.models.declared import declared_adapters

            ADAPTERS.setdefault(arch, declared_adapters({arch: entry}, {str(entry["base"]): base})[arch])
            return ADAPTERS[arch]
    _load_families()
    return ADAPTERS.get(arch)


def _known_architectures() -> set[str]:
    from vmemplan.models._index import ARCHITECTURE_MODULES

    return set(ARCHITECTURE_MODULES) | set(ADAPTERS) | set(_declared_entries())


def adapter_for(config: ModelConfig, *, allow_generic: bool = True, assume: str | None = None) -> Adapter:
    """The adapter for a config's architecture; the generic decoder (flagged) when unknown; the
    family named by ``assume`` (an architecture vmemplan plans, e.g. ``DeepseekV3ForCausalLM``)
    for an architecture it has no family for, flagged "assumed"."""
    known = _known_architectures()
    for arch in config.architectures:
        if arch in known:
            cls = adapter_class(arch)
            if cls is not None:
                return cls(config)
    _load_families()  # an architecture of no family: what follows compares with all of them
    for arch in config.architectures:
        if arch in ADAPTERS:
            return ADAPTERS[arch](config)
    if assume:
        by_lower = {a.lower(): a for a in ADAPTERS}
        chosen = by_lower.get(assume.strip().lower())
        if chosen is None:
            raise UsageError(f"--assume-family {assume!r} is not an architecture vmemplan plans",
                             hint="one of: " + ", ".join(supported_architectures()))
        adapter = ADAPTERS[chosen](config)
        adapter.fidelity = "assumed"
        return adapter
    if allow_generic and _looks_like_plain_decoder(config.text):
        return _GENERIC[0](config)
    name = config.architecture or config.model_type or "(no architectures key)"
    like = resembles(config)
    if like is None:
        raise UnsupportedArchitecture(
            f"unsupported architecture {name}: vmemplan has no model graph for it yet, and none of its families is "
            "close (its config mixes in layer kinds vmemplan does not model, such as lightning attention)",
            hint="--assume-family ARCH would plan it with another family's graph, but its KV cache would be wrong; "
                 "`vmemplan models` lists the families",
        )
    raise UnsupportedArchitecture(
        f"unsupported architecture {name}: vmemplan has no model graph for it yet; it resembles {like}",
        hint=f"--assume-family {like} plans it with that family's graph (every figure it moves is then an "
             "estimate); `vmemplan models` lists the families",
    )


#: Config keys that mark a family, most specific first, and the architecture vmemplan plans that
#: family with (what --assume-family is offered for an architecture vmemplan lacks).
_RESEMBLES: tuple[tuple[str, str], ...] = (
    ("index_topk", "DeepseekV32ForCausalLM"),
    ("kv_lora_rank", "DeepseekV3ForCausalLM"),
    ("linear_num_value_heads", "Qwen3NextForCausalLM"),
    ("mamba_d_state", "NemotronHForCausalLM"),
    ("ssm_state_size", "NemotronHForCausalLM"),
    ("n_routed_experts", "DeepseekV3ForCausalLM"),
    ("num_local_experts", "MixtralForCausalLM"),
    ("num_experts", "Qwen3MoeForCausalLM"),
    ("layer_types", "Gemma3ForCausalLM"),
    ("sliding_window_pattern", "Gemma3ForCausalLM"),
    ("block_configs", "DeciLMForCausalLM"),
)


#: Config keys of layer kinds no planned family has (MiniMax-M1's lightning attention).
_NO_CLOSE_FAMILY = ("attn_type_list",)


def resembles(config: ModelConfig) -> str | None:
    """The planned architecture whose family a config's keys point to (Llama when none; None
    when the config has a layer kind no planned family models)."""
    text = config.text
    if any(text.get(k) for k in _NO_CLOSE_FAMILY):
        return None
    for key, arch in _RESEMBLES:
        if text.get(key) and arch in ADAPTERS:
            return arch
    return "LlamaForCausalLM"


def _looks_like_plain_decoder(text: Mapping[str, Any]) -> bool:
    # Only fall back for configs with none of the markers of a family we would get wrong.
    markers = ("num_local_experts", "num_experts", "n_routed_experts", "kv_lora_rank",
               "layer_types", "sliding_window_pattern", "mamba_d_state", "ssm_state_size",
               "block_configs", "linear_num_value_heads")
    return not any(text.get(m) for m in markers)


def rope_cache_positions(config: ModelConfig, fraction_key: str | None = None) -> tuple[int, int]:
    """(positions, rotary_dim) of the rotary cos/sin cache vLLM builds once per model.

    Mirrors vllm/model_executor/layers/rotary_embedding/base.py::RotaryEmbedding (0.33.0):
    a ``[max_position, rotary_dim]`` buffer in the model dtype, shared by every layer
    (``get_rope`` caches instances).  YaRN-style scalings build it over the scaled length;
    long-rope builds a short and a long cache.
    """
    text = config.text
    rs0 = config.rope_scaling()
    # vllm/transformers_utils/config.py::patch_rope_parameters reads the fraction under any of
    # three names and moves it into rope_parameters, where get_rope reads it (0.33.0)
    partial: Any = None
    for key in ((fraction_key,) if fraction_key else ()) + ("partial_rotary_factor", "rotary_pct", "rotary_emb_fraction"):
        if isinstance(text.get(key), (int, float)):
            partial = text[key]
            break
    if partial is None and rs0 and isinstance(rs0.get("partial_rotary_factor"), (int, float)):
        partial = rs0["partial_rotary_factor"]
    if not isinstance(partial, (int, float)) or isinstance(partial, bool) or partial <= 0:
        partial = 1.0
    rotary_dim = int(config.head_dim * partial)
    if rs0 and isinstance(rs0.get("rope_dim"), int) and rs0["rope_dim"] > 0:
        rotary_dim = rs0["rope_dim"]  # get_rope: an explicit rope_dim wins
    positions = config.max_position_embeddings
    rs = config.rope_scaling()
    if rs:
        rtype = str(rs.get("rope_type", rs.get("type", "")))
        factor = rs.get("factor")
        orig = rs.get("original_max_position_embeddings", text.get("original_max_position_embeddings"))
        if rtype in ("longrope", "su") and isinstance(orig, int):
            positions = orig + positions
        # "dynamic" (dynamic_ntk_scaling_rope.py::DynamicNTKScalingRotaryEmbedding, 0.33.0) rescales the
        # base and keeps a [max_position, rotary_dim] cache: not scaled here
        elif rtype in ("yarn", "linear", "deepseek_yarn") and isinstance(factor, (int, float)):
            base = orig if isinstance(orig, int) and rtype == "yarn" else positions
            positions = int(base * factor)
    return positions, rotary_dim


def make_layer_names(num_layers: int, fmt: str = "model.layers.{i}.self_attn.attn") -> list[str]:
    return [fmt.format(i=i) for i in range(num_layers)]

