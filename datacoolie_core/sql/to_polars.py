"""Compile a validated SQL expression (sqlglot AST, Spark dialect) into a Polars expression.

DataCoolie metadata is written for Spark SQL: ``DATE_FORMAT(ts, 'yyyy-MM')``, ``YEAR(d)``,
``CAST(x AS DECIMAL(12,2))``. Polars' own SQL lacks many of these, so expressions are compiled from
sqlglot's AST with an explicit allow-list, following Spark 3.5 with ANSI off (docs/sql.md): the
result has the Polars image of Spark's result type, a zero divisor or a bad cast gives NULL, integers
wrap on overflow. Anything outside the allow-list is a :class:`SqlExpressionError` at validation time,
never a surprise mid-write.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import polars as pl
from sqlglot import exp

from datacoolie_core.sql import operators as op
from datacoolie_core.sql.ansi import ANSI_SETTING, Check, ansi_refusal, cast_checks, guard_all, masked, reached_only
from datacoolie_core.sql.casts import spark_cast
from datacoolie_core.sql.coercion import CoercionError, common_type, literal_number
from datacoolie_core.sql.functions import FUNCTION_NAMES, FUNCTION_NODES
from datacoolie_core.sql.functions import SUPPORTED_FUNCTIONS as _FAMILY_FUNCTIONS
from datacoolie_core.sql.parse import READ_DIALECT, SqlExpressionError, parse_expression
from datacoolie_core.types import polars_dtype

Schema = Mapping[str, pl.DataType]

OPERATOR_FUNCTIONS = ("MOD", "PMOD")
"""Arithmetic spelled as functions, compiled with the operators."""
SUPPORTED_FUNCTIONS: tuple[str, ...] = tuple(sorted({*_FAMILY_FUNCTIONS, *OPERATOR_FUNCTIONS}))
CONSTRUCTS = ("+", "-", "*", "/", "%", "DIV", "=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>", "AND", "OR",
              "NOT", "IS [NOT] NULL", "IS [NOT] TRUE/FALSE", "IS [NOT] DISTINCT FROM", "[NOT] IN", "[NOT] BETWEEN",
              "[NOT] LIKE", "[NOT] ILIKE", "[NOT] RLIKE", "ESCAPE", "||", "&", "|", "^", "CASE", "IF", "CAST",
              "TRY_CAST", "INTERVAL")  # fmt: skip
"""The operators and constructs the compiler accepts besides functions (docs/sql.md)."""
_DOCS = "see docs/sql.md and docs/sql-functions.md for what is supported"


def compile_expression(
    sql: str | exp.Expression, *, schema: Schema | None = None, now: datetime | None = None, ansi: bool = False
) -> pl.Expr:
    """A Polars expression computing ``sql`` row by row.

    Args:
        sql: SQL text (parsed with :func:`parse_expression`) or an already parsed node.
        schema: the frame's columns and dtypes. With it, identifiers resolve case-insensitively and
            operands are coerced as Spark coerces them; without it (validation only) names are used
            as written and types are not checked.
        now: the instant ``CURRENT_TIMESTAMP``/``NOW()``/``CURRENT_DATE`` evaluate to, fixed for a
            batch like the system columns; default: now in UTC.
        ansi: Spark's ``spark.sql.ansi.enabled``: a cast or arithmetic that Spark's ANSI mode refuses
            raises :class:`~datacoolie_core.sql.ansi.SparkAnsiError` when the batch is computed
            (:mod:`datacoolie_core.sql.ansi` lists what is covered); default off, as Spark 3.5.

    Raises:
        SqlExpressionError: an unsupported function/construct, operand types Spark rejects, or an
            unknown column (with a schema).
    """
    node = parse_expression(sql) if isinstance(sql, str) else sql
    compiler = Compiler(schema, now or datetime.now(UTC), node.sql(dialect=READ_DIALECT), ansi=ansi)
    try:
        expression = compiler.compile(node)
    except SqlExpressionError:
        raise
    except (CoercionError, ArithmeticError, LookupError, ValueError, TypeError) as e:
        # a handler tripping on an odd argument is still the user's expression, never a traceback
        raise SqlExpressionError(f"SQL expression {compiler.text!r} cannot be compiled: {e}") from e
    return expression if schema is None else _broadcast(expression, compiler.schema or {})


def _broadcast(expression: pl.Expr, schema: Schema) -> pl.Expr:
    """``expression``, made to fill every row when Polars' optimizer would shrink it to one.

    Polars 2.1 folds ``COALESCE('', n)`` to the literal ``''`` after deciding the shape, so
    ``'abc' <=> COALESCE('', n)`` evaluates to one value and ``with_columns`` raises "length 1 doesn't
    match the DataFrame height". Two rows of NULLs show it at compile time; only then is the
    expression wrapped (the wrapper would hide filters from predicate pushdown).
    """
    try:
        probe = pl.DataFrame({name: [None, None] for name in schema}, schema=dict(schema))
        probe.with_columns(expression.alias("__probe__"))
    except (pl.exceptions.PolarsError, ArithmeticError, ValueError, TypeError) as e:
        # any other error on NULL rows is not a shape problem; evaluation reports it with the data
        if "match the DataFrame height" in str(e):
            return pl.when(pl.repeat(True, pl.len())).then(expression)
    return expression


def validate_expression(sql: str) -> str:
    """Check ``sql`` parses and compiles; return it unchanged (for model validators)."""
    compile_expression(sql)
    return sql


class Compiler:
    """Compiles one expression; handlers call back into it.

    For handlers: ``compile(node)`` (memoized), ``arg(node, key)``, ``dtype(node)`` (the Polars image of
    the node's Spark type, ``None`` without a schema), ``cast(node, dtype)`` (Spark's CAST semantics),
    ``literal_int``/``literal_str``, ``allow_args(node, *keys)``, ``temporal``, ``now``, ``text``.
    """

    def __init__(self, schema: Schema | None, now: datetime, text: str, *, ansi: bool = False) -> None:
        self.schema = dict(schema) if schema is not None else None
        self.ansi = ansi
        # ids of nodes a try_* function compiles: their own check stays off in ANSI mode (NULL instead)
        self.unguarded: set[int] = set()
        self.by_lower = {name.lower(): name for name in self.schema or {}}
        self.now: datetime = now
        self.text = text
        # keyed by id(node); the node is kept in the value so its id is never reused for a temporary
        # node a handler builds and drops (a stale hit would compile the wrong node)
        self._compiled: dict[int, tuple[exp.Expression, pl.Expr]] = {}
        self._types: dict[int, tuple[exp.Expression, pl.DataType | None]] = {}
        self._empty = _empty_frame(tuple(self.schema.items()) if self.schema else ())

    def compile(self, node: exp.Expression) -> pl.Expr:
        key = id(node)
        if key not in self._compiled:
            self._compiled[key] = (node, self._compile(node))
        return self._compiled[key][1]

    def _compile(self, node: exp.Expression) -> pl.Expr:
        handler = _HANDLERS.get(type(node))
        if handler is None:
            name = str(node.name).upper() if isinstance(node, exp.Anonymous) else _construct_name(node)
            raise SqlExpressionError(unsupported(name, self.text))
        if type(node) in _ARGS:
            self.allow_args(node, *_ARGS[type(node)])
        return handler(self, node)

    def allow_args(self, node: exp.Expression, *keys: str) -> None:
        """Refuse arguments a handler does not read (a new sqlglot flag fails loudly, never silently)."""
        extra = [key for key, value in node.args.items() if key not in keys and value not in (None, False, [])]
        if extra:
            raise SqlExpressionError(
                f"'{node.sql(dialect=READ_DIALECT)}' uses {', '.join(extra)} of {type(node).__name__}, which is "
                f"not supported (in {self.text!r}); {_DOCS}"
            )

    def arg(self, node: exp.Expression, key: str = "this") -> pl.Expr:
        child = node.args.get(key)
        if child is None:
            raise SqlExpressionError(f"'{node.sql(dialect=READ_DIALECT)}' is missing an argument (in {self.text!r})")
        return self.compile(child)

    def dtype(self, node: exp.Expression) -> pl.DataType | None:
        """The Polars dtype ``node`` evaluates to (``None`` when it reads columns and there is no schema)."""
        key = id(node)
        if key not in self._types:
            expr = self.compile(node)
            try:
                self._types[key] = (node, self._empty.select(expr).collect_schema().dtypes()[0])
            except pl.exceptions.PolarsError:
                self._types[key] = (node, None)
        return self._types[key][1]

    def cast(self, node: exp.Expression, dtype: pl.DataType, *, guarded: bool = True) -> pl.Expr:
        """``node`` cast to ``dtype`` with Spark's CAST semantics (``guarded``: raising in ANSI mode)."""
        result, checks = self.cast_checked(node, dtype, ansi=None if guarded else False)
        return guard_all(result, dtype, checks, self.text) if checks else result

    def cast_checked(
        self, node: exp.Expression, dtype: pl.DataType, *, ansi: bool | None = None
    ) -> tuple[pl.Expr, list[Check]]:
        """``node`` cast to ``dtype`` as ANSI off casts it, and the ANSI checks of that cast (none with ANSI off).

        For a cast Spark evaluates on some rows only (a CASE branch): mask the checks (:func:`masked`).
        """
        value, source = self.compile(node), self.dtype(node)
        try:
            result = spark_cast(value, source, dtype)
        except CoercionError as e:
            raise SqlExpressionError(f"{e} (in {self.text!r})") from None
        if not (self.ansi if ansi is None else ansi) or source is None or source == dtype:
            return result, []
        refused = ansi_refusal(source, dtype)
        if refused:
            raise SqlExpressionError(f"{refused} with {ANSI_SETTING} on (in {self.text!r})")
        # '-9223372036854775808L' is the negation of a BIGINT literal that alone would not fit
        if (
            isinstance(node, exp.Literal)
            and isinstance(node.parent, exp.Cast)
            and isinstance(node.parent.parent, exp.Neg)
        ):
            return result, []
        checks = cast_checks(value, source, dtype, result)
        # a constant that casts fine needs no check (Polars masks a branch's computed values, not its
        # literals, so the check of TIMESTAMP'2024-01-01 00:00:00' would fail on rows a CASE does not take)
        return result, [] if checks and _never_fails(checks) else checks

    def constant_null(self, node: exp.Expression) -> bool:
        """Whether ``node`` reads no column and is NULL: Spark's optimizer folds an operator over it to NULL
        before anything is evaluated (``s + CAST(NULL AS INT)`` casts nothing)."""
        return _constant(self.compile(node)) == (True, None)

    def column(self, node: exp.Column) -> pl.Expr:
        name = node.name
        if self.schema is None:
            return pl.col(name)
        resolved = name if name in self.schema else self.by_lower.get(name.lower())
        if resolved is None:
            raise SqlExpressionError(
                f"column '{name}' in {self.text!r} does not exist (columns: {', '.join(self.schema)})"
            )
        return pl.col(resolved)

    def dtype_of(self, node: exp.Expression) -> pl.DataType | None:
        """The input dtype when ``node`` is a plain column and the schema is known."""
        return self.dtype(node) if isinstance(node, exp.Column) else None

    def temporal(self, node: exp.Expression, target: type[pl.DataType]) -> pl.Expr:
        """``node`` as a Date/Datetime: strings are parsed (ISO), temporals pass through."""
        inner = (
            node.this
            if isinstance(node, (exp.TsOrDsToDate, exp.TimeStrToTime)) and not node.args.get("format")
            else node
        )
        expr = self.compile(inner)
        dtype = self.dtype(inner)
        if dtype is not None and dtype.is_temporal():
            return expr.dt.date() if target is pl.Date and isinstance(dtype, pl.Datetime) else expr
        if target is pl.Date:
            return expr.cast(pl.String).str.to_date(strict=False)
        return expr.cast(pl.String).str.to_datetime(strict=False, time_zone="UTC")

    def literal_int(self, node: exp.Expression | None) -> int:
        if isinstance(node, exp.Literal) and not node.is_string:
            return int(node.this)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            return -int(node.this.this)
        raise SqlExpressionError(
            f"expected an integer literal, got {node.sql() if node else None!r} (in {self.text!r})"
        )

    def literal_str(self, node: exp.Expression | None) -> str:
        if isinstance(node, exp.Literal) and node.is_string:
            return str(node.this)
        raise SqlExpressionError(f"expected a string literal, got {node.sql() if node else None!r} (in {self.text!r})")


def _constant(value: pl.Expr) -> tuple[bool, Any]:
    """``(True, v)`` when ``value`` reads no column and evaluates to the one value ``v``, else ``(False, None)``."""
    if value.meta.root_names():
        return False, None
    try:
        found = pl.select(value.alias("v")).to_series()
    except Exception:  # a constant Polars cannot evaluate alone: treat it as a column
        return False, None
    return (True, found[0]) if len(found) == 1 else (False, None)


def _never_fails(checks: list[Check]) -> bool:
    """Whether checks over constants hold on no row (decided once, at compile time)."""
    failing = _constant(pl.any_horizontal([bad.fill_null(False) for bad, _, _, _ in checks]))
    return failing == (True, False)


@functools.lru_cache(maxsize=64)
def _empty_frame(schema: tuple[tuple[str, pl.DataType], ...]) -> pl.LazyFrame:
    """An empty frame of the schema: Polars resolves expression dtypes against it (no data read)."""
    return pl.LazyFrame(schema=dict(schema))


REFUSED_FUNCTIONS: dict[str, str] = {
    "ARRAYS_ZIP": "its result is an array of structs, which the compiler does not type (struct fields named by "
    "position or column)",
    "CONV": "it reads and prints numbers in any base 2 to 36 through unsigned 64-bit arithmetic, which Polars "
    "has no native expression for",
    "SENTENCES": "it splits text with Java's locale-dependent BreakIterator, which Polars cannot reproduce",
    "TO_NUMBER": "its Oracle-style number formats ('999.99', 'S9,999', '$99') have no Polars counterpart; use "
    "CAST(REPLACE(s, ',', '') AS DECIMAL(p, s))",
    "TRY_TO_NUMBER": "its Oracle-style number formats ('999.99', 'S9,999', '$99') have no Polars counterpart; use "
    "TRY_CAST(REPLACE(s, ',', '') AS DECIMAL(p, s))",
}
"""Spark functions refused on purpose, with why (docs/sql-functions.md, "Not supported")."""


def unsupported(name: str, text: str) -> str:
    """The message for a function or construct outside the allow-list, with the closest names."""
    if name.upper() in REFUSED_FUNCTIONS:
        why = REFUSED_FUNCTIONS[name.upper()]
        return f"SQL function '{name.upper()}' is not supported (in {text!r}): {why} ({_DOCS})"
    close = difflib.get_close_matches(name.upper(), [*SUPPORTED_FUNCTIONS, *CONSTRUCTS], n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"SQL function or construct '{name}' is not supported (in {text!r}){hint} ({_DOCS})"


def _construct_name(node: exp.Expression) -> str:
    return node.sql_name() if isinstance(node, exp.Func) else type(node).__name__


def _literal(c: Compiler, node: exp.Literal) -> pl.Expr:
    if node.is_string:
        return pl.lit(str(node.this), dtype=pl.String)
    value, dtype = literal_number(str(node.this))
    return pl.lit(value, dtype=dtype)


def _negative(c: Compiler, node: exp.Neg) -> pl.Expr:
    # Spark reads "-2147483648" as one INT literal, not the negation of a BIGINT
    if isinstance(node.this, exp.Literal) and not node.this.is_string:
        value, dtype = literal_number("-" + str(node.this.this))
        return pl.lit(value, dtype=dtype)
    return op.negate(c, node)


def _not(c: Compiler, node: exp.Not) -> pl.Expr:
    return ~op.boolean(c, node)


def _logic(c: Compiler, node: exp.Expression) -> pl.Expr:
    conjunction = isinstance(node, exp.And)
    left = op.boolean(c, node)
    if not c.ansi:
        right = op.boolean(c, node, "expression")
    else:  # Spark reads the right side only where the left one does not decide (not FALSE for AND)
        with reached_only(left.ne_missing(not conjunction), conditional=False):
            right = op.boolean(c, node, "expression")
    return left & right if conjunction else left | right


def _escape(c: Compiler, node: exp.Escape) -> pl.Expr:
    like, escape = node.this, c.literal_str(node.args.get("expression"))
    if not isinstance(like, (exp.Like, exp.ILike)) or len(escape) != 1:
        raise SqlExpressionError(f"ESCAPE needs LIKE and one character (in {c.text!r})")
    pattern = c.literal_str(like.args.get("expression"))
    swapped = "".join("\\" + ch if ch == "\\" else "\\" if ch == escape else ch for ch in pattern)
    if escape == "\\":
        swapped = pattern
    replaced = like.copy()
    replaced.set("expression", exp.Literal.string(swapped))
    return op.like(c, replaced)


def _branches(c: Compiler, values: list[exp.Expression], reached: list[pl.Expr]) -> tuple[list[pl.Expr], Guard]:
    """CASE/IF results cast to their common type (Spark's ``findWiderCommonType``, ANSI's with ANSI on).

    ``reached[k]``: the rows on which Spark evaluates ``values[k]``; an ANSI cast raises there only.
    Returns the results and the guard to put on the whole construct (:func:`_guarded`).
    """
    try:
        common = common_type([c.dtype(v) for v in values], ansi=c.ansi)
    except CoercionError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    if common is None:
        return [c.compile(v) for v in values], (pl.Null(), [])
    results, checks = [], []
    for value, rows in zip(values, reached, strict=True):
        result, found = c.cast_checked(value, common)
        results.append(result)
        checks += masked(found, rows, conditional=True)
    return results, (common, checks)


Guard = tuple[pl.DataType, list[Check]]
"""The type of a construct's result and the ANSI checks of its implicit casts."""


def _guarded(c: Compiler, result: pl.Expr, guard: Guard) -> pl.Expr:
    dtype, checks = guard
    return guard_all(result, dtype, checks, c.text) if checks else result


def _case(c: Compiler, node: exp.Case) -> pl.Expr:
    ifs = node.args.get("ifs") or []
    if not ifs:
        raise SqlExpressionError(f"CASE needs at least one WHEN (in {c.text!r})")
    for branch in ifs:
        c.allow_args(branch, "this", "true")
    subject = node.args.get("this")
    default = node.args.get("default") or exp.Null()
    conditions = [
        pl.Expr.__eq__(*op.coerced_pair(c, subject, branch.this))
        if subject is not None
        else op.boolean(c, branch, strict=True)
        for branch in ifs
    ]
    reached, earlier = [], pl.lit(False)
    for condition in conditions:  # a branch is evaluated where its condition is the first TRUE one
        reached.append(~earlier & condition.fill_null(False))
        earlier = earlier | condition.fill_null(False)
    results, guard = _branches(c, [*(b.args["true"] for b in ifs), default], [*reached, ~earlier])
    chain: Any = pl
    for condition, result in zip(conditions, results, strict=False):
        chain = chain.when(condition).then(result)
    return _guarded(c, chain.otherwise(results[-1]), guard)


def _if(c: Compiler, node: exp.If) -> pl.Expr:
    condition = op.boolean(c, node)
    taken = condition.fill_null(False)
    (true, false), guard = _branches(c, [node.args["true"], node.args.get("false") or exp.Null()], [taken, ~taken])
    return _guarded(c, pl.when(condition).then(true).otherwise(false), guard)


def _cast(c: Compiler, node: exp.Cast) -> pl.Expr:
    try:
        dtype = polars_dtype(node.args["to"].sql(dialect=READ_DIALECT))
    except ValueError as e:
        raise SqlExpressionError(f"{e} (in {c.text!r})") from None
    # sqlglot reads Spark's CAST as a TryCast too (ANSI-off CAST gives NULL); TRY_CAST sets "safe"
    return c.cast(node.this, dtype, guarded=not node.args.get("safe"))


def _anonymous(c: Compiler, node: exp.Anonymous) -> pl.Expr:
    name = str(node.name).upper()
    if name == "PMOD":
        if len(node.expressions) != 2:
            raise SqlExpressionError(f"PMOD takes two arguments (in {c.text!r})")
        return op.arithmetic_of(c, "PMOD", *node.expressions)
    handler = FUNCTION_NAMES.get(name)
    if handler is None:
        raise SqlExpressionError(unsupported(name, c.text))
    return handler(c, node)


_ARGS: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.Like: ("this", "expression", "negate"),
    exp.ILike: ("this", "expression", "negate"),
    exp.In: ("this", "expressions"),
    exp.Between: ("this", "low", "high"),
    exp.RegexpLike: ("this", "expression"),
    exp.Cast: ("this", "to", "_type"),
    exp.TryCast: ("this", "to", "_type", "safe"),
    exp.Case: ("this", "ifs", "default"),
    exp.If: ("this", "true", "false"),
    exp.Is: ("this", "expression"),
    exp.Escape: ("this", "expression"),
}
"""The sqlglot arguments each construct handler reads; anything else set on a node is refused."""

_HANDLERS: dict[type[exp.Expression], Callable[[Compiler, Any], pl.Expr]] = {
    exp.Column: Compiler.column,
    exp.Literal: _literal,
    exp.Boolean: lambda c, n: pl.lit(bool(n.this)),
    exp.Null: lambda c, n: pl.lit(None),
    exp.Paren: lambda c, n: c.arg(n),
    exp.Neg: _negative,
    exp.Not: _not,
    exp.Add: op.arithmetic("+"),
    exp.Sub: op.arithmetic("-"),
    exp.Mul: op.arithmetic("*"),
    exp.Div: op.arithmetic("/"),
    exp.IntDiv: op.arithmetic("DIV"),
    exp.Mod: op.arithmetic("%"),
    exp.EQ: op.comparison(pl.Expr.__eq__, equality=True),
    exp.NEQ: op.comparison(pl.Expr.__ne__, equality=True),
    exp.NullSafeEQ: op.comparison(pl.Expr.eq_missing, equality=True),
    exp.NullSafeNEQ: op.comparison(pl.Expr.ne_missing, equality=True),
    exp.LT: op.comparison(pl.Expr.__lt__),
    exp.LTE: op.comparison(pl.Expr.__le__),
    exp.GT: op.comparison(pl.Expr.__gt__),
    exp.GTE: op.comparison(pl.Expr.__ge__),
    exp.And: _logic,
    exp.Or: _logic,
    exp.BitwiseAnd: op.bitwise(pl.Expr.__and__),
    exp.BitwiseOr: op.bitwise(pl.Expr.__or__),
    exp.BitwiseXor: op.bitwise(pl.Expr.__xor__),
    exp.DPipe: op.concat_pipe,
    exp.Is: op.is_,
    exp.In: op.in_list,
    exp.Between: op.between,
    exp.Like: op.like,
    exp.ILike: op.like,
    exp.Escape: _escape,
    exp.RegexpLike: op.rlike,
    exp.Case: _case,
    exp.If: _if,
    exp.Cast: _cast,
    exp.TryCast: _cast,
    exp.Anonymous: _anonymous,
    **FUNCTION_NODES,
}
