"""Platforms: where the engine runs (local filesystem + environment secrets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datacoolie_core.lazy import lazy_exports

if TYPE_CHECKING:
    from datacoolie_core.platform.local import LocalPlatform

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "LocalPlatform": "datacoolie_core.platform.local",
    },
)

__all__ = ["LocalPlatform"]
