"""Where a model's ``config.json`` comes from: a local path, the bundled registry, the HF cache or the Hub.

:func:`load_model_source` resolves a model reference in this order and stops at the first hit:

1. **local** -- a ``config.json`` file, or a model directory holding one.  A reference is read as a
   path only when that path exists, or when it is written like one (starts with ``/``, ``./``,
   ``../`` or ``~``, or ends in ``.json``); a path-like reference that does not exist is a
   :class:`~vmemplan.core.errors.BadInput`.
2. **bundled** -- ``registry/models/<org>--<name>.json`` (ids match case-insensitively, and
   ``aliases.yaml`` maps further ids onto those files).  Skipped when a revision is asked for,
   because a bundled copy belongs to no revision.
3. **hf-cache** -- a ``config.json`` already in the Hugging Face cache (``HF_HUB_CACHE`` /
   ``HF_HOME``), found without any network access.
4. **hub** -- ``config.json`` downloaded from the Hub into the HF cache (``HF_ENDPOINT``,
   ``HF_TOKEN``, ``HF_HUB_OFFLINE`` honoured), plus ``hf_quant_config.json`` where vLLM would read
   it, plus exact parameter counts per dtype from the safetensors headers.

Security: nothing from a model repository is ever executed.  ``auto_map`` entries are data, no
``trust_remote_code`` flag exists anywhere in vmemplan, and the only files fetched are
``config.json``, ``hf_quant_config.json`` and safetensors headers (plus, for sharded checkpoints,
the ``model.safetensors.index.json`` that ``get_safetensors_metadata`` reads to find the shards),
all into the Hugging Face cache.

This is the only vmemplan module that imports :mod:`huggingface_hub`, and it does so inside
functions, so importing this module stays cheap.  It is also the only place where
huggingface_hub exceptions turn into :class:`~vmemplan.core.errors.VmemplanError` subclasses; an access
token never appears in any message, note or exception text built here.

The package: :mod:`~vmemplan.sources.local` (the ModelSource record, bounded JSON and safetensors
readers, local paths), :mod:`~vmemplan.sources.bundled` (the bundled registry),
:mod:`~vmemplan.sources.hub` (the HF cache and the Hub), :mod:`~vmemplan.sources.cache` (the
parse cache of registry YAML) and :mod:`~vmemplan.sources._io` (reading untrusted files and
printing untrusted text safely).  This module re-exports the public names.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from vmemplan.core.errors import BadInput, HubUnavailable
from vmemplan.sources.bundled import (
    _find_bundled,
    _load_bundled,
    bundled_aliases,
    default_models_dir,
    default_registry_dir,
    family_suggestions,
    list_bundled_models,
)
from vmemplan.sources.hub import (
    _CONNECT_TIMEOUT_S,
    _HUB_SPINNER_TEXT,
    _OFFLINE_HINT,
    HubUnreachable,
    _call_hub,
    _check_repo_id,
    _from_cache,
    _from_hub,
    _hub_logging_off,
    _hub_settings,
    _HubSettings,
    _probe,
    _Scrubber,
    _spinner,
    _with_deadline,
    hub_deadline_s,
)
from vmemplan.sources.local import EXTRA_CONFIG_FILES, ModelSource, SourceKind, _load_local, _looks_like_path
from vmemplan.sources.mistral_format import CONFIG_FORMATS

__all__ = [
    "EXTRA_CONFIG_FILES",
    "ModelSource",
    "SourceKind",
    "bundled_aliases",
    "default_models_dir",
    "default_registry_dir",
    "list_bundled_models",
    "load_model_source",
]

# --------------------------------------------------------------------------------------------
# entry point


def load_model_source(
    ref: str,
    *,
    revision: str | None = None,
    bundled_dir: Path | None = None,
    token: str | None = None,
    allow_hub: bool = True,
    progress: Callable[[str], AbstractContextManager[Any]] | None = None,
    config_format: str = "auto",
) -> ModelSource:
    """Resolve ``ref`` (a path or a Hub id) to its parsed config.json: local, bundled, HF cache, then Hub.

    ``config_format`` is vLLM's ``--config-format``: ``auto`` and ``mistral`` read a Mistral-format
    ``params.json`` where one is at hand (a local directory with consolidated*.safetensors, a
    bundled copy that ships one), ``hf`` always config.json; the HF cache and the Hub are read as
    config.json (a note says so for ``mistral``).

    ``revision`` pins a branch, tag or commit (and skips the bundled copy, which has none);
    ``token`` overrides ``HF_TOKEN`` and the stored login; ``allow_hub=False`` stops before the
    network; ``progress(text)`` is entered as a context manager around each network call.
    """
    ref, revision = _checked_ref(ref, revision)
    if config_format not in CONFIG_FORMATS:
        raise BadInput(f"--config-format {config_format!r} is not one of vLLM's", hint="use auto, hf or mistral")

    # 1. local path
    if _looks_like_path(ref) or _exists(ref):
        return _load_local(ref, revision, config_format)

    repo_id = ref.rstrip("/")
    models_dir = bundled_dir if bundled_dir is not None else default_models_dir()

    # 2. bundled registry
    bundled, skipped_bundled = _bundled(repo_id, revision, models_dir, config_format)
    if bundled is not None:
        return bundled
    hub_note = ("--config-format mistral: vmemplan reads params.json from local directories and bundled copies "
                "only; this model is planned from its config.json") if config_format == "mistral" else None

    _check_repo_id(repo_id)
    settings = _settings_for(repo_id)

    # 3. Hugging Face cache (no network)
    scrub = _Scrubber(token)
    cached = _call_hub(
        lambda: _from_cache(repo_id, revision, settings),
        repo_id=repo_id,
        revision=revision,
        filename="config.json",
        settings=settings,
        scrub=scrub,
    )
    if cached is not None:
        return _with_skip_note(_with_skip_note(cached, hub_note), skipped_bundled)

    # 4. the Hub
    hints = _HubHints.for_repo(repo_id, models_dir, skipped_bundled)
    _refuse_without_hub(repo_id, revision, skipped_bundled, allow_hub, settings, hints)
    fetched = _fetch_from_hub(repo_id, revision, token, settings, progress, hints)
    return _with_skip_note(_with_skip_note(fetched, hub_note), skipped_bundled)


def _checked_ref(ref: str, revision: str | None) -> tuple[str, str | None]:
    """``ref`` and ``revision`` stripped (an empty revision is none); an empty or overlong ``ref`` is refused."""
    ref = ref.strip() if isinstance(ref, str) else ref
    if not isinstance(ref, str) or not ref:
        raise BadInput("no model given", hint="pass a config.json, a model directory or a Hugging Face id")
    revision = revision.strip() or None if isinstance(revision, str) else None

    if len(ref) > 4096:
        raise BadInput(f"the model reference is {len(ref):,} characters long",
                       hint="pass a config.json, a model directory, or a Hugging Face id such as org/name")
    return ref, revision


def _bundled(repo_id: str, revision: str | None, models_dir: Path,
             config_format: str = "auto") -> tuple[ModelSource | None, str | None]:
    """(the bundled copy of ``repo_id`` when no revision is asked for, else None; the note saying a
    bundled copy was skipped for the revision, else None)."""
    found = _find_bundled(repo_id, models_dir)
    if found is None:
        return None, None
    if revision is None:
        return _load_bundled(found[0], found[1], found[2], models_dir, config_format), None
    return None, (
        f"revision {revision} requested: skipped the bundled copy of {found[0].model_id}, which has no revision"
    )


def _settings_for(repo_id: str) -> _HubSettings:
    """The Hub settings; HubUnavailable when huggingface_hub is not installed."""
    try:
        return _hub_settings()
    except ImportError:
        raise HubUnavailable(
            f"{repo_id} is not bundled with vmemplan and huggingface_hub is not installed",
            hint="install huggingface_hub, or pass a local config.json",
        ) from None


def _with_skip_note(source: ModelSource, skipped_bundled: str | None) -> ModelSource:
    if skipped_bundled is None:
        return source
    return dataclasses.replace(source, notes=(skipped_bundled, *source.notes))


@dataclasses.dataclass(frozen=True)
class _HubHints:
    """What to suggest when the Hub cannot serve a model: a close bundled id, bundled models of its family."""

    typo: str | None
    family: list[str]
    did_you_mean: str
    alternatives: str
    offline_hint: str

    @classmethod
    def for_repo(cls, repo_id: str, models_dir: Path, skipped_bundled: str | None) -> _HubHints:
        typo, family = (None, []) if skipped_bundled else family_suggestions(repo_id, models_dir)
        did_you_mean = f"did you mean {typo}? " if typo else ""
        alternatives = (
            f"; bundled {_family_label(repo_id)} models that work offline: {', '.join(family)}" if family else ""
        )
        offline_hint = (
            did_you_mean + "set HF_HUB_OFFLINE=1 to skip the network, run once online, or pass a local config.json "
            "or model directory"
            + alternatives
        )
        return cls(typo, family, did_you_mean, alternatives, offline_hint)


def _refuse_without_hub(repo_id: str, revision: str | None, skipped_bundled: str | None, allow_hub: bool,
                        settings: _HubSettings, hints: _HubHints) -> None:
    """HubUnavailable when Hub access is off (``allow_hub=False``) or HF_HUB_OFFLINE is set."""
    if not allow_hub:
        where = (
            f"revision {revision} of {repo_id} is not in your Hugging Face cache"
            if skipped_bundled
            else f"{repo_id} is not bundled with vmemplan and not in your Hugging Face cache"
        )
        raise HubUnavailable(f"{where}, and Hub access is off",
                             hint=hints.did_you_mean + "pass a local config.json or model directory"
                             + hints.alternatives)
    if settings.offline:
        raise HubUnavailable(
            f"HF_HUB_OFFLINE is set, so vmemplan cannot fetch {repo_id} from the Hugging Face Hub",
            hint=(
                "a pinned revision is never served from the bundled copy and this one is not in your "
                "Hugging Face cache; drop --revision, run once online or pass a local config.json"
                if skipped_bundled
                else hints.did_you_mean + _OFFLINE_HINT + hints.alternatives
            ),
        )


def _fetch_from_hub(repo_id: str, revision: str | None, token: str | None, settings: _HubSettings,
                    progress: Callable[[str], AbstractContextManager[Any]] | None,
                    hints: _HubHints) -> ModelSource:
    """Download from the Hub under the deadline; a missing or unreachable model's error gets ``hints``."""
    deadline_s = hub_deadline_s()
    try:
        with _spinner(progress, _HUB_SPINNER_TEXT), _hub_logging_off():
            def fetch() -> ModelSource:
                _probe(settings, min(_CONNECT_TIMEOUT_S, deadline_s))  # DNS included, under the deadline
                return _from_hub(repo_id, revision, token, settings, None)

            fetched: ModelSource = _with_deadline(fetch, deadline_s, settings)
            return fetched
    except HubUnavailable as error:
        if error.message.startswith(f"model {repo_id} was not found") and (hints.typo or hints.family):
            raise HubUnavailable(error.message, hint=f"did you mean {hints.typo} (bundled)?" if hints.typo
                                 else "check the id" + hints.alternatives) from None
        if isinstance(error, HubUnreachable):
            raise HubUnavailable(error.message, hint=hints.offline_hint) from None
        raise


def _exists(ref: str) -> bool:
    """Whether ``ref`` names something on disk; a name too long for the file system, or one the
    OS refuses to examine, is not a path (it may still be a Hub id, checked next)."""
    try:
        return Path(ref).expanduser().exists()
    except (OSError, ValueError):
        return False


def _family_label(repo_id: str) -> str:
    org, _, name = repo_id.rpartition("/")
    match = re.match(r"[A-Za-z]+", name)
    return f"{org} {match.group(0)}" if match else org
