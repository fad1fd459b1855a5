"""APIProvider: metadata and watermarks behind an HTTP API (DataCoolie P-12, ``APIProvider`` in 0.2.0).

The provider is given the workspace's root URL, ``https://host/prefix/workspaces/<workspace_id>``,
and reads, with the key in the ``X-API-Key`` header (argument ``api_key``, else the environment
variable ``DATACOOLIE_METADATA_API_KEY``):

* ``GET …/connections``, ``…/dataflows``, ``…/schema-hints``: paginated
  ``{"data": [...], "pagination": {"page": n, "total_pages": N}}`` (``page``/``page_size`` query
  parameters, ``page_size`` 200, at most 1000 pages; pages 2..N are fetched 4 at a time). The three lists form one metadata document,
  validated exactly like a metadata file (every error listed, with its JSON path).
* ``GET …/watermarks/<dataflow_id>`` -> ``{"current_value": "<text>"}``; 404 means no watermark yet.
* ``PUT …/watermarks/<dataflow_id>`` with ``{"current_value", "job_id", "dataflow_run_id"}``.

Requests answered 429/500/502/503/504 are retried ``max_retries`` (3) times, waiting
``Retry-After`` or ``backoff`` · 2^attempt seconds; timeout 30 s.

Unlike DataCoolie, an unreachable or failing API is an error, never "no watermark": a run that
cannot read its watermark stops (:class:`WatermarkError`) instead of reading everything again as a
first run. Watermark values are opaque text here; :class:`~datacoolie_core.watermark.manager.WatermarkManager`
merges them monotonically under :meth:`watermark_lock`. Locks and the commit journal live in the
local state root (``state_base_path``), as with files: runs that share a state root take turns.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from datacoolie_core.backoff import retry_after
from datacoolie_core.errors import DataCoolieError, MetadataError, MetadataIssue, WatermarkError
from datacoolie_core.metadata.file_provider import FileProvider
from datacoolie_core.metadata.selection import with_shared_schema_hints
from datacoolie_core.metadata.validation import validate_document
from datacoolie_core.redaction import mask, register_secret

API_KEY_VARIABLE = "DATACOOLIE_METADATA_API_KEY"
RETRIED = (429, 500, 502, 503, 504)
MAX_PAGES = 1000
PAGE_WORKERS = 4
"""Pages 2..N of a collection fetched at once."""
COLLECTIONS = {"connections": "connections", "dataflows": "dataflows", "schema_hints": "schema-hints"}
"""Document section -> endpoint."""


class APIProvider(FileProvider):
    """Serve connections, dataflows, schema hints and watermarks of one workspace of a metadata API.

    Args:
        url: the workspace root, ``https://host/prefix/workspaces/<workspace_id>``.
        state_base_path: the local state root (locks, commit journal under ``<root>/watermarks``).
        state_url: or a state database (``postgresql://…``) for the locks and the commit journal.
        api_key: sent as ``X-API-Key``; default ``$DATACOOLIE_METADATA_API_KEY``.

    Example:
        >>> provider = APIProvider("https://meta.example.com/api/workspaces/sales", state_base_path="state")
        >>> provider.get_dataflows(stage="landing2bronze")  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        state_base_path: str | os.PathLike[str] | None = None,
        state_url: str | None = None,
        api_key: str | None = None,
        page_size: int = 200,
        max_retries: int = 3,
        timeout: float = 30.0,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if state_base_path is None and state_url is None:
            raise DataCoolieError(
                f"metadata from an API ({url}) needs a state_base_path or a state_url (locks, journal)"
            )
        super().__init__(url, state_base_path=state_base_path, state_url=state_url)
        self.url = url.rstrip("/")
        self.config_path = None  # type: ignore[assignment]  # no file: wiring must not treat it as one
        self.watermark_base_path = None  # watermarks live in the API
        self.page_size, self.max_retries, self.backoff, self._sleep = page_size, max_retries, backoff, sleep
        key = api_key if api_key is not None else os.environ.get(API_KEY_VARIABLE)
        register_secret(key)
        headers = {"X-API-Key": key} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, follow_redirects=False)

    def initialize(self) -> None:
        """Fetch and validate the workspace's metadata (once).

        Raises:
            MetadataError: the API cannot be read, or the metadata has any error (all listed).
        """
        with self._lock:
            if self._document is not None:
                return
            raw = {section: self._collection(endpoint) for section, endpoint in COLLECTIONS.items()}
            document = validate_document(raw, file=self.url)
            document.raise_on_errors()
            self._connections = {c.name: c for c in document.connections}
            self._connections_by_id = {str(c.connection_id): c for c in document.connections}
            self._dataflows = {str(d.dataflow_id): d for d in document.dataflows}
            self._attached = {
                id_: with_shared_schema_hints(d, document.schema_hints) for id_, d in self._dataflows.items()
            }
            self._document = document

    def _collection(self, endpoint: str) -> list[Any]:
        """Every item of a paginated collection: page 1, then pages 2..N concurrently, kept in order."""
        first = self._send("GET", endpoint, params={"page": 1, "page_size": self.page_size})
        if first.status_code == 404 and endpoint == "schema-hints":
            return []  # an API without shared hints
        items, total = self._page(first, endpoint)
        with ThreadPoolExecutor(max_workers=PAGE_WORKERS) as pool:
            for more, _ in pool.map(lambda n: self._page(self._fetch_page(endpoint, n), endpoint),
                                    range(2, min(total, MAX_PAGES) + 1)):  # fmt: skip
                items += more
        return items

    def _fetch_page(self, endpoint: str, page: int) -> httpx.Response:
        return self._send("GET", endpoint, params={"page": page, "page_size": self.page_size})

    def _page(self, response: httpx.Response, endpoint: str) -> tuple[list[Any], int]:
        payload = self._json(response, endpoint, MetadataError)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise _metadata_error(f"GET {endpoint} did not return {{'data': [...]}}", self.url)
        pagination = payload.get("pagination")
        total = pagination.get("total_pages") if isinstance(pagination, dict) else None
        return data, total if isinstance(total, int) and not isinstance(total, bool) else 1

    # --- watermarks ---------------------------------------------------------------------------

    def watermark_path(self, dataflow_id: str) -> str:  # type: ignore[override]  # a URL, for messages
        return f"{self.url}/watermarks/{dataflow_id}"

    def watermark_location(self, dataflow_id: str) -> str:
        return self.watermark_path(dataflow_id)

    def watermark_folder(self, dataflow_id: str) -> str:
        return dataflow_id  # the local lock and journal folder

    def get_watermark(self, dataflow_id: str) -> str | None:
        """The stored text; ``None`` only when the API says there is none (404 or a null value)."""
        response = self._send("GET", f"watermarks/{dataflow_id}", error=WatermarkError)
        if response.status_code == 404:
            return None
        payload = self._json(response, f"watermarks/{dataflow_id}", WatermarkError)
        value = payload.get("current_value") if isinstance(payload, dict) else None
        if value is not None and not isinstance(value, str):
            raise WatermarkError(f"{self.watermark_path(dataflow_id)} returned a current_value that is not text")
        return value

    def update_watermark(
        self, dataflow_id: str, value: str, *, job_id: str | None = None, dataflow_run_id: str | None = None
    ) -> None:
        body = {"current_value": value, "job_id": job_id, "dataflow_run_id": dataflow_run_id}
        response = self._send("PUT", f"watermarks/{dataflow_id}", body=body, error=WatermarkError)
        self._json(response, f"watermarks/{dataflow_id}", WatermarkError, allow_empty=True)

    def delete_watermark(self, dataflow_id: str) -> None:
        raise WatermarkError(
            "the metadata API has no call to remove a watermark; remove it in the API's storage",
            dataflow_id=dataflow_id,
        )

    # --- HTTP ---------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        endpoint: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        error: type[Exception] = MetadataError,
    ) -> httpx.Response:
        url = f"{self.url}/{endpoint}"
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.request(method, url, params=params, json=body)
            except httpx.HTTPError as e:
                if attempt == self.max_retries:
                    raise _error(error, f"{method} {url} failed: {type(e).__name__}: {mask(str(e))}", self.url) from e
                self._sleep(self.backoff * 2**attempt)
                continue
            if response.status_code not in RETRIED or attempt == self.max_retries:
                return response
            header = response.headers.get("Retry-After")
            self._sleep(retry_after(header, attempt) if header else self.backoff * 2**attempt)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt

    def _json(
        self, response: httpx.Response, endpoint: str, error: type[Exception], *, allow_empty: bool = False
    ) -> Any:
        where = f"{response.request.method} {self.url}/{endpoint}"
        if response.status_code >= 400:
            excerpt = mask(response.text[:200].strip())
            raise _error(error, f"{where} returned HTTP {response.status_code}: {excerpt}", self.url)
        if allow_empty and not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise _error(error, f"{where} did not return JSON", self.url) from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> APIProvider:
        return self


def _error(kind: type[Exception], message: str, url: str) -> Exception:
    if kind is MetadataError:
        return _metadata_error(message, url)
    return kind(f"the metadata API failed (an outage is not 'no watermark'): {message}")


def _metadata_error(message: str, url: str) -> MetadataError:
    return MetadataError([MetadataIssue("$", message, file=url)], file=url)
