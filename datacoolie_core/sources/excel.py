"""Excel files (``.xlsx``) of a file source (DataCoolie S-17): ``polars.read_excel`` on the calamine engine.

Like DataCoolie, the file is read eagerly with Polars' default engine (fastexcel, which wraps the
calamine Rust crate) and the source's ``read_options`` are ``read_excel``'s keyword arguments:
``sheet_name`` / ``sheet_id`` pick sheets (``sheet_id: 0`` every sheet; several sheets are stacked,
columns matched by name), ``has_header`` (alias ``header``, as for CSV), ``columns``,
``schema_overrides`` (type names as text: ``{"amount": "String"}``), ``engine``…

Two defaults differ from DataCoolie's (Polars'), because theirs lose data without a word:

* types are inferred over every row (``infer_schema_length`` ``None``, not 100): with 100, a text
  cell after row 100 of a number column becomes null, and a row left all null is dropped;
* cells of one column must agree (fastexcel ``dtype_coercion: "strict"``): a column mixing numbers
  and text is an error naming the column and the fix, not a column of nulls.

Either can be set back in ``read_options`` (``infer_schema_length: 100``,
``read_options: {"dtype_coercion": "coerce"}``). Dates read as ``Date``, date-times as
``Datetime("ms")``, whole numbers as ``Int64``, others as ``Float64``, booleans as ``Boolean``,
text as ``String``: the cell values openpyxl reads, typed per column. An empty sheet is no rows.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from datacoolie_core.errors import SourceError
from datacoolie_core.sources.options import polars_options
from datacoolie_core.suggestions import did_you_mean

DEFAULTS: dict[str, Any] = {"infer_schema_length": None, "raise_if_empty": False}
ENGINE_DEFAULTS: dict[str, Any] = {"dtype_coercion": "strict"}
"""fastexcel ``load_sheet`` settings (``read_excel(read_options=…)``) for the calamine engine."""


def read_excel(path: str, options: dict[str, Any], *, label: str) -> pl.LazyFrame:
    """Every selected sheet of one workbook as one lazy frame (sheets stacked by column name).

    Raises:
        SourceError: no Excel engine, an unknown sheet or option, or a column mixing types.
    """
    kwargs = _arguments(options, label)
    try:
        result = pl.read_excel(path, **kwargs)
    except ImportError as e:
        raise SourceError(
            f"{label}: reading excel files needs an Excel engine that is not installed ({e}); "
            "install it with `pip install fastexcel` (or pass read_options engine='openpyxl' with openpyxl installed)"
        ) from e
    except ValueError as e:
        if "no matching sheet" not in str(e):
            raise
        raise SourceError(f"{label}: {path}: {e}; {_sheets_hint(path, kwargs.get('sheet_name'))}") from e
    except Exception as e:
        if type(e).__module__.split(".")[0] not in ("fastexcel", "_fastexcel"):
            raise
        raise SourceError(
            f"{label}: cannot read '{path}': {_first_line(e)}. Make every cell of that column one type in the "
            'workbook, or name its type in read_options schema_overrides, e.g. {"<column>": "String"}'
        ) from e
    frames = list(result.values()) if isinstance(result, dict) else [result]
    return pl.concat([f.lazy() for f in frames], how="diagonal_relaxed")


def _arguments(options: dict[str, Any], label: str) -> dict[str, Any]:
    options = dict(options)
    if "header" in options:
        options.setdefault("has_header", options.pop("header"))
    kwargs = DEFAULTS | polars_options(pl.read_excel, options, label=label)
    if "schema_overrides" in kwargs:
        kwargs["schema_overrides"] = _dtypes(kwargs["schema_overrides"], label)
    if kwargs.get("engine", "calamine") == "calamine":
        kwargs["read_options"] = ENGINE_DEFAULTS | dict(kwargs.get("read_options") or {})
    return kwargs


def _dtypes(overrides: Any, label: str) -> dict[str, Any]:
    """``{"amount": "String"}`` (JSON metadata holds type names) -> Polars types."""
    if not isinstance(overrides, dict):
        raise SourceError(f"{label}: read option 'schema_overrides' must map column names to type names")
    names = [n for n in dir(pl) if isinstance(getattr(pl, n), type) and issubclass(getattr(pl, n), pl.DataType)]
    result: dict[str, Any] = {}
    for column, dtype in overrides.items():
        if isinstance(dtype, str):
            if dtype not in names:
                raise SourceError(
                    f"{label}: schema_overrides type {dtype!r} of column '{column}' is not a Polars type"
                    f"{did_you_mean(dtype, names)}"
                )
            dtype = getattr(pl, dtype)
        result[column] = dtype
    return result


def _sheets_hint(path: str, wanted: Any) -> str:
    try:
        import fastexcel

        sheets = list(fastexcel.read_excel(path).sheet_names)
    except Exception:  # the hint is best effort; the error itself stands
        return "check read_options sheet_name"
    close = did_you_mean(str(wanted), sheets) if isinstance(wanted, str) else ""
    return f"the workbook has the sheets {', '.join(map(repr, sheets))}{close}"


def _first_line(error: Exception) -> str:
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return text.replace("Context: 0: ", "(") + (")" if "Context:" in str(error) else "")
