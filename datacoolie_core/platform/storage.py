"""Object storage: which paths are remote, and the options Polars and delta-rs need to reach them.

A file or lakehouse connection whose ``configure.base_path`` is an object-store URL (``s3://``,
``abfss://``, ``gs://`` ...) reaches it through ``storage_options``: the options of delta-rs and of
Polars' cloud readers (both built on the Rust ``object_store`` crate, so they take the same keys).
They come from the connection, over the engine's own (``PolarsEngine(storage_options=)``, X-08):

* ``configure.storage_options``: any option (endpoint, region, ``aws_allow_http`` ...);
* the connection's credential keys (:data:`CREDENTIAL_KEYS`, e.g. ``aws_secret_access_key``) at the
  top level of ``configure``, so ``secrets_ref`` can name them and they are resolved like any secret.

Preparing a dataflow binds each of its connections' options to the connection's ``base_path``
(:func:`bind_storage`); readers and writers then ask :func:`storage_options_for` with the path they
open, so the thin delta-rs and Polars wrappers take a path only, as for local tables. Every option
value under a secret-looking key is registered for redaction when it is bound.

Commits on S3 are made safe here (:func:`delta_storage_options`): delta-rs commits a version by
creating ``_delta_log/<version>.json`` only if it is absent, which S3 does with a conditional put
(``If-None-Match: *``). ``conditional_put=etag`` is set unless the connection sets it, and the
escape hatches that lose commits (``AWS_S3_ALLOW_UNSAFE_RENAME``) or no longer exist in the pinned
delta-rs (the DynamoDB locking provider) are refused.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from datacoolie_core.errors import TerminalError
from datacoolie_core.redaction import register_secrets

PROVIDERS: dict[str, str] = {
    "s3": "aws",
    "s3a": "aws",
    "abfss": "azure",
    "abfs": "azure",
    "az": "azure",
    "adl": "azure",
    "azure": "azure",
    "gs": "google",
    "gcs": "google",
}
"""URL scheme -> object-store provider (the prefix of its option keys)."""

CREDENTIAL_KEYS: dict[str, tuple[str, ...]] = {
    "aws": ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region", "aws_endpoint_url"),
    "azure": (
        "azure_storage_account_name",
        "azure_storage_account_key",
        "azure_storage_sas_token",
        "azure_storage_client_id",
        "azure_storage_client_secret",
        "azure_storage_tenant_id",
    ),
    "google": ("google_service_account", "google_service_account_key", "google_application_credentials"),
}
"""Top-level ``configure`` keys copied into the options of a connection on that provider."""

SECRET_OPTION_WORDS = ("secret", "key", "token", "password", "sas", "credential")
"""An option whose key holds one of these words is masked in every output once bound."""

UNSAFE_RENAME = "aws_s3_allow_unsafe_rename"
LOCKING_PROVIDER = "aws_s3_locking_provider"
CONDITIONAL_PUT = ("conditional_put", "aws_conditional_put")
_TRUE = ("1", "true", "yes", "on")


class StorageConfigError(TerminalError):
    """A connection's storage options would make commits unsafe, or name what the engine cannot use.

    Terminal: the connection's ``configure`` (or the environment) must change.
    """


def provider_of(path: str | None) -> str | None:
    """``"aws"`` / ``"azure"`` / ``"google"`` for an object-store URL, ``None`` for a local path."""
    if not path or "://" not in path:
        return None
    return PROVIDERS.get(urlsplit(path).scheme.lower())


def is_object_store(path: str | None) -> bool:
    """Whether ``path`` is an object-store URL this engine reads and writes."""
    return provider_of(path) is not None


def connection_storage_options(configure: Any) -> dict[str, str]:
    """The options a connection's ``configure`` gives its object store (``{}`` for a local base_path).

    ``configure.storage_options`` first, then the provider's credential keys found at the top of
    ``configure`` (resolved secrets included). Values are strings, as delta-rs and Polars want them.
    """
    provider = provider_of(getattr(configure, "base_path", None))
    if provider is None:
        return {}
    options = {str(k): _text(v) for k, v in (getattr(configure, "storage_options", None) or {}).items()}
    extras = getattr(configure, "extras", {}) or {}
    for key in CREDENTIAL_KEYS[provider]:
        value = getattr(configure, key, None) if key not in extras else extras[key]
        if value not in (None, ""):
            options[key] = _text(value)
    return options


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Bindings:
    """Object-store roots and their options, bound as dataflows are prepared (any thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.roots: dict[str, dict[str, str]] = {}
        self.defaults: dict[str, str] = {}
        """The engine's options (DataCoolie X-08): under every root's own, for every object-store path."""

    def bind(self, root: str, options: Mapping[str, str]) -> None:
        with self.lock:
            self.roots[_root_key(root)] = dict(options)

    def find(self, path: str) -> dict[str, str] | None:
        """The options of the longest bound root that ``path`` lies in."""
        key = _root_key(path)
        with self.lock:
            matches = [r for r in self.roots if key == r or key.startswith(r + "/")]
            if not matches and not self.defaults:
                return None
            return {**self.defaults, **(self.roots[max(matches, key=len)] if matches else {})}

    def clear(self) -> None:
        with self.lock:
            self.roots.clear()
            self.defaults = {}


_bindings = _Bindings()


def _root_key(path: str) -> str:
    scheme, _, rest = path.partition("://")
    return f"{scheme.lower()}://{rest.rstrip('/')}"


def bind_storage(connection: Any) -> None:
    """Make ``connection``'s storage options the ones every path under its ``base_path`` is opened with.

    A local connection binds nothing. Secret-looking option values are registered for redaction.

    Raises:
        StorageConfigError: the options disable the S3 commit check or name the removed DynamoDB lock.
    """
    configure = connection.configure
    base = configure.base_path
    if not is_object_store(base):
        return
    options = connection_storage_options(configure)
    check_commit_safety(options, where=f"connection '{connection.name}'")
    register_secrets(v for k, v in options.items() if any(w in k.lower() for w in SECRET_OPTION_WORDS))
    _bindings.bind(base, options)


def bind_storage_options(root: str, options: Mapping[str, str]) -> None:
    """Bind ``options`` to every path under ``root`` (for callers that hold options, not a connection)."""
    check_commit_safety(options, where=f"storage options of {root}")
    _bindings.bind(root, {str(k): _text(v) for k, v in options.items()})


def bind_default_storage_options(options: Mapping[str, str]) -> None:
    """Options for every object-store path, under each connection's own (``PolarsEngine(storage_options=)``)."""
    if options:
        check_commit_safety(options, where="the engine's storage_options")
        with _bindings.lock:
            _bindings.defaults = {str(k): _text(v) for k, v in options.items()}


def clear_storage_bindings() -> None:
    """Forget every binding (tests)."""
    _bindings.clear()


def storage_options_for(path: str) -> dict[str, str] | None:
    """The options to open ``path`` with: those bound to its root; ``None`` for a local path.

    An object-store path under no bound root gets ``{}``: delta-rs and Polars then read the
    standard environment variables (``AWS_ACCESS_KEY_ID`` ...) themselves.
    """
    if not is_object_store(path):
        return None
    return _bindings.find(path) or {}


def delta_storage_options(path: str) -> dict[str, str] | None:
    """:func:`storage_options_for` plus what makes a Delta commit on S3 safe (conditional put)."""
    options = storage_options_for(path)
    if options is None or provider_of(path) != "aws":
        return options
    lowered = {k.lower() for k in options}
    if not lowered & set(CONDITIONAL_PUT):
        options["conditional_put"] = "etag"
    return options


def check_commit_safety(options: Mapping[str, str], *, where: str) -> None:
    """Refuse options (or environment variables, which delta-rs also reads) under which two S3
    writers could overwrite each other's commit."""
    environment = {k.lower(): v for k, v in os.environ.items() if k.lower() in (UNSAFE_RENAME, LOCKING_PROVIDER)}
    lowered = {k.lower(): str(v).strip().lower() for k, v in {**environment, **options}.items()}
    if lowered.get(UNSAFE_RENAME) in _TRUE:
        raise StorageConfigError(
            f"{where}: AWS_S3_ALLOW_UNSAFE_RENAME lets two writers overwrite each other's Delta commit; "
            "remove it (commits use S3's conditional put, which needs no lock)"
        )
    if LOCKING_PROVIDER in lowered:
        raise StorageConfigError(
            f"{where}: AWS_S3_LOCKING_PROVIDER (the DynamoDB lock) is not supported by the pinned delta-rs, "
            "which commits with S3's conditional put instead; remove it (and DELTA_DYNAMO_TABLE_NAME)"
        )
    for key in CONDITIONAL_PUT:
        value = lowered.get(key)
        if value is not None and value in ("disabled", "none", "false", ""):
            raise StorageConfigError(
                f"{where}: {key}={options.get(key)!r} disables the check that keeps two S3 writers from "
                "overwriting each other's Delta commit; remove it or set it to 'etag'"
            )


def bind_from_environment(connection: Any) -> None:
    """Resolve ``connection``'s secrets from the environment and bind its storage options.

    For readers outside a run (sensors, checks, downstream reads in another process), which resolve
    secrets as a run on this host does. A local connection binds nothing.
    """
    if not is_object_store(connection.configure.base_path):
        return
    from datacoolie_core.secrets import EnvSecretProvider, resolve_connection_secrets  # the secrets layer on demand

    bind_storage(resolve_connection_secrets(connection, EnvSecretProvider()))


def table_uri(path: str) -> str:
    """``path`` as delta-rs opens it: an object-store URL as written, a local path made absolute."""
    return path if is_object_store(path) else os.path.abspath(path)
