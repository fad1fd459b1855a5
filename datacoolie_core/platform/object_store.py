"""Listing and fetching objects of an object-store folder (``s3://``, ``abfss://``, ``gs://``), via obstore.

What the file reader needs beyond Polars' cloud readers: the objects of a folder with their size
and ``LastModified`` (the ``__file_modification_time`` watermark), one object's current state (was
it changed during the read?), and a local copy of an object for the formats whose readers open
files themselves (csv, json, avro, excel). obstore wraps the same Rust ``object_store`` crate as
delta-rs and Polars, so the connection's ``storage_options`` mean the same thing here; only the HTTP
client keys (``allow_http``, ``timeout`` ...) travel separately, as obstore wants them.

obstore is imported on first use: installing it is needed only by file sources on object storage
(``pip install 'datacoolie-dagster[object-store]'``).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from datacoolie_core.errors import SourceError
from datacoolie_core.platform.storage import provider_of

CLIENT_KEYS = frozenset(
    {
        "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type", "http1_only",
        "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle",
        "http2_max_frame_size", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate",
        "proxy_excludes", "randomize_addresses", "timeout", "user_agent",
    }
)  # fmt: skip
"""``object_store`` HTTP client keys (also accepted with the provider prefix, ``aws_allow_http``)."""
DELTA_ONLY_KEYS = frozenset({"aws_s3_locking_provider", "delta_dynamo_table_name", "aws_s3_allow_unsafe_rename"})


@dataclass(frozen=True)
class ObjectInfo:
    """One object: its URL, name (last path part), ``LastModified`` (UTC, microseconds) and size."""

    path: str
    name: str
    modified: datetime
    size: int


def list_objects(folder: str, extension: str, options: Mapping[str, str], *, recursive: bool) -> list[ObjectInfo]:
    """The objects under ``folder`` whose name ends in ``extension`` (case-insensitive).

    Like a local listing: names (and, recursively, folders) starting with ``.`` or ``_`` are skipped;
    not recursive unless asked. A folder holding no object is an error, as a missing local folder is.

    Raises:
        SourceError: the store cannot be reached or listed, or the folder is empty.
    """
    obstore = _obstore()
    root = folder.rstrip("/")
    store = _store(root + "/", options)
    try:
        if recursive:
            entries = [meta for batch in obstore.list(store) for meta in batch]
        else:
            entries = obstore.list_with_delimiter(store)["objects"]
    except Exception as e:  # obstore's errors: the message names the request, never the credentials
        raise SourceError(
            f"cannot list '{folder}': {type(e).__name__}: {e}; check the connection's storage_options"
        ) from e
    if not entries:
        raise SourceError(
            f"folder '{folder}' holds no object (or does not exist); fix base_path/schema_name/table, "
            "or land the files first"
        )
    found = []
    for meta in entries:
        relative = str(meta["path"])
        if any(part.startswith((".", "_")) for part in relative.split("/")):
            continue
        name = relative.rsplit("/", 1)[-1]
        if name.lower().endswith(extension):
            found.append(_info(f"{root}/{relative}", name, meta))
    return sorted(found, key=lambda f: (f.modified, f.path))


def head_object(url: str, options: Mapping[str, str]) -> ObjectInfo | None:
    """The object's current size and ``LastModified``; ``None`` when it is gone."""
    obstore = _obstore()
    folder, _, name = url.rpartition("/")
    try:
        meta = obstore.head(_store(folder + "/", options), name)
    except FileNotFoundError:
        return None
    return _info(url, name, meta)


def fetch_object(info: ObjectInfo, options: Mapping[str, str]) -> str:
    """A local copy of the object (kept for this process), for readers that open files themselves.

    The copy is named after the URL, ``LastModified`` and size, so a changed object is fetched again.
    """
    obstore = _obstore()
    digest = hashlib.sha256(f"{info.path}|{info.modified.isoformat()}|{info.size}".encode()).hexdigest()[:24]
    local = os.path.join(_cache_folder(), f"{digest}-{info.name}")
    if not os.path.exists(local):
        folder = info.path.rpartition("/")[0]
        data = obstore.get(_store(folder + "/", options), info.name).bytes()
        partial = f"{local}.{os.getpid()}.{threading.get_ident()}.part"
        with open(partial, "wb") as handle:
            handle.write(bytes(data))
        os.replace(partial, local)  # complete or absent: a concurrent reader never sees half a file
    return local


def _info(url: str, name: str, meta: Mapping[str, Any]) -> ObjectInfo:
    modified = meta["last_modified"]
    if modified.tzinfo is None:
        modified = modified.replace(tzinfo=UTC)
    return ObjectInfo(url, name, modified.astimezone(UTC), int(meta["size"]))


def store_options(url: str, options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(config, client_options)`` for obstore: client keys apart, delta-rs-only keys dropped."""
    provider = provider_of(url) or ""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        lowered = key.lower()
        bare = lowered.removeprefix(f"{provider}_")
        if lowered in DELTA_ONLY_KEYS:
            continue
        if bare in CLIENT_KEYS:
            client[bare] = value
        else:
            config[lowered] = value
    return config, client


def _store(url: str, options: Mapping[str, str]) -> Any:
    obstore = _obstore()
    config, client = store_options(url, options)
    try:
        return obstore.store.from_url(url, config=config or None, client_options=client or None)
    except Exception as e:
        raise SourceError(
            f"cannot open the object store at '{url}': {type(e).__name__}: {e}; check the connection's storage_options"
        ) from e


def _obstore() -> Any:
    try:
        import obstore
        import obstore.store
    except ImportError as e:
        raise SourceError(
            "file sources on object storage need obstore: pip install 'datacoolie-dagster[object-store]'"
        ) from e
    return obstore


_cache_lock = threading.Lock()
_cache: list[str] = []


def _cache_folder() -> str:
    with _cache_lock:
        if not _cache:
            folder = tempfile.mkdtemp(prefix="datacoolie-objects-")
            atexit.register(shutil.rmtree, folder, True)
            _cache.append(folder)
        return _cache[0]
