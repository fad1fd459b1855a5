"""The shape of a function handler, shared by the function families and the compiler.

A handler compiles one sqlglot node to a Polars expression. It receives the :class:`Compiler`
(``c.compile(node)``, ``c.arg(node, key)``, ``c.literal_int``/``c.literal_str``, ``c.dtype_of``,
``c.temporal``, ``c.now``, ``c.text``) and the node. A family module exports ``NODES`` (handlers by
sqlglot node type) and ``NAMES`` (handlers for functions sqlglot parses as ``exp.Anonymous``, by upper
name), plus ``SUPPORTED`` (the Spark names it implements, for the docs and the error message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from datacoolie_core.sql.to_polars import Compiler

Handler = Callable[["Compiler", Any], pl.Expr]


def unary(op: Callable[[pl.Expr], pl.Expr]) -> Handler:
    """A handler applying ``op`` to the node's only argument."""
    return lambda c, n: op(c.arg(n))
