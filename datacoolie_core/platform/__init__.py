"""Platforms: where the engine runs (local filesystem + environment secrets)."""

from datacoolie_core.platform.local import LocalPlatform

__all__ = ["LocalPlatform"]
