"""Exit codes and the error hierarchy.

Every expected failure is a :class:`VmemplanError` subclass that knows its exit code and,
where it can, a one-line hint.  The CLI turns one into a single ``error:`` line (plus a
``hint:`` line) on stderr; nothing else in vmemplan prints errors.  This module imports
nothing heavy so that every other module can use it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar

__all__ = [
    "ExitCode",
    "VmemplanError",
    "UsageError",
    "BadInput",
    "ModelConfigError",
    "UnsupportedArchitecture",
    "UnknownGpu",
    "BadLog",
    "RegistryInvalid",
    "HubUnavailable",
    "TargetNotMet",
]


class ExitCode(IntEnum):
    """The documented process exit codes (the README's "Exit codes" table lists the same)."""

    OK = 0
    BUG = 1  # an uncaught exception: never raised on purpose
    USAGE = 2  # a bad flag or flag value
    TARGET_NOT_MET = 3  # a plan was computed, but vLLM would not start or a target is not met
    BAD_INPUT = 4  # bad config, log, GPU or architecture
    BAD_REGISTRY = 5  # a registry file is invalid
    HUB_UNAVAILABLE = 6  # offline, gated, missing repo, network failure
    INTERRUPTED = 130


class VmemplanError(Exception):
    """An expected failure, reported to people as one line and a hint."""

    exit_code: ClassVar[ExitCode] = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(VmemplanError):
    """A flag value that vLLM itself would reject (util outside (0, 1], tp not dividing heads, ...)."""

    exit_code = ExitCode.USAGE


class BadInput(VmemplanError):
    """Input that cannot be used: a file that is not what it should be."""

    exit_code = ExitCode.BAD_INPUT


class ModelConfigError(BadInput):
    """A config.json that is malformed or lacks a key the laws need."""


class UnsupportedArchitecture(BadInput):
    """An ``architectures`` entry no adapter covers."""


class UnknownGpu(BadInput):
    """A ``--gpu`` id that is not in the registry."""


class BadLog(BadInput):
    """A file that is not a readable vLLM startup log."""


class RegistryInvalid(VmemplanError):
    """A registry file that does not validate."""

    exit_code = ExitCode.BAD_REGISTRY


class HubUnavailable(VmemplanError):
    """The Hugging Face Hub cannot give us the config: offline, gated, missing or unreachable."""

    exit_code = ExitCode.HUB_UNAVAILABLE


class TargetNotMet(VmemplanError):
    """A gate (``--min-concurrency`` and friends) that the computed plan does not meet."""

    exit_code = ExitCode.TARGET_NOT_MET
