"""A real local HTTP server for API source and API metadata provider tests (standard library, one thread).

Data endpoints serve ``state.records`` (dicts with ``updated_at`` ISO text), filtered by the query
parameters ``since`` (``>=``) and ``until`` (``<``) on ``updated_at`` (also read from a JSON body),
sorted by ``id``, and paginated one way per path:

* ``/plain/orders``: a bare JSON list, no pagination.
* ``/offset/orders``: ``offset`` / ``limit`` -> ``{"data": {"items": [...]}}``.
* ``/cursor/orders``: ``cursor`` (an index) -> ``{"items": [...], "meta": {"next": "<index>"|null}}``.
* ``/link/orders``: ``page`` -> ``{"results": [...], "next": "/link/orders?page=N"}`` (2 per page);
  ``state.link_keeps_query`` adds the first request's query to the links; ``state.foreign_link`` points
  the link at another origin.

``state.auth`` requires one auth kind on data endpoints; ``/token`` is an OAuth2 client-credentials
token endpoint. ``state.rate_limited`` answers that many requests with 429 + ``Retry-After``
first; ``state.outage`` answers everything with 503. The metadata provider API lives under
``/workspaces/<ws>/`` (connections, dataflows, schema-hints, watermarks/<id>). Every request is
recorded in ``state.requests``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

TOKEN_CLIENT = ("client-one", "client-secret-value-42")
BEARER = "bearer-token-value-42"
API_KEY = "api-key-value-42"
BASIC = ("alice", "basic-password-42")


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class State:
    records: list[dict[str, Any]] = field(default_factory=list)
    auth: str | None = None
    rate_limited: int = 0
    retry_after: str = "0"
    outage: bool = False
    failing: str | None = None
    """A path prefix answered 503 (an outage of one part of the API)."""
    link_keeps_query: bool = False
    link_rewrites: dict[str, str] = field(default_factory=dict)
    """Query values the next links carry instead of the request's (a server contradicting a bound)."""
    foreign_link: bool = False
    tokens_issued: int = 0
    token_lifetime: int = 3600
    requests: list[Seen] = field(default_factory=list)
    metadata: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    watermarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    page_size_seen: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def data_requests(self) -> list[Seen]:
        return [r for r in self.requests if r.path.endswith("/orders")]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def _handle(self) -> None:
        state = self.server.state
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = raw.decode()
        if raw and "json" in (self.headers.get("Content-Type") or ""):
            body = json.loads(raw)
        with state.lock:
            state.requests.append(Seen(self.command, parts.path, query, dict(self.headers.items()), body))
            headers: dict[str, str] = {}
            if state.outage or (state.failing and parts.path.startswith(state.failing)):
                status, payload = 503, {"error": "down for maintenance"}
            elif state.rate_limited > 0 and parts.path != "/token":
                state.rate_limited -= 1
                status, payload, headers = 429, {"error": "slow down"}, {"Retry-After": state.retry_after}
            else:
                status, payload = _route(state, self.command, parts.path, query, body, self.headers)
        self._send(status, payload, headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


def _route(state: State, method: str, path: str, query: dict[str, str], body: Any, headers: Any) -> tuple[int, Any]:
    if path == "/token":
        return _token(state, body, headers)
    if path.startswith("/workspaces/"):
        return _metadata(state, method, path, query, body, headers)
    if not _authorized(state, headers):
        return 401, {"error": "unauthorized"}
    rows = _selected(state.records, query, body if isinstance(body, dict) else {})
    kind = path.split("/")[1]
    if kind == "echo":  # a careless server that quotes the credentials back in its error
        return 400, {"error": f"bad request with {headers.get('Authorization')} and {headers.get('X-Shop-Key')}"}
    if kind == "plain":
        return 200, rows
    if kind == "offset":
        start, size = int(query.get("offset", 0)), int(query.get("limit", 100))
        state.page_size_seen.append(size)
        return 200, {"data": {"items": rows[start : start + size]}, "meta": {"total": len(rows)}}
    if kind == "cursor":
        start = int(query.get("cursor", 0))
        following = start + 2 if start + 2 < len(rows) else None
        return 200, {"items": rows[start : start + 2], "meta": {"next": None if following is None else str(following)}}
    if kind == "link":
        page = int(query.get("page", 1))
        link = _link(state, path, page + 1, query) if page * 2 < len(rows) else None
        return 200, {"results": rows[(page - 1) * 2 : page * 2], "next": link}
    return 404, {"error": f"no route {path}"}


def _link(state: State, path: str, page: int, query: dict[str, str]) -> str:
    kept = {k: v for k, v in query.items() if k != "page"} | state.link_rewrites if state.link_keeps_query else {}
    keep = f"&{urlencode(kept)}" if kept else ""
    origin = "http://example.invalid" if state.foreign_link else ""
    return f"{origin}{path}?page={page}{keep}"


def _selected(records: list[dict[str, Any]], query: dict[str, str], body: dict[str, Any]) -> list[dict[str, Any]]:
    since = query.get("since") or body.get("since")
    until = query.get("until") or body.get("until")
    rows = [r for r in records if (not since or r["updated_at"] >= since) and (not until or r["updated_at"] < until)]
    return sorted(rows, key=lambda r: r["id"])


def _authorized(state: State, headers: Any) -> bool:
    got = headers.get("Authorization") or ""
    if state.auth is None:
        return True
    if state.auth == "bearer":
        return got == f"Bearer {BEARER}"
    if state.auth == "api_key":
        return headers.get("X-Shop-Key") == API_KEY
    if state.auth == "basic":
        return got == "Basic " + base64.b64encode(f"{BASIC[0]}:{BASIC[1]}".encode()).decode()
    if state.auth == "oauth2":
        return got == f"Bearer oauth-token-{state.tokens_issued}"
    return False


def _token(state: State, body: Any, headers: Any) -> tuple[int, Any]:
    fields = body if isinstance(body, dict) else {k: v[-1] for k, v in parse_qs(body).items()}
    client = (fields.get("client_id"), fields.get("client_secret"))
    basic = headers.get("Authorization") or ""
    if basic.startswith("Basic "):
        user, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
        client = (user, secret)
    if client != TOKEN_CLIENT or fields.get("grant_type") != "client_credentials":
        return 401, {"error": "invalid_client"}
    state.tokens_issued += 1
    return 200, {"access_token": f"oauth-token-{state.tokens_issued}", "expires_in": state.token_lifetime}


def _metadata(state: State, method: str, path: str, query: dict[str, str], body: Any, headers: Any) -> tuple[int, Any]:
    if headers.get("X-API-Key") != API_KEY:
        return 401, {"error": "unauthorized"}
    parts = path.strip("/").split("/")  # workspaces, <ws>, <what>[, <id>]
    what = parts[2] if len(parts) > 2 else ""
    if what == "watermarks" and len(parts) == 4:
        if method == "PUT":
            state.watermarks[parts[3]] = body
            return 200, {"ok": True}
        stored = state.watermarks.get(parts[3])
        return (200, stored) if stored is not None else (404, {"error": "no watermark"})
    items = state.metadata.get(what)
    if items is None:
        return 404, {"error": f"no collection {what}"}
    page, size = int(query.get("page", 1)), int(query.get("page_size", 200))
    state.page_size_seen.append(size)
    total = max(1, -(-len(items) // size))
    return 200, {"data": items[(page - 1) * size : page * size], "pagination": {"page": page, "total_pages": total}}


@contextmanager
def serve(state: State | None = None) -> Iterator[tuple[str, State]]:
    """Start the server on a free port; yields ``(base_url, state)`` and stops it afterwards."""
    state = state or State()
    server = _Server(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def orders(count: int, *, day: int = 1, start_id: int = 1) -> list[dict[str, Any]]:
    """``count`` orders updated an hour apart on 2024-01-<day> (UTC, ISO text with ``Z``)."""
    return [
        {"id": start_id + i, "amount": 10.0 * (start_id + i), "updated_at": f"2024-01-{day:02d}T{i:02d}:00:00Z"}
        for i in range(count)
    ]
