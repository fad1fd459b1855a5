"""Connection secrets: where they come from, how they are resolved, how they are kept out of logs.

A connection lists secret-bearing ``configure`` fields in ``secrets_ref`` (``{source: [field, ...]}``);
the authored value of each listed field is the secret's *name*. :func:`resolve_connection_secrets`
returns a deep copy whose listed fields hold the resolved values (DataCoolie X-01 … X-04), so the
metadata snapshot keeps the names and only the execution copy carries secrets.

Routing (X-02): a source ``"<prefix>:<arg>"`` whose prefix is in :data:`SECRET_RESOLVERS` goes to that
resolver; any other source goes to the native provider (the platform) with the full source string.
The built-in ``env`` resolver reads ``os.environ[<arg><key>]``.

Resolved values are :class:`SecretValue` strings: real ``str`` objects (drivers use them as is) whose
``repr`` is ``'***'``, so a model repr or a ``%r`` in a message never shows them. Every resolved value
is also registered with :mod:`datacoolie_core.redaction`, because f-strings, JSON encoding and driver
errors see the content: every output of the process masks it from then on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from datacoolie_core.errors import TerminalError
from datacoolie_core.models.connection import SECRET_KEYS, Connection
from datacoolie_core.redaction import REDACTED as REDACTED  # re-exported: the mask text, defined once
from datacoolie_core.redaction import register_secrets


class SecretError(TerminalError):
    """A secret named by a connection's ``secrets_ref`` cannot be resolved.

    The message names the connection, the configure field, the secret source and the lookup it
    tried (an environment variable name, never a value). Retrying cannot help: the environment or
    the metadata must change.
    """

    def __init__(
        self,
        reason: str,
        *,
        connection: str | None = None,
        field: str | None = None,
        source: str | None = None,
        dataflow: str | None = None,
    ) -> None:
        self.reason = reason
        self.connection = connection
        self.field = field
        self.source = source
        self.dataflow = dataflow
        where = [
            f"dataflow '{dataflow}'" if dataflow else "",
            f"connection '{connection}'" if connection else "",
            f"configure.{field}" if field else "",
            f"secret source '{source}'" if source is not None else "",
        ]
        head = ", ".join(w for w in where if w)
        super().__init__(
            f"cannot resolve secret ({head}): {reason}; set the secret in its store or fix the connection's secrets_ref"
            if head
            else f"cannot resolve secret: {reason}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_secret_error, (self.reason, self.connection, self.field, self.source, self.dataflow))


def _rebuild_secret_error(
    reason: str, connection: str | None, field: str | None, source: str | None, dataflow: str | None
) -> SecretError:
    return SecretError(reason, connection=connection, field=field, source=source, dataflow=dataflow)


class SecretValue(str):
    """A resolved secret: a plain string to every consumer, ``'***'`` in reprs."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(REDACTED)


class SecretProvider(Protocol):
    """Looks a secret up in one store.

    ``fetch_secret(source, key)`` returns the secret stored under ``key`` in ``source`` (a store
    name, a prefix, or ``""``) and raises :class:`SecretError` when there is none. It never logs or
    echoes the value.
    """

    def fetch_secret(self, source: str, key: str) -> str: ...


def _from_environment(prefix: str, key: str) -> str:
    name = f"{prefix}{key}"
    if not name:
        raise SecretError("the secret name is empty")
    try:
        return os.environ[name]
    except KeyError:
        raise SecretError(f"environment variable '{name}' is not set") from None


SECRET_RESOLVERS: dict[str, Callable[[str, str], str]] = {"env": _from_environment}
"""Source prefixes routed to a resolver instead of the native provider: ``prefix -> (arg, key) -> value``."""


class EnvSecretProvider:
    """Secrets from environment variables.

    ``"env:<PREFIX>"`` reads ``PREFIX + key`` (``"env:"`` = no prefix); any other source, ``""``
    included, reads ``source + key`` (the form DataCoolie's local platform uses).
    """

    def fetch_secret(self, source: str, key: str) -> str:
        prefix, colon, arg = source.partition(":")
        if colon and prefix == "env":
            return _from_environment(arg, key)
        return _from_environment(source, key)


def fetch_routed(provider: SecretProvider, source: str, key: str) -> str:
    """Fetch ``key`` from ``source``: a registered prefix's resolver, else ``provider``."""
    prefix, colon, arg = source.partition(":")
    resolver = SECRET_RESOLVERS.get(prefix) if colon else None
    if resolver is not None:
        return resolver(arg, key)
    return provider.fetch_secret(source, key)


def resolve_connection_secrets(connection: Connection, provider: SecretProvider) -> Connection:
    """A deep copy of ``connection`` whose ``secrets_ref`` fields hold the resolved secrets.

    Idempotent: fields already holding a :class:`SecretValue` are left alone. The original is
    never modified. ``catalog`` / ``database`` are re-synced when they came from a resolved field.

    Raises:
        SecretError: a listed field is empty or its secret cannot be found (names the connection
            and field, never a value).
    """
    resolved = connection.model_copy(deep=True)
    for source, fields in (connection.secrets_ref or {}).items():
        for field in fields:
            _resolve_field(resolved, provider, source, field)
    register_connection_secrets(resolved)
    return resolved


def register_connection_secrets(connection: Connection) -> None:
    """Mask every secret ``connection`` holds (:func:`secret_values`) in every output from now on."""
    configure = connection.configure
    users = (configure.username, configure.client_id, configure.aws_access_key_id)
    register_secrets(secret_values(connection), users=users)


def _resolve_field(connection: Connection, provider: SecretProvider, source: str, field: str) -> None:
    configure = connection.configure
    name = getattr(configure, field, None)
    if isinstance(name, SecretValue):
        return
    if not isinstance(name, str) or not name.strip():
        raise SecretError("the field holds no secret name", connection=connection.name, field=field, source=source)
    try:
        value = fetch_routed(provider, source, name.strip())
    except SecretError as e:
        raise SecretError(e.reason, connection=connection.name, field=field, source=source) from None
    except Exception as e:  # a foreign store failure: the message keeps its type only, the cause keeps the rest
        raise SecretError(
            f"the secret store failed ({type(e).__name__})", connection=connection.name, field=field, source=source
        ) from e
    setattr(configure, field, SecretValue(value))
    # DataCoolie lifts catalog/database from configure at construction (M-13); keep them in sync.
    if field in ("catalog", "database") and getattr(connection, field) == name:
        setattr(connection, field, SecretValue(value))


def secret_values(connection: Connection) -> set[str]:
    """Every secret a connection holds: resolved :class:`SecretValue` fields plus inline secret keys.

    Inline values of well-known secret keys (``password``, ``token``, ...) count too, unless they are
    listed in ``secrets_ref`` and not yet resolved (then they are only secret *names*).
    """
    unresolved = {f for fields in (connection.secrets_ref or {}).values() for f in fields}
    configure = connection.configure
    found: set[str] = set()
    for key in [*type(configure).model_fields, *configure.extras]:
        value = getattr(configure, key, None)
        if isinstance(value, SecretValue) or (key in SECRET_KEYS and key not in unresolved and value):
            found.add(str(value))
    if configure.catalog_properties:  # Iceberg: credentials inside the pyiceberg catalog properties
        from datacoolie_core.platform.iceberg_catalog import catalog_secrets

        found |= catalog_secrets(configure.catalog_properties)
    return {v for v in found if v}
