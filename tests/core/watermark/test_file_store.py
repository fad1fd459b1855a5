"""FileWatermarkStore on real files: layout, atomic replace, crash safety, locking."""

from __future__ import annotations

import os
import select
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark import FileWatermarkStore, deserialize_watermark, serialize_watermark

REPO_ROOT = Path(__file__).resolve().parents[3]
FOLDER = "bronze_orders_0b7e3c1a"


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def test_write_then_read(tmp_path: Path) -> None:
    store = FileWatermarkStore(tmp_path)
    store.write(FOLDER, '{"a":"größe"}')
    assert store.read(FOLDER) == '{"a":"größe"}'
    assert store.path_for(FOLDER) == tmp_path / FOLDER / "watermark_value.json"
    assert store.path_for(FOLDER).read_bytes() == '{"a":"größe"}'.encode()


def test_overwrite_leaves_no_temp_files_and_keeps_mode(tmp_path: Path) -> None:
    store = FileWatermarkStore(tmp_path)
    store.write(FOLDER, "one")
    assert stat.S_IMODE(store.path_for(FOLDER).stat().st_mode) == 0o644  # not mkstemp's 0600
    store.path_for(FOLDER).chmod(0o640)
    store.write(FOLDER, "two")
    assert store.read(FOLDER) == "two"
    assert stat.S_IMODE(store.path_for(FOLDER).stat().st_mode) == 0o640
    assert sorted(p.name for p in (tmp_path / FOLDER).iterdir()) == ["watermark_value.json"]


def test_missing_file_reads_none(tmp_path: Path) -> None:
    store = FileWatermarkStore(tmp_path / "not-created-yet")
    assert store.read(FOLDER) is None


def test_relative_root_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = FileWatermarkStore("wm")
    monkeypatch.chdir("/")
    store.write(FOLDER, "x")
    assert (tmp_path / "wm" / FOLDER / "watermark_value.json").read_text() == "x"


@pytest.mark.parametrize(
    "folder",
    ["", ".", "..", "a/b", "/abs", "a\\b", "x..y", "../escape", "nul\0byte"],
    ids=["empty", "dot", "dotdot", "slash", "absolute", "backslash", "inner-dotdot", "escape", "nul"],
)
def test_bad_folder_names_rejected(tmp_path: Path, folder: str) -> None:
    store = FileWatermarkStore(tmp_path)
    with pytest.raises(ValueError, match=r"^Invalid watermark folder"):
        store.read(folder)
    with pytest.raises(ValueError, match=r"^Invalid watermark folder"):
        store.write(folder, "{}")
    with pytest.raises(ValueError, match=r"^Invalid watermark folder"), store.lock(folder):
        pass


def test_unreadable_path_raises_with_path(tmp_path: Path) -> None:
    store = FileWatermarkStore(tmp_path)
    store.path_for(FOLDER).mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(WatermarkError, match=r"^Cannot read watermark: .*\(file .*watermark_value\.json\)$"):
        store.read(FOLDER)


def test_failed_write_raises_and_removes_temp_file(tmp_path: Path) -> None:
    store = FileWatermarkStore(tmp_path)
    target = store.path_for(FOLDER)
    target.mkdir(parents=True)
    (target / "keep").write_text("")  # os.replace cannot replace a non-empty directory
    with pytest.raises(WatermarkError, match=r"^Cannot write watermark: ") as info:
        store.write(FOLDER, "{}")
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.path == str(target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["watermark_value.json"]


def test_non_utf8_file_is_corrupt(tmp_path: Path) -> None:
    store = FileWatermarkStore(tmp_path)
    store.write(FOLDER, "{}")
    store.path_for(FOLDER).write_bytes(b'{"a": "\xff"}')
    with pytest.raises(WatermarkError, match=r"^Watermark is corrupt: not UTF-8 text"):
        store.read(FOLDER)


CRASHING_WRITER = """
import os, sys
from datacoolie_core.watermark.file_store import FileWatermarkStore

store = FileWatermarkStore(sys.argv[1])
store.write(sys.argv[2], sys.argv[3])
# Simulate a kill after the temp file is written and fsynced but before the rename.
os.replace = lambda *args, **kwargs: os._exit(9)
store.write(sys.argv[2], sys.argv[4])
sys.exit(0)
"""


def test_crash_before_rename_keeps_old_value(tmp_path: Path) -> None:
    old = serialize_watermark({"changed_at": "2026-03-02T08:15:00", "id": 41})
    new = serialize_watermark({"changed_at": "2026-03-03T00:00:00", "id": 99})
    result = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(tmp_path), FOLDER, old, new],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 9, result.stderr

    store = FileWatermarkStore(tmp_path)
    assert store.read(FOLDER) == old
    assert deserialize_watermark(store.read(FOLDER)) == {"changed_at": "2026-03-02T08:15:00", "id": 41}
    # The orphaned temp file holds the complete new text: the crash really hit between the two steps.
    leftovers = list((tmp_path / FOLDER).glob(".watermark_value.*.tmp"))
    assert [p.read_text() for p in leftovers] == [new]
    # A leftover temp file does not get in the way of the next write.
    store.write(FOLDER, new)
    assert store.read(FOLDER) == new


def test_lock_excludes_threads(tmp_path: Path) -> None:
    stores = [FileWatermarkStore(tmp_path), FileWatermarkStore(tmp_path)]
    inside, overlaps = [0], [0]

    def worker(store: FileWatermarkStore) -> None:
        for _ in range(30):
            with store.lock(FOLDER):
                inside[0] += 1
                overlaps[0] += inside[0] > 1
                time.sleep(0.0005)
                inside[0] -= 1

    threads = [threading.Thread(target=worker, args=(stores[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps[0] == 0
    assert (tmp_path / FOLDER / ".watermark.lock").exists()


def test_one_thread_lock_per_lock_file_however_its_path_is_spelled(tmp_path: Path) -> None:
    # on NFS flock is emulated with per-process record locks: the thread lock alone keeps threads
    # apart, so two spellings of one state root (a symlink, a relative path) must share it
    from datacoolie_core.watermark.file_store import _thread_lock

    (tmp_path / "state").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "state")
    lock_file = tmp_path / "state" / "writer.lock"
    lock_file.touch()
    (tmp_path / "other.lock").touch()
    fds = [
        os.open(path, os.O_RDWR) for path in (lock_file, tmp_path / "alias" / "writer.lock", tmp_path / "other.lock")
    ]
    try:
        same, alias, other = (_thread_lock(fd) for fd in fds)
        assert same is alias
        assert same is not other
    finally:
        for fd in fds:
            os.close(fd)


LOCK_HOLDER = """
import sys, time
from datacoolie_core.watermark.file_store import FileWatermarkStore

with FileWatermarkStore(sys.argv[1]).lock(sys.argv[2]):
    print("locked", flush=True)
    time.sleep(0.3)
    print("unlocking", flush=True)  # still inside the lock
"""


def test_lock_excludes_processes(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(tmp_path), FOLDER],
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        with FileWatermarkStore(tmp_path).lock(FOLDER):
            # The child prints "unlocking" before it lets go, so if the lock works that line is
            # already waiting; no timing assumption needed.
            ready, _, _ = select.select([child.stdout], [], [], 0)
            assert ready, "acquired the lock while the other process still held it"
            assert child.stdout.readline().strip() == "unlocking"
    finally:
        assert child.wait(timeout=30) == 0
