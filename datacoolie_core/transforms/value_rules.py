"""Slot 5: value cleaning rules (DataCoolie T-03, ``transform.value_rules``).

Rules run in ``(order, declaration index)`` order, one projection per rule, so a later rule sees
the values an earlier one produced (trim before empty_to_null turns ``"  "`` into null).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from datacoolie_core.models.transform import ValueRule
from datacoolie_core.transforms.base import TransformContext
from datacoolie_core.transforms.literals import typed_literal
from datacoolie_core.transforms.resolve import resolve_columns, transform_error

_STRING_ONLY = ("trim", "case", "regex_replace", "empty_to_null", "map")


def _trim(column: pl.Expr, rule: ValueRule) -> pl.Expr:
    return column.str.strip_chars(" ")  # ASCII space only, as DataCoolie: tabs and NBSP are data


def _case(column: pl.Expr, rule: ValueRule) -> pl.Expr:
    return column.str.to_uppercase() if rule.mode == "upper" else column.str.to_lowercase()


def _regex_replace(column: pl.Expr, rule: ValueRule) -> pl.Expr:
    # the replacement is literal text: "$1" must not become a group reference
    return column.str.replace_all(str(rule.pattern), rule.replacement.replace("$", "$$"))


def _empty_to_null(column: pl.Expr, rule: ValueRule) -> pl.Expr:
    return pl.when(column == "").then(None).otherwise(column)


def _map(column: pl.Expr, rule: ValueRule) -> pl.Expr:
    default = None if rule.on_unmapped == "null" else column
    return column.replace_strict(rule.mapping, default=default, return_dtype=pl.String)


_STRING_OPERATIONS: dict[str, Callable[[pl.Expr, ValueRule], pl.Expr]] = {
    "trim": _trim,
    "case": _case,
    "regex_replace": _regex_replace,
    "empty_to_null": _empty_to_null,
    "map": _map,
}


class ColumnValueTransformer:
    """Apply ``transform.value_rules``: trim, case, regex_replace, empty_to_null, fill_null, map.

    String operations need String columns; ``fill_null`` values must fit the column's dtype.
    Missing columns follow ``missing_column_policy``. Label ``ColumnValueTransformer`` when at least
    one rule touched an existing column.
    """

    name = "ColumnValueTransformer"
    order = 5

    def apply(self, frame: pl.LazyFrame, ctx: TransformContext) -> tuple[pl.LazyFrame, str | None]:
        rules = ctx.dataflow.transform.value_rules
        ordered = sorted(enumerate(rules), key=lambda item: (item[1].order, item[0]))
        touched = False
        for index, rule in ordered:
            schema = frame.collect_schema()
            key = f"transform.value_rules[{index}]"
            columns = resolve_columns(ctx, schema.names(), rule.columns, key=f"{key}.columns")
            if columns:
                frame = frame.with_columns(_rule_expr(ctx, rule, key, name, schema[name]) for name in columns)
                touched = True
        return frame, self.name if touched else None


def _rule_expr(ctx: TransformContext, rule: ValueRule, key: str, name: str, dtype: pl.DataType) -> pl.Expr:
    column = pl.col(name)
    if rule.operation in _STRING_ONLY:
        if dtype != pl.String:
            raise transform_error(
                ctx,
                f"{key} ({rule.operation}) applies to string columns, but column '{name}' is {dtype}",
                "remove the column from the rule or cast it to string with a schema hint first",
            )
        return _STRING_OPERATIONS[rule.operation](column, rule).alias(name)
    try:
        literal = typed_literal(rule.value, dtype)
    except ValueError as e:
        raise transform_error(
            ctx, f"{key} (fill_null) value does not fit column '{name}': {e}", "give a value of the column's type"
        ) from e
    return column.fill_null(literal).alias(name)
