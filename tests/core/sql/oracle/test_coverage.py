"""docs/sql-coverage.md: every built-in function of Spark's own registry, supported here or not.

The list comes from the oracle's SparkSession (``spark.catalog.listFunctions()``, what ``SHOW
FUNCTIONS`` lists), so a function is never missed silently. Regenerate after adding a function
(needs Spark): ``python -m tests.core.sql.oracle.test_coverage``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datacoolie_core.sql import SUPPORTED_FUNCTIONS

DOC = Path(__file__).parents[4] / "docs" / "sql-coverage.md"

# operators and constructs Spark registers as functions; compiled by the compiler itself (docs/sql.md)
CONSTRUCTS = {"!", "!=", "%", "&", "*", "+", "-", "/", "<", "<=", "<=>", "<>", "=", "==", ">", ">=", "^", "|",
              "||", "and", "or", "not", "between", "case", "if", "in", "like", "ilike", "rlike", "regexp",
              "cast", "try_cast", "div", "isnull", "isnotnull", "when", "mod", "pmod"}  # fmt: skip
# operators Spark lists among its scalar functions, compiled by the compiler itself
SCALAR_OPERATORS = {"~"}
WINDOW = {"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lead", "lag", "nth_value"}
GENERATORS = {"explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer", "stack",
              "json_tuple", "range"}  # fmt: skip
# not scalar functions of string/number/date/time/boolean/array values: maps, structs, JSON, CSV, XML,
# binary, sketches, the session and the system
OTHER_PREFIXES = ("map", "str_to_map", "struct", "named_struct", "from_json", "to_json", "schema_of", "json_",
                  "get_json_object", "from_csv", "to_csv", "xpath", "aes_", "hll_", "bitmap_", "current_",
                  "input_file", "spark_partition_id", "monotonically_increasing_id", "uuid", "rand", "randn",
                  "random", "shuffle", "reflect", "java_method", "try_reflect", "assert_true", "raise_error",
                  "version", "user", "session_user", "current_user", "typeof", "url_", "parse_url", "window",
                  "session_window", "window_time", "to_binary", "try_to_binary", "unbase64", "unhex", "encode",
                  "decode", "try_aes_decrypt", "to_varchar", "to_char", "grouping", "grouping_id",
                  "input_file_block", "named_struct", "transform", "filter", "aggregate", "reduce", "exists",
                  "forall", "zip_with", "array_sort", "inline", "binary", "sql_keywords", "make_dt_interval",
                  "make_interval", "make_ym_interval")  # fmt: skip


def category(name: str, class_name: str | None) -> str:
    """The kind of a Spark built-in function, by its registry entry."""
    lowered = name.lower()
    if lowered in CONSTRUCTS:
        return "operator or construct"
    if class_name and ".aggregate." in class_name:
        return "aggregate"
    if lowered in WINDOW:
        return "window"
    if lowered in GENERATORS:
        return "generator"
    if lowered.startswith(OTHER_PREFIXES):
        return "other (map/struct/JSON/binary/lambda/session)"
    return "scalar"


def render(functions: list[tuple[str, str | None]]) -> str:
    """The coverage page for Spark's registry ``functions`` (name, implementing class)."""
    supported = {name.lower() for name in SUPPORTED_FUNCTIONS} | {n for n in CONSTRUCTS if n.isalpha() or "_" in n}
    supported |= SCALAR_OPERATORS
    rows: dict[str, list[tuple[str, bool]]] = {}
    for name, class_name in sorted(functions):
        kind = category(name, class_name)
        rows.setdefault(kind, []).append((name, name.lower() in supported or kind == "operator or construct"))
    scalar = rows.get("scalar", [])
    done = sum(1 for _, ok in scalar if ok)
    lines = [
        "# Spark SQL built-in functions: coverage",
        "",
        "Generated from the oracle's SparkSession (Spark 3.5's function registry, what `SHOW FUNCTIONS`",
        "lists) by `python -m tests.core.sql.oracle.test_coverage`; a spark-marked test fails when it is stale.",
        "What each supported function does is in [sql-functions.md](sql-functions.md).",
        "",
        f"Scalar functions supported: **{done} of {len(scalar)}** ({100 * done / max(len(scalar), 1):.0f} %).",
        "",
        "| Kind | Supported | Not supported |",
        "|---|---|---|",
    ]
    for kind in sorted(rows):
        yes = ", ".join(f"`{n}`" for n, ok in rows[kind] if ok) or "—"
        no = ", ".join(f"`{n}`" for n, ok in rows[kind] if not ok) or "—"
        lines.append(f"| {kind} | {yes} | {no} |")
    return "\n".join(lines) + "\n"


def registry(spark: Any) -> list[tuple[str, str | None]]:
    return [(f.name, f.className) for f in spark.catalog.listFunctions() if f.catalog is None]


def test_coverage_page_lists_spark_registry(spark: Any) -> None:
    assert DOC.read_text(encoding="utf-8") == render(registry(spark)), (
        "docs/sql-coverage.md is stale: run python -m tests.core.sql.oracle.test_coverage"
    )


if __name__ == "__main__":
    from tests.support.spark import start_spark

    DOC.write_text(render(registry(start_spark())), encoding="utf-8")
