"""The API reader: a REST endpoint's JSON records as a DataFrame (DataCoolie S-25 … S-28).

The request is ``base_url`` (connection) + ``/`` + ``endpoint`` (source), with ``method`` (GET),
``params`` (query string) and ``body`` (JSON) of ``source.configure``, the connection's
``default_headers``, ``timeout`` (30 s) and auth (:mod:`~datacoolie_core.sources.api.client`).
Pages are followed as :mod:`~datacoolie_core.sources.api.pages` says, and the watermark is pushed
into the request as :mod:`~datacoolie_core.sources.api.bounds` says.

Records become one DataFrame whose schema is the union of the records' keys (a key missing from a
record is null; a key holding several kinds of value becomes text). A mapped field of a temporal
format that arrives as ISO text is compared and its watermark stored as a date/datetime, while the
column itself stays text, as Spark's JSON reading keeps it. The shared tail
(:mod:`~datacoolie_core.sources.collect_and_watermark`) then applies the exact watermark window,
``filter_expression``, the count and the new watermark, as for every source.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources.api.bounds import (
    FieldBounds,
    apply_bounds,
    field_bounds,
    request_end_watermark,
    split_ranges,
)
from datacoolie_core.sources.api.pages import Request, fetch_records
from datacoolie_core.sources.base import ReadRange, ReadRequest, ReadResult
from datacoolie_core.sources.collect_and_watermark import collect_scan, plan_read

if TYPE_CHECKING:
    from datacoolie_core.sources.api.client import ApiClient


class ApiReader:
    """Reads a REST API endpoint (connection format ``api``)."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        configure = source.configure
        label = api_label(source)
        bounds = field_bounds(source, request, label)
        groups = split_ranges(bounds, source, label)
        from datacoolie_core.sources.api.client import ApiClient  # httpx only when an API is read

        with ApiClient(source.connection, label=label, max_retries=configure.max_retries) as client:
            url = client.url(configure.endpoint)
            workers = min(len(groups), max(configure.watermark_range_max_workers, 1))
            with ThreadPoolExecutor(max_workers=workers) as pool:  # one group unless the range is split
                fetched = list(pool.map(lambda group: _fetch(client, url, source, group, label), groups))
        records = [record for found, _, _ in fetched for record in found]
        if not records:
            return None
        data = to_frame(records, label)
        typed = typed_fields(data, bounds)
        action = {"method": configure.method.upper(), "url": url, "pages": sum(pages for _, pages, _ in fetched),
                  "records": len(records), "bounds": [sent for _, _, sent in fetched]}  # fmt: skip
        if len(groups) == 1:
            action["bounds"] = fetched[0][2]
        pushed = request_end_watermark(bounds, source.watermark_columns)
        kept = [c for c in source.watermark_columns if c not in pushed]
        narrowed = source.model_copy(update={"watermark_columns": kept}) if pushed else source
        request = _range_on_response_column(request, bounds)
        if request.read_range is not None and request.read_range.column not in data.columns and pushed:
            request = dataclasses.replace(request, read_range=None, watermark=None)
        return read_keeping_text(data, typed, narrowed, request, action, pushed)


_ROW = "__datacoolie_api_row__"
"""Position of a record in the response, kept through the read to put its text values back."""


def read_keeping_text(
    data: pl.DataFrame,
    typed: pl.DataFrame,
    source: Source,
    request: ReadRequest,
    action: dict[str, Any],
    pushed: dict[str, Any],
) -> ReadResult | None:
    """Filter and take the watermark on the typed fields, but hand on the columns as the API sent them.

    A timestamp field that arrives as text stays text in the table (Spark's JSON reading does not
    infer timestamps; DataCoolie keeps the text on both engines); its watermark is still compared and
    stored as a timestamp, as the typed column orders it.
    """
    parsed = [c for c in typed.columns if typed.schema[c] != data.schema[c]]
    if not parsed:
        return collect_scan(plan_read(typed.lazy(), source, request, source_action=action, pseudo_watermark=pushed))
    numbered = typed.with_row_index(_ROW).lazy()
    result = collect_scan(plan_read(numbered, source, request, source_action=action, pseudo_watermark=pushed))
    if result is None:
        return None
    rows = result.data[_ROW]
    result.data = result.data.with_columns(data[c].gather(rows).alias(c) for c in parsed).drop(_ROW)
    return result


def _range_on_response_column(request: ReadRequest, bounds: list[FieldBounds]) -> ReadRequest:
    """A replay chunk of a mapped field is filtered, in memory, on the response column that holds it."""
    chunk = request.read_range
    if chunk is None:
        return request
    match = next((b for b in bounds if b.field.lower() == chunk.column.lower()), None)
    if match is None or match.column == chunk.column:
        return request
    return dataclasses.replace(request, read_range=ReadRange(match.column, chunk.start, chunk.end))


def _fetch(
    client: ApiClient, url: str, source: Source, bounds: list[FieldBounds], label: str
) -> tuple[list[Any], int, dict[str, Any]]:
    """The records of one request group (all its pages), its page count and the bounds it sent."""
    configure = source.configure
    params, body = dict(configure.params), dict(configure.body)
    in_query = apply_bounds(bounds, params, body, label)
    records, pages = fetch_records(client, Request(configure.method.upper(), url, params, body, in_query), configure)
    return records, pages, in_query | _body_bounds(bounds, body)


def api_label(source: Source) -> str:
    """How errors name an API source: ``source 'v1/orders' (connection 'shop')``."""
    return f"source '{source.configure.endpoint or source.table or '/'}' (connection '{source.connection.name}')"


def to_frame(records: list[Any], label: str) -> pl.DataFrame:
    """The records as one DataFrame with the union of their keys."""
    bad = next((r for r in records if not isinstance(r, dict)), None)
    if bad is not None:
        raise SourceError(
            f"{label}: the response's records are not JSON objects (found a {type(bad).__name__}); "
            "point configure.data_path at the list of records"
        )
    try:
        return pl.from_dicts(records, infer_schema_length=None, strict=False)
    except (pl.exceptions.PolarsError, TypeError, ValueError) as e:
        raise SourceError(f"{label}: the records do not form a table: {e}") from e


def typed_fields(data: pl.DataFrame, bounds: list[FieldBounds]) -> pl.DataFrame:
    """Mapped temporal fields that arrived as ISO text, parsed (left as text when they do not parse)."""
    for item in bounds:
        column, fmt = item.column, item.spec.format
        if column not in data.columns or data.schema[column] != pl.String:
            continue
        if fmt in ("iso", "datetime", "datetime_ms", "date"):
            text = data[column].str.strip_chars()  # eager: a Series infers the time zone an Expr refuses to
            try:
                parsed = text.str.to_date(strict=True) if fmt == "date" else text.str.to_datetime(strict=True)
            except pl.exceptions.PolarsError:
                continue  # not one ISO spelling: compared as text, as Spark would
            data = data.with_columns(parsed.alias(column))
    return data


def _body_bounds(bounds: list[FieldBounds], body: dict[str, Any]) -> dict[str, Any]:
    names = {b.name for item in bounds for b in (item.spec.lower, item.spec.upper) if b and b.location == "body"}
    return {name: body[name] for name in names if name in body}
