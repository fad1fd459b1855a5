"""The generated corpus: operators and constructs crossed with the input columns and literals.

Nothing here is hand-picked per case: each generator crosses an operator or construct with the
operands of every kind it accepts (and some it does not, so Spark's analysis errors are checked to be
our compile-time rejections). ``SAMPLE`` keeps three-way crosses to a fixed, seeded subset.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence

from tests.core.sql.oracle.harness import Case

# Operands by Spark kind: the table's columns, literals of the kind (including a typed NULL).
OPERANDS: dict[str, tuple[str, ...]] = {
    "int": ("i", "j", "7", "-3", "0", "2147483647", "CAST(NULL AS INT)"),
    "bigint": ("l", "3L", "-9223372036854775808L"),
    "double": ("d", "e", "2.5D", "-1.5e0", "0.0D"),
    "decimal": ("m", "1.5", "-0.25", "0.00"),
    "string": ("s", "t", "n", "'abc'", "''", "' 42 '", "'tst%'"),
    "boolean": ("b", "c", "true", "false", "CAST(NULL AS BOOLEAN)"),
    "date": ("dt", "DATE'2024-02-29'"),
    "timestamp": ("ts", "TIMESTAMP'2024-03-31 01:30:00'"),
    "timestamp_ntz": ("tn",),
    "null": ("NULL",),
}
NUMERIC = ("int", "bigint", "double", "decimal")
KINDS = tuple(OPERANDS)
# one column and one literal per kind: for crosses that would otherwise be too large
FEW: dict[str, tuple[str, ...]] = {
    kind: values[:1] + values[-1:] if len(values) > 1 else values for kind, values in OPERANDS.items()
}
SAMPLE = 400
CAST_TYPES = ("INT", "BIGINT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL(10,2)", "DECIMAL(5,0)", "STRING",
              "BOOLEAN", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ")  # fmt: skip
CAST_SOURCES = ("' 12 '", "'1.5'", "'-7.9'", "'1e3'", "'abc'", "''", "'2147483648'", "'t'", "'YES'", "'0'", "'2024-02-29'",
                "'2024-2-3'", "'2024-02-29 23:59:59.123'", "'2024-03-31T01:30:00Z'", "'2024-03-31 01:30:00+02:00'",
                "'2024'", "'2024-13-01'", "' true '", "'NaN'", "'-Infinity'", "'1.5d'", "'.5'", "'5.'", "2.5D", "-2.5D",
                "1e10", "-1e20", "1.255", "2147483647", "-9223372036854775808L", "1e-5", "1234567.0D", "12345678.9D",
                "0.001D", "true", "false")  # fmt: skip


def operands(*kinds: str) -> tuple[str, ...]:
    """The operands of the given kinds, in order."""
    return tuple(value for kind in kinds for value in OPERANDS[kind])


def few(*kinds: str) -> tuple[str, ...]:
    return tuple(value for kind in kinds for value in FEW[kind])


def sample(cases: Sequence[Case], size: int = SAMPLE, seed: int = 0) -> list[Case]:
    """A fixed, seeded subset (the same on every run)."""
    return list(cases) if len(cases) <= size else random.Random(seed).sample(list(cases), size)


def arithmetic_cases() -> Iterator[Case]:
    numbers = operands(*NUMERIC, "null")
    for op in ("+", "-", "*", "/", "%"):
        for left, right in itertools.product(numbers, numbers):
            yield Case(f"{left} {op} {right}", origin=f"arithmetic {op}")
    exact = operands("int", "bigint", "decimal", "null")
    for left, right in itertools.product(exact, exact):
        yield Case(f"{left} DIV {right}", origin="arithmetic DIV")
    others = ("s", "n", "' 42 '", "b", "dt", "ts")
    for op in ("+", "-", "*", "/", "%", "DIV"):
        for left, right in itertools.product(("i", "l", "d", "m", *others), others):
            yield Case(f"{left} {op} {right}", origin=f"arithmetic {op} non-numeric")
            yield Case(f"{right} {op} {left}", origin=f"arithmetic {op} non-numeric")
    for left, right in itertools.product(numbers, numbers):
        yield Case(f"PMOD({left}, {right})", origin="PMOD")
        yield Case(f"MOD({left}, {right})", origin="MOD")
    for value in operands(*NUMERIC, "string", "null"):
        yield Case(f"-{value}" if not value.startswith("-") else f"-({value})", origin="unary -")
    for op in ("&", "|", "^"):
        for left, right in itertools.product(operands("int", "bigint"), few("int", "bigint", "double")):
            yield Case(f"{left} {op} {right}", origin=f"bitwise {op}")


def comparison_cases() -> Iterator[Case]:
    every = few(*KINDS)
    for op in ("=", "<"):
        for left, right in itertools.product(every, every):
            yield Case(f"{left} {op} {right}", origin=f"comparison {op}")
    columns = tuple(values[0] for values in OPERANDS.values())
    for left, right in itertools.product(columns, columns):
        yield Case(f"{left} <=> {right}", origin="comparison <=>")
    for op in ("<>", "!=", "<=", ">", ">=", "=="):
        pairs = itertools.product(operands(*NUMERIC, "string"), few(*NUMERIC, "string", "null"))
        yield from sample([Case(f"{a} {op} {b}", origin=f"comparison {op}") for a, b in pairs], 150, seed=len(op))
    for left, right in itertools.product(columns, columns):
        yield Case(f"{left} IS DISTINCT FROM {right}", origin="IS DISTINCT FROM")


def logic_cases() -> Iterator[Case]:
    bools = (*operands("boolean", "null"), "'true'", "s")
    for left, right in itertools.product(bools, bools):
        yield Case(f"{left} AND {right}", origin="AND")
        yield Case(f"{left} OR {right}", origin="OR")
    for value in (*bools, "i", "d", "dt"):
        yield Case(f"NOT {value}", origin="NOT")
        yield Case(f"{value} IS TRUE", origin="IS TRUE")
        yield Case(f"{value} IS NOT FALSE", origin="IS NOT FALSE")
    for value in operands(*KINDS):
        yield Case(f"{value} IS NULL", origin="IS NULL")
        yield Case(f"{value} IS NOT NULL", origin="IS NOT NULL")


def predicate_cases() -> Iterator[Case]:
    lists = ("(1, 2)", "(1, NULL)", "(-59, 7L)", "(1.25, 2.5)", "('abc', 'x')", "('12', 'abc', NULL)", "(NULL)",
             "(i, j)", "(2.5D, NULL)")  # fmt: skip
    for value, values in itertools.product(few(*NUMERIC, "string", "null"), lists):
        yield Case(f"{value} IN {values}", origin="IN")
        yield Case(f"{value} NOT IN {values}", origin="NOT IN")
    bounds = ("0 AND 10", "-100 AND 1.5", "j AND i", "NULL AND 5", "'1' AND '5'", "2.5D AND l")
    for value, bound in itertools.product(few(*NUMERIC, "string", "null"), bounds):
        yield Case(f"{value} BETWEEN {bound}", origin="BETWEEN")
        yield Case(f"{value} NOT BETWEEN {bound}", origin="NOT BETWEEN")
    for value in ("dt", "ts"):
        yield Case(f"{value} BETWEEN DATE'2024-01-01' AND DATE'2024-12-31'", origin="BETWEEN temporal")
    patterns = ("'tst%'", "'%b%'", "'a\\_b%'", "'_'", "''", "'%'", "'ABC'", "'%ünï%'", "'a_b%c'", "'%\\%%'", "NULL")
    for value, pattern in itertools.product(("s", "t", "n", "i", "'tst-9'"), patterns):
        for op in ("LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"):
            yield Case(f"{value} {op} {pattern}", origin=op)
    yield Case("s LIKE 'a!_b%' ESCAPE '!'", origin="ESCAPE")
    yield Case("s NOT LIKE 'a!_b%' ESCAPE '!'", origin="ESCAPE")
    regexes = ("'^tst'", "'[0-9]+'", "'b$'", "'(?i)abc'", "''", "'.'", "'\\\\d'")
    for value, regex in itertools.product(("s", "t", "n", "i"), regexes):
        yield Case(f"{value} RLIKE {regex}", origin="RLIKE")
        yield Case(f"{value} NOT RLIKE {regex}", origin="NOT RLIKE")
        yield Case(f"{value} REGEXP {regex}", origin="REGEXP")


def conditional_cases() -> Iterator[Case]:
    results = few(*KINDS)
    for then, other in itertools.product(results, results):
        yield Case(f"CASE WHEN b THEN {then} ELSE {other} END", origin="CASE WHEN")
        yield Case(f"IF(i > 0, {then}, {other})", origin="IF")
    for subject, value in itertools.product(few(*NUMERIC, "string", "null"), few(*NUMERIC, "string", "null")):
        yield Case(f"CASE {subject} WHEN {value} THEN 'hit' WHEN NULL THEN 'null' END", origin="CASE x WHEN")
    for condition in ("NULL", "c", "i > 0 AND b", "s = 'abc'", "'true'"):
        yield Case(f"CASE WHEN {condition} THEN 1 WHEN NOT b THEN 2 END", origin="CASE condition")


def cast_cases() -> Iterator[Case]:
    for source, target in itertools.product((*operands(*KINDS), *CAST_SOURCES), CAST_TYPES):
        yield Case(f"CAST({source} AS {target})", origin=f"CAST AS {target}")


def concat_cases() -> Iterator[Case]:
    for left, right in itertools.product(few(*KINDS), few(*KINDS)):
        yield Case(f"{left} || {right}", origin="||")


def date_arithmetic_cases() -> Iterator[Case]:
    for date, days in itertools.product(("dt", "DATE'2024-02-29'"), ("1", "-1", "i", "j", "l", "NULL")):
        yield Case(f"{date} + {days}", origin="date + int")
        yield Case(f"{date} - {days}", origin="date - int")
    for value, unit in itertools.product(("ts", "tn", "dt"), ("1 DAY", "2 HOURS", "1 MONTH", "-1 YEAR", "30 MINUTES")):
        yield Case(f"{value} + INTERVAL {unit}", origin="INTERVAL")
        yield Case(f"{value} - INTERVAL {unit}", origin="INTERVAL")


def zero_sign_cases() -> Iterator[Case]:
    """Sums and differences with a zero, as text: the value comparison sees no sign of a zero, the text does."""
    zeros = ("0", "0.0D", "-0.0D", "CAST('0' AS DOUBLE)", "(0 * 1e10)")
    for value, zero, op in itertools.product(("d", "e", "-0.0D", "0.0D"), zeros, "+-"):
        yield Case(f"CAST(({value} {op} {zero}) AS STRING)", origin="zero sign")
        yield Case(f"CAST(({zero} {op} {value}) AS STRING)", origin="zero sign")


def probe_finding_cases() -> Iterator[Case]:
    """What a probe of random trees found: explicit integer casts next to decimals (typed as the full type,
    not as a literal), constant-folded operands that Polars shrank to one row, zero-padded years."""
    casts = ("CAST(1e10 AS INT)", "CAST(3 AS BIGINT)", "CAST(-3 AS SMALLINT)", "CAST(7 AS TINYINT)", "3L", "-3L",
             "-CAST(3 AS INT)")  # fmt: skip
    for cast, decimal in itertools.product(casts, ("1.5", "m", "IF(c, 1.5, -0.25)")):
        yield Case(f"{decimal} + {cast}", origin="decimal + integer cast")
        yield Case(f"{cast} * {decimal} + 1.5", origin="decimal + integer cast")
    for constant in ("COALESCE('', n)", "COALESCE(1, i)", "CAST(CAST('abc' AS DOUBLE) AS DECIMAL(12,3))"):
        yield Case(f"'abc' <=> {constant}", origin="constant folded to one row")
        yield Case(f"NOT IF(2.5D IS NULL, true, {constant} IS NULL)", origin="constant folded to one row")
    yield Case("CAST(CAST('abc' AS DOUBLE) AS DECIMAL(12,3)) <> CAST(CAST(s AS DOUBLE) AS DECIMAL(12,3))",
               origin="constant folded to one row")  # fmt: skip
    # not l or d: LONG_MAX / 7 prints 1.31762457669353933E18 in Java 17 (its Double.toString is not
    # shortest before JDK 19), a known difference in printing only
    for left, right in itertools.product(("i", "-7"), ("1e10", "3.0D", "-0.1D", "7")):
        yield Case(f"CAST(({left} / {right}) AS STRING)", origin="division by a constant")
    for prefix, kind in itertools.product(("'0'", "'00'", "'000'", "'+'", "'+0'"), ("DATE", "TIMESTAMP")):
        yield Case(f"CAST(CONCAT({prefix}, dt) AS {kind})", origin="zero-padded year")
        yield Case(f"CAST(CONCAT({prefix}, CAST(ts AS STRING)) AS {kind})", origin="zero-padded year")


def _clock_texts() -> Iterator[str]:
    """Timestamp texts at each calendar and clock field's last valid value and the one past it."""
    for year, month, day in itertools.product((2023, 2024), (2, 4, 12, 13), (28, 29, 30, 31, 32)):
        yield f"'{year}-{month:02d}-{day:02d} 12:00:00'"
    for hour, minute, second in itertools.product((0, 23, 24), (0, 59, 60), (0, 59, 60, 61)):
        yield f"'2024-02-29 {hour:02d}:{minute:02d}:{second:02d}'"
    # not '7:5:9' with 'HH': Spark raises (its legacy parser would read it), a documented difference
    yield from ("'2024-02-29 24:00'", "'2024-02-29T24:00:00Z'", "'2024-12-31 23:59:60.5'")


CLOCK_CONSUMERS = ("CAST({} AS TIMESTAMP)", "CAST({} AS TIMESTAMP_NTZ)", "CAST({} AS DATE)", "TO_TIMESTAMP({})",
                   "TO_TIMESTAMP({}, 'yyyy-MM-dd HH:mm:ss')", "TO_TIMESTAMP({}, 'yyyy-MM-dd H:m:s')",
                   "TO_DATE({}, 'yyyy-MM-dd HH:mm:ss')", "DATE_FORMAT({}, 'yyyy-MM-dd HH:mm:ss')", "HOUR({})",
                   "MINUTE({})", "SECOND({})", "UNIX_TIMESTAMP({})", "UNIX_TIMESTAMP({}, 'yyyy-MM-dd HH:mm:ss')",
                   "TO_UNIX_TIMESTAMP({})", "DAYOFMONTH({})")  # fmt: skip


def calendar_clock_cases() -> Iterator[Case]:
    """Invalid calendar and clock values (Feb 30, 24:00, 23:59:60) in every function that reads a time text."""
    for text, consumer in itertools.product(_clock_texts(), CLOCK_CONSUMERS):
        yield Case(consumer.format(text), origin="calendar and clock bounds")


def _pre_epoch_instants() -> Iterator[str]:
    """Instants a fraction of a second on either side of a whole second, before and after 1970."""
    for second, fraction in itertools.product(("1969-12-31 23:59:59", "1969-12-31 23:59:58", "1900-06-15 08:00:00",
                                                "1970-01-01 00:00:00", "2024-02-29 12:00:00"),
                                              ("", ".5", ".000001", ".999999")):  # fmt: skip
        yield f"TIMESTAMP'{second}{fraction}'"


EPOCH_CONSUMERS = ("UNIX_TIMESTAMP({})", "TO_UNIX_TIMESTAMP({})", "UNIX_SECONDS({})", "UNIX_MILLIS({})",
                   "UNIX_MICROS({})", "CAST({} AS BIGINT)", "CAST({} AS INT)", "CAST({} AS DOUBLE)",
                   "CAST({} AS DECIMAL(20,6))", "FROM_UNIXTIME(UNIX_TIMESTAMP({}))",
                   "UNIX_TIMESTAMP(DATE_FORMAT({}, 'yyyy-MM-dd HH:mm:ss.SSSSSS'), 'yyyy-MM-dd HH:mm:ss.SSSSSS')",
                   "DATE_FORMAT({}, 'yyyy-MM-dd HH:mm:ss')", "SECOND({})")  # fmt: skip
FRACTIONAL_SECONDS = ("-0.5", "-1.5", "-0.000001", "-1.999999", "0.5", "-86400.25", "-2208988800.5")


def pre_epoch_fraction_cases() -> Iterator[Case]:
    """Fractional instants before the epoch, where flooring and truncating a division differ."""
    for instant, consumer in itertools.product(_pre_epoch_instants(), EPOCH_CONSUMERS):
        yield Case(consumer.format(instant), origin="fractional pre-epoch instant")
    for seconds, form in itertools.product(FRACTIONAL_SECONDS, ("{}D", "{}", "CAST({} AS FLOAT)")):
        value = form.format(seconds)
        yield Case(f"FROM_UNIXTIME({value})", origin="fractional pre-epoch seconds")
        yield Case(f"TIMESTAMP_SECONDS({value})", origin="fractional pre-epoch seconds")
        yield Case(f"CAST({value} AS TIMESTAMP)", origin="fractional pre-epoch seconds")


def _decimal_ties() -> Iterator[str]:
    """Decimal texts exactly halfway between two values of scale 0-3, whose double is just below or above."""
    for scale, lead in itertools.product(range(4), ("0", "1", "2", "9", "99999999", "-2", "-9")):
        for last in ("0", "1", "2", "4", "6", "7", "9"):
            whole, fraction = (lead, last * scale + "5") if scale else (lead + last, "5")
            yield f"{whole}.{fraction}"
    yield from ("0.125", "2.675", "1.005", "9.995", "1.0049999999999999", "0.00015", "1.5e-7", "-0.0005")


DECIMAL_TARGETS = ("DECIMAL(10,0)", "DECIMAL(10,1)", "DECIMAL(10,2)", "DECIMAL(10,3)", "DECIMAL(12,7)",
                   "DECIMAL(38,2)", "DECIMAL(3,2)")  # fmt: skip


def decimal_tie_cases() -> Iterator[Case]:
    """Doubles, floats and texts at decimal ties, into every decimal scale and through ROUND/BROUND."""
    for tie in _decimal_ties():
        for form, target in itertools.product((f"{tie}D", f"CAST({tie} AS FLOAT)", f"'{tie}'"), DECIMAL_TARGETS):
            yield Case(f"CAST({form} AS {target})", origin="decimal tie cast")
        for scale in range(4):
            yield Case(f"ROUND({tie}D, {scale})", origin="decimal tie round")
            yield Case(f"BROUND({tie}D, {scale})", origin="decimal tie round")


def _special_case_letters() -> str:
    """Letters whose case mapping is not one-to-one: full mappings of several code points, title-case
    letters apart from upper case, dotted and dotless i, final sigma (from the Unicode data)."""
    found = []
    for code in itertools.chain(range(0x80, 0x590), range(0x10A0, 0x1100), range(0x1E00, 0x2000),
                                range(0xFB00, 0xFB18)):  # fmt: skip
        letter = chr(code)
        if letter.isalpha() and (
            len(letter.upper()) > 1 or len(letter.lower()) > 1 or letter.title() != letter.upper()
        ):
            found.append(letter)
    return "".join(found)


def case_mapping_cases() -> Iterator[Case]:
    """Every special-case letter at a word's start, inside it and alone, through the case functions."""
    letters = _special_case_letters() + "İıΣσς"
    texts = [f"'{letter}x {letter}{letter} a{letter}'" for letter in letters]
    texts += ["'ΣΑΣ ΑΣ'", "'İstanbul'", "'ǅemal ǈjubljana'", "'straße STRASSE'", "'ﬁx ﬂow'"]
    for text, function in itertools.product(texts, ("INITCAP", "UPPER", "LOWER")):
        yield Case(f"{function}({text})", origin=f"non-ASCII case mapping {function}")


# strings whose text is a whole number, a decimal, a date, a boolean or none of these: with ANSI on, Spark
# casts a STRING next to another type to that type (BIGINT next to an integer), raising on malformed text
ANSI_STRINGS = ("CAST(i AS STRING)", "n", "s", "'12'", "' 42 '", "'1.5'", "'2024-02-29'", "'true'")
# Spark evaluates a CASE branch, an IF side or a COALESCE argument only on the rows that reach it
WHOLE_TEXT = "n RLIKE '^ *-?[0-9]+ *$'"
STRING_CONSTRUCTS = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "{a} % {b}", "{a} DIV {b}", "{a} = {b}",
                     "{a} < {b}", "{a} <=> {b}", "{a} IN ({b}, 7)", "COALESCE({a}, {b})", "NVL({a}, {b})",
                     "IFNULL({a}, {b})", "NVL2({a}, {b}, NULL)", "NULLIF({a}, {b})", "DECODE(i, 1, {a}, {b})",
                     "CASE WHEN b THEN {a} ELSE {b} END", "IF(i > 0, {a}, {b})", "ARRAY({a}, {b})")  # fmt: skip
GUARDED_BRANCHES = (f"CASE WHEN {WHOLE_TEXT} THEN n ELSE {{b}} END", f"IF({WHOLE_TEXT}, n, {{b}})",
                    f"IF(NOT {WHOLE_TEXT}, {{b}}, n)", f"CASE WHEN n IS NULL THEN {{b}} WHEN {WHOLE_TEXT} THEN n END",
                    "COALESCE(i, n, {b})", "COALESCE({b}, n)", f"DECODE({WHOLE_TEXT}, true, n, {{b}})",
                    f"{WHOLE_TEXT} AND CAST(n AS INT) > {{b}}", f"NOT {WHOLE_TEXT} OR n < {{b}}",
                    "COALESCE(i, CAST(n AS INT), {b})", "i IS NOT NULL OR CAST(n AS BIGINT) = {b}")  # fmt: skip


def string_coercion_cases() -> Iterator[Case]:
    """A STRING meeting every other kind in each construct that coerces operands (both orders), and
    branches that hold malformed text on rows Spark never evaluates them on."""
    others = tuple(value for kind in KINDS if kind != "string" for value in FEW[kind])
    crossed = [
        Case(construct.format(a=a, b=b), origin=f"string coercion {construct.split('(')[0] or construct}")
        for construct in STRING_CONSTRUCTS
        for string, other in itertools.product(ANSI_STRINGS, others)
        for a, b in ((string, other), (other, string))
    ]
    yield from sample(crossed, 900, seed=29)
    for branch, other in itertools.product(GUARDED_BRANCHES, ("i", "l", "d", "m", "dt", "NULL", "'x'")):
        yield Case(branch.format(b=other), origin="string coercion on the rows reached")


GENERATORS = (arithmetic_cases, comparison_cases, logic_cases, predicate_cases, conditional_cases, cast_cases,
              concat_cases, date_arithmetic_cases, zero_sign_cases, probe_finding_cases, calendar_clock_cases,
              pre_epoch_fraction_cases, decimal_tie_cases, case_mapping_cases, string_coercion_cases)  # fmt: skip


def operator_cases() -> Iterator[Case]:
    """Every operator/construct over operands of every kind."""
    for generator in GENERATORS:
        yield from generator()
