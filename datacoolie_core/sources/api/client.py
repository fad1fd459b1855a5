"""HTTP for API sources (DataCoolie S-25, S-27): one httpx client per read, auth, 429 retries, clear errors.

Auth (``connection.configure.auth_type``):

* ``bearer``: ``Authorization: Bearer <auth_token>``.
* ``basic``: ``username`` / ``password``.
* ``api_key``: header ``api_key_header`` (default ``X-API-Key``) = ``api_key_value``.
* ``oauth2_client_credentials``: a token from ``token_url`` (``client_id``, ``client_secret``,
  ``scope``, ``token_request_extras``; ``token_auth_method`` ``client_secret_basic`` sends the client
  in a basic header, anything else in the body; ``token_request_body_format`` form or json). The token
  is cached per ``(token_url, client_id)`` until 30 s before it expires, across reads of the process.
  A 401 answered to a cached token fetches a new one and retries that request once.
* ``aws_sigv4`` is not supported (an error says so).

Every secret (inline or resolved, and every OAuth2 access token) is registered with
:mod:`datacoolie_core.redaction`, so no log line or error message shows it. Error messages name the
method and the URL without its query string.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from datacoolie_core.backoff import retry_after
from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.models.connection import Connection
from datacoolie_core.redaction import mask, register_secret
from datacoolie_core.secrets import register_connection_secrets

_LOG = logging.getLogger("datacoolie.sources.api")
DEFAULT_TIMEOUT = 30.0
TOKEN_MARGIN = 30.0
"""Seconds before expiry at which a cached OAuth2 token is fetched again."""
_BODY_EXCERPT = 300

Sleep = Callable[[float], None]


@dataclass(frozen=True)
class _Token:
    value: str
    expires_at: float


_tokens: dict[tuple[str, str], _Token] = {}
_tokens_lock = threading.Lock()


def _forget_token(connection: Connection) -> None:
    configure = connection.configure
    with _tokens_lock:
        _tokens.pop((configure.token_url or "", configure.client_id or ""), None)


def clear_token_cache() -> None:
    """Forget every cached OAuth2 token (tests; a rotated client secret)."""
    with _tokens_lock:
        _tokens.clear()


class ApiClient:
    """Sends the requests of one read: auth headers, timeout, 429 retries, HTTP errors as SourceError."""

    def __init__(self, connection: Connection, *, label: str, max_retries: int = 10, sleep: Sleep = time.sleep):
        register_connection_secrets(connection)
        self.connection = connection
        self.label = label
        self.max_retries = max_retries
        self._sleep = sleep
        configure = connection.configure
        self.base_url = (configure.base_url or "").rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise SourceError(
                f"{label}: connection '{connection.name}' needs configure.base_url (http:// or https://), "
                f"got '{configure.base_url or ''}'"
            )
        self._auth_kind = configure.auth_type
        if self._auth_kind == "aws_sigv4":
            raise SourceError(f"{label}: auth_type 'aws_sigv4' is not supported by this engine; use another auth type")
        if self._auth_kind and self.base_url.startswith("http://"):
            _LOG.warning("%s: credentials are sent over plain HTTP to %s; use https://", label, self.base_url)
        self._client = httpx.Client(
            timeout=configure.timeout if configure.timeout is not None else DEFAULT_TIMEOUT,
            headers=dict(configure.default_headers),
            auth=self._basic_auth(),
            follow_redirects=False,
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def url(self, endpoint: str | None) -> str:
        """``base_url`` + ``/`` + ``endpoint`` (either may carry the slash)."""
        return f"{self.base_url}/{endpoint.lstrip('/')}" if endpoint else self.base_url

    def send(self, method: str, url: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        """The JSON of one response; 429 retried, other HTTP errors raised as SourceError.

        A 401 with a cached OAuth2 token (revoked or rotated early) fetches a new token and tries once more.
        """
        response = self._rate_limited(method, url, params, body)
        if response.status_code == 401 and self._auth_kind == "oauth2_client_credentials":
            _forget_token(self.connection)
            response = self._rate_limited(method, url, params, body)
        if response.status_code >= 400:
            raise self._http_error(method, response)
        try:
            return response.json()
        except ValueError as e:
            raise SourceError(f"{self.label}: {method} {_where(response)} did not return JSON: {e}") from e

    def _rate_limited(self, method: str, url: str, params: dict[str, Any] | None, body: Any) -> httpx.Response:
        """The response, after up to ``max_retries`` waits on 429."""
        for attempt in range(self.max_retries + 1):
            response = self._request(method, url, params, body)
            if response.status_code != 429 or attempt == self.max_retries:
                break
            wait = retry_after(response.headers.get("Retry-After"), attempt)
            _LOG.info("%s: HTTP 429 from %s; retrying in %.1f s", self.label, _where(response), wait)
            self._sleep(wait)
        return response

    def _request(self, method: str, url: str, params: dict[str, Any] | None, body: Any) -> httpx.Response:
        try:
            return self._client.request(
                method.upper(),
                url,
                params=_query(params),
                json=body if body else None,
                headers=self._auth_headers(),
            )
        except httpx.TimeoutException as e:
            raise SourceConnectionError(f"{self.label}: {method} {_strip_query(url)} timed out: {mask(str(e))}") from e
        except httpx.HTTPError as e:
            raise SourceConnectionError(
                f"{self.label}: {method} {_strip_query(url)} failed: {type(e).__name__}: {mask(str(e))}"
            ) from e

    def _http_error(self, method: str, response: httpx.Response) -> SourceError:
        excerpt = mask(response.text[:_BODY_EXCERPT].strip())
        message = f"{self.label}: {method} {_where(response)} returned HTTP {response.status_code}"
        message += f": {excerpt}" if excerpt else ""
        if response.status_code == 429:
            return SourceConnectionError(f"{message} (still rate limited after {self.max_retries} retries)")
        if response.status_code in (401, 403):
            return SourceError(f"{message}; check the connection's auth_type and credentials")
        if response.status_code >= 500:
            return SourceConnectionError(message)
        return SourceError(message)

    # --- auth ---------------------------------------------------------------------------------

    def _basic_auth(self) -> httpx.Auth | None:
        if self._auth_kind != "basic":
            return None
        c = self.connection.configure
        if not c.username or c.password is None:
            raise SourceError(f"{self.label}: auth_type 'basic' needs configure.username and configure.password")
        return httpx.BasicAuth(c.username, c.password)

    def _auth_headers(self) -> dict[str, str]:
        c = self.connection.configure
        if self._auth_kind == "bearer":
            if not c.auth_token:
                raise SourceError(f"{self.label}: auth_type 'bearer' needs configure.auth_token")
            return {"Authorization": f"Bearer {c.auth_token}"}
        if self._auth_kind == "api_key":
            if not c.api_key_value:
                raise SourceError(f"{self.label}: auth_type 'api_key' needs configure.api_key_value")
            return {c.api_key_header or "X-API-Key": c.api_key_value}
        if self._auth_kind == "oauth2_client_credentials":
            return {"Authorization": f"Bearer {self._oauth_token()}"}
        return {}

    def _oauth_token(self) -> str:
        c = self.connection.configure
        if not (c.token_url and c.client_id and c.client_secret):
            raise SourceError(
                f"{self.label}: auth_type 'oauth2_client_credentials' needs configure.token_url, client_id and "
                "client_secret"
            )
        key = (c.token_url, c.client_id)
        with _tokens_lock:
            cached = _tokens.get(key)
            if cached is not None and cached.expires_at - TOKEN_MARGIN > time.monotonic():
                return cached.value
            token = self._fetch_token()
            _tokens[key] = token
            return token.value

    def _fetch_token(self) -> _Token:
        c = self.connection.configure
        token_url, client_id, client_secret = c.token_url, c.client_id, c.client_secret
        if not (token_url and client_id and client_secret):  # checked by _oauth_token; for the type checker
            raise SourceError(f"{self.label}: OAuth2 needs token_url, client_id and client_secret")
        fields: dict[str, Any] = {"grant_type": "client_credentials", **c.token_request_extras}
        if c.scope:
            fields["scope"] = c.scope
        auth: httpx.Auth | Any = httpx.USE_CLIENT_DEFAULT
        if (c.token_auth_method or "").lower() == "client_secret_basic":
            auth = httpx.BasicAuth(client_id, client_secret)
        else:
            fields |= {"client_id": client_id, "client_secret": client_secret}
        as_json = c.token_request_body_format == "json"
        try:
            response = self._client.post(
                token_url, auth=auth, json=fields if as_json else None, data=None if as_json else fields
            )
        except httpx.HTTPError as e:
            raise SourceConnectionError(
                f"{self.label}: the OAuth2 token request to {_strip_query(token_url)} failed: {type(e).__name__}"
            ) from e
        if response.status_code >= 400:
            raise SourceError(
                f"{self.label}: the OAuth2 token endpoint {_where(response)} returned HTTP {response.status_code}; "
                "check client_id, client_secret and token_auth_method"
            )
        return _token_of(response, self.label)


def _token_of(response: httpx.Response, label: str) -> _Token:
    try:
        payload = response.json()
        value = payload["access_token"]
    except (ValueError, KeyError, TypeError):
        raise SourceError(f"{label}: the OAuth2 token endpoint {_where(response)} returned no access_token") from None
    register_secret(value)
    lifetime = payload.get("expires_in")
    seconds = float(lifetime) if isinstance(lifetime, int | float | str) and str(lifetime).strip() else 3600.0
    return _Token(str(value), time.monotonic() + seconds)


def _query(params: dict[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    return {k: _param_text(v) for k, v in params.items() if v is not None}


def _param_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _where(response: httpx.Response) -> str:
    return _strip_query(str(response.request.url))


def _strip_query(url: str) -> str:
    return url.split("?", 1)[0]
