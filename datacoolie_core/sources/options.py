"""``read_options`` from metadata -> the settings of a reader (DataCoolie S-14, S-16).

CSV and JSON-lines options are Spark's (``header``, ``sep``, ``inferSchema``, ``primitivesAsString``),
matched case-insensitively as Spark matches them, with Spark's defaults: the files read as DataCoolie's
Spark engine reads them. The Polars names this engine accepted before (``separator``, ``has_header``,
``quote_char``, ``infer_schema``) still work as aliases. Other formats pass their options to Polars as
written, checked first. Everywhere, an unknown key is an error naming the closest valid one, where
Spark would silently ignore it.
"""

from __future__ import annotations

import codecs
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from datacoolie_core.errors import SourceError
from datacoolie_core.models.coerce import to_bool
from datacoolie_core.suggestions import did_you_mean

ParseMode = Literal["PERMISSIVE", "DROPMALFORMED", "FAILFAST"]


@dataclass(frozen=True)
class CsvOptions:
    """Spark's CSV read options (Spark 3.5 names; defaults are Spark's)."""

    header: bool = False
    sep: str = ","
    quote: str = '"'
    """One character; ``""`` turns quoting off."""
    escape: str = "\\"
    """Escapes the quote (and itself) inside a quoted value."""
    null_value: str = ""
    empty_value: str = ""
    """What a quoted empty value ``""`` reads as (then compared with ``null_value``)."""
    comment: str = ""
    """Lines starting with this character are skipped; ``""`` = none."""
    infer_schema: bool = False
    date_format: str = "yyyy-MM-dd"
    timestamp_format: str | None = None
    """``None``: Spark's lenient ISO parsing (``yyyy-M-d[ H[:m[:s[.S]]]][zone]``)."""
    multi_line: bool = False
    encoding: str = "utf-8"
    ignore_leading_white_space: bool = False
    ignore_trailing_white_space: bool = False
    mode: ParseMode = "PERMISSIVE"


@dataclass(frozen=True)
class JsonOptions:
    """Spark's JSON-lines read options this engine supports."""

    primitives_as_string: bool = False
    multi_line: bool = False
    sampling_ratio: float = 1.0
    """Spark's ``samplingRatio``: the fraction of JSON lines that schema inference looks at (0 < r <= 1)."""


_CSV_KEYS = {
    "header": "header", "has_header": "header",
    "sep": "sep", "delimiter": "sep", "separator": "sep",
    "quote": "quote", "quote_char": "quote",
    "escape": "escape", "nullvalue": "null_value", "emptyvalue": "empty_value", "comment": "comment",
    "inferschema": "infer_schema", "infer_schema": "infer_schema",
    "dateformat": "date_format", "timestampformat": "timestamp_format",
    "multiline": "multi_line", "encoding": "encoding", "charset": "encoding",
    "ignoreleadingwhitespace": "ignore_leading_white_space",
    "ignoretrailingwhitespace": "ignore_trailing_white_space", "mode": "mode",
}  # fmt: skip
"""Spark CSV option names (lower-cased, as Spark matches them) and the older Polars aliases."""

_JSON_KEYS = {
    "primitivesasstring": "primitives_as_string",
    "multiline": "multi_line",
    "samplingratio": "sampling_ratio",
}

_SPARK_NAMES = {
    "header": "header", "sep": "sep", "delimiter": "delimiter", "quote": "quote", "escape": "escape",
    "nullvalue": "nullValue", "emptyvalue": "emptyValue", "comment": "comment", "inferschema": "inferSchema",
    "dateformat": "dateFormat", "timestampformat": "timestampFormat", "multiline": "multiLine",
    "encoding": "encoding", "charset": "charset", "ignoreleadingwhitespace": "ignoreLeadingWhiteSpace",
    "ignoretrailingwhitespace": "ignoreTrailingWhiteSpace", "mode": "mode",
    "primitivesasstring": "primitivesAsString", "samplingratio": "samplingRatio",
}  # fmt: skip

_BOOLEANS = frozenset(
    {"header", "infer_schema", "multi_line", "ignore_leading_white_space", "ignore_trailing_white_space",
     "primitives_as_string"}
)  # fmt: skip

_SEP_ESCAPES = {"\\t": "\t", "\\n": "\n", "\\r": "\r", "\\b": "\b", "\\f": "\f", '\\"': '"', "\\'": "'",
                "\\\\": "\\", "\\u0000": "\x00"}  # fmt: skip
"""Spark reads ``sep`` "\\t" (backslash, t) as a tab."""


def csv_options(options: Mapping[str, Any], *, label: str) -> CsvOptions:
    """``read_options`` of a CSV source as :class:`CsvOptions`.

    Raises:
        SourceError: an unknown key, a bad boolean, an empty separator, a quote or escape that is not
            one character, an unknown mode or encoding.
    """
    values = _spark_values(options, _CSV_KEYS, "CSV", label)
    parsed = CsvOptions(**values)
    _check_csv(parsed, label)
    sep = _SEP_ESCAPES.get(parsed.sep, parsed.sep)
    return CsvOptions(**{**values, "sep": sep, "mode": parsed.mode.upper(), "encoding": parsed.encoding})


def json_options(options: Mapping[str, Any], *, label: str) -> JsonOptions:
    """``read_options`` of a JSON-lines source as :class:`JsonOptions`.

    Raises:
        SourceError: an unknown key, a bad boolean or a ``samplingRatio`` that is not a number in (0, 1].
    """
    values = _spark_values(options, _JSON_KEYS, "JSON", label)
    if "sampling_ratio" in values:
        values["sampling_ratio"] = _sampling_ratio(values["sampling_ratio"], label)
    return JsonOptions(**values)


def _sampling_ratio(text: str, label: str) -> float:
    """``samplingRatio`` as a float in (0, 1]: the fraction of lines schema inference may look at."""
    try:
        ratio = float(text)
    except ValueError:
        ratio = float("nan")
    if not 0 < ratio <= 1:  # NaN fails too
        raise SourceError(
            f"{label}: read option 'samplingRatio' must be a number greater than 0 and at most 1 "
            f"(the fraction of lines used to infer the schema), got {text!r}; 1.0 (the default) types every line"
        )
    return ratio


def _spark_values(options: Mapping[str, Any], keys: Mapping[str, str], fmt: str, label: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in options.items():
        field = keys.get(key.lower())
        if field is None:
            known = sorted({_SPARK_NAMES[k] for k in keys if k in _SPARK_NAMES})
            raise SourceError(
                f"{label}: read option '{key}' is not a {fmt} read option this engine supports"
                f"{did_you_mean(key, [*known, *(k for k in keys if k not in _SPARK_NAMES)])}; "
                f"supported (Spark names): {', '.join(known)}"
            )
        if field in _BOOLEANS and not isinstance(value, bool):
            try:
                value = to_bool(value)
            except ValueError as e:
                raise SourceError(f"{label}: read option '{key}' must be true or false, got {value!r}") from e
        elif field not in _BOOLEANS:
            value = "" if value is None else str(value)
        values[field] = value
    return values


def _check_csv(options: CsvOptions, label: str) -> None:
    if not options.sep:
        raise SourceError(f"{label}: read option 'sep' is empty; give the column separator, e.g. ',' or ';'")
    for name, value in (("quote", options.quote), ("escape", options.escape), ("comment", options.comment)):
        if len(value) > 1:
            raise SourceError(f"{label}: read option '{name}' must be one character, got {value!r}")
    if options.mode.upper() not in get_args(ParseMode):
        raise SourceError(
            f"{label}: read option 'mode' is {options.mode!r}; use one of {', '.join(get_args(ParseMode))}"
        )
    try:
        codecs.lookup(options.encoding)
    except LookupError as e:
        raise SourceError(
            f"{label}: read option 'encoding' {options.encoding!r} is not a known encoding; "
            "use e.g. UTF-8, ISO-8859-1 or windows-1252"
        ) from e


_RESERVED = frozenset({"source", "include_file_paths", "hive_partitioning"})
"""Arguments the reader sets itself."""


def polars_options(reader: Callable[..., Any], options: Mapping[str, Any], *, label: str) -> dict[str, Any]:
    """``options`` as keyword arguments of the Polars ``reader`` (parquet, excel), string booleans coerced.

    Raises:
        SourceError: a key ``reader`` does not take, or a boolean option that is not a boolean.
    """
    if not options:  # the usual case: no signature to inspect (~0.5 ms a file)
        return {}
    parameters = {
        name: p for name, p in inspect.signature(reader).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    valid = [name for name in parameters if not name.startswith("_") and name not in _RESERVED]
    result: dict[str, Any] = {}
    for key, value in options.items():
        if key not in valid:
            raise SourceError(
                f"{label}: read option '{key}' is not an option of polars.{reader.__name__}"
                f"{did_you_mean(key, valid)}; valid options: {', '.join(valid)}"
            )
        result[key] = _coerce(value, parameters[key], key, label)
    return result


def _coerce(value: Any, parameter: inspect.Parameter, key: str, label: str) -> Any:
    if not isinstance(value, str) or not str(parameter.annotation).startswith("bool"):
        return value
    try:
        return to_bool(value)
    except ValueError as e:
        raise SourceError(f"{label}: read option '{key}' must be true or false, got {value!r}") from e
