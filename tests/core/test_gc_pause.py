"""The cyclic collector is paused only for the block, and its previous state always comes back."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from datacoolie_core.gc_pause import cyclic_gc_paused
from datacoolie_core.metadata.loader import load_document


def test_paused_inside_enabled_after_also_on_error() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), cyclic_gc_paused():
        _ = 1 / 0
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_loading_a_document_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps({"connections": [], "dataflows": [{"name": "x", "stage": "s"}]}))
    document = load_document(path)
    assert document.issues  # the dataflow has no source or destination: reported, not raised
    assert gc.isenabled()
