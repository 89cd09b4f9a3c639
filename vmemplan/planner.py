"""Compatibility name for :func:`vmemplan.pipeline.plan_memory` (the pipeline composes a plan)."""

from __future__ import annotations

from vmemplan.pipeline import plan_memory

__all__ = ["plan_memory"]
