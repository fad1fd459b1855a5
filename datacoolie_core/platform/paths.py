"""Confinement: the relative parts metadata adds to a root never leave it (DESIGN contract 8).

A connection's ``base_path`` (and a state or SQL root) is a *root*: absolute or relative, the user
chose it. Metadata then adds relative parts below it (``schema_name``, ``table``, query references,
dataflow names in watermark folders). This module owns the two rules that keep those parts inside:

* :func:`name_problem`: a name used as one path component is a plain, printable file name:
  not ``.`` / ``..``, no ``/`` or ``\\``, no NUL or control character, at most
  :data:`MAX_NAME_BYTES` bytes of UTF-8 (the per-component limit of ext4, APFS, NTFS, XFS).
* :func:`confined_path` / :func:`ensure_confined`: a joined path, normalised and (at run time)
  with symlinks resolved, lies inside its resolved root.

Every name printed in a message goes through :func:`shown`, so a control character never reaches
a terminal raw.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

from datacoolie_core.errors import MetadataError, MetadataIssue

MAX_NAME_BYTES = 255
"""Longest name, in UTF-8 bytes, used as one path component (the usual filesystem limit)."""
SHOWN_CHARS = 80
"""Longest part of a name quoted in an error message; the rest is elided."""

_SEPARATORS = ("/", "\\")
_URI_PREFIX = ("://",)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Unicode category Cc, all 65 code points of it: one regex search instead of a category lookup per character."""


def shown(value: object) -> str:
    """``value`` quoted for a message: control characters escaped (``'a\\x00b'``), long text cut."""
    text = str(value)
    cut = text[:SHOWN_CHARS]
    quoted = repr(cut)  # repr escapes \x00, \n, \x1b ... and keeps printable Unicode as is
    return quoted + (f"... ({len(text.encode('utf-8', 'surrogatepass'))} bytes)" if len(cut) < len(text) else "")


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (``\\x1b``): safe for a terminal."""
    if not has_control(text):
        return text
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch) != "Cc" else f"\\x{ord(ch):02x}" for ch in text)


def has_control(text: str) -> bool:
    """Whether ``text`` holds a NUL, a C0/C1 control character or DEL (Unicode category Cc)."""
    return _CONTROL.search(text) is not None


_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def name_problem(name: str, *, component: bool = True) -> str | None:
    """Why ``name`` cannot be used as a name, or ``None`` when it can.

    Args:
        name: the name as written in the metadata.
        component: the name becomes one path component (table, schema, stage, dataflow name):
            separators, ``.`` and ``..`` are also refused. Display-only names (connection names)
            pass ``False`` and get the control-character and length rules only.
    """
    if has_control(name):
        return "it contains a control character (NUL, newline, escape ...); use printable characters"
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        return f"it is {size} bytes long; names are at most {MAX_NAME_BYTES} bytes (one file name)"
    if not component:
        return None
    if any(sep in name for sep in _SEPARATORS):
        return "it contains a path separator ('/' or '\\'); a name is one folder, never a path"
    if name.strip() in (".", ".."):
        return "'.' and '..' name no folder of their own; use a real name"
    if escape := _PERCENT_ESCAPE.search(name):
        # object stores and file:// URLs decode it (%2e%2e became '..', the lake root) and local paths
        # do not: one name would be two folders, so no storage may take it either way
        return (
            f"it contains the percent escape '{escape.group()}', which some storages decode and others do not; "
            "write the character itself (a name is used literally) or drop the '%'"
        )
    return None


class PathEscapeError(MetadataError):
    """A path built from metadata would leave its root (``..``, a separator, or a symlink out).

    Terminal: the metadata (or the symlink) must change. Reported at the JSON path of the name
    that built the path when one is known.
    """

    def __init__(self, detail: str, *, path: str = "$", subject: str | None = None) -> None:
        self.detail = detail
        self.json_path = path
        self.subject = subject
        super().__init__([MetadataIssue(path=path, message=detail, subject=subject)])

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_path_escape, (self.detail, self.json_path, self.subject))


def _rebuild_path_escape(detail: str, path: str, subject: str | None) -> PathEscapeError:
    return PathEscapeError(detail, path=path, subject=subject)


def is_remote(root: str) -> bool:
    """Whether ``root`` is a URI (``s3://``, ``abfss://``): no local symlinks to resolve there."""
    return any(marker in root for marker in _URI_PREFIX)


def remote_key(url: str) -> str:
    """An object-store URL as its store resolves it, for lexical confinement.

    Percent-escapes are decoded first: URL parsers (the ``url`` crate under delta-rs and Polars)
    read ``%2e%2e`` as ``..``. Then ``\\`` becomes ``/`` and ``.``/``..`` segments are applied
    below ``scheme://``, so ``s3://bucket/lake/%2E%2E/x`` is ``s3://bucket/x`` and a climb above
    the bucket stays visible as a leading ``..``.
    """
    scheme, _, rest = url.partition("://")
    text = unquote(rest).replace("\\", "/")
    return f"{scheme.lower()}://{posixpath.normpath(text) if text else '.'}"


def confined_path(root: str, *parts: str | None) -> str:
    """``root/part/...`` (empty parts skipped), refused when the normalised result leaves ``root``.

    Lexical: nothing is touched on disk, so it runs at ``validate`` time. Separators inside a part
    are allowed here (query-file references are relative paths); ``..`` that climbs above ``root``
    is not.

    Raises:
        PathEscapeError: the joined path is not ``root`` itself or below it.
    """
    kept = [p for p in parts if p]
    joined = posixpath.join(root, *(p.replace("\\", "/").lstrip("/") for p in kept))
    if is_remote(root):
        base, target = remote_key(root), remote_key(joined)
    else:
        base = posixpath.normpath(root.replace("\\", "/")) if root else "."
        target = posixpath.normpath(joined.replace("\\", "/"))
    if not _within(target, base):
        raise PathEscapeError(f"{shown('/'.join(kept))} leaves its root {shown(root)}; keep names inside the root")
    return joined


def ensure_confined(root: str, path: str, *, what: str) -> None:
    """Refuse ``path`` when, symlinks resolved, it lies outside ``root`` (symlinks resolved too).

    Run right before reading or writing: a symlink inside the root pointing elsewhere is refused.
    A path that does not exist yet is judged by its nearest existing ancestor. Remote URIs have
    no symlinks and are checked lexically only.

    Raises:
        PathEscapeError: ``path`` resolves outside ``root``.
    """
    if is_remote(root) or is_remote(path):
        if not _within(remote_key(path), remote_key(root)):
            raise PathEscapeError(f"the {what} {shown(path)} is outside its root {shown(root)}")
        return
    base = Path(os.path.realpath(root))
    resolved = Path(os.path.realpath(path))  # strict=False: missing tails are kept as written
    if resolved != base and not resolved.is_relative_to(base):
        raise PathEscapeError(
            f"the {what} {shown(path)} resolves to {shown(resolved)}, outside its root {shown(base)} "
            "(a symlink or '..'?); keep data inside the connection's base_path"
        )


def _within(target: str, base: str) -> bool:
    if "://" in base and target.partition("://")[2].startswith(".."):
        return False  # climbed above the bucket
    if base in (".", ""):
        return not (target == ".." or target.startswith(("../", "/")))
    return target == base or target.startswith(base.rstrip("/") + "/")
