"""Oracle cases for the function families: each function over the table's columns and edge literals.

A template's ``{x}`` is filled from an operand group, giving one case per operand (the input table
holds nulls, negatives, zero, extremes, empty and unicode strings, leap days and DST changes).
"""

from __future__ import annotations

from itertools import product

TEXT = ("s", "t", "n", "'abc'", "''", "NULL")
NUMBER = ("i", "l", "d", "m", "-7", "0", "2.5D", "NULL")
INTEGER = ("i", "j", "l", "0", "-3", "NULL")
TEMPORAL = ("dt", "ts", "n", "DATE'2024-02-29'", "TIMESTAMP'2024-03-31 01:30:00'", "NULL")


def expand(*templates: str, **groups: tuple[str, ...]) -> list[str]:
    """Every template filled with every combination of its groups' operands."""
    out: list[str] = []
    for template in templates:
        names = [name for name in groups if "{" + name + "}" in template]
        for values in product(*(groups[name] for name in names)):
            out.append(template.format(**dict(zip(names, values, strict=True))))
    return out


STRINGS = [
    *expand(
        "upper({x})", "ucase({x})", "lower({x})", "lcase({x})", "length({x})", "len({x})", "char_length({x})",
        "character_length({x})", "bit_length({x})", "octet_length({x})", "trim({x})", "ltrim({x})", "rtrim({x})",
        "btrim({x})", "btrim({x}, 'ab')", "trim(BOTH 'a' FROM {x})", "trim(LEADING 'at' FROM {x})",
        "trim(TRAILING 'c' FROM {x})", "initcap({x})", "reverse({x})", "base64({x})", "ascii({x})",
        "left({x}, 2)", "left({x}, 0)", "left({x}, -1)", "right({x}, 2)", "right({x}, 0)", "right({x}, 100)",
        "lpad({x}, 5, 'xy')", "lpad({x}, 2)", "lpad({x}, 0, 'x')", "lpad({x}, 4, '')", "rpad({x}, 5, 'xy')",
        "rpad({x}, 1)", "rpad({x}, -1, 'x')", "repeat({x}, 2)", "repeat({x}, 0)", "repeat({x}, j)",
        "replace({x}, 'b', 'XY')", "replace({x}, 'ü')", "replace({x}, '', 'z')", "translate({x}, 'abt', 'x')",
        "translate({x}, 'aa', 'xy')", "contains({x}, 'b')", "contains({x}, '')", "startswith({x}, 'a')",
        "endswith({x}, t)", "contains({x}, t)", "concat({x}, '-', t)", "concat({x})", "concat({x}, i, dt)",
        "concat_ws('-', {x}, t, NULL)", "concat_ws('', {x})", "concat_ws(NULL, {x})", "concat_ws('/', {x}, i)",
        "elt(j, {x}, 'two')", "elt(2, 'one', {x})", "mask({x})", "mask({x}, 'U', NULL, '#', '*')",
        "mask({x}, 'a', 'B')", "mask({x}, NULL, NULL, NULL, '.')", "mask({x}, '$', 'ü', '#', 'x')", "ltrim('ab', {x})", "rtrim('c ', {x})",
        x=TEXT,
    ),
    *expand(
        "soundex({x})", "luhn_check({x})",
        x=(*TEXT, "'Robert'", "'Tymczak'", "'Pfister'", "'Ashcraft'", "'a'", "'1abc'", "'Ünï'", "'79927398713'",
           "'7992 7398 713'", "'0'", "'٣'", "'Lloyd-Hwang'", "'bHw7b'", "i"),
    ),
    *expand("url_encode({x})", "url_decode(url_encode({x}))", x=(*TEXT, "'a b&c=ü~*.-_+/'", "'😀 x'", "i")),
    *expand("url_decode({x})", x=("'a+b%26c%3D%C3%BC'", "'%41%42'", "'plain'", "''", "NULL", "n")),
    *expand(
        "format_string('%s-%05d|%-4s|%3d|%%|%S', {x}, i, {x}, j, {x})", "printf('%d/%s%n', l, {x})",
        "format_string('%s %s %s', {x}, d, b)", "format_string('[%8s]', {x})", "format_string('%s', m)",
        "format_string('x', {x})", "format_string(NULL, {x})",
        x=TEXT,
    ),
    "concat_ws('-')", "char(65)", "chr(i)", "chr(l)", "chr(233)", "chr(-1)", "chr(256)", "chr(0)",
    "space(3)", "space(j)", "space(-1)", "length(i)", "upper(b)",
]  # fmt: skip

SUBSTRINGS = [
    *expand(
        "substring({x}, 2)", "substr({x}, 2, 2)", "substring({x}, 0, 2)", "substring({x}, -2)",
        "substring({x}, -5, 3)", "substring({x}, 2, -1)", "substr({x}, i, j)", "substring({x} FROM 2 FOR 1)",
        "instr({x}, 'b')", "instr({x}, '')", "instr({x}, 'ü')", "locate('c', {x})", "locate('t', {x}, 2)",
        "locate('a', {x}, 0)", "locate('a', {x}, NULL)", "position('b' IN {x})", "position('c', {x})",
        "split_part({x}, '-', 1)", "split_part({x}, 'b', -1)", "split_part({x}, '', 1)", "split_part({x}, '-', 5)",
        "substring_index({x}, 'b', 1)", "substring_index({x}, '-', -1)", "substring_index({x}, 'x', 0)",
        "overlay({x} PLACING 'ZZ' FROM 2)", "overlay({x} PLACING 'ZZ' FROM 2 FOR 0)",
        "overlay({x} PLACING '' FROM 1 FOR 2)", "find_in_set({x}, 'abc,,tst-1,')", "find_in_set({x}, 'a,b')",
        x=TEXT,
    ),
    "find_in_set('a,b', 'a,b')", "split_part('a-b-c', '-', -2)", "substring_index('a.b.c', '.', 2)",
]  # fmt: skip

MATH = [
    *expand(
        "sqrt({x})", "cbrt({x})", "exp({x})", "expm1({x})", "ln({x})", "log({x})", "log10({x})", "log2({x})",
        "log1p({x})", "log(2, {x})", "log({x}, 8)", "acos({x})", "acosh({x})", "asin({x})", "asinh({x})",
        "atan({x})", "atanh({x})", "cos({x})", "cosh({x})", "sin({x})", "sinh({x})", "tan({x})", "tanh({x})",
        "cot({x})", "csc({x})", "sec({x})", "degrees({x})", "radians({x})", "pow({x}, 2)", "power(2, {x})",
        "atan2({x}, e)", "atan2(e, {x})", "hypot({x}, e)", "abs({x})", "sign({x})", "signum({x})",
        "negative({x})", "positive({x})", "greatest({x}, 1)", "least({x}, 1)", "greatest({x}, e, NULL)",
        "least({x}, e)", "round({x})", "round({x}, 1)", "round({x}, -1)", "round({x}, -2)",
        "bround({x})", "bround({x}, 1)", "bround({x}, -1)", "ceil({x})", "ceiling({x})", "floor({x})",
        "rint({x})",
        x=(*NUMBER, "e", "j", "n"),
    ),
    *expand(
        "ceil({x}, {y})", "floor({x}, {y})",
        x=("i", "l", "d", "m", "e", "1.1D", "0.1D", "-0.1D", "1e300D", "999999999999999.9D", "1.0000000000000002D",
           "CAST(7 AS SMALLINT)", "1.25", "CAST(NULL AS DOUBLE)"),
        y=("0", "1", "2", "-1", "-2", "16"),
    ),
    *expand("try_divide({x}, 2)", "try_divide({x}, 0)", "try_divide(7, {x})", x=NUMBER),
    *expand(
        "try_add({x}, {y})", "try_subtract({x}, {y})", "try_multiply({x}, {y})",
        x=("i", "l", "d", "m", "2147483647", "NULL"), y=("j", "l", "1", "-2147483648", "1.5", "NULL"),
    ),
    *expand(
        "shiftleft({x}, {y})", "shiftright({x}, {y})", "shiftrightunsigned({x}, {y})",
        x=("i", "j", "l", "-5", "NULL", "CAST(7 AS TINYINT)"), y=("1", "0", "31", "33", "65", "-1", "j", "NULL"),
    ),
    *expand("~{x}", x=("i", "j", "l", "-2147483648", "CAST(5 AS TINYINT)", "CAST(5 AS SMALLINT)", "NULL")),
    *expand("bit_get({x}, 0)", "getbit({x}, 31)", "bit_get({x}, 5)", x=("i", "j", "l", "-1", "NULL")),
    *expand(
        "width_bucket({x}, 0, 10, 5)", "width_bucket({x}, 10.6D, 0.2D, 3)", "width_bucket({x}, -5, 5, j)",
        "width_bucket(5.3D, {x}, 10.6D, 5)", "width_bucket(2, 0, {x}, 4)",
        x=(*NUMBER, "e", "1e300D"),
    ),
    *expand("typeof({x})", x=(*NUMBER, "s", "b", "dt", "ts", "tn", "i + l", "m * m", "1.5")),
    "current_timezone()",
    *expand("mod({x}, 3)", "pmod({x}, -3)", "pmod({x}, 0)", "mod(7, {x})", x=INTEGER),
    *expand("factorial({x})", "bit_count({x})", x=INTEGER),
    "e()", "pi()", "factorial(20)", "factorial(21)", "round(2.675D, 2)", "round(1.005D, 2)", "bround(2.5D)",
    "round(-2.5D)", "round(0.285D, 2)", "round(2147483647, -1)", "round(-9223372036854775807L, -1)",
    "bround(25, -1)", "bround(35, -1)", "round(1.5e300D, -299)", "ceil(-0.5D)", "floor(1e300D)",
    "greatest(i, l, d)", "least(i, m)", "greatest(m, 1.5)", "greatest(s, t)",
]  # fmt: skip

ALL = (*NUMBER, "s", "b", "dt", "ts")
CONDITIONAL = [
    *expand(
        "coalesce({x}, {y})", "ifnull({x}, {y})", "nvl({x}, {y})", x=(*NUMBER, "b", "dt", "ts"), y=("i", "d", "m", "NULL", "0", "dt"),
    ),
    *expand(
        "coalesce({x}, s)", "nvl(s, {x})", x=("i", "l", "m", "s", "b", "dt", "ts", "NULL"),
    ),
    *expand(
        "nullif({x}, {y})", "nvl2({x}, {y}, NULL)", "equal_null({x}, {y})", x=NUMBER, y=("i", "d", "m", "NULL", "0")
    ),
    *expand("nullif({x}, {x})", "equal_null({x}, {x})", x=("s", "b", "dt", "ts", "NULL")),
    *expand(
        "decode({x}, 1, 'one', 2.5D, 'two', 'other')", "decode({x}, NULL, 'null')", "decode({x}, 0, 0, 1.5, 1)",
        "decode({x}, 'abc', 1L, 2)", x=(*NUMBER, "s"),
    ),
    "decode(NULL, NULL, 'x', 'y')", "decode(1, 1L, 2.5, 'z')", "decode(i, 1, 2, 3)", "decode(i, 1, 2)",
    "decode(i, 1, true, false)", "decode(i, 1, DATE'2024-01-01')",
    *expand(
        "isnull({x})", "isnotnull({x})", "isnan({x})", "nanvl({x}, e)", "nanvl(e, {x})", "coalesce({x})",
        "coalesce(NULL, {x}, 1)", "nvl2({x}, 'y', 'n')",
        x=(*ALL, "e", "n"),
    ),
]  # fmt: skip

STAMPS = ("ts", "tn", "TIMESTAMP'2024-10-27 01:30:00'", "NULL")
PATTERNS = ("'yyyy-MM-dd'", "'yyyy-MM-dd HH:mm:ss'", "'dd/MM/yy hh:mm a'", "'yyyyMMdd'", "'EEE, d MMM yyyy'",
            "'EEEE MMMM DDD'", "'HH:mm:ss.SSS'", "'yyyy-MM-dd HH:mm:ss.SSSSSS'", "\"yyyy-MM-dd'T'HH:mm\"",
            "'M/d/yyyy H:m:s'")  # fmt: skip
ZONE_PATTERNS = ("\"yyyy-MM-dd'T'HH:mm:ss.SSSXXX\"", "'XX|X|xxx|xx|x|Z|ZZZZZ|z|VV|O'")  # formatting only
DATETIME = [
    *expand(
        "year({x})", "quarter({x})", "month({x})", "day({x})", "dayofmonth({x})", "dayofweek({x})", "weekday({x})",
        "dayofyear({x})", "weekofyear({x})", "hour({x})", "minute({x})", "second({x})", "last_day({x})",
        "unix_date({x})", "date_add({x}, 1)", "date_add({x}, j)", "date_sub({x}, 1)", "dateadd({x}, -30)",
        "datediff({x}, DATE'2024-01-01')", "date_diff(DATE'2024-01-01', {x})", "add_months({x}, 1)",
        "add_months({x}, -13)", "add_months({x}, j)", "next_day({x}, 'mon')", "next_day({x}, 'Sunday')",
        "next_day({x}, 'xx')", "trunc({x}, 'YEAR')", "trunc({x}, 'MM')", "trunc({x}, 'quarter')",
        "trunc({x}, 'week')", "trunc({x}, 'day')", "date_trunc('YEAR', {x})", "date_trunc('MON', {x})",
        "date_trunc('week', {x})", "date_trunc('DD', {x})", "date_trunc('hour', {x})", "date_trunc('minute', {x})",
        "date_trunc('second', {x})", "date_trunc('quarter', {x})", "date_trunc('xx', {x})",
        "months_between({x}, DATE'2024-01-31')", "months_between(TIMESTAMP'2024-01-01 10:00:00', {x})",
        "months_between({x}, DATE'2023-02-28', false)", "extract(YEAR FROM {x})", "extract(DOW FROM {x})",
        "extract(DAYOFWEEK_ISO FROM {x})", "extract(DOY FROM {x})", "extract(WEEK FROM {x})",
        "extract(QUARTER FROM {x})", "date_part('month', {x})", "datepart('d', {x})", "to_date({x})",
        "unix_timestamp({x})", "to_unix_timestamp({x})",
        x=(*TEMPORAL, "tn"),
    ),
    *expand(
        "extract(HOUR FROM {x})", "extract(MINUTE FROM {x})", "extract(SECOND FROM {x})", "unix_seconds({x})",
        "unix_millis({x})", "unix_micros({x})", "from_utc_timestamp({x}, 'Europe/Paris')",
        "from_utc_timestamp({x}, 'America/New_York')", "to_utc_timestamp({x}, 'Europe/Paris')",
        "to_utc_timestamp({x}, 'America/New_York')", "to_utc_timestamp({x}, 'UTC')",
        x=STAMPS,
    ),
    *expand(
        "timestampadd({u}, 1, {x})", "dateadd({u}, -40, {x})", "timestampadd({u}, j, {x})",
        "timestampdiff({u}, {x}, TIMESTAMP'2024-03-31 01:30:00')", "timestampdiff({u}, TIMESTAMP'2023-01-31 12:00:00', {x})",
        "datediff({u}, {x}, TIMESTAMP'2024-02-29 23:00:00')", "date_diff({u}, DATE'2024-01-31', {x})",
        x=("ts", "dt", "tn", "NULL"), u=("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"),
    ),
    *expand("date_format({x}, {p})", x=("ts", "dt", "tn", "NULL"), p=(*PATTERNS, *ZONE_PATTERNS)),
    *expand(
        "to_date({x}, {p})", "to_timestamp({x}, {p})", "unix_timestamp({x}, {p})", x=("n", "s"), p=PATTERNS
    ),
    *expand(
        "to_date({x}, 'yyyy-MM-dd HH:mm:ss')", "to_timestamp({x}, 'dd/MM/yyyy HH:mm')", "unix_timestamp({x})",
        "to_timestamp({x}, 'yyyy-MM-dd HH:mm:ss')",
        x=("'2024-02-29'", "'2023-02-29'", "'29/02/2024 13:45'", "'2024-03-31 02:30:00'", "''", "NULL"),
    ),
    *expand("date_from_unix_date({x})", x=("j", "0", "-1", "19000", "NULL")),
    *expand(
        "from_unixtime({x})", "from_unixtime({x}, 'yyyy-MM-dd')", "timestamp_seconds({x})",
        "timestamp_millis({x})", "timestamp_micros({x})",
        x=("i", "j", "0", "-1", "1700000000", "NULL"),
    ),
    *expand(
        "make_timestamp(2024, 2, 29, 13, 5, {x})", "make_timestamp(2024, 12, 31, 23, 59, {x})",
        "make_timestamp(2024, 3, 31, 2, 30, {x}, 'Europe/Paris')", "make_timestamp(2024, 11, 3, 1, 30, {x}, 'America/New_York')",
        x=("0", "59.5", "60", "60.5", "-1", "1.1234567", "d", "m", "j", "NULL"),
    ),
    "make_timestamp(2024, 2, 30, 1, 1, 1)", "make_timestamp(2024, 1, 1, 24, 0, 0)", "make_timestamp(2024, j, 1, j, j, 0)",
    *expand(
        "convert_timezone('Europe/Paris', 'America/New_York', {x})", "convert_timezone('Asia/Tokyo', {x})",
        "convert_timezone('UTC', 'Europe/Paris', {x})", "convert_timezone('Europe/Paris', 'UTC', {x})",
        x=("ts", "tn", "'2024-10-27 02:30:00'", "TIMESTAMP_NTZ'2024-03-31 02:30:00'", "NULL"),
    ),
    *expand(
        "to_timestamp_ntz({x})", "to_timestamp_ltz({x})", "try_to_timestamp({x})", "to_timestamp_ntz({x}, 'dd/MM/yyyy')",
        "try_to_timestamp({x}, 'yyyy-MM-dd HH:mm:ss')", "to_timestamp_ltz({x}, 'dd/MM/yyyy')",
        x=("n", "'2024-02-29 10:00:00'", "'29/02/2024'", "'2024-02-30'", "NULL"),
    ),
    "make_timestamp_ntz(2024, 2, 29, 1, 2, 3.5)", "make_timestamp_ltz(2024, 2, 29, 1, 2, 3.5, 'Europe/Paris')",
    "make_timestamp_ntz(2024, j, 29, 1, 2, d)", "make_timestamp_ltz(2024, 2, 30, 1, 2, 3)",
    "localtimestamp() > TIMESTAMP_NTZ'2020-01-01 00:00:00'",
    "timestamp_seconds(d)", "timestamp_seconds(1.5D)", "make_date(2024, 2, 29)", "make_date(2023, 2, 29)",
    "make_date(2000 + j, 1, 1)", "make_date(2024, j, 1)", "make_date(2024, 1, j)", "make_date(NULL, 1, 1)",
    # each calendar and clock field at its last valid value and past it (ANSI on: java.time's error)
    *expand("make_date({y}, {mo}, {d})", y=("2023", "2024", "j"), mo=("0", "2", "4", "12", "13"),
            d=("0", "29", "30", "31", "32")),
    *expand("make_timestamp(2024, 12, 31, {h}, {mi}, {s})", "make_timestamp_ntz(2023, 2, 28, {h}, {mi}, {s})",
            h=("23", "24", "-1"), mi=("59", "60"), s=("59.999999", "60", "60.000001", "61")),
    "unix_timestamp() > 0", "current_date() > DATE'2020-01-01'", "current_timestamp() > TIMESTAMP'2020-01-01 00:00:00'",
    "now() > TIMESTAMP'2020-01-01 00:00:00'", "curdate() > DATE'2020-01-01'",
]  # fmt: skip

REGEXES = ("'b'", "'^a'", "'[a-z]+'", "'\\\\d+'", "'\\\\w+'", "'\\\\s'", "'(.)(.)'", "'.'", "'x*'", "''",
           "'\\\\p{Alpha}+'", "'(?i)ABC'", "'[^\\\\d-]'", "'b|(c)'",
           "'x$'", "'[a-z]$'", "'\\\\s+$'", "'^.*$'")  # fmt: skip
EMPTY_MATCHES = ("'x*'", "''")
REGEX = [
    *expand(
        "regexp_like({x}, {p})", "rlike({x}, {p})", "regexp({x}, {p})", "{x} RLIKE {p}", "regexp_instr({x}, {p})",
        x=("s", "t", "n", "NULL"), p=REGEXES,
    ),
    *expand(
        "regexp_extract({x}, {p}, 0)", "regexp_substr({x}, {p})",
        x=("s", "t", "n", "NULL"), p=tuple(p for p in REGEXES if "$" not in p),
    ),
    *expand(
        "regexp_count({x}, {p})", x=("s", "t", "n", "NULL"), p=tuple(p for p in REGEXES if p not in EMPTY_MATCHES)
    ),
    *expand(
        "regexp_replace({x}, {p}, 'X')", "regexp_replace({x}, {p}, '')",
        x=("s", "t", "n", "NULL"), p=tuple(p for p in REGEXES if p not in EMPTY_MATCHES and "$" not in p),
    ),
    *expand(
        "regexp_extract({x}, '(\\\\d+)-(\\\\d+)', 2)", "regexp_extract({x}, '([a-z])(x)?', 2)",
        "regexp_extract({x}, '(\\\\w)')", "regexp_replace({x}, '(\\\\w)(\\\\w)', '$2$1')",
        "regexp_replace({x}, '(b)', '\\\\$1$10')", "regexp_replace({x}, NULL, 'x')", "regexp_extract({x}, NULL)",
        x=("s", "t", "n", "'12-34'", "NULL"),
    ),
    *expand("regexp_extract_all({x}, {p}, 0)", x=("s", "t", "n", "NULL", "'a1b22c3'"),
            p=tuple(p for p in REGEXES if p not in EMPTY_MATCHES and "$" not in p)),
    *expand("regexp_extract_all({x}, '([a-z])(\\\\d+)', {k})", "regexp_extract_all({x}, '([a-z])(\\\\d)?', {k})",
            "regexp_extract_all({x}, '(\\\\d+)-(\\\\d+)')", "regexp_extract_all({x}, '(.)(.)', {k})",
            "regexp_extract_all({x}, 'b|(c)', {k})", "regexp_extract_all({x}, '(?i)(T)(S)?', {k})",
            x=("s", "t", "n", "NULL", "'a1b22c3'", "'12-34 5-6'"), k=("0", "1", "2", "3", "NULL")),
    "regexp_extract_all(s, NULL, 1)", "regexp_extract_all(s, '^(a)', 1)", "regexp_extract_all(s, 'x*', 0)",
    "regexp_extract_all(s, '[a-z]')", "regexp_extract_all(i, '(\\\\d)', 1)",
]  # fmt: skip

CONVERSION = [
    *expand(
        "bigint({x})", "int({x})", "smallint({x})", "tinyint({x})", "double({x})", "float({x})", "boolean({x})",
        x=("i", "l", "d", "m", "n", "b", "NULL", "'12'"),
    ),
    *expand("decimal({x})", "string({x})", x=("i", "l", "n", "NULL", "'12'")),
    *expand("date({x})", "timestamp({x})", "string({x})", x=("dt", "ts", "n", "'2024-02-29'", "NULL")),
    *expand("hex({x})", "bin({x})", x=("i", "j", "l", "0", "-1", "NULL", "d", "m", "n")),
    *expand("hex({x})", x=("s", "t", "''")),
]  # fmt: skip

HASHABLE = (
    "s",
    "t",
    "n",
    "i",
    "j",
    "l",
    "d",
    "e",
    "m",
    "b",
    "dt",
    "ts",
    "tn",
    "NULL",
    "''",
    "'abc'",
    "-0.0D",
    "0.0D",
    "CAST('NaN' AS DOUBLE)",
    "CAST(1.5 AS FLOAT)",
    "CAST(-0.0 AS FLOAT)",
    "CAST(3 AS TINYINT)",
    "CAST(-2 AS SMALLINT)",
    "1.25",
    "CAST(1.25 AS DECIMAL(18,2))",
    "'ünï😀'",
    "'abcdefg'",
)
DIGESTS = [
    *expand("md5({x})", "sha1({x})", "sha({x})", "crc32({x})", "sha2({x}, 0)", "sha2({x}, 224)", "sha2({x}, 256)",
            "sha2({x}, 384)", "sha2({x}, 512)", "sha2({x}, 100)", x=(*TEXT, "'ünï😀'", "concat_ws('||', s, i, dt)")),
    *expand("md5({x})", "crc32({x})", "sha2({x}, 256)", x=("i", "d", "b", "dt")),  # Spark refuses: not BINARY
    *expand("hash({x})", "xxhash64({x})", x=HASHABLE),
    *expand("hash({x}, {y})", "xxhash64({x}, {y})", x=("s", "i", "l", "NULL"), y=("t", "d", "dt", "m", "NULL")),
    "hash(s, i, l, d, m, b, dt, ts)", "xxhash64(s, i, l, d, m, b, dt, ts)", "hash(NULL)", "xxhash64(NULL, NULL)",
    *expand("hash({x})", "xxhash64({x})", x=("CAST(1.5 AS DECIMAL(20,2))", "CAST(-1.5 AS DECIMAL(38,10))", "CAST(m AS DECIMAL(30,0))",
                                             "CAST(-128 AS DECIMAL(19,0))", "split_part(s, '-', 1)")),
]  # fmt: skip

SPLITS = (
    "split({x}, ',')",
    "split({x}, '-')",
    "split({x}, '')",
    "split({x}, '\\\\|')",
    "split({x}, '\\\\.')",
    "split({x}, 'b', -1)",
    "split({x}, '%', 0)",
    "split({x}, '_')",
)
ARRAYS = [
    *expand(*SPLITS, x=(*TEXT, "'a,b,,c,'", "',a'", "'1.2.3'", "'a|b|'", "i")),
    *expand("{a}[{i}]", "element_at({a}, {i})", "try_element_at({a}, {i})", "size({a})", "cardinality({a})",
            "array_size({a})", "SIZE({a}) + ARRAY_SIZE({a})",
            a=(*(p.format(x="s") for p in SPLITS[:2]), "split(t, '%')", "split(n, '-')", "array(i, j, NULL)",
               "array('a', s, NULL)", "split(CAST(NULL AS STRING), ',')"),
            # not j: a 0 from a column stops Spark's query (INVALID_INDEX_OF_ZERO), a documented difference
            i=("0", "1", "-1", "2", "-2", "10", "IF(j = 0, 1, j)", "CAST(NULL AS INT)")),
    *expand("array_contains({a}, {v})", a=("split(s, '-')", "split(n, '.')", "array(i, j, NULL)", "array(1, 2)",
                                           "split(CAST(NULL AS STRING), ',')", "array('a', 'b')"),
            v=("'1'", "'tst'", "s", "1", "i", "2.5D", "CAST(NULL AS INT)")),
    *expand("array({x})", "array({x}, {x})", "array({x}, NULL)", x=("i", "l", "d", "m", "s", "b", "dt", "ts", "1.5")),
    "array(i, d)", "array(i, m)", "array(s, i)", "size(array(1, 2, 3))", "array(1, 2)[0]",
    "element_at(array(1, 2), 0)", "split(s, '[,]')", "split(s, 'a+')", "split(s, '\\\\d')", "split(s, ',', 2)",
    *expand("get({a}, {i})", "array_compact({a})", "array_join({a}, '|')", "array_join({a}, '|', '?')",
            "array_join({a}, NULL)", "slice({a}, 1, 2)", "slice({a}, 2, 0)", "slice({a}, -1, 1)", "slice({a}, -2, 5)",
            "slice({a}, -9, 2)", "slice({a}, 5, 1)", "slice({a}, 0, 1)", "slice({a}, 1, -1)",
            a=("split(s, '-')", "split(t, '%')", "array(i, j, NULL)", "array('a', s, NULL)",
               "split(CAST(NULL AS STRING), ',')"),
            i=("0", "1", "-1", "IF(j = 0, 1, j)")),
    "array_join(array(d), ',')",
    *expand("array_max({a})", "array_min({a})", "array_distinct({a})", "sort_array({a})", "sort_array({a}, false)",
            "array_position({a}, {v})", "array_remove({a}, {v})",
            a=("split(s, '-')", "split(t, '%')", "array(i, j, NULL, i)", "array(d, e, 1.5D, NULL)",
               "split(CAST(NULL AS STRING), ',')", "array('b', 'a', 'b')"),
            v=("1", "'a'", "2.5D", "-1")),
    "array_position(array(1, 2), i)", "array_remove(array(1, NULL), NULL)",
    "element_at(split(s, '-'), -1) || '!'", "upper(split(t, '%')[0])", "array_size(array(1))",
    *expand("array_append({a}, {v})", "array_prepend({a}, {v})", "array_insert({a}, {k}, {v})",
            a=("split(s, '-')", "array(i, j, NULL)", "array(l)", "split(CAST(NULL AS STRING), ',')", "array(NULL)"),
            v=("t", "i", "l", "m", "NULL", "'x'"), k=("1", "2", "-1", "-2", "5", "-5", "0", "j")),
    *expand("array_repeat({x}, {k})", x=("s", "i", "m", "dt", "NULL", "array(i)"),
            k=("j", "2", "0", "-1", "CAST(NULL AS INT)", "l", "CAST(2 AS TINYINT)")),
    *expand("flatten({a})", a=("array(split(s, '-'), split(t, '%'))", "array(array(i, NULL), array(j))",
                               "array(split(CAST(NULL AS STRING), ','), array('x'))", "array(array(i), array(CAST(NULL AS INT)))",
                               "split(s, '-')", "array(split(s, '-'))")),
    *expand("array_union({a}, {b})", "array_intersect({a}, {b})", "array_except({a}, {b})",
            "arrays_overlap({a}, {b})", "arrays_overlap({b}, {a})",
            a=("array(i, j, i, NULL, j)", "split(s, '-')", "split(CAST(NULL AS STRING), ',')", "array(j, 1)",
               "array(d, e)", "array(NULL)"),
            b=("array(j, 1, NULL)", "array(l, 2, 2)", "split(t, '%')", "array(1)", "array(NULL, NULL)",
               "array(m)", "array(i)", "split(n, '-')")),
    *expand("sequence({x}, {y})", "sequence({x}, {y}, {z})", x=("j", "1", "-2", "NULL"), y=("2", "j", "CAST(3 AS BIGINT)"),
            z=("1", "-1", "2", "0", "j", "NULL")),
    "sequence(CAST(1 AS TINYINT), CAST(3 AS TINYINT))", "sequence(1.5, 3)", "sequence(dt, dt)", "sequence(-2147483648, 2147483647)",
    *expand("~{x}", x=("i", "l", "j", "CAST(j AS TINYINT)", "CAST(i AS SMALLINT)", "NULL", "d", "m", "s", "b")),
]  # fmt: skip

ROWWISE = [
    *expand("levenshtein({x}, {y})", "levenshtein({x}, {y}, 2)", x=(*TEXT, "'kitten'", "'ünï😀'"),
            y=("t", "'sitting'", "''", "NULL", "'abc'")),
    "levenshtein(s, t, j)", "levenshtein(i, l)", "levenshtein(s, b)",
    *expand("format_number({x}, {k})", x=(*NUMBER, "e", "1234567.891D", "1.005D", "0.125D", "-0.5D", "-0.0D", "2.675D", "0.375D", "1e300", "5e-324D", "1.0000000000000002D",
                                          "2.5", "12345678901234567890", "CAST(1.5 AS FLOAT)", "n", "'1e3'",
                                          "CAST(-0.004 AS DECIMAL(5,3))", "1e20", "3L"),
            k=("0", "1", "2", "5", "-1", "NULL")),
    "format_number(dt, 2)", "format_number(1.5, '#,##0.0')", "format_number(d, j)",
    *expand("date_format({x}, 'D')", "date_format({x}, 'yyyy-D')", x=("dt", "ts", "tn", "n", "NULL")),
]  # fmt: skip

CASES: dict[str, list[str]] = {
    "rowwise": ROWWISE,
    "arrays": ARRAYS,
    "digests": DIGESTS,
    "conversion": CONVERSION,
    "regex": REGEX,
    "datetime": DATETIME,
    "strings": STRINGS,
    "substrings": SUBSTRINGS,
    "math": MATH,
    "conditional": CONDITIONAL,
}
