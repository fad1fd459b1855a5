"""Spark SQL math functions."""

from __future__ import annotations

import polars as pl
from sqlglot import exp

from datacoolie_core.sql.functions.registry import Handler, unary

NODES: dict[type[exp.Expression], Handler] = {
    exp.Round: lambda c, n: c.arg(n).round(c.literal_int(n.args["decimals"]) if n.args.get("decimals") else 0),
    exp.Floor: unary(lambda a: a.floor()),
    exp.Ceil: unary(lambda a: a.ceil()),
    exp.Abs: unary(lambda a: a.abs()),
    exp.Greatest: lambda c, n: pl.max_horizontal([c.arg(n), *(c.compile(e) for e in n.expressions)]),
    exp.Least: lambda c, n: pl.min_horizontal([c.arg(n), *(c.compile(e) for e in n.expressions)]),
}
NAMES: dict[str, Handler] = {}
SUPPORTED = ("ABS", "CEIL", "FLOOR", "GREATEST", "LEAST", "ROUND")
