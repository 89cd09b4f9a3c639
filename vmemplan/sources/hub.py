"""The Hugging Face cache and Hub: settings, one bounded attempt under an overall deadline,
and the translation of huggingface_hub failures into vmemplan errors."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from vmemplan.core.errors import BadInput, HubUnavailable, VmemplanError
from vmemplan.core.frozen import frozen
from vmemplan.sources._io import printable, scrub_secrets
from vmemplan.sources.local import (
    _COMMIT_RE,
    _GATED_HINT,
    _HUB_EXTRA_FILE,
    _HUB_SPINNER_TEXT,
    _MAX_JSON_BYTES,
    _OFFLINE_HINT,
    _REPO_ID_RE,
    EXTRA_CONFIG_FILES,
    ModelSource,
    _local_safetensors_params,
    _read_json_object,
)

# --------------------------------------------------------------------------------------------
# Hugging Face cache and Hub


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().upper() in {"1", "ON", "YES", "TRUE"}


@frozen
class _HubSettings:
    endpoint: str
    cache_dir: str
    offline: bool

    @property
    def shown(self) -> str:
        """The endpoint as it may be printed: no userinfo, no token-like strings, no controls."""
        return printable(scrub_secrets(self.endpoint))


class HubUnreachable(HubUnavailable):
    """The Hub could not be reached at all (DNS, refused, timeout, no answer before the deadline)."""


#: The whole Hub conversation (config.json, hf_quant_config.json, safetensors headers) must end
#: within this many seconds (``VMEMPLAN_HUB_DEADLINE_S``); the first connection gets a few.
DEFAULT_DEADLINE_S = 10.0
_CONNECT_TIMEOUT_S = 3.0
#: The Hub's first answer (config.json's metadata) must come within this many seconds: a server
#: that takes the connection and then says nothing fails fast (exit 6 in under 5 s with the
#: probe), while a slow transfer after a first answer still has the whole deadline.
_FIRST_ANSWER_S = 3.0


def hub_deadline_s() -> float:
    """The overall Hub deadline in seconds, from ``VMEMPLAN_HUB_DEADLINE_S`` (default 10)."""
    raw = os.environ.get("VMEMPLAN_HUB_DEADLINE_S", "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_DEADLINE_S
    except ValueError:
        value = DEFAULT_DEADLINE_S
    return value if math.isfinite(value) and 0 < value <= 3600 else DEFAULT_DEADLINE_S


def _probe(settings: _HubSettings, timeout_s: float) -> None:
    """One TCP connection to the endpoint's host, with a short timeout; HubUnreachable if it fails.

    A Hub that cannot be reached (DNS failure, connection refused, no route, timeout) is then
    reported at once, instead of through huggingface_hub's retries with back-off.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(settings.endpoint)
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    if not host or port is None or parts.scheme not in ("http", "https"):
        raise HubUnreachable(f"HF_ENDPOINT {settings.shown} is not an http(s) URL",
                             hint="unset HF_ENDPOINT, or set it to a URL such as https://huggingface.co")
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as error:
        what = "no answer" if isinstance(error, (TimeoutError, socket.timeout)) else (
            "the name does not resolve" if isinstance(error, socket.gaierror) else (error.strerror or type(error).__name__))
        raise HubUnreachable(f"cannot reach the Hugging Face Hub ({settings.shown}): {what}",
                             hint="set HF_HUB_OFFLINE=1 to skip the network, or pass a local config.json") from None


@contextmanager
def _hub_logging_off() -> Iterator[None]:
    """Keep huggingface_hub's own log lines (retries, rate limits) and warnings off stderr."""
    import logging
    import warnings

    logger = logging.getLogger("huggingface_hub")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            if not _ABANDONED:  # a worker left running past its deadline stays silenced
                logger.setLevel(level)
                logger.propagate = propagate


#: Hub workers abandoned at their deadline (daemon threads: they end with the process).
_ABANDONED: list[Any] = []


def _with_deadline(fn: Callable[[], Any], deadline_s: float, settings: _HubSettings) -> Any:
    """Run ``fn`` in a daemon thread; HubUnreachable when it has not finished after ``deadline_s``.

    huggingface_hub retries with back-off (and honours ``Retry-After``, an hour if a server says
    so); the deadline bounds the whole conversation whatever the server does.
    """
    import threading

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = error

    thread = threading.Thread(target=work, name="vmemplan-hub", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if thread.is_alive():
        _ABANDONED.append(thread)
        raise HubUnreachable(
            f"the Hugging Face Hub ({settings.shown}) did not answer within {deadline_s:g} s",
            hint="set HF_HUB_OFFLINE=1 to skip the network, or pass a local config.json "
            "(VMEMPLAN_HUB_DEADLINE_S sets the deadline)",
        )
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _hub_settings() -> _HubSettings:
    """Endpoint, cache directory and offline flag, read from the environment at call time.

    huggingface_hub reads these once, at its import; reading them here again lets a variable set
    later (tests, embedding programs) still win.  Precedence mirrors huggingface_hub.constants:
    HF_HUB_CACHE, then HUGGINGFACE_HUB_CACHE, then $HF_HOME/hub.
    """
    from huggingface_hub import constants

    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if cache:
        cache_dir = os.path.expanduser(os.path.expandvars(cache))
    elif os.environ.get("HF_HOME"):
        cache_dir = os.path.join(os.path.expanduser(os.path.expandvars(os.environ["HF_HOME"])), "hub")
    else:
        cache_dir = constants.HF_HUB_CACHE
    offline = (
        _truthy(os.environ.get("HF_HUB_OFFLINE"))
        or _truthy(os.environ.get("TRANSFORMERS_OFFLINE"))
        or bool(constants.HF_HUB_OFFLINE)
    )
    return _HubSettings(endpoint=endpoint, cache_dir=cache_dir, offline=offline)


def _check_repo_id(ref: str) -> None:
    bad = (
        not _REPO_ID_RE.fullmatch(ref)
        or "--" in ref
        or ".." in ref
        or ref.endswith(".git")
        or any(part.startswith((".", "-")) for part in ref.split("/"))
    )
    if bad:
        raise BadInput(
            f"{(ref[:80] + '…') if len(ref) > 80 else ref!r} is neither an existing path nor a valid Hugging Face "
            "model id" + (f" ({len(ref):,} characters; an id has at most 96 per part)" if len(ref) > 96 else ""),
            hint="pass a config.json, a model directory, or an id such as meta-llama/Llama-3.1-8B",
        )


def _commit_of(snapshot_file: str) -> str | None:
    name = Path(snapshot_file).parent.name
    return name if _COMMIT_RE.fullmatch(name) else None


def _from_cache(repo_id: str, revision: str | None, settings: _HubSettings) -> ModelSource | None:
    """``config.json`` from the HF cache layout ``models--org--name/snapshots/<sha>/``; no network."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=settings.cache_dir, revision=revision)
    if not isinstance(found, str):
        return None
    path = Path(found)
    config = _read_json_object(path, "config.json")
    commit = _commit_of(found)
    extra: dict[str, dict[str, Any]] = {}
    for name in EXTRA_CONFIG_FILES:
        cached = try_to_load_from_cache(repo_id, name, cache_dir=settings.cache_dir, revision=commit or revision)
        if isinstance(cached, str):
            extra[name] = _read_json_object(Path(cached), name)
    notes = [
        f"read from the Hugging Face cache ({settings.cache_dir}) at revision {revision or 'main'}"
        + (f" (commit {commit})" if commit else "")
        + "; no network access"
    ]
    notes.extend(f"{name} read from the Hugging Face cache" for name in extra)
    params, note = _local_safetensors_params(path.parent)
    if note:
        notes.append(note)
    return ModelSource.of_config(repo_id, "hf-cache", config, extra, notes, revision=commit or revision, path=found,
                                 safetensors_params=params)


class _Scrubber:
    """Removes access tokens from text built from Hub exceptions."""

    def __init__(self, token: str | None) -> None:
        candidates = [token, os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN")]
        self._secrets = sorted({t.strip() for t in candidates if t and len(t.strip()) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        return scrub_secrets(text, tuple(self._secrets))


#: huggingface_hub.errors classes (by name; one this release lacks is skipped) and the error each
#: becomes: message (formatted with repo_id, shown endpoint, revision, filename, at-revision) and
#: hint.  Order matters: GatedRepoError subclasses RepositoryNotFoundError, and
#: LocalEntryNotFoundError (nothing cached, Hub unreachable) shares the EntryNotFoundError base
#: with the remote 404.
_HUB_ERRORS: tuple[tuple[tuple[str, ...], type[VmemplanError], str, str], ...] = (
    (("GatedRepoError",), HubUnavailable,
     "{repo_id} is a gated repository on the Hugging Face Hub and this request may not read it", _GATED_HINT),
    (("RepositoryNotFoundError",), HubUnavailable,
     "model {repo_id} was not found on the Hugging Face Hub ({shown}), or it is private",
     "check the id; a private repository needs `hf auth login` or HF_TOKEN"),
    (("RevisionNotFoundError",), HubUnavailable,
     "revision {revision} of {repo_id} was not found on the Hugging Face Hub",
     "pass an existing branch, tag or commit with --revision"),
    (("LocalEntryNotFoundError",), HubUnreachable,
     "cannot reach the Hugging Face Hub ({shown}) to fetch {filename} of {repo_id}{at}",
     "check your network, proxy or HF_ENDPOINT; " + _OFFLINE_HINT),
    (("RemoteEntryNotFoundError", "EntryNotFoundError"), HubUnavailable,
     "{repo_id} has no {filename}{at} on the Hugging Face Hub",
     "vmemplan needs a transformers-style config.json; pass a local one"),
    (("OfflineModeIsEnabled",), HubUnavailable,
     "Hugging Face Hub access is disabled (HF_HUB_OFFLINE), so {filename} of {repo_id} cannot be fetched",
     _OFFLINE_HINT),
    (("HFValidationError",), BadInput, "{repo_id!r} is not a valid Hugging Face model id",
     "pass a config.json, a model directory, or an id such as meta-llama/Llama-3.1-8B"),
)


def _translate_hub_error(
    error: BaseException, *, repo_id: str, revision: str | None, filename: str, settings: _HubSettings, scrub: _Scrubber
) -> VmemplanError | None:
    """Map a huggingface_hub / HTTP-client exception to one of ours; ``None`` if it is not one we expect.

    The errors with a fixed message are :data:`_HUB_ERRORS`, in order.
    """
    from huggingface_hub import errors as hub_errors

    at = f" at revision {revision}" if revision else ""
    fields = {"repo_id": repo_id, "shown": settings.shown, "revision": revision, "filename": filename, "at": at}
    for names, kind, message, hint in _HUB_ERRORS:
        classes = tuple(c for c in (getattr(hub_errors, n, None) for n in names) if isinstance(c, type))
        if isinstance(error, classes):
            return kind(message.format(**fields), hint=hint)
    if isinstance(error, hub_errors.HfHubHTTPError):
        response = getattr(error, "response", None)
        status = getattr(response, "status_code", None)
        return HubUnavailable(
            f"the Hugging Face Hub answered HTTP {status} when fetching {filename} of {repo_id}{at}",
            hint=("the Hub is rate-limiting this machine; try again later, or set HF_HUB_OFFLINE=1 and pass a "
                  "local config.json" if status == 429 else
                  "a 401/403 usually means a missing or insufficient token (`hf auth login`, HF_TOKEN); "
                  "a 5xx means the Hub is having trouble, try again later, or set HF_HUB_OFFLINE=1 and pass a "
                  "local config.json"),
        )
    if isinstance(error, _network_error_types()):
        detail = printable(scrub(str(error)).strip().splitlines()[0] if str(error).strip() else "")[:200]
        return HubUnreachable(
            f"cannot reach the Hugging Face Hub ({settings.shown}): {type(error).__name__}"
            + (f": {detail}" if detail else ""),
            hint="check your network, proxy or HF_ENDPOINT; " + _OFFLINE_HINT,
        )
    if isinstance(error, OSError):  # e.g. the cache directory is not writable
        detail = scrub(str(error)).strip()
        return HubUnavailable(
            f"cannot store {filename} of {repo_id} in the Hugging Face cache ({settings.cache_dir}): {detail}",
            hint="make HF_HOME or HF_HUB_CACHE point at a writable directory",
        )
    return None


def _network_error_types() -> tuple[type[BaseException], ...]:
    """Connection and timeout errors of whichever HTTP client this huggingface_hub uses."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module_name, names in (
        ("httpx2", ("TransportError", "TimeoutException")),
        ("httpx", ("TransportError", "TimeoutException")),
        ("requests", ("ConnectionError", "Timeout")),
    ):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        types.extend(t for t in (getattr(module, n, None) for n in names) if isinstance(t, type))
    return tuple(types)


def _call_hub(fn: Callable[[], Any], **context: Any) -> Any:
    """Run a huggingface_hub call; re-raise a failure as a VmemplanError with no chained hub exception.

    The translated error is raised outside the ``except`` block so it carries no ``__context__``:
    a hub exception may quote server text, and nothing of it must leak a token.
    """
    failure: VmemplanError | None = None
    try:
        return fn()
    except Exception as error:  # translated below, or re-raised untouched
        failure = _translate_hub_error(error, **context)
        if failure is None:
            raise
    raise failure


@contextmanager
def _quiet_hub() -> Iterator[None]:
    """Silence huggingface_hub's tqdm bars for the duration (the CLI shows its own spinner)."""
    from huggingface_hub import utils as hub_utils

    was_disabled = hub_utils.are_progress_bars_disabled()  # type: ignore[attr-defined]
    hub_utils.disable_progress_bars()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if not was_disabled:
            hub_utils.enable_progress_bars()  # type: ignore[attr-defined]


def _spinner(progress: Callable[[str], AbstractContextManager[Any]] | None, text: str) -> AbstractContextManager[Any]:
    return progress(text) if progress is not None else nullcontext()


def _download_optional(fn: Callable[[], Any], **context: Any) -> tuple[Any, str | None]:
    """Run an optional Hub call: (result, None), or (None, None) when the file is simply absent,
    or (None, reason) for any other failure.  Never raises for an expected Hub failure."""
    from huggingface_hub import errors as hub_errors

    absent: tuple[type[BaseException], ...] = tuple(
        t
        for t in (
            getattr(hub_errors, "RemoteEntryNotFoundError", None),
            getattr(hub_errors, "NotASafetensorsRepoError", None),
        )
        if isinstance(t, type)
    )
    reason: str | None = None
    try:
        return fn(), None
    except absent:
        return None, None
    except Exception as error:  # noqa: BLE001 - optional data: report why it is missing
        translated = _translate_hub_error(error, **context)
        if translated is not None:
            reason = translated.message
        else:
            first_line = (str(error).splitlines() or [""])[0]
            reason = context["scrub"](f"{type(error).__name__}: {first_line}".rstrip(": "))
    return None, reason


def _from_hub(
    repo_id: str,
    revision: str | None,
    token: str | None,
    settings: _HubSettings,
    progress: Callable[[str], AbstractContextManager[Any]] | None,
) -> ModelSource:
    """Download config.json (and hf_quant_config.json where vLLM reads it) and read safetensors headers."""
    import huggingface_hub as hub

    scrub = _Scrubber(token)
    context = {"repo_id": repo_id, "revision": revision, "settings": settings, "scrub": scrub}
    notes: list[str] = []
    with _quiet_hub():
        with _spinner(progress, _HUB_SPINNER_TEXT):
            size = _with_deadline(lambda: _call_hub(
                lambda: hub.get_hf_file_metadata(
                    hub.hf_hub_url(repo_id, "config.json", revision=revision, endpoint=settings.endpoint),
                    token=token, timeout=_CONNECT_TIMEOUT_S + 2,
                ).size,
                filename="config.json",
                **context,
            ), min(_FIRST_ANSWER_S, hub_deadline_s()), settings)
            if isinstance(size, int) and size > _MAX_JSON_BYTES:
                raise HubUnavailable(
                    f"the Hugging Face Hub ({settings.shown}) offers a config.json of {size} bytes for {repo_id}, "
                    "too large to be a model config",
                    hint="check HF_ENDPOINT; set HF_HUB_OFFLINE=1 or pass a local config.json",
                )
            downloaded = _call_hub(
                lambda: hub.hf_hub_download(
                    repo_id,
                    "config.json",
                    revision=revision,
                    cache_dir=settings.cache_dir,
                    endpoint=settings.endpoint,
                    token=token,
                    etag_timeout=_CONNECT_TIMEOUT_S + 2,
                ),
                filename="config.json",
                **context,
            )
        config = _read_json_object(Path(downloaded), "config.json")
        commit = _commit_of(downloaded)
        pinned = commit or revision
        notes.append(
            f"downloaded config.json of {repo_id} from {settings.shown} at revision {revision or 'main'}"
            + (f" (commit {commit})" if commit else "")
            + f" into the Hugging Face cache ({settings.cache_dir})"
        )

        extra: dict[str, dict[str, Any]] = {}
        # vLLM reads hf_quant_config.json (older ModelOpt exports) only when config.json carries no
        # quantization_config: vllm/transformers_utils/config.py::get_config (0.33.0).
        if "quantization_config" not in config:
            with _spinner(progress, "Fetching hf_quant_config.json from the Hugging Face Hub…"):
                quant_path, note = _download_optional(
                    lambda: hub.hf_hub_download(
                        repo_id,
                        _HUB_EXTRA_FILE,
                        revision=pinned,
                        cache_dir=settings.cache_dir,
                        endpoint=settings.endpoint,
                        token=token,
                    ),
                    filename=_HUB_EXTRA_FILE,
                    **dict(context, revision=pinned),
                )
            if quant_path is not None:
                extra[_HUB_EXTRA_FILE] = _read_json_object(Path(quant_path), _HUB_EXTRA_FILE)
                notes.append(f"{_HUB_EXTRA_FILE} downloaded from the Hub")
            elif note:
                notes.append(f"{_HUB_EXTRA_FILE} not fetched: {note}")

        params: dict[str, int] | None = None
        api = hub.HfApi(endpoint=settings.endpoint)
        with _spinner(progress, "Reading safetensors headers from the Hugging Face Hub…"):
            metadata, note = _download_optional(
                lambda: api.get_safetensors_metadata(repo_id, revision=pinned, token=token),
                filename="model.safetensors",
                **dict(context, revision=pinned),
            )
        if metadata is not None:
            params = {str(k): int(v) for k, v in dict(metadata.parameter_count).items()}
            shards = len(getattr(metadata, "files_metadata", None) or {})
            notes.append(f"parameter counts read from {shards} safetensors header(s) on the Hub")
        else:
            notes.append(f"no safetensors parameter counts: {note or 'the repository has no safetensors weights'}")

    return ModelSource.of_config(repo_id, "hub", config, extra, notes, revision=pinned, path=downloaded,
                                 safetensors_params=params, scrub=scrub)

