"""``source.query`` references: classify by string shape, read ``.sql`` files confined to their root.

``source.query`` is one string (DataCoolie O-20, O-21). Inline SQL passes through unchanged; a
relative ``.sql`` path (``orders/incremental.sql``) is a *shorthand* file reference resolved against
the SQL roots; ``artifact:/sql/orders.sql`` names a file under the artifact root explicitly (any
file name, spaces included). Classification never touches storage.

A reference never escapes its root: ``..`` segments and absolute paths are rejected, and the final
path, symlinks resolved, must lie inside the resolved root.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from datacoolie_core.errors import MetadataError, MetadataIssue

QueryKind = Literal["inline", "shorthand", "artifact"]

ARTIFACT_PREFIX = "artifact:/"
_SHORTHAND = re.compile(r"^[\w.-]+(?:[/\\][\w.-]+)*\.sql$", re.IGNORECASE)
_FILE_LIKE = re.compile(r"^\S*\.sql(?:$|[?#])", re.IGNORECASE)
"""One token mentioning ``.sql`` at its end or before a query/fragment: meant as a file, not SQL."""
_ABSOLUTE = re.compile(r"^(?:/|\\\\|[A-Za-z]:[\\/])")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class QueryFileError(MetadataError):
    """A ``source.query`` file reference is malformed, escapes its root, or cannot be read.

    Terminal: the metadata or the SQL files must change. Reported at ``source.query`` of the
    dataflow when one is known.
    """

    def __init__(self, detail: str, *, reference: str | None = None, dataflow: str | None = None) -> None:
        self.detail = detail
        self.reference = reference
        self.dataflow = dataflow
        ref = f"query file reference '{reference}': " if reference else ""
        issue = MetadataIssue(
            path="source.query", message=ref + detail, subject=f"dataflow '{dataflow}'" if dataflow else None
        )
        super().__init__([issue])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_query_file_error, (self.detail, self.reference, self.dataflow))


def _rebuild_query_file_error(detail: str, reference: str | None, dataflow: str | None) -> QueryFileError:
    return QueryFileError(detail, reference=reference, dataflow=dataflow)


@dataclass(frozen=True)
class QueryRoots:
    """Where query files live: SQL roots (selected by folder name when several) and the artifact root."""

    sql_base_paths: tuple[Path, ...] = ()
    artifact_base_path: Path | None = None


def classify_query(query: str | None) -> QueryKind:
    """The kind of ``query``, by its shape alone.

    Raises:
        QueryFileError: ``query`` is meant as a ``.sql`` file but is absolute, URI-shaped or carries
            ``?`` / ``#`` (only root-relative references are allowed).
    """
    text = (query or "").strip()
    if not text or text.startswith(("--", "/*")):
        return "inline"
    if text.startswith(ARTIFACT_PREFIX):
        return "artifact"
    if _SHORTHAND.match(text):
        return "shorthand"
    if _FILE_LIKE.match(text) and (_ABSOLUTE.match(text) or _URI.match(text) or "?" in text or "#" in text):
        raise QueryFileError(
            "only root-relative .sql references are allowed (no absolute path, URI, '?' or '#'); "
            "write it relative to sql_base_path, or as artifact:/<path>",
            reference=text,
        )
    return "inline"


def resolve_query(query: str, roots: QueryRoots) -> str:
    """The SQL text of ``query``: inline SQL unchanged, a file reference's content.

    Raises:
        QueryFileError: malformed or escaping reference, no suitable root configured, file missing
            (the roots searched are listed) or empty.
    """
    kind = classify_query(query)
    if kind == "inline":
        return query
    text = query.strip()
    if kind == "artifact":
        if roots.artifact_base_path is None:
            raise QueryFileError("artifact:/ references need artifact_base_path; configure it", reference=text)
        parts = _relative_parts(text[len(ARTIFACT_PREFIX) :], text)
        return _read_confined(roots.artifact_base_path, parts, text, searched=[roots.artifact_base_path])
    root, parts = _shorthand_target(_relative_parts(text, text), roots, text)
    return _read_confined(root, parts, text, searched=roots.sql_base_paths or [root])


def check_reference(query: str) -> None:
    """Check a file reference's shape without touching storage (``validate`` time).

    Raises:
        QueryFileError: the reference is absolute, URI-shaped, names no file or climbs with ``..``.
    """
    kind = classify_query(query)
    text = query.strip()
    if kind == "artifact":
        _relative_parts(text[len(ARTIFACT_PREFIX) :], text)
    elif kind == "shorthand":
        _relative_parts(text, text)


def _relative_parts(path: str, reference: str) -> list[str]:
    """The segments of a root-relative path; absolute paths and ``..`` are rejected."""
    normalized = path.replace("\\", "/")
    if not normalized or _ABSOLUTE.match(path) or _URI.match(path) or normalized.startswith("/"):
        raise QueryFileError("the path must be relative to its root", reference=reference)
    parts = [p for p in PurePosixPath(normalized).parts if p != "."]
    if ".." in parts:
        raise QueryFileError("'..' segments are not allowed: a reference never leaves its root", reference=reference)
    if not parts:
        raise QueryFileError("the path names no file", reference=reference)
    return parts


def _shorthand_target(parts: list[str], roots: QueryRoots, reference: str) -> tuple[Path, list[str]]:
    """The root a shorthand reference selects, and the path below it."""
    sql_roots = roots.sql_base_paths
    if not sql_roots:
        if roots.artifact_base_path is None:
            raise QueryFileError(
                "no sql_base_path or artifact_base_path is configured; configure one to use .sql files",
                reference=reference,
            )
        return roots.artifact_base_path, parts
    if len(sql_roots) == 1:
        return _single_root_target(sql_roots[0], parts, reference)
    return _named_root_target(sql_roots, parts, reference)


def _single_root_target(root: Path, parts: list[str], reference: str) -> tuple[Path, list[str]]:
    """One root: ``orders.sql`` is root-relative; ``<root name>/orders.sql`` is the qualified form."""
    if len(parts) > 1 and parts[0] == _folder_name(root):
        plain, qualified = root.joinpath(*parts), root.joinpath(*parts[1:])
        if plain.is_file() and qualified.is_file():
            raise QueryFileError(
                f"ambiguous: both {plain} and {qualified} exist; rename one or reference it with artifact:/",
                reference=reference,
            )
        return (root, parts) if plain.is_file() else (root, parts[1:])
    return root, parts


def _named_root_target(roots: Sequence[Path], parts: list[str], reference: str) -> tuple[Path, list[str]]:
    """Several roots: the first segment must equal exactly one root's folder name."""
    names = [_folder_name(r) for r in roots]
    matches = [r for r, name in zip(roots, names, strict=True) if name == parts[0]]
    if len(parts) < 2 or not matches:
        raise QueryFileError(
            f"with several SQL roots the first path segment must name one of them ({', '.join(names)}); "
            f"write it as <root folder>/<path>",
            reference=reference,
        )
    if len(matches) > 1:
        raise QueryFileError(
            f"several SQL roots end in folder '{parts[0]}' ({', '.join(map(str, matches))}); give them distinct names",
            reference=reference,
        )
    return matches[0], parts[1:]


def _folder_name(root: Path) -> str:
    return root.resolve().name if root.name in ("", ".", "..") else root.name


def _read_confined(root: Path, parts: list[str], reference: str, *, searched: Sequence[Path]) -> str:
    """Read ``root/parts`` as UTF-8, refusing any path that resolves outside ``root``."""
    base = root.resolve()
    target = base.joinpath(*parts)
    resolved = target.resolve()
    if not resolved.is_relative_to(base):
        raise QueryFileError(
            f"it resolves outside its root {base} (symlink?); keep query files inside", reference=reference
        )
    if not resolved.is_file():
        listed = ", ".join(str(r) for r in searched)
        raise QueryFileError(
            f"file not found: {target} (SQL roots searched: {listed}); check the path", reference=reference
        )
    try:
        sql = resolved.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise QueryFileError(f"cannot read {target}: {e}", reference=reference) from e
    if not sql.strip():
        raise QueryFileError(f"file {target} is empty; put the query in it", reference=reference)
    return sql
