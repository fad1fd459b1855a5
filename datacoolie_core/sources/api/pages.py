"""Pagination of API sources (DataCoolie S-26): none, offset, cursor and next_link, up to ``max_pages``.

* none (``pagination_type`` unset): one request.
* ``offset``: ``offset_param`` = 0, page_size, 2·page_size …, ``limit_param`` = ``page_size``; stops at
  the first page shorter than ``page_size``. With ``total_path`` (the total record count in the first
  response) the remaining pages are known and fetched concurrently (``offset_max_workers``, 4).
* ``cursor``: the value at ``cursor_path`` of each response goes into ``cursor_param`` of the next
  request; stops when it is missing or empty.
* ``next_link``: the URL at ``next_link_path`` is requested next (relative URLs resolve against the
  previous one); it must stay on the ``base_url``'s origin, so credentials never go elsewhere. With
  ``next_link_bound_mode`` ``opaque`` the link is followed as is; with ``repeat_query_bounds`` the
  pushed-down query bounds are added to it (a link carrying a different value for one is an error).

Records are found at ``data_path`` (a dot path): a list is the page's records, an object one record,
anything else none; without ``data_path`` the response itself is used the same way. Between pages
the reader waits ``rate_limit_delay`` seconds. Reaching ``max_pages`` with more pages left is logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import SourceConfigure

if TYPE_CHECKING:  # httpx is imported when an API is read, not with the reader registry
    from datacoolie_core.sources.api.client import ApiClient

_LOG = logging.getLogger("datacoolie.sources.api")


@dataclass
class Request:
    """One request of a read: method, URL, query parameters and JSON body."""

    method: str
    url: str
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    bound_params: dict[str, Any] = field(default_factory=dict)
    """The pushed-down query bounds (``repeat_query_bounds`` re-adds them to next links)."""


def fetch_records(client: ApiClient, request: Request, configure: SourceConfigure) -> tuple[list[Any], int]:
    """Every record of every page, and the number of pages requested."""
    records: list[Any] = []
    pages = 0
    for payload in _pages(client, request, configure):
        pages += 1
        records.extend(records_at(payload, configure.data_path))
    return records, pages


def _pages(client: ApiClient, request: Request, configure: SourceConfigure) -> Iterator[Any]:
    kind = configure.pagination_type
    if kind is None:
        yield client.send(request.method, request.url, params=request.params, body=request.body)
        return
    step = {"offset": _offset, "cursor": _cursor, "next_link": _next_link}[kind]
    yield from step(client, request, configure)


def _limited(configure: SourceConfigure, label: str) -> Iterator[int]:
    """Page numbers 0 .. max_pages-1, waiting ``rate_limit_delay`` between them."""
    for page in range(max(configure.max_pages, 1)):
        if page and configure.rate_limit_delay > 0:
            time.sleep(configure.rate_limit_delay)
        yield page
    _LOG.warning("%s: stopped after max_pages=%d pages; more pages may be left", label, configure.max_pages)


def _offset(client: ApiClient, request: Request, configure: SourceConfigure) -> Iterator[Any]:
    size = configure.page_size

    def page_at(offset: int) -> Any:
        params = request.params | {configure.offset_param: offset, configure.limit_param: size}
        return client.send(request.method, request.url, params=params, body=request.body)

    for page in _limited(configure, client.label):
        payload = page_at(page * size)
        yield payload
        total = _number(value_at(payload, configure.total_path)) if configure.total_path and page == 0 else None
        if total is not None:  # the first page told the total: fetch the rest concurrently, in order
            offsets = list(range(size, total, size))[: max(configure.max_pages - 1, 0)]
            with ThreadPoolExecutor(max_workers=max(configure.offset_max_workers, 1)) as pool:
                yield from pool.map(page_at, offsets)
            return
        if len(records_at(payload, configure.data_path)) < size:
            return


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value) if isinstance(value, int | float | str) else None
    except ValueError:
        return None


def _cursor(client: ApiClient, request: Request, configure: SourceConfigure) -> Iterator[Any]:
    params = dict(request.params)
    for _ in _limited(configure, client.label):
        payload = client.send(request.method, request.url, params=params, body=request.body)
        yield payload
        cursor = value_at(payload, configure.cursor_path)
        if cursor in (None, ""):
            return
        params = request.params | {configure.cursor_param: cursor}


def _next_link(client: ApiClient, request: Request, configure: SourceConfigure) -> Iterator[Any]:
    url, params = request.url, request.params
    for _ in _limited(configure, client.label):
        payload = client.send(request.method, url, params=params, body=request.body)
        yield payload
        link = value_at(payload, configure.next_link_path)
        if not isinstance(link, str) or not link:
            return
        url = _same_origin(urljoin(url, link), client.base_url, client.label)
        if configure.next_link_bound_mode == "repeat_query_bounds":
            url = _with_query(url, _repeat_bounds(url, request.bound_params, client.label))
        params = {}


def _same_origin(url: str, base_url: str, label: str) -> str:
    got, want = urlsplit(url), urlsplit(base_url)
    if (got.scheme, got.netloc) != (want.scheme, want.netloc):
        raise SourceError(
            f"{label}: the next link points to {got.scheme}://{got.netloc}, not the connection's origin "
            f"{want.scheme}://{want.netloc}; refusing to send credentials there"
        )
    return url


def _with_query(url: str, extra: Mapping[str, Any]) -> str:
    """``url`` with ``extra`` appended to its query string (httpx would replace the link's own query)."""
    if not extra:
        return url
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({k: str(v) for k, v in extra.items()})) if q)
    return urlunsplit(parts._replace(query=query))


def _repeat_bounds(url: str, bounds: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The bounds the link lacks; a link with a bound given twice or differently is an error."""
    present: dict[str, list[str]] = {}
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        present.setdefault(key, []).append(value)
    missing: dict[str, Any] = {}
    for name, value in bounds.items():
        seen = present.get(name)
        if seen is None:
            missing[name] = value
        elif len(seen) > 1 or seen[0] != str(value):
            raise SourceError(
                f"{label}: the next link carries query bound '{name}'={seen} but this read sent {value!r}; "
                "use next_link_bound_mode 'opaque' if the endpoint manages its bounds"
            )
    return missing


def records_at(payload: Any, data_path: str | None) -> list[Any]:
    """The records of one response: a list as is, an object as one record, anything else none."""
    found = value_at(payload, data_path) if data_path else payload
    if isinstance(found, list):
        return found
    return [found] if isinstance(found, dict) else []


def value_at(payload: Any, path: str | None) -> Any:
    """The value at dot path ``path`` (``None`` when any step is missing)."""
    node = payload
    for part in (path or "").split("."):
        if not part:
            continue
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
