"""Multimodal inputs: how many tokens an image or a video becomes, how large the encoder budget
and the encoder cache are, and what the multimodal part of vLLM's profile run adds.

Pure integer arithmetic.  The rules mirror vLLM 0.33.0:

* token counts per item: the model's processing-info class
  (vllm/model_executor/models/qwen2_vl.py::Qwen2VLProcessingInfo for Qwen2-VL, Qwen2.5-VL and the
  Qwen3-VL image path; pixtral.py::PixtralHFEncoderInfo for Mistral-3 / Pixtral; clip.py for Llava;
  mllama.py (0.10.x) for Llama-3.2-Vision);
* the budget: vllm/v1/core/encoder_cache_manager.py::compute_mm_encoder_budget and
  vllm/multimodal/encoder_budget.py::MultiModalBudget (``_get_max_items``,
  ``get_modality_with_max_tokens``, ``get_encoder_budget``);
* the profile: vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.profile_run runs the encoder on
  ``max_items_per_batch`` dummy items of the largest modality, keeps the outputs in the encoder
  cache, then runs the language-model dummy step while they are still held.

The encoder's own activation peak is not a vLLM formula: it is an estimate built the way the
registry's activation model sizes a decoder step (buffers of the layer width per token), applied
at the encoder's width over the encoder's input patches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import field

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

__all__ = [
    "DEFAULT_MM_LIMIT",
    "EncoderBudget",
    "MmProfile",
    "encoder_activation_bytes",
    "encoder_budget",
    "encoder_cache_bytes",
    "fit_pixel_bounds",
    "limit_for",
    "allowed_limits",
    "mm_profile",
    "pixtral_image_tokens",
    "profile_peak_bytes",
    "qwen_vl_image_size_with_most_features",
    "qwen_vl_image_tokens",
    "qwen_vl_max_image_tokens",
    "qwen_vl_max_video_tokens",
    "qwen_vl_video_tokens",
    "smart_resize",
]

#: limit of a modality the user did not name (vllm/config/multimodal.py::get_limit_per_prompt)
DEFAULT_MM_LIMIT = 999
#: frames per video the Qwen-VL dummy video is capped at (qwen2_vl.py::_MAX_FRAMES_PER_VIDEO)
QWEN_VL_MAX_FRAMES_PER_VIDEO = 14
#: the Qwen-VL processors refuse aspect ratios above this (smart_resize)
QWEN_VL_MAX_ASPECT_RATIO = 200

Limits = tuple[tuple[str, int], ...]


# --------------------------------------------------------------------------------------
# --limit-mm-per-prompt
# --------------------------------------------------------------------------------------


def limit_for(limits: Limits | Mapping[str, int], modality: str) -> int:
    """The per-prompt limit of ``modality``: the user's, else 999.

    Mirrors vllm/config/multimodal.py::MultiModalConfig.get_limit_per_prompt (0.33.0)."""
    table = dict(limits)
    return int(table.get(modality, DEFAULT_MM_LIMIT))


def allowed_limits(limits: Limits | Mapping[str, int], supported: Mapping[str, int | None]) -> dict[str, int]:
    """The items per prompt vLLM allows for each modality the model supports: the user's limit
    (:func:`limit_for`), capped by the model's own where it states one (None: no cap).

    Mirrors vllm/multimodal/processing/context.py::BaseProcessingInfo.allowed_mm_limits (0.33.0),
    ``min(user_limit, supported_limit)`` over ``get_supported_mm_limits()``; the encoder budget
    (vllm/multimodal/encoder_budget.py::MultiModalBudget) reads these, not the user's figures."""
    return {m: limit_for(limits, m) if cap is None else min(limit_for(limits, m), int(cap))
            for m, cap in supported.items()}


# --------------------------------------------------------------------------------------
# Token counts per item
# --------------------------------------------------------------------------------------


def smart_resize(height: int, width: int, *, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """The size a Qwen-VL processor resizes an image to: each side rounded to a multiple of
    ``factor`` (patch × merge), then scaled down (floor) or up (ceil) to keep the area within
    ``[min_pixels, max_pixels]`` at the same aspect ratio.

    Mirrors transformers/models/qwen2_vl/image_processing_qwen2_vl.py::smart_resize, which
    vllm/model_executor/models/qwen2_vl.py imports (0.33.0).  Python's ``round`` (half to even)
    is the rounding the original uses.
    """
    if height < 1 or width < 1:
        raise UsageError(f"image size {width}x{height} must be positive")
    if max(height, width) / min(height, width) > QWEN_VL_MAX_ASPECT_RATIO:
        raise UsageError(f"image aspect ratio {max(height, width) / min(height, width):.0f} exceeds "
                         f"{QWEN_VL_MAX_ASPECT_RATIO}: the Qwen-VL processor refuses it")
    return fit_pixel_bounds(height, width, round(height / factor) * factor, round(width / factor) * factor,
                            factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)


def fit_pixel_bounds(height: int, width: int, h_bar: int, w_bar: int, *, factor: int, min_pixels: int,
                     max_pixels: int) -> tuple[int, int]:
    """The second step of the Qwen-VL ``smart_resize``: ``(h_bar, w_bar)``, the image's sides
    already rounded to multiples of ``factor``, is kept when its area is within
    ``[min_pixels, max_pixels]``; otherwise the original ``height x width`` is scaled by
    ``beta`` down (floor, at least ``factor``) or up (ceil) to the bound, each side on the
    ``factor`` grid.  transformers/models/qwen2_vl/image_processing_qwen2_vl.py::smart_resize,
    imported by vllm/model_executor/models/qwen2_vl.py (0.33.0).
    """
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen_vl_video_tokens(width: int, height: int, num_frames: int, *, patch_size: int, merge_size: int,
                         temporal_patch_size: int, min_pixels: int, max_pixels: int,
                         do_resize: bool = True) -> int:
    """Tokens of a ``num_frames`` video (an image is one frame) in a Qwen-VL model::

        (h', w')  = smart_resize(h, w, factor=patch × merge)
        grid_t    = max(ceil_to(num_frames, temporal_patch) / temporal_patch, 1)
        tokens    = grid_t × (h'/patch) × (w'/patch) // merge²

    Mirrors vllm/model_executor/models/qwen2_vl.py::Qwen2VLProcessingInfo._get_vision_info (0.33.0).
    """
    if do_resize:
        h, w = smart_resize(height, width, factor=patch_size * merge_size, min_pixels=min_pixels,
                            max_pixels=max_pixels)
    else:
        h, w = height, width
    padded = num_frames + (-num_frames % temporal_patch_size)
    grid_t = max(padded // temporal_patch_size, 1)
    patches = grid_t * (h // patch_size) * (w // patch_size)
    return patches // (merge_size * merge_size)


def qwen_vl_image_tokens(width: int, height: int, *, patch_size: int, merge_size: int, min_pixels: int,
                         max_pixels: int, temporal_patch_size: int = 2) -> int:
    """Tokens of one image in a Qwen-VL model (one frame, see :func:`qwen_vl_video_tokens`).

    Example (Qwen2.5-VL, patch 14, merge 2): a 1280×720 image is resized to 1288×728
    (multiples of 28), i.e. 92 × 52 patches, 4784 / 4 = 1196 tokens.
    """
    return qwen_vl_video_tokens(width, height, 1, patch_size=patch_size, merge_size=merge_size,
                                temporal_patch_size=temporal_patch_size, min_pixels=min_pixels,
                                max_pixels=max_pixels)


def qwen_vl_image_size_with_most_features(*, max_pixels: int, patch_size: int, merge_size: int) -> tuple[int, int]:
    """(width, height) of the dummy image with the most tokens: the merged-patch budget
    ``max_pixels // unit²`` (unit = patch × merge) factorised into the closest pair with an aspect
    ratio of at most 200, lowering the budget until one exists.

    Mirrors Qwen2VLProcessingInfo.get_image_size_with_most_features (0.33.0)."""
    unit = patch_size * merge_size
    budget = max_pixels // (unit * unit)
    hf, wf = 1, max(budget, 1)
    for n in range(budget, 0, -1):
        hf, wf = 1, n
        for d in range(math.isqrt(n), 0, -1):
            if n % d == 0:
                hf, wf = d, n // d
                break
        if wf / hf <= QWEN_VL_MAX_ASPECT_RATIO:
            break
    return unit * wf, unit * hf


def qwen_vl_max_image_tokens(*, patch_size: int, merge_size: int, min_pixels: int, max_pixels: int,
                             temporal_patch_size: int = 2) -> int:
    """Tokens of the largest image (Qwen2VLProcessingInfo.get_max_image_tokens, 0.33.0)."""
    w, h = qwen_vl_image_size_with_most_features(max_pixels=max_pixels, patch_size=patch_size,
                                                 merge_size=merge_size)
    return qwen_vl_image_tokens(w, h, patch_size=patch_size, merge_size=merge_size, min_pixels=min_pixels,
                                max_pixels=max_pixels, temporal_patch_size=temporal_patch_size)


def qwen_vl_max_video_tokens(*, seq_len: int, max_videos: int, patch_size: int, merge_size: int,
                             temporal_patch_size: int, min_pixels: int, max_pixels: int,
                             max_frames_per_video: int = QWEN_VL_MAX_FRAMES_PER_VIDEO) -> int:
    """Tokens of the largest dummy video: frames of the largest image, as many as fit
    ``seq_len`` tokens in all (shared by ``max_videos`` videos), at most 14 per video.

    Mirrors Qwen2VLProcessingInfo.get_max_video_tokens / get_num_frames_with_most_features /
    _get_max_video_frames (0.33.0): frames grow one at a time while the next count still fits.
    """
    w, h = qwen_vl_image_size_with_most_features(max_pixels=max_pixels, patch_size=patch_size,
                                                 merge_size=merge_size)

    def tokens(frames: int) -> int:
        return qwen_vl_video_tokens(w, h, frames, patch_size=patch_size, merge_size=merge_size,
                                    temporal_patch_size=temporal_patch_size, min_pixels=min_pixels,
                                    max_pixels=max_pixels)

    # _get_max_video_frames: a video's tokens only change every temporal_patch_size frames, so
    # jump straight to the last frame count whose token count still fits.
    per_step = tokens(temporal_patch_size)
    frames = 1
    if per_step > 0 and seq_len >= per_step:
        frames = (seq_len // per_step) * temporal_patch_size
    while tokens(frames + 1) <= seq_len:  # at most temporal_patch_size - 1 more steps
        frames += 1
    per_video = min(frames // max(max_videos, 1), max_frames_per_video)
    return tokens(max(per_video, 1))


def pixtral_image_tokens(width: int, height: int, *, image_size: int, patch_size: int,
                         spatial_merge_size: int = 1) -> int:
    """Image embeddings of Pixtral / Mistral-3: the image scaled down to fit ``image_size``,
    then ``ceil(h / p) × ceil(w / p)`` with ``p = patch × spatial_merge`` (the [IMG_BREAK] and
    [IMG_END] placeholders are not embeddings).

    Mirrors vllm/model_executor/models/pixtral.py::PixtralHFEncoderInfo.get_patch_grid_size
    (0.33.0).  Example (Mistral-Small-3.1, 1540 px, patch 14, merge 2): 55 × 55 = 3025."""
    p = patch_size * spatial_merge_size
    ratio = max(width / image_size, height / image_size)
    if ratio > 1:
        width = int(math.floor(width / ratio))
        height = int(math.floor(height / ratio))
    nrows = (height - 1) // p + 1
    ncols = (width - 1) // p + 1
    return nrows * ncols


# --------------------------------------------------------------------------------------
# Encoder budget
# --------------------------------------------------------------------------------------


@frozen
class EncoderBudget:
    """The encoder budget vLLM derives at startup.

    ``compute_budget_tokens`` = max(max_num_encoder_input_tokens, largest item);
    ``cache_size_tokens`` = max(encoder_cache_size, largest item); ``budget_tokens`` is their
    minimum (0 when every modality is disabled).  ``max_items_per_batch`` is per modality;
    ``profile_modality`` is the one profiled (most tokens per item, ties by name).
    """

    max_tokens_per_item: dict[str, int]
    compute_budget_tokens: int
    cache_size_tokens: int
    max_items_per_prompt: dict[str, int] = field(default_factory=dict)
    max_items_per_batch: dict[str, int] = field(default_factory=dict)

    @property
    def budget_tokens(self) -> int:
        return min(self.compute_budget_tokens, self.cache_size_tokens)

    @property
    def profile_modality(self) -> str | None:
        if not self.max_tokens_per_item:
            return None
        return max(self.max_tokens_per_item.items(), key=lambda kv: (kv[1], kv[0]))[0]

    @property
    def profile_items(self) -> int:
        m = self.profile_modality
        return self.max_items_per_batch.get(m, 0) if m else 0

    @property
    def profiles_encoder(self) -> bool:
        return self.budget_tokens > 0 and self.profile_items > 0

    def log_line(self) -> str | None:
        """The startup line vLLM prints before the encoder profile (gpu_model_runner.py)."""
        if not self.profiles_encoder:
            return None
        return (f"Encoder cache will be initialized with a budget of {self.budget_tokens} tokens, and "
                f"profiled with {self.profile_items} {self.profile_modality} items of the maximum feature size.")


def encoder_budget(max_tokens_per_item: Mapping[str, int], limits: Limits | Mapping[str, int], *,
                   max_num_batched_tokens: int, max_model_len: int, max_num_seqs: int,
                   enable_chunked_prefill: bool = True,
                   max_num_encoder_input_tokens: int | None = None,
                   encoder_cache_size: int | None = None) -> EncoderBudget:
    """The encoder compute budget, cache size and items per batch.

    ``max_tokens_per_item`` lists every modality the model supports; those whose limit is 0 are
    dropped (the tower is not even built for them).  Then::

        compute = max(max_num_encoder_input_tokens (= mnbt), largest item)
        cache   = max(encoder_cache_size (= mnbt), largest item)
        budget  = min(compute, cache)
        per_prompt = max(1, min(limit, max_model_len // item))
        reqs       = max_num_seqs  (min with mnbt // item when chunked prefill is off)
        per_batch  = max(1, min(budget // item, reqs × per_prompt))

    Mirrors vllm/v1/core/encoder_cache_manager.py::compute_mm_encoder_budget,
    vllm/multimodal/encoder_budget.py::MultiModalBudget._get_max_items and
    vllm/config/scheduler.py::SchedulerConfig.__post_init__ (both scheduler figures default to
    max_num_batched_tokens), 0.33.0.
    """
    active = {m: int(t) for m, t in max_tokens_per_item.items() if limit_for(limits, m) > 0}
    if not active:
        return EncoderBudget({}, 0, 0)
    largest = max(active.values())
    enc_in = max_num_batched_tokens if max_num_encoder_input_tokens is None else max_num_encoder_input_tokens
    cache = max_num_batched_tokens if encoder_cache_size is None else encoder_cache_size
    compute_budget = max(enc_in, largest)
    cache_size = max(cache, largest)
    budget = min(compute_budget, cache_size)
    per_prompt: dict[str, int] = {}
    per_batch: dict[str, int] = {}
    for m, item in active.items():
        if item == 0 or budget == 0:
            per_prompt[m], per_batch[m] = 0, 0
            continue
        reqs = max_num_seqs
        if not enable_chunked_prefill:
            reqs = min(reqs, max_num_batched_tokens // item)
        per_prompt[m] = max(1, min(limit_for(limits, m), max_model_len // item))
        per_batch[m] = max(1, min(budget // item, reqs * per_prompt[m]))
    return EncoderBudget(active, compute_budget, cache_size, per_prompt, per_batch)


# --------------------------------------------------------------------------------------
# Profile-time memory
# --------------------------------------------------------------------------------------


def encoder_cache_bytes(*, num_items: int, tokens_per_item: int, output_width: int, dtype_bytes: int) -> int:
    """Bytes of the dummy encoder outputs parked in ``encoder_cache`` during the profile::

        items × tokens per item × output width × dtype bytes

    ``output_width`` is the language model's hidden size (Qwen3-VL's deepstack outputs are
    ``out_hidden × (1 + deepstack levels)`` wide).  Mirrors GPUModelRunner.profile_run (0.33.0):
    the outputs stay referenced until after the language-model dummy step.
    """
    return max(0, num_items) * max(0, tokens_per_item) * output_width * dtype_bytes


def encoder_activation_bytes(*, num_items: int, patches_per_item: int, hidden_size: int,
                             intermediate_size: int, hidden_buffers: float, intermediate_buffers: float,
                             tensor_parallel_size: int = 1, data_parallel_encoder: bool = False,
                             dtype_bytes: int = 2) -> int:
    """ESTIMATE of the encoder forward's peak over the dummy batch::

        tokens  = items × patches per item        (÷ tp, rounded up, in "data" TP mode)
        width   = h_buf × hidden + i_buf × intermediate / tp_w   (tp_w = 1 in "data" mode)
        peak    = ceil(tokens × width × dtype bytes)

    This is the registry's dense activation model (buffers of the layer width alive inside the
    widest MLP) applied at the encoder's width over its input patches.  It ignores attention
    scratch (FlashAttention keeps none that scales with the square of the sequence) and the
    window-attention reordering copies, so treat it as an estimate.  In ``--mm-encoder-tp-mode
    data`` each rank runs a share of the items with full weights
    (vllm/model_executor/models/vision.py::run_dp_sharded_mrope_vision_model).
    """
    tp = max(1, tensor_parallel_size)
    tokens = max(0, num_items) * max(0, patches_per_item)
    if data_parallel_encoder:
        tokens = -(-tokens // tp)
        tp_w = 1
    else:
        tp_w = tp
    width = hidden_buffers * hidden_size + intermediate_buffers * intermediate_size / tp_w
    return math.ceil(tokens * width * dtype_bytes)


@frozen
class MmProfile:
    """What the multimodal part of the profile run holds.

    ``encoder_activation_bytes``: the encoder forward's peak (estimate);
    ``encoder_cache_bytes``: the dummy outputs held through the language-model step;
    ``skipped``: why there is no encoder profile ("" when there is one).
    """

    budget: EncoderBudget
    modality: str | None
    num_items: int
    tokens_per_item: int
    encoder_activation_bytes: int
    encoder_cache_bytes: int
    skipped: str = ""
    source: str = ""

    @property
    def profiled(self) -> bool:
        return not self.skipped


def profile_peak_bytes(language_peak_bytes: int, profile: MmProfile | None) -> int:
    """The profile run's peak with the encoder in front::

        peak = max(encoder activation, encoder cache + language-model peak)

    The encoder's intermediates are freed before the language-model dummy step, but its outputs
    (the encoder cache) are not (GPUModelRunner.profile_run, 0.33.0)."""
    if profile is None or not profile.profiled:
        return language_peak_bytes
    return max(profile.encoder_activation_bytes, profile.encoder_cache_bytes + language_peak_bytes)


def mm_profile(max_tokens_per_item: Mapping[str, int], limits: Limits | Mapping[str, int], *,
               max_num_batched_tokens: int, max_model_len: int, max_num_seqs: int,
               patches_per_token: Mapping[str, int] | int, encoder_hidden_size: int,
               encoder_intermediate_size: int, output_width: int, hidden_buffers: float,
               intermediate_buffers: float, dtype_bytes: int, tensor_parallel_size: int = 1,
               data_parallel_encoder: bool = False, skip_mm_profiling: bool = False,
               enable_chunked_prefill: bool = True) -> MmProfile:
    """Budget, items and bytes of the encoder profile, or why it is skipped.

    ``patches_per_token`` is the encoder's input positions per output token (merge² for
    Qwen-VL and Mistral-3, 1 for Llava) — per modality or one value.
    """
    budget = encoder_budget(max_tokens_per_item, limits, max_num_batched_tokens=max_num_batched_tokens,
                            max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                            enable_chunked_prefill=enable_chunked_prefill)
    if skip_mm_profiling:
        return MmProfile(budget, None, 0, 0, 0, 0, skipped="--skip-mm-profiling",
                         source="vLLM skips the encoder and encoder-cache profile")
    if not budget.profiles_encoder:
        return MmProfile(budget, None, 0, 0, 0, 0,
                         skipped="every modality is disabled by --limit-mm-per-prompt",
                         source="encoder budget 0: no encoder profile, encoder cache not initialized")
    modality = budget.profile_modality
    assert modality is not None
    items = budget.profile_items
    tokens = budget.max_tokens_per_item[modality]
    ppt = patches_per_token[modality] if isinstance(patches_per_token, Mapping) else patches_per_token
    act = encoder_activation_bytes(num_items=items, patches_per_item=tokens * ppt,
                                   hidden_size=encoder_hidden_size, intermediate_size=encoder_intermediate_size,
                                   hidden_buffers=hidden_buffers, intermediate_buffers=intermediate_buffers,
                                   tensor_parallel_size=tensor_parallel_size,
                                   data_parallel_encoder=data_parallel_encoder, dtype_bytes=dtype_bytes)
    cache = encoder_cache_bytes(num_items=items, tokens_per_item=tokens, output_width=output_width,
                                dtype_bytes=dtype_bytes)
    src = (f"encoder profile: {items} {modality} item(s) × {tokens} tokens (budget {budget.budget_tokens}); "
           f"encoder activation ESTIMATE at width {encoder_hidden_size}/{encoder_intermediate_size} "
           f"over {items * tokens * ppt} patches; encoder cache {items * tokens} × {output_width} held "
           "through the language-model step")
    return MmProfile(budget, modality, items, tokens, act, cache, source=src)
