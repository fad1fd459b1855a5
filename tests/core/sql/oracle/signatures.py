"""Argument kinds of every supported function: the oracle crosses each with the table's operands.

A signature is a comma-separated list of argument kinds; ``|`` separates a function's signatures.
Kinds: ``num`` (INT, BIGINT, DOUBLE, DECIMAL), ``int``, ``str``, ``date``, ``ts`` (TIMESTAMP and
TIMESTAMP_NTZ), ``bool``, ``any``; a quoted literal list such as ``'yyyy-MM-dd'/'HH:mm'`` is
literal-only (format strings, units, scales). A function added to ``SUPPORTED_FUNCTIONS`` without
a line here fails ``test_every_supported_function_has_a_signature``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from tests.core.sql.oracle.harness import Case

KIND_OPERANDS: dict[str, tuple[str, ...]] = {
    "num": ("i", "l", "d", "m", "NULL"),
    "int": ("j", "2", "-1", "NULL"),  # small: REPEAT(s, 2147483647) would allocate gigabytes
    "str": ("s", "t", "n", "NULL"),
    "date": ("dt", "n", "NULL"),
    "ts": ("ts", "tn", "dt", "NULL"),
    "bool": ("b", "c", "NULL"),
    "any": ("i", "d", "s", "dt", "b", "NULL"),
}
MAX_PER_SIGNATURE = 60

# fmt: off
SIGNATURES: dict[str, str] = {
    "ABS": "num", "ACOS": "num", "ACOSH": "num", "ASIN": "num", "ASINH": "num", "ATAN": "num", "ATAN2": "num,num",
    "ATANH": "num", "CBRT": "num", "COS": "num", "COSH": "num", "COT": "num", "CSC": "num", "SEC": "num",
    "SIN": "num", "SINH": "num", "TAN": "num", "TANH": "num", "DEGREES": "num", "RADIANS": "num", "EXP": "num",
    "EXPM1": "num", "LN": "num", "LOG": "num|num,num", "LOG10": "num", "LOG1P": "num", "LOG2": "num",
    "SQRT": "num", "POW": "num,num", "POWER": "num,num", "HYPOT": "num,num", "SIGN": "num", "SIGNUM": "num",
    "NEGATIVE": "num", "POSITIVE": "num", "RINT": "num", "FACTORIAL": "int", "E": "", "PI": "",
    "CEIL": "num|num,'0'/'1'/'-1'", "CEILING": "num", "FLOOR": "num|num,'0'/'1'/'-1'",
    "ROUND": "num|num,'0'/'1'/'2'/'-1'/'-2'", "BROUND": "num|num,'0'/'1'/'-1'", "MOD": "num,num", "PMOD": "num,num",
    "GREATEST": "num,num|str,str|date,date", "LEAST": "num,num|str,str|date,date", "ISNAN": "num",
    "NANVL": "num,num", "WIDTH_BUCKET": "num,'0',num,'5'", "TRY_ADD": "num,num", "TRY_SUBTRACT": "num,num",
    "TRY_MULTIPLY": "num,num", "TRY_DIVIDE": "num,num", "BIN": "int", "HEX": "int|str", "BIT_COUNT": "int",
    "BIT_GET": "int,'0'/'3'", "GETBIT": "int,'1'", "SHIFTLEFT": "int,'1'/'31'", "SHIFTRIGHT": "int,'1'/'33'",
    "SHIFTRIGHTUNSIGNED": "int,'1'/'4'",
    "ASCII": "str", "BASE64": "str", "BIT_LENGTH": "str", "OCTET_LENGTH": "str", "CHAR_LENGTH": "str",
    "CHARACTER_LENGTH": "str", "LENGTH": "str|num", "LEN": "str", "LOWER": "str", "LCASE": "str", "UPPER": "str",
    "UCASE": "str", "INITCAP": "str", "REVERSE": "str", "TRIM": "str", "LTRIM": "str", "RTRIM": "str",
    "BTRIM": "str|str,'ab'", "SOUNDEX": "str", "LUHN_CHECK": "str", "URL_ENCODE": "str", "URL_DECODE": "str",
    "CHAR": "int", "CHR": "int", "SPACE": "int", "REPEAT": "str,int", "LEFT": "str,int", "RIGHT": "str,int",
    "LPAD": "str,'5',''x''|str,int", "RPAD": "str,'5',''xy''|str,int", "CONCAT": "str,str|str,any",
    "CONCAT_WS": "''-'',str,str|''-'',str,any", "CONTAINS": "str,str", "STARTSWITH": "str,str",
    "ENDSWITH": "str,str", "INSTR": "str,str", "LOCATE": "str,str|''b'',str,int", "POSITION": "str,str",
    "REPLACE": "str,str|str,''b'',''X''", "TRANSLATE": "str,''abt'',''xy''", "SPLIT_PART": "str,''-'',int",
    "SUBSTRING_INDEX": "str,''-''/''b'',int", "FIND_IN_SET": "str,str", "ELT": "int,str,str",
    "MASK": "str", "FORMAT_STRING": "''%s-%d''/''%5s:%-3d''/''%05d%%'',str,int",
    "PRINTF": "''%s'',str|''%s'',num|''%d'',int", "OVERLAY": "str,''ZZ'',int", "SUBSTR": "str,int|str,int,int",
    "SUBSTRING": "str,int|str,int,int", "DECODE": "num,'1',''one'',''other''",
    "REGEXP": "str,''[0-9]+''/''^a''", "RLIKE": "str,''b$''", "REGEXP_LIKE": "str,''^t''",
    "REGEXP_COUNT": "str,''[a-z]''", "REGEXP_EXTRACT": "str,''([a-z]+)'',''1''/''0''",
    "REGEXP_INSTR": "str,''[0-9]''", "REGEXP_REPLACE": "str,''[0-9]'',''#''", "REGEXP_SUBSTR": "str,''[a-z]+''",
    "REGEXP_EXTRACT_ALL": "str,''([a-z])([0-9])?'',''0''/''1''/''2''|str,''[a-z]+''",
    "COALESCE": "any|num,num|str,str", "IFNULL": "num,num|str,str", "NVL": "num,num|str,str",
    "NULLIF": "num,num|str,str", "NVL2": "any,num,num", "EQUAL_NULL": "num,num|str,str", "ISNULL": "any",
    "ISNOTNULL": "any", "TYPEOF": "any",
    "BIGINT": "num|str", "INT": "num|str", "SMALLINT": "num|str", "TINYINT": "num|str", "DOUBLE": "num|str",
    "FLOAT": "num|str", "DECIMAL": "num|str", "STRING": "any", "BOOLEAN": "num|str", "DATE": "str|ts",
    "TIMESTAMP": "str|date",
    "YEAR": "date|ts", "QUARTER": "date|ts", "MONTH": "date|ts", "DAY": "date|ts", "DAYOFMONTH": "date|ts",
    "DAYOFWEEK": "date|ts", "DAYOFYEAR": "date|ts", "WEEKDAY": "date|ts", "WEEKOFYEAR": "date|ts", "HOUR": "ts",
    "MINUTE": "ts", "SECOND": "ts", "LAST_DAY": "date", "NEXT_DAY": "date,''Mon''/''friday''",
    "ADD_MONTHS": "date,int", "DATE_ADD": "date,int", "DATEADD": "date,int", "DATE_SUB": "date,int",
    "DATEDIFF": "date,date", "DATE_DIFF": "date,date", "MONTHS_BETWEEN": "ts,ts",
    "DATE_FORMAT": "ts,''yyyy-MM-dd''/''HH:mm:ss''/''E MMM d''", "DATE_TRUNC": "''month''/''hour''/''week'',ts",
    "TRUNC": "date,''MM''/''year''", "DATE_PART": "''YEAR''/''dow'',ts", "DATEPART": "''month'',ts",
    "EXTRACT": "EXTRACT", "MAKE_DATE": "int,int,int", "DATE_FROM_UNIX_DATE": "int", "UNIX_DATE": "date",
    "UNIX_SECONDS": "ts", "UNIX_MILLIS": "ts", "UNIX_MICROS": "ts", "TIMESTAMP_SECONDS": "num",
    "TIMESTAMP_MILLIS": "int", "TIMESTAMP_MICROS": "int", "UNIX_TIMESTAMP": "ts|str,''yyyy-MM-dd''",
    "TO_UNIX_TIMESTAMP": "ts", "FROM_UNIXTIME": "int|int,''yyyy-MM-dd HH''", "TO_DATE": "str|str,''yyyy-MM-dd''",
    "TO_TIMESTAMP": "str|str,''yyyy-MM-dd''", "TO_TIMESTAMP_NTZ": "str", "TO_TIMESTAMP_LTZ": "str",
    "TRY_TO_TIMESTAMP": "str", "MAKE_TIMESTAMP": "int,int,int,int,int,num", "MAKE_TIMESTAMP_NTZ": "int,'1','1','0','0','0'",
    "MAKE_TIMESTAMP_LTZ": "int,'1','1','0','0','0'", "FROM_UTC_TIMESTAMP": "ts,''Europe/Paris''",
    "TO_UTC_TIMESTAMP": "ts,''America/New_York''", "CONVERT_TIMEZONE": "''UTC'',''Asia/Tokyo'',ts",
    "TIMESTAMPADD": "TIMESTAMPADD", "TIMESTAMPDIFF": "TIMESTAMPDIFF", "CURRENT_DATE": "", "CURDATE": "",
    "CURRENT_TIMESTAMP": "", "NOW": "", "LOCALTIMESTAMP": "", "CURRENT_TIMEZONE": "",
    "MD5": "str|num", "SHA": "str", "SHA1": "str", "SHA2": "str,'0'/'224'/'256'/'384'/'512'/'1'", "CRC32": "str",
    "HASH": "any|any,any|num,str,ts", "XXHASH64": "any|any,any|num,str,ts",
    "SPLIT": "str,''-''/''%''//_", "ARRAY": "any|num,num|str,str", "SIZE": "ARRAYS",
    "CARDINALITY": "ARRAYS", "ARRAY_SIZE": "ARRAYS", "GET": "ARRAYS", "ARRAY_COMPACT": "ARRAYS",
    "ARRAY_JOIN": "ARRAYS", "SLICE": "ARRAYS", "ARRAY_MAX": "ARRAYS", "ARRAY_MIN": "ARRAYS",
    "ARRAY_DISTINCT": "ARRAYS", "ARRAY_POSITION": "ARRAYS", "ARRAY_REMOVE": "ARRAYS", "SORT_ARRAY": "ARRAYS",
    "LEVENSHTEIN": "str,str|str,str,int", "FORMAT_NUMBER": "num,'0'/'2'/'-1'", "ELEMENT_AT": "ARRAYS", "TRY_ELEMENT_AT": "ARRAYS", "ARRAY_CONTAINS": "ARRAYS",
    "ARRAY_APPEND": "ARRAYS", "ARRAY_PREPEND": "ARRAYS", "ARRAY_INSERT": "ARRAYS", "ARRAY_REPEAT": "any,int",
    "FLATTEN": "ARRAYS", "ARRAY_UNION": "ARRAYS", "ARRAY_INTERSECT": "ARRAYS", "ARRAY_EXCEPT": "ARRAYS",
    "ARRAYS_OVERLAP": "ARRAYS", "SEQUENCE": "int,int|int,int,int",
}
# fmt: on
_LISTS = ("SPLIT(s, '-')", "SPLIT(t, '%')", "ARRAY(i, j, NULL)", "SPLIT(CAST(NULL AS STRING), ',')")
_ARRAYS = {
    "SIZE": tuple(f"SIZE({a})" for a in _LISTS),
    "CARDINALITY": tuple(f"CARDINALITY({a})" for a in _LISTS),
    "ARRAY_SIZE": tuple(f"ARRAY_SIZE({a})" for a in _LISTS),
    "GET": tuple(f"GET({a}, {k})" for a in _LISTS for k in ("0", "2", "-1")),
    "ARRAY_COMPACT": tuple(f"ARRAY_COMPACT({a})" for a in _LISTS),
    "ARRAY_JOIN": tuple(f"ARRAY_JOIN({a}, ',')" for a in _LISTS),
    "SLICE": tuple(f"SLICE({a}, {k}, 2)" for a in _LISTS for k in ("1", "-2", "3")),
    "ARRAY_MAX": tuple(f"ARRAY_MAX({a})" for a in _LISTS),
    "ARRAY_MIN": tuple(f"ARRAY_MIN({a})" for a in _LISTS),
    "ARRAY_DISTINCT": tuple(f"ARRAY_DISTINCT({a})" for a in _LISTS),
    "ARRAY_POSITION": tuple(f"ARRAY_POSITION({a}, {v})" for a in _LISTS for v in ("'1'", "1")),
    "ARRAY_REMOVE": tuple(f"ARRAY_REMOVE({a}, {v})" for a in _LISTS for v in ("'1'", "1")),
    "SORT_ARRAY": tuple(f"SORT_ARRAY({a}, {o})" for a in _LISTS for o in ("true", "false")),
    "ELEMENT_AT": tuple(f"ELEMENT_AT({a}, {k})" for a in _LISTS for k in ("1", "-1", "3", "-9", "NULL")),
    "TRY_ELEMENT_AT": tuple(f"TRY_ELEMENT_AT({a}, {k})" for a in _LISTS for k in ("2", "-2", "9")),
    "ARRAY_CONTAINS": tuple(f"ARRAY_CONTAINS({a}, {v})" for a in _LISTS[:3] for v in ("'1'", "s", "i", "1")),
    "ARRAY_APPEND": tuple(f"ARRAY_APPEND({a}, {v})" for a in _LISTS for v in ("'1'", "i", "NULL")),
    "ARRAY_PREPEND": tuple(f"ARRAY_PREPEND({a}, {v})" for a in _LISTS for v in ("'1'", "l", "NULL")),
    "ARRAY_INSERT": tuple(
        f"ARRAY_INSERT({a}, {k}, {v})" for a in _LISTS for k in ("1", "-3", "4") for v in ("'1'", "j")
    ),
    "FLATTEN": tuple(f"FLATTEN(ARRAY({a}, {b}))" for a in _LISTS for b in _LISTS),
    **{
        name: tuple(f"{name}({a}, {b})" for a in _LISTS for b in _LISTS)
        for name in ("ARRAY_UNION", "ARRAY_INTERSECT", "ARRAY_EXCEPT", "ARRAYS_OVERLAP")
    },
}
SPECIAL: dict[str, tuple[str, ...]] = {
    **_ARRAYS,
    "EXTRACT": tuple(
        f"EXTRACT({unit} FROM {v})" for unit in ("YEAR", "MONTH", "DAY", "HOUR", "DOW") for v in ("dt", "ts", "tn")
    ),
    "TIMESTAMPADD": tuple(
        f"TIMESTAMPADD({unit}, {n}, {v})" for unit in ("DAY", "HOUR") for n in ("1", "j") for v in ("ts", "dt")
    ),
    "TIMESTAMPDIFF": tuple(
        f"TIMESTAMPDIFF({unit}, ts, {v})" for unit in ("DAY", "MONTH", "SECOND") for v in ("tn", "dt")
    ),
}  # fmt: skip
# functions whose value depends on the moment they run: only their type is comparable
NOW_DEPENDENT = ("CURRENT_DATE", "CURDATE", "CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP")


def _arguments(kind: str) -> tuple[str, ...]:
    if kind.startswith("'"):
        return tuple(value[1:-1] for value in kind.split("/"))
    return KIND_OPERANDS[kind]


def function_cases() -> Iterator[Case]:
    """Every supported function over every argument combination of its signatures (capped, in order)."""
    for name, signatures in SIGNATURES.items():
        if name in SPECIAL:
            yield from (Case(sql, origin=name) for sql in SPECIAL[name])
            continue
        if name in NOW_DEPENDENT:
            continue
        for signature in signatures.split("|"):
            kinds = [kind for kind in signature.split(",") if kind]
            combos = itertools.product(*(_arguments(kind) for kind in kinds))
            for values in itertools.islice(combos, MAX_PER_SIGNATURE):
                yield Case(f"{name}({', '.join(values)})", origin=f"{name}({signature})")
