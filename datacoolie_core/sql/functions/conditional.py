"""Spark SQL null-handling and conditional functions (CASE and IF are constructs of the compiler)."""

from __future__ import annotations

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler

NODES: dict[type[exp.Expression], Handler] = {
    exp.Coalesce: lambda c, n: pl.coalesce([c.arg(n), *(c.compile(e) for e in n.expressions)]),
    exp.Nullif: lambda c, n: pl.when(c.arg(n) == c.arg(n, "expression")).then(None).otherwise(c.arg(n)),
    exp.Nvl2: lambda c, n: pl.when(c.arg(n).is_not_null()).then(c.arg(n, "true")).otherwise(c.arg(n, "false")),
}
NAMES: dict[str, Handler] = {}
SUPPORTED = ("COALESCE", "IFNULL", "NVL", "NULLIF", "NVL2")
