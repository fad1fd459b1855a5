"""The dataflow context variable."""

from __future__ import annotations

import threading

import pytest

from datacoolie_core.logging import current_dataflow_id, dataflow_context


def fail_inside(dataflow_id: str) -> None:
    with dataflow_context(dataflow_id):
        assert current_dataflow_id.get() == dataflow_id
        raise ValueError("boom")


def test_the_context_is_restored_after_the_block_even_on_error() -> None:
    with pytest.raises(ValueError, match="boom"):
        fail_inside("df-1")
    assert current_dataflow_id.get() is None


def test_threads_do_not_share_the_context() -> None:
    seen: list[str | None] = []
    with dataflow_context("df-main"):
        worker = threading.Thread(target=lambda: seen.append(current_dataflow_id.get()))
        worker.start()
        worker.join()
    assert seen == [None]
