"""The API reader against a real local HTTP server: request shape, pagination, 429, auth, push-down, secrets."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import polars as pl
import pytest

from datacoolie_core.backoff import retry_after
from datacoolie_core.errors import SourceConnectionError, SourceError
from datacoolie_core.sources.api.bounds import format_value
from datacoolie_core.sources.api.client import clear_token_cache
from datacoolie_core.sources.base import ReadRange
from tests.core.sources.helpers import REFERENCE_TIME, make_source, read, read_ok
from tests.support.api_server import API_KEY, BASIC, BEARER, TOKEN_CLIENT, State, orders, serve

SECRETS = (API_KEY, BEARER, BASIC[1], TOKEN_CLIENT[1])


@pytest.fixture
def server() -> Iterator[tuple[str, State]]:
    clear_token_cache()
    with serve(State(records=orders(5))) as served:
        yield served
    clear_token_cache()


def api(base_url: str, connection_configure: dict[str, Any] | None = None, **source: Any) -> Any:
    connection = {"connection_type": "api", "configure": {"base_url": base_url, **(connection_configure or {})}}
    return make_source(connection, **source)


# --- request shape ----------------------------------------------------------------------------


def test_single_page_request_shape_and_union_schema(server: tuple[str, State]) -> None:
    base, state = server
    state.records.append({"id": 6, "updated_at": "2024-01-02T00:00:00Z", "note": "late"})  # no amount, a new key
    source = api(
        base + "/",
        {"default_headers": {"X-Team": "data"}, "timeout": 5},
        configure={"endpoint": "/plain/orders", "params": {"status": "open", "debug": True}},
    )

    result = read_ok(source)

    assert result.data.height == 6
    assert result.data.columns == ["id", "amount", "updated_at", "note"]
    assert result.data["note"].to_list() == [None] * 5 + ["late"]
    (seen,) = state.requests
    assert (seen.method, seen.path, seen.query) == ("GET", "/plain/orders", {"status": "open", "debug": "true"})
    assert seen.headers["X-Team"] == "data"
    assert result.runtime.source_action["url"] == f"{base}/plain/orders"


def test_post_sends_the_json_body(server: tuple[str, State]) -> None:
    base, state = server
    source = api(base, configure={"endpoint": "plain/orders", "method": "post", "body": {"since": "2024-01-01T03"}})

    assert read_ok(source).data["id"].to_list() == [4, 5]
    assert (state.requests[0].method, state.requests[0].body) == ("POST", {"since": "2024-01-01T03"})


def test_http_errors_are_source_errors(server: tuple[str, State]) -> None:
    base, state = server
    with pytest.raises(SourceError, match=r"GET http://127\.0\.0\.1:\d+/nowhere/orders returned HTTP 404: .*no route"):
        read(api(base, configure={"endpoint": "nowhere/orders"}))
    state.outage = True
    with pytest.raises(SourceConnectionError, match="returned HTTP 503"):
        read(api(base, configure={"endpoint": "plain/orders"}))


def test_a_refused_connection_is_a_connection_error() -> None:
    with serve() as (base, _):
        pass  # the port is closed now
    with pytest.raises(SourceConnectionError, match=r"GET http://127\.0\.0\.1:\d+/plain/orders failed: ConnectError"):
        read(api(base, configure={"endpoint": "plain/orders"}))


def test_no_records_skips_the_read(server: tuple[str, State]) -> None:
    base, state = server
    state.records.clear()
    assert read(api(base, configure={"endpoint": "plain/orders"})) is None


# --- pagination -------------------------------------------------------------------------------


def test_offset_pagination_stops_at_a_short_page(server: tuple[str, State]) -> None:
    base, state = server
    source = api(base, configure={"endpoint": "offset/orders", "pagination_type": "offset", "page_size": 2,
                                  "data_path": "data.items"})  # fmt: skip

    result = read_ok(source)

    assert result.data["id"].to_list() == [1, 2, 3, 4, 5]
    assert [(r.query["offset"], r.query["limit"]) for r in state.requests] == [("0", "2"), ("2", "2"), ("4", "2")]
    assert result.runtime.source_action["pages"] == 3


def test_cursor_pagination_follows_the_cursor(server: tuple[str, State]) -> None:
    base, state = server
    source = api(base, configure={"endpoint": "cursor/orders", "pagination_type": "cursor", "data_path": "items",
                                  "cursor_path": "meta.next", "cursor_param": "cursor", "params": {"k": "v"}})  # fmt: skip

    assert read_ok(source).data["id"].to_list() == [1, 2, 3, 4, 5]
    assert [r.query for r in state.requests] == [{"k": "v"}, {"k": "v", "cursor": "2"}, {"k": "v", "cursor": "4"}]


def test_next_link_pagination_drops_params_after_the_first_page(server: tuple[str, State]) -> None:
    base, state = server
    source = api(base, configure={"endpoint": "link/orders", "pagination_type": "next_link", "data_path": "results",
                                  "params": {"k": "v"}})  # fmt: skip

    assert read_ok(source).data["id"].to_list() == [1, 2, 3, 4, 5]
    assert [r.query for r in state.requests] == [{"k": "v"}, {"page": "2"}, {"page": "3"}]


def test_max_pages_caps_the_read(server: tuple[str, State], caplog: pytest.LogCaptureFixture) -> None:
    base, _ = server
    source = api(base, configure={"endpoint": "link/orders", "pagination_type": "next_link", "data_path": "results",
                                  "max_pages": 2})  # fmt: skip
    with caplog.at_level(logging.WARNING, "datacoolie.sources.api"):
        assert read_ok(source).data["id"].to_list() == [1, 2, 3, 4]
    assert "stopped after max_pages=2 pages" in caplog.text


def test_a_next_link_to_another_origin_is_refused(server: tuple[str, State]) -> None:
    base, state = server
    state.foreign_link = True
    source = api(base, {"auth_type": "bearer", "auth_token": BEARER},
                 configure={"endpoint": "link/orders", "pagination_type": "next_link", "data_path": "results"})  # fmt: skip
    with pytest.raises(SourceError, match=r"next link points to http://example\.invalid.*refusing to send credentials"):
        read(source)


# --- 429 ----------------------------------------------------------------------------------------


def test_429_is_retried_after_retry_after(server: tuple[str, State]) -> None:
    base, state = server
    state.rate_limited = 2
    assert read_ok(api(base, configure={"endpoint": "plain/orders"})).data.height == 5
    assert len(state.requests) == 3


def test_429_beyond_max_retries_fails(server: tuple[str, State]) -> None:
    base, state = server
    state.rate_limited = 5
    with pytest.raises(SourceConnectionError, match=r"HTTP 429.*still rate limited after 1 retries"):
        read(api(base, configure={"endpoint": "plain/orders", "max_retries": 1}))
    assert len(state.requests) == 2


def test_retry_after_reads_seconds_or_a_date_else_backs_off() -> None:
    assert retry_after("1", 0) == 1.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 3) == 0.0  # a date in the past: go now
    assert [retry_after(None, n) for n in (0, 1, 4, 5, 9)] == [1.0, 2.0, 16.0, 30.0, 30.0]


# --- auth ---------------------------------------------------------------------------------------

AUTHS = {
    "bearer": {"auth_type": "bearer", "auth_token": BEARER},
    "api_key": {"auth_type": "api_key", "api_key_header": "X-Shop-Key", "api_key_value": API_KEY},
    "basic": {"auth_type": "basic", "username": BASIC[0], "password": BASIC[1]},
    "oauth2": {"auth_type": "oauth2_client_credentials", "client_id": TOKEN_CLIENT[0],
               "client_secret": TOKEN_CLIENT[1], "scope": "orders.read"},
}  # fmt: skip


@pytest.mark.parametrize("kind", list(AUTHS))
def test_each_auth_kind_is_accepted_and_required(
    kind: str, server: tuple[str, State], caplog: pytest.LogCaptureFixture
) -> None:
    base, state = server
    state.auth = kind
    configure = AUTHS[kind] | ({"token_url": f"{base}/token"} if kind == "oauth2" else {})
    with caplog.at_level(logging.DEBUG):
        assert read_ok(api(base, configure, configure={"endpoint": "plain/orders"})).data.height == 5
        with pytest.raises(SourceError, match=r"HTTP 401.*check the connection's auth_type and credentials") as failed:
            read(api(base, configure={"endpoint": "plain/orders"}))  # no credentials
    assert "credentials are sent over plain HTTP" in caplog.text
    for secret in (*SECRETS, "oauth-token-1"):
        assert secret not in caplog.text
        assert secret not in str(failed.value)


def test_oauth2_token_is_cached_until_shortly_before_expiry(server: tuple[str, State]) -> None:
    base, state = server
    state.auth = "oauth2"
    configure = AUTHS["oauth2"] | {"token_url": f"{base}/token", "token_auth_method": "client_secret_basic",
                                   "token_request_body_format": "json", "token_request_extras": {"audience": "shop"}}  # fmt: skip
    source = api(base, configure, configure={"endpoint": "offset/orders", "pagination_type": "offset",
                                             "page_size": 2, "data_path": "data.items"})  # fmt: skip
    read_ok(source)
    read_ok(source)
    assert state.tokens_issued == 1  # one token for 6 requests over two reads
    (token_call,) = [r for r in state.requests if r.path == "/token"]
    assert token_call.body == {"grant_type": "client_credentials", "audience": "shop", "scope": "orders.read"}
    assert token_call.headers["Authorization"].startswith("Basic ")

    clear_token_cache()
    state.token_lifetime = 20  # inside the 30 s margin: every request needs a new one
    read_ok(source)
    read_ok(source)
    assert state.tokens_issued == 7  # one per request of the two reads (3 pages each)


def test_a_revoked_oauth2_token_is_replaced_once(server: tuple[str, State]) -> None:
    base, state = server
    state.auth = "oauth2"
    source = api(base, AUTHS["oauth2"] | {"token_url": f"{base}/token"}, configure={"endpoint": "plain/orders"})
    read_ok(source)
    state.tokens_issued += 1  # the server revoked token 1 before it expired

    assert read_ok(source).data.height == 5
    assert state.tokens_issued == 3
    assert [r.path for r in state.requests][-3:] == ["/plain/orders", "/token", "/plain/orders"]


def test_a_rejected_oauth2_client_names_the_fix_not_the_secret(server: tuple[str, State]) -> None:
    base, state = server
    state.auth = "oauth2"
    configure = AUTHS["oauth2"] | {"token_url": f"{base}/token", "client_secret": "wrong-secret-value-9"}
    with pytest.raises(SourceError, match=r"OAuth2 token endpoint .* returned HTTP 401; check client_id") as failed:
        read(api(base, configure, configure={"endpoint": "plain/orders"}))
    assert "wrong-secret-value-9" not in str(failed.value)


@pytest.mark.parametrize("kind", ["bearer", "api_key"])
def test_credentials_echoed_in_an_error_body_are_masked(kind: str, server: tuple[str, State]) -> None:
    base, state = server
    state.auth = kind
    with pytest.raises(SourceError, match=r"returned HTTP 400: .*bad request with") as failed:
        read(api(base, AUTHS[kind], configure={"endpoint": "echo/orders"}))
    assert "***" in str(failed.value)
    assert not any(secret in str(failed.value) for secret in SECRETS)


def test_aws_sigv4_is_refused_clearly(server: tuple[str, State]) -> None:
    base, _ = server
    with pytest.raises(SourceError, match="auth_type 'aws_sigv4' is not supported"):
        read(api(base, {"auth_type": "aws_sigv4"}, configure={"endpoint": "plain/orders"}))


# --- watermark push-down ------------------------------------------------------------------------

PUSHED = {"endpoint": "plain/orders", "range_param_mapping": {"updated_at": {"lower": "since", "upper": "until"}}}


def test_first_run_sends_only_the_upper_bound_and_stores_a_typed_watermark(server: tuple[str, State]) -> None:
    base, state = server
    result = read_ok(api(base, configure=PUSHED, watermark_columns=["updated_at"]))

    assert state.requests[0].query == {"until": "2024-03-20T12:00:00+00:00"}
    # the column stays the text the API sent (as Spark reads JSON); the watermark is typed
    assert result.data.schema["updated_at"] == pl.String
    assert result.runtime.watermark_after == {"updated_at": datetime(2024, 1, 1, 4, tzinfo=UTC)}


def test_the_stored_watermark_is_pushed_and_the_superset_filtered(server: tuple[str, State]) -> None:
    base, state = server
    stored = {"updated_at": datetime(2024, 1, 1, 2, tzinfo=UTC)}
    result = read_ok(api(base, configure=PUSHED, watermark_columns=["updated_at"]), stored)

    assert state.requests[0].query == {"since": "2024-01-01T02:00:00+00:00", "until": "2024-03-20T12:00:00+00:00"}
    assert result.data["id"].to_list() == [4, 5]  # the endpoint's >= returned id 3 too; the window drops it
    assert result.data["updated_at"].to_list() == ["2024-01-01T03:00:00Z", "2024-01-01T04:00:00Z"]  # as sent
    assert result.runtime.source_action["bounds"]["since"] == "2024-01-01T02:00:00+00:00"


def test_bounds_go_into_the_body_in_the_mapped_format(server: tuple[str, State]) -> None:
    base, state = server
    mapping = {"updated_at": {"lower": {"name": "since", "location": "body"}, "format": "iso"}}
    source = api(base, configure={"endpoint": "plain/orders", "method": "POST", "range_param_mapping": mapping,
                                  "body": {"fields": ["id"]}}, watermark_columns=["updated_at"])  # fmt: skip
    read_ok(source, {"updated_at": "2024-01-01T03:00:00Z"})  # a 0.1.x string watermark still works
    assert state.requests[0].body == {"fields": ["id"], "since": "2024-01-01T03:00:00+00:00"}


def test_request_end_stores_the_upper_bound_sent(server: tuple[str, State]) -> None:
    base, _ = server
    mapping = {"updated_at": {"lower": "since", "upper": "until", "watermark_value": "request_end",
                              "format": "datetime"}}  # fmt: skip
    source = api(base, {"watermark_to_param_timezone": "+07:00"},
                 configure={"endpoint": "plain/orders", "range_param_mapping": mapping}, watermark_columns=["updated_at"])  # fmt: skip
    result = read_ok(source)
    assert result.runtime.watermark_after == {"updated_at": REFERENCE_TIME}
    assert result.runtime.source_action["bounds"] == {"until": "2024-03-20 19:00:00"}


def test_a_replay_chunk_is_sent_as_the_bounds(server: tuple[str, State]) -> None:
    base, state = server
    chunk = ReadRange("updated_at", datetime(2024, 1, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, 3, tzinfo=UTC))
    result = read_ok(api(base, configure=PUSHED, watermark_columns=["updated_at"]), read_range=chunk)

    assert state.requests[0].query == {"since": "2024-01-01T01:00:00+00:00", "until": "2024-01-01T03:00:00+00:00"}
    assert result.data["id"].to_list() == [2, 3]


def test_a_replay_on_an_unmapped_column_is_an_error(server: tuple[str, State]) -> None:
    base, _ = server
    chunk = ReadRange("id", 1, 3)
    with pytest.raises(SourceError, match="replay on column 'id' needs a range_param_mapping entry"):
        read(api(base, configure=PUSHED), read_range=chunk)


def test_next_link_repeat_query_bounds_adds_the_bounds_to_each_link(server: tuple[str, State]) -> None:
    base, state = server
    configure = PUSHED | {"endpoint": "link/orders", "pagination_type": "next_link", "data_path": "results",
                          "next_link_bound_mode": "repeat_query_bounds"}  # fmt: skip
    stored = {"updated_at": datetime(2024, 1, 1, 0, tzinfo=UTC)}
    assert read_ok(api(base, configure=configure, watermark_columns=["updated_at"]), stored).data.height == 4
    assert all(r.query.get("since") == "2024-01-01T00:00:00+00:00" for r in state.requests)

    state.requests.clear()
    state.link_keeps_query = True  # the link carries the bounds itself: kept, not repeated
    assert read_ok(api(base, configure=configure, watermark_columns=["updated_at"]), stored).data.height == 4


@pytest.mark.parametrize(
    ("value", "fmt", "sent"),
    [
        (datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "timestamp", 1704164645),
        (datetime(2024, 1, 2, 3, 4, 5, 678000), "timestamp_ms", 1704164645678),
        (datetime(2024, 1, 2, 3, 4, 5, 678000), "datetime_ms", "2024-01-02 03:04:05.678"),
        (datetime(2024, 1, 2, 23, 0, tzinfo=UTC), "date", "2024-01-02"),
        (date(2024, 1, 2), "iso", "2024-01-02"),
        (42, "integer", "42"),
        (42.0, "native_integer", 42),
        ("7.5", "number", 7.5),
    ],
)
def test_format_value(value: Any, fmt: str, sent: Any) -> None:
    assert format_value(value, fmt, field="f", label="s") == sent


def test_format_value_refuses_a_fraction_as_an_integer() -> None:
    with pytest.raises(SourceError, match=r"range_param_mapping\.seq: cannot send 4\.5 as format 'integer'"):
        format_value(4.5, "integer", field="seq", label="s")


def test_a_split_range_asks_each_interval_once(server: tuple[str, State]) -> None:
    base, state = server
    configure = PUSHED | {"watermark_range_interval_unit": "month", "watermark_range_max_workers": 2}
    stored = {"updated_at": datetime(2024, 1, 1, 0, tzinfo=UTC)}
    result = read_ok(api(base, configure=configure, watermark_columns=["updated_at"]), stored)

    sent = sorted((r.query["since"], r.query["until"]) for r in state.requests)
    assert sent == [
        ("2024-01-01T00:00:00+00:00", "2024-02-01T00:00:00+00:00"),
        ("2024-02-01T00:00:00+00:00", "2024-03-01T00:00:00+00:00"),
        ("2024-03-01T00:00:00+00:00", "2024-03-20T12:00:00+00:00"),
    ]
    assert result.data["id"].to_list() == [2, 3, 4, 5]
    assert len(result.runtime.source_action["bounds"]) == 3


def test_a_first_run_splits_from_watermark_range_start(server: tuple[str, State]) -> None:
    base, state = server
    configure = PUSHED | {"watermark_range_interval_unit": "month", "watermark_range_interval_amount": 2,
                          "watermark_range_start": "2024-01-01"}  # fmt: skip
    assert read_ok(api(base, configure=configure, watermark_columns=["updated_at"])).data.height == 5
    assert sorted(r.query["until"] for r in state.requests) == [
        "2024-03-01T00:00:00+00:00",
        "2024-03-20T12:00:00+00:00",
    ]


def test_a_next_link_contradicting_a_bound_is_refused(server: tuple[str, State]) -> None:
    base, state = server
    state.link_keeps_query = True
    configure = PUSHED | {"endpoint": "link/orders", "pagination_type": "next_link", "data_path": "results",
                          "next_link_bound_mode": "repeat_query_bounds"}  # fmt: skip
    source = api(base, configure=configure, watermark_columns=["updated_at"])
    stored = {"updated_at": datetime(2024, 1, 1, 0, tzinfo=UTC)}
    read_ok(source, stored)  # the link repeats the bound as sent: fine
    state.requests.clear()
    state.link_rewrites = {"since": "2020-01-01"}
    with pytest.raises(SourceError, match=r"next link carries query bound 'since'=\['2020-01-01'\] but this read sent"):
        read(source, stored)


def test_response_column_names_the_field_in_the_records(server: tuple[str, State]) -> None:
    base, state = server
    mapping = {"modified": {"lower": "since", "upper": "until", "response_column": "updated_at"}}
    source = api(base, configure={"endpoint": "plain/orders", "range_param_mapping": mapping},
                 watermark_columns=["updated_at"])  # fmt: skip
    result = read_ok(source, {"updated_at": datetime(2024, 1, 1, 3, tzinfo=UTC)})
    assert state.requests[0].query["since"] == "2024-01-01T03:00:00+00:00"
    assert result.data["id"].to_list() == [5]

    chunk = ReadRange("modified", datetime(2024, 1, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, 3, tzinfo=UTC))
    assert read_ok(source, read_range=chunk).data["id"].to_list() == [2, 3]


def test_total_path_fetches_the_remaining_offset_pages_concurrently(server: tuple[str, State]) -> None:
    base, state = server
    source = api(base, configure={"endpoint": "offset/orders", "pagination_type": "offset", "page_size": 2,
                                  "data_path": "data.items", "total_path": "meta.total", "offset_max_workers": 2})  # fmt: skip

    assert read_ok(source).data["id"].to_list() == [1, 2, 3, 4, 5]  # in order, whatever order pages arrive in
    assert sorted(r.query["offset"] for r in state.requests) == ["0", "2", "4"]


def test_the_reader_registry_does_not_import_httpx() -> None:
    """httpx (~0.1-0.2 s to import) is loaded when an API is read, not by every command."""
    import subprocess
    import sys

    code = "import sys, datacoolie_core.sources, datacoolie_core.orchestration.wiring; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
