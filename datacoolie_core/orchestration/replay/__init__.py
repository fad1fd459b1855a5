"""Replay and backfill: chunk windows over ``[start, end)`` (the runner loops over them)."""

from datacoolie_core.orchestration.replay.windows import Chunk, chunk_key, chunk_windows

__all__ = ["Chunk", "chunk_key", "chunk_windows"]
