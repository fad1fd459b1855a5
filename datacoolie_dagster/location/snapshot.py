"""One snapshot of the metadata per run: the parse its code location loaded, or a clear failure.

The code location parses the metadata file when it loads, and Dagster plans every run against that
load (its assets, jobs and partitions). But a run executes in other processes — the run worker and
the multiprocess executor's step processes — and each re-imports the code location: a new parse of
the file as it is *then*. Edit the file between load and run and, unchecked, a run would plan with
one version and write with another.

So the definitions carry the digest of the bytes they were parsed from as a tag of every op that
runs the driver (:data:`~datacoolie_dagster.constants.METADATA_DIGEST`). A run stores the ops of
the process that launched it in its job snapshot; before writing anything a step compares the
digest stored there with the digest of its own parse, and fails with "reload the code location"
when they differ. Inside one process there is one parse: a step runs the dataflows of its
definitions, never a second read of the file.

Metadata behind an API or in a database (a URL) has no bytes to digest: the digest is then that of
the parsed document (its connections, dataflows and schema hints, as canonical JSON), so an edited
row or API answer is caught the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from datacoolie_core import DataFlow, FileProvider
from datacoolie_core.api import ValidatedDocument, is_metadata_url, url_provider
from datacoolie_dagster.constants import FINAL_FAILURE, METADATA_DIGEST

StepContext = dg.OpExecutionContext | dg.AssetExecutionContext

METADATA_CHANGED = "metadata changed"
"""The :data:`FINAL_FAILURE` reason of a step refused by :func:`ensure_loaded_snapshot`."""


@dataclass(frozen=True)
class MetadataSnapshot:
    """The dataflows of one parse of the metadata file, and the digest of the bytes parsed."""

    path: str
    digest: str
    dataflows: list[DataFlow]

    @property
    def tags(self) -> dict[str, str]:
        """The op tags recording this snapshot in every run's job snapshot."""
        return {METADATA_DIGEST: self.digest}


def file_digest(path: str | os.PathLike[str]) -> str:
    """The sha256 (16 hex digits) of the file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def document_digest(document: ValidatedDocument) -> str:
    """The sha256 (16 hex digits) of a parsed document: its objects as canonical JSON."""
    parts = [[m.model_dump(mode="json") for m in objects] for objects in
             (document.connections, document.dataflows, document.schema_hints)]  # fmt: skip
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_snapshot(
    path: str | os.PathLike[str],
    *,
    stages: str | Sequence[str] | None = None,
    state_base_path: str | os.PathLike[str] | None = None,
) -> MetadataSnapshot:
    """Parse the metadata (a file, or an API or database URL) once and digest it.

    Raises:
        MetadataError: the metadata is invalid (every error listed) or cannot be read.
        RuntimeError: the file changed while it was read; loading again reads one version.
    """
    if is_metadata_url(path):
        return _url_snapshot(str(path), stages, state_base_path)
    try:
        before: str | None = file_digest(path)
    except OSError:
        before = None  # missing or unreadable: the provider's MetadataError names the file and the fix
    provider = FileProvider(path)
    provider.initialize()
    if file_digest(path) != before:
        raise RuntimeError(f"metadata file {os.fspath(path)} changed while it was read; reload the code location")
    assert before is not None  # the provider read the file, so it was readable before too
    return MetadataSnapshot(os.fspath(path), before, provider.get_dataflows(stage=stages))


def _url_snapshot(
    url: str, stages: str | Sequence[str] | None, state_base_path: str | os.PathLike[str] | None
) -> MetadataSnapshot:
    """One read of an API's or a database's metadata, digested as parsed (its ``path`` hides passwords)."""
    provider = url_provider(url, state_base_path)
    try:
        digest = document_digest(provider.document)
        return MetadataSnapshot(provider.url, digest, provider.get_dataflows(stage=stages))
    finally:
        provider.close()


def loaded_digest(context: StepContext) -> str | None:
    """The metadata digest of this step's op in the run's job snapshot (the launching process's parse).

    ``None`` for a run launched before digests were recorded. The job snapshot is Dagster's record of
    the definitions a run was planned with (``DagsterInstance.get_job_snapshot``, Dagster 1.13.27);
    its op tags are what the launching process built.
    """
    snapshot_id = context.run.job_snapshot_id
    if snapshot_id is None:
        return None
    op = context.instance.get_job_snapshot(snapshot_id).get_node_def_snap(context.op_def.name)
    return op.tags.get(METADATA_DIGEST)


def ensure_loaded_snapshot(context: StepContext, snapshot: MetadataSnapshot) -> None:
    """Fail the step, before it writes anything, when its parse is not the one the run was planned with.

    Raises:
        dg.Failure: "metadata file … changed since the code location loaded it: reload the code
            location", with :data:`FINAL_FAILURE` so the retry sensor does not re-launch the run
            (a re-launch would be planned with the same stale code location).
    """
    loaded = loaded_digest(context)
    if loaded is None or loaded == snapshot.digest:
        return
    raise dg.Failure(
        description=(
            f"{_what(snapshot.path)} changed since the code location loaded it (digest {loaded}, now "
            f"{snapshot.digest}): reload the code location, then launch the run again; nothing was written"
        ),
        metadata={FINAL_FAILURE: METADATA_CHANGED},
    )


def _what(path: str) -> str:
    """``metadata file <path>``, or ``metadata <url>`` for an API or a database."""
    return f"metadata {path}" if is_metadata_url(path) else f"metadata file {path}"
