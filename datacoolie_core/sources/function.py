"""The function reader: rows produced by a Python function named in metadata (DataCoolie S-24).

``source.python_function = "pkg.module.fn"`` is imported with :mod:`importlib` and called as::

    fn(source=source, watermark=watermark, read_range=read_range)

* ``source``: the dataflow's :class:`~datacoolie_core.models.dataflow.Source` (its ``configure``
  carries any parameters the function needs);
* ``watermark``: the effective lower bounds (stored watermark after look-back), ``{column: value}``,
  or ``None`` on a first run and when a replay range is given;
* ``read_range``: the replay :class:`~datacoolie_core.sources.base.ReadRange`, or ``None``.

It returns a ``polars.DataFrame`` or ``LazyFrame``, or ``None`` when there is nothing to read
(the dataflow is skipped). The function may pre-filter with the bounds; the reader applies the
watermark window and ``filter_expression`` again anyway (two-phase filtering), so a function that
ignores them still yields exactly the qualifying rows.

``ReadRequest.allowed_function_prefixes`` restricts which functions metadata may name: the dotted
path must equal a prefix or continue it after a dot (``etl.sources`` allows
``etl.sources.orders.fetch`` but not ``etl.sourcesx.fetch``). Empty allows all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import polars as pl

from datacoolie_core.errors import DataCoolieError, SourceError
from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources.base import ReadRequest, ReadResult
from datacoolie_core.sources.collect_and_watermark import collect_scan, lower_bounds, plan_read, source_label
from datacoolie_core.suggestions import did_you_mean


class FunctionReader:
    """Reads the frame a ``python_function`` returns."""

    def read(self, source: Source, request: ReadRequest) -> ReadResult | None:
        label = source_label(source)
        dotted = source.python_function or ""
        check_allowed(dotted, request.allowed_function_prefixes, label=label)
        fn = import_function(dotted, label=label)
        watermark = lower_bounds(source, request)
        try:
            result = fn(source=source, watermark=watermark, read_range=request.read_range)
        except DataCoolieError:
            raise
        except Exception as e:
            raise SourceError(f"{label}: python_function '{dotted}' raised {type(e).__name__}: {e}") from e
        if result is None:
            return None
        if not isinstance(result, pl.DataFrame | pl.LazyFrame):
            raise SourceError(
                f"{label}: python_function '{dotted}' returned {type(result).__name__}; "
                "return a polars DataFrame or LazyFrame, or None when there is nothing to read"
            )
        action = {"python_function": dotted, "watermark_passed": watermark}
        return collect_scan(plan_read(result.lazy(), source, request, source_action=action))


def check_allowed(dotted: str, prefixes: tuple[str, ...], *, label: str) -> None:
    """Raise :class:`SourceError` unless ``dotted`` is under one of ``prefixes`` (empty allows all)."""
    if not prefixes:
        return
    for prefix in (p.rstrip(".") for p in prefixes):
        if dotted == prefix or dotted.startswith(prefix + "."):
            return
    raise SourceError(
        f"{label}: python_function '{dotted}' is not under an allowed prefix ({', '.join(prefixes)}); "
        "move the function under one, or extend allowed_function_prefixes"
    )


def import_function(dotted: str, *, label: str) -> Callable[..., Any]:
    """The callable at ``pkg.module.fn``.

    Raises:
        SourceError: not a dotted path, the module does not import, or it has no such callable.
    """
    module_name, _, attr = dotted.rpartition(".")
    if not module_name or not attr:
        raise SourceError(f"{label}: python_function '{dotted}' must be a dotted path 'package.module.function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SourceError(
            f"{label}: cannot import module '{module_name}' of python_function '{dotted}': {e}; "
            "check the name and that its project is on sys.path"
        ) from e
    fn = getattr(module, attr, None)
    if not callable(fn):
        names = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
        raise SourceError(
            f"{label}: module '{module_name}' has no function '{attr}'{did_you_mean(attr, names)}; fix python_function"
        )
    return fn
