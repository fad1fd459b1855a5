"""WatermarkManager over real files: decode, never-backward save, atomicity under concurrency."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark import (
    FileWatermarkStore,
    WatermarkManager,
    WatermarkStorage,
    deserialize_watermark,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
DATAFLOW = "bronze_orders_5f1d"
BASE = datetime(2026, 3, 2, 8, 0)


class FileProvider:
    """The smallest WatermarkStorage: one FileWatermarkStore folder per dataflow id."""

    def __init__(self, root: Path) -> None:
        self.store = FileWatermarkStore(root)
        self.updates: list[tuple[str, str, str | None, str | None]] = []

    def get_watermark(self, dataflow_id: str) -> str | None:
        return self.store.read(dataflow_id)

    def update_watermark(
        self,
        dataflow_id: str,
        value: str,
        *,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> None:
        self.updates.append((dataflow_id, value, job_id, dataflow_run_id))
        self.store.write(dataflow_id, value)

    def watermark_lock(self, dataflow_id: str) -> contextlib.AbstractContextManager[None]:
        return self.store.lock(dataflow_id)


@pytest.fixture
def provider(tmp_path: Path) -> FileProvider:
    return FileProvider(tmp_path)


def test_provider_satisfies_protocol(provider: FileProvider) -> None:
    assert isinstance(provider, WatermarkStorage)


def test_get_missing_is_none(provider: FileProvider) -> None:
    assert WatermarkManager(provider).get_watermark(DATAFLOW) is None


def test_save_merges_and_never_moves_backward(provider: FileProvider) -> None:
    manager = WatermarkManager(provider)
    first = manager.save_watermark(DATAFLOW, {"changed_at": BASE, "id": 10}, job_id="job-1", dataflow_run_id="run-1")
    assert first == {"changed_at": BASE, "id": 10}
    assert provider.updates[-1][2:] == ("job-1", "run-1")

    second = manager.save_watermark(DATAFLOW, {"changed_at": BASE - timedelta(days=1), "id": 12, "new": "x"})
    assert second == {"changed_at": BASE, "id": 12, "new": "x"}
    assert manager.get_watermark(DATAFLOW) == second
    assert len(provider.updates) == 2


def test_save_without_change_does_not_write(provider: FileProvider) -> None:
    provider.store.write(DATAFLOW, '{ "id": 5 }')  # foreign formatting stays untouched
    result = WatermarkManager(provider).save_watermark(DATAFLOW, {"id": 3})
    assert result == {"id": 5}
    assert provider.updates == []
    assert provider.store.read(DATAFLOW) == '{ "id": 5 }'


def test_opaque_change_is_written_even_if_python_equal(provider: FileProvider) -> None:
    manager = WatermarkManager(provider)
    manager.save_watermark(DATAFLOW, {"flag": 1})
    assert manager.save_watermark(DATAFLOW, {"flag": True}) == {"flag": True}
    assert provider.store.read(DATAFLOW) == '{"flag":true}'


def test_datacoolie_017_string_upgraded_by_typed_candidate(provider: FileProvider) -> None:
    provider.store.write(DATAFLOW, '{"changed_at": "2026-03-02T08:15:00"}')
    manager = WatermarkManager(provider)
    assert manager.get_watermark(DATAFLOW) == {"changed_at": "2026-03-02T08:15:00"}
    assert manager.save_watermark(DATAFLOW, {"changed_at": BASE}) == {"changed_at": BASE}


@pytest.mark.parametrize("candidate", [{}, {"a": None}], ids=["empty", "all-none"])
def test_empty_candidate_writes_nothing(provider: FileProvider, candidate: dict[str, Any]) -> None:
    manager = WatermarkManager(provider)
    assert manager.save_watermark(DATAFLOW, candidate) == {}
    assert provider.store.read(DATAFLOW) is None
    manager.save_watermark(DATAFLOW, {"id": 1})
    assert manager.save_watermark(DATAFLOW, candidate) == {"id": 1}
    assert len(provider.updates) == 1


def test_unserializable_candidate_fails_before_writing(provider: FileProvider) -> None:
    manager = WatermarkManager(provider)
    manager.save_watermark(DATAFLOW, {"id": 1})
    before = provider.store.path_for(DATAFLOW).read_bytes()
    # "id" alone would merge fine; the bad column must stop the whole save.
    with pytest.raises(WatermarkError, match=rf"unsupported type .*\(dataflow {DATAFLOW}\)$"):
        manager.save_watermark(DATAFLOW, {"id": 2, "bad": (1, 2)})
    assert provider.store.path_for(DATAFLOW).read_bytes() == before
    assert len(provider.updates) == 1


def test_corrupt_file_names_dataflow(provider: FileProvider) -> None:
    provider.store.write(DATAFLOW, '{"id": ')
    manager = WatermarkManager(provider)
    with pytest.raises(WatermarkError, match=rf"^Watermark is corrupt: .*\(dataflow {DATAFLOW}\)$") as info:
        manager.get_watermark(DATAFLOW)
    assert info.value.dataflow_id == DATAFLOW
    with pytest.raises(WatermarkError, match="Watermark is corrupt"):
        manager.save_watermark(DATAFLOW, {"id": 1})
    assert provider.store.read(DATAFLOW) == '{"id": '  # never overwritten as if it were a first run


def test_unreadable_store_names_dataflow_and_path(provider: FileProvider) -> None:
    provider.store.path_for(DATAFLOW).mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(WatermarkError, match=rf"^Cannot read watermark: .*\(dataflow {DATAFLOW}, file ") as info:
        WatermarkManager(provider).get_watermark(DATAFLOW)
    assert info.value.path == str(provider.store.path_for(DATAFLOW))


def test_merge_mismatch_names_dataflow_and_column(provider: FileProvider) -> None:
    manager = WatermarkManager(provider)
    manager.save_watermark(DATAFLOW, {"amount": 1.5})
    with pytest.raises(
        WatermarkError, match=rf"column 'amount' .*stored float .*new Decimal .*\(dataflow {DATAFLOW}\)"
    ):
        manager.save_watermark(DATAFLOW, {"amount": Decimal(2)})


# -- concurrency -------------------------------------------------------------------------------


def expected_for(n: int) -> dict[str, Any]:
    return {
        "changed_at": BASE + timedelta(seconds=n),
        "id": n,
        "amount": Decimal(n) / 4,
        "tag": f"{n:05d}",
    }


class MonotonicReader(threading.Thread):
    """Polls the watermark; records parse errors and any column that goes backward."""

    def __init__(self, read: Callable[[], dict[str, Any] | None]) -> None:
        super().__init__(daemon=True)
        self.read, self.stop, self.problems, self.reads = read, threading.Event(), [], 0

    def run(self) -> None:
        last: dict[str, Any] = {}
        while not self.stop.is_set():
            try:
                current = self.read() or {}
            except Exception as e:  # any failure is a finding
                self.problems.append(repr(e))
                continue
            self.reads += 1
            # A column that vanishes (e.g. a half-written, empty file read as "first run") also
            # moved backward.
            for key, value in last.items():
                if key not in current:
                    self.problems.append(f"{key} vanished after {value!r}")
                elif current[key] < value:
                    self.problems.append(f"{key} went back from {value!r} to {current[key]!r}")
            last = current
            time.sleep(0.0005)


def test_concurrent_threads_keep_global_max(tmp_path: Path) -> None:
    threads_n, saves_n = 8, 50
    reader_manager = WatermarkManager(FileProvider(tmp_path))
    reader = MonotonicReader(lambda: reader_manager.get_watermark(DATAFLOW))
    start, errors = threading.Barrier(threads_n), []

    def worker(i: int) -> None:
        manager = WatermarkManager(FileProvider(tmp_path))  # separate manager and provider each
        start.wait()
        try:
            for j in range(saves_n):
                manager.save_watermark(DATAFLOW, expected_for(j * threads_n + i))
        except Exception as e:
            errors.append(e)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    reader.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    reader.stop.set()
    reader.join()

    assert errors == []
    assert reader.problems == []
    assert reader.reads > 0
    final = deserialize_watermark(FileWatermarkStore(tmp_path).read(DATAFLOW))
    assert final == expected_for(threads_n * saves_n - 1)


PROCESS_WRITER = """
import sys, time
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from datacoolie_core.watermark import FileWatermarkStore, WatermarkManager

root, dataflow, index, procs, saves, go = sys.argv[1:7]
index, procs, saves = int(index), int(procs), int(saves)
store = FileWatermarkStore(root)

class Provider:
    def get_watermark(self, dataflow_id):
        return store.read(dataflow_id)
    def update_watermark(self, dataflow_id, value, *, job_id=None, dataflow_run_id=None):
        store.write(dataflow_id, value)
    def watermark_lock(self, dataflow_id):
        return store.lock(dataflow_id)

manager = WatermarkManager(Provider())
base = datetime(2026, 3, 2, 8, 0)
while not Path(go).exists():
    time.sleep(0.001)
for j in range(saves):
    n = j * procs + index
    manager.save_watermark(dataflow, {"changed_at": base + timedelta(seconds=n), "id": n,
                                      "amount": Decimal(n) / 4, "tag": f"{n:05d}"})
"""


def test_concurrent_processes_keep_global_max(tmp_path: Path) -> None:
    procs_n, saves_n = 2, 80
    root, go = tmp_path / "wm", tmp_path / "go"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                PROCESS_WRITER,
                str(root),
                DATAFLOW,
                str(i),
                str(procs_n),
                str(saves_n),
                str(go),
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(procs_n)
    ]
    reader_manager = WatermarkManager(FileProvider(root))
    reader = MonotonicReader(lambda: reader_manager.get_watermark(DATAFLOW))
    reader.start()
    go.touch()
    try:
        results = [(child.wait(timeout=60), child.stderr.read() if child.stderr else "") for child in children]
    finally:
        reader.stop.set()
        reader.join()
    assert [rc for rc, _ in results] == [0] * procs_n, [err for _, err in results]
    assert reader.problems == []
    final = deserialize_watermark(FileWatermarkStore(root).read(DATAFLOW))
    assert final == expected_for(procs_n * saves_n - 1)
