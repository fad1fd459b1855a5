"""Watermarks as files: ``<root>/<folder>/watermark_value.json`` (DataCoolie's layout).

The store moves opaque text; it never parses it (only the manager knows the encoding). Writes are
atomic (temp file + fsync + rename + directory fsync), so a crash leaves either the old or the new
value, never a torn file that would read as corrupt. :meth:`FileWatermarkStore.lock` serialises a
read-merge-write across threads and processes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from datacoolie_core.errors import WatermarkError
from datacoolie_core.watermark.serializer import STATE_FIX

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

WATERMARK_FILE_NAME = "watermark_value.json"
LOCK_FILE_NAME = ".watermark.lock"
LOCKS_FOLDER = ".locks"
"""Named locks (:meth:`FileWatermarkStore.named_lock`); a dot name no dataflow folder can take."""

# flock() only excludes other open file descriptions; the per-path thread lock makes the
# exclusion explicit inside one process and avoids piling threads onto the kernel lock.
_THREAD_LOCKS: dict[tuple[int, int], threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class FileWatermarkStore:
    """One watermark file per folder under ``root``.

    ``folder`` is a single path component chosen by the caller (e.g. ``bronze_orders_<uuid>``);
    anything that could escape ``root`` raises :class:`ValueError`.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        # Absolute now, so a later chdir cannot move the store.
        self.root = Path(os.path.abspath(root))

    def path_for(self, folder: str, file_name: str = WATERMARK_FILE_NAME) -> Path:
        """Path of the watermark file (or another state file) for ``folder``; it may not exist."""
        return self.root / _check_folder(folder) / _check_folder(file_name)

    def read(self, folder: str, file_name: str = WATERMARK_FILE_NAME) -> str | None:
        """Return the stored text, or ``None`` when the file does not exist."""
        path = self.path_for(folder, file_name)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise WatermarkError(f"Cannot read watermark: {e}", path=str(path)) from e
        except UnicodeDecodeError as e:
            raise WatermarkError(
                f"Watermark is corrupt: not UTF-8 text ({e}). It is NOT treated as a first run. Fix: {STATE_FIX}",
                path=str(path),
            ) from e

    def write(
        self,
        folder: str,
        text: str,
        file_name: str = WATERMARK_FILE_NAME,
        *,
        durable: bool = True,
        job_id: str | None = None,
        dataflow_run_id: str | None = None,
    ) -> None:
        """Atomically replace the stored text; raises :class:`WatermarkError` on failure.

        ``durable=False`` skips the fsyncs (readers still see the old or the new text): for records
        whose loss in a power cut the next run repairs anyway, such as a settled commit record.
        Files keep no audit trail: ``job_id`` / ``dataflow_run_id`` are not stored.
        """
        path = self.path_for(folder, file_name)
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            mode = _target_mode(path)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".watermark_value.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)  # mkstemp creates 0600; keep the usual mode
                handle.write(text.encode("utf-8"))
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            os.replace(tmp, path)
            tmp = None  # renamed: nothing left to clean up
            if durable:
                _fsync_directory(path.parent)
        except BaseException as e:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if isinstance(e, Exception):
                raise WatermarkError(f"Cannot write watermark: {e}", path=str(path)) from e
            raise  # KeyboardInterrupt / SystemExit pass through unchanged

    def delete(self, folder: str, file_name: str) -> None:
        """Remove a state file if it exists (durably)."""
        path = self.path_for(folder, file_name)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        except OSError as e:
            raise WatermarkError(f"Cannot delete state file: {e}", path=str(path)) from e
        _fsync_directory(path.parent)

    @contextlib.contextmanager
    def lock(self, folder: str) -> Iterator[None]:
        """Hold exclusive access to ``folder``'s watermark across threads and processes.

        Not re-entrant. The lock file ``<root>/<folder>/.watermark.lock`` is never deleted:
        removing it while another process waits on it would hand out two locks.
        """
        path = self.path_for(folder)
        if fcntl is None:  # pragma: no cover - non-POSIX
            raise WatermarkError("Cross-process watermark locking needs fcntl.flock (POSIX only)")
        with _flock(path.parent / LOCK_FILE_NAME):
            yield

    @contextlib.contextmanager
    def named_lock(self, name: str) -> Iterator[None]:
        """Hold the lock ``<root>/.locks/<name>.lock`` across threads and processes (not re-entrant).

        For exclusions wider than one watermark, e.g. one writer per destination table.
        """
        path = self.root / LOCKS_FOLDER / f"{_check_folder(name)}.lock"
        if fcntl is None:  # pragma: no cover - non-POSIX
            raise WatermarkError("Cross-process locking needs fcntl.flock (POSIX only)")
        with _flock(path):
            yield

    def location(self, folder: str, file_name: str = WATERMARK_FILE_NAME) -> str:
        """The record's file path, for messages."""
        return str(self.path_for(folder, file_name))

    def entries(self) -> Iterator[tuple[str, str, str]]:
        """Every record file as ``(folder, file_name, text)``, sorted; lock files and temp files left out.

        Raises:
            WatermarkError: a record cannot be read (damaged state is reported, not skipped).
        """
        if not self.root.is_dir():
            return
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for file in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
                text = self.read(folder.name, file.name)
                if text is not None:
                    yield folder.name, file.name, text

    def close(self) -> None:
        """Nothing to release: every file is closed after each call."""


def _check_folder(folder: str) -> str:
    if not isinstance(folder, str) or not folder or folder == "." or "\0" in folder:
        raise ValueError(f"Invalid watermark folder {folder!r}: must be a non-empty name")
    if "/" in folder or "\\" in folder or ".." in folder:
        raise ValueError(f"Invalid watermark folder {folder!r}: must not contain '/', '\\' or '..'")
    return folder


def _target_mode(path: Path) -> int:
    """Keep an existing file's permissions; new files get the conventional 0644."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o644


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable; filesystems that cannot fsync a directory are tolerated."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)


def _thread_lock(fd: int) -> threading.Lock:
    """The process's thread lock of the file open as ``fd``: one per file, however its path is spelled."""
    identity = os.fstat(fd)
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault((identity.st_dev, identity.st_ino), threading.Lock())


@contextlib.contextmanager
def _flock(lock_path: Path) -> Iterator[None]:
    """Hold ``lock_path`` against the other threads of this process, then against other processes.

    ``flock`` alone would do on a local filesystem (each ``open`` is its own lock holder), but on
    NFS Linux emulates it with POSIX record locks, which are per process: the thread lock keeps
    two threads apart there too.
    """
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise WatermarkError(f"Cannot open watermark lock: {e}", path=str(lock_path)) from e
    try:
        with _thread_lock(fd):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as e:  # e.g. ENOLCK on a filesystem without lock support
                raise WatermarkError(f"Cannot lock watermark: {e}", path=str(lock_path)) from e
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)  # closing also drops the flock if LOCK_UN was never reached
