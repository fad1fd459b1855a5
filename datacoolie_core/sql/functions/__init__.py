"""Spark SQL scalar functions, one module per family, combined into the compiler's registries."""

from __future__ import annotations

from sqlglot import exp

from datacoolie_core.sql.functions import arrays, conditional, conversion, datetime, digests, math, regex, strings
from datacoolie_core.sql.functions.registry import Handler

FAMILIES = {
    "Strings": strings,
    "Regular expressions": regex,
    "Math": math,
    "Date and time": datetime,
    "Null handling": conditional,
    "Conversion": conversion,
    "Hashing": digests,
    "Arrays": arrays,
}
"""The family modules by the title docs/sql-functions.md gives them."""

FUNCTION_NODES: dict[type[exp.Expression], Handler] = {k: v for f in FAMILIES.values() for k, v in f.NODES.items()}
"""Handlers by sqlglot node type."""
FUNCTION_NAMES: dict[str, Handler] = {k: v for f in FAMILIES.values() for k, v in f.NAMES.items()}
"""Handlers of functions sqlglot parses as ``exp.Anonymous``, by upper-case name."""
SUPPORTED_FUNCTIONS: tuple[str, ...] = tuple(sorted({name for f in FAMILIES.values() for name in f.SUPPORTED}))
"""Every Spark SQL function name we compile (constructs such as CASE, CAST, IF, LIKE are documented apart)."""

__all__ = ["FAMILIES", "FUNCTION_NAMES", "FUNCTION_NODES", "SUPPORTED_FUNCTIONS", "Handler"]
