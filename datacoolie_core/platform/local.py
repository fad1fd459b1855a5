"""The local platform: the machine's filesystem and its environment (DataCoolie X-03, X-07).

It is the default secret provider of the driver (seed: ``secret_provider=None`` defaults to the
platform). Polars and delta-rs read and write local paths themselves, so the platform only owns
what has no better home: secrets.
"""

from __future__ import annotations

from datacoolie_core.secrets import EnvSecretProvider


class LocalPlatform:
    """Local files and environment-variable secrets.

    ``fetch_secret(source, key)`` reads ``os.environ[source + key]`` (``"env:<PREFIX>"`` reads
    ``PREFIX + key``) and raises :class:`~datacoolie_core.secrets.SecretError` when it is unset.
    """

    name = "local"

    def __init__(self) -> None:
        self._secrets = EnvSecretProvider()

    def fetch_secret(self, source: str, key: str) -> str:
        return self._secrets.fetch_secret(source, key)
