"""Which reader a CSV file takes: Polars' own CSV scan only for files it reads as Spark does.

A file routed to the native scan by mistake would read differently from Spark without any error, so
the routing is pinned here, file by file; the oracle (``test_file_spark_oracle.py``) checks that both
readers agree with Spark on the boundary cases named ``native-…`` / ``exact-…``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datacoolie_core.sources.csv_native import plan_csv
from datacoolie_core.sources.options import csv_options
from tests.core.sources.test_file_spark_oracle import CSV_CASES

H = {"header": "true"}
Q = "a quoted field the readers differ on"

PLANS: dict[str, tuple[str | bytes, dict[str, str], str]] = {
    "plain": ("a,b\n1,x\n", H, ""),
    "escape-without-quote": ("a,b\nx\\y,z\n", H, ""),
    "crlf": ("a,b\r\n1,x\r\n", H, ""),
    "bom": (b"\xef\xbb\xbfa,b\n1,x\n", H, ""),
    "blanks-inside-a-line": ("a,b\n1 , x\n", H, ""),
    "tab": ("a\tb\n1\tx\n", {**H, "sep": "\\t"}, ""),
    "comment-absent": ("a,b\n1,x\n", {**H, "comment": "#"}, ""),
    "quoting-off": ('a,b\n"x",y\n', {**H, "quote": ""}, ""),
    "single-quote-with-double-quotes": ('a,b\n"x",y\n', {**H, "quote": "'"}, ""),
    "multibyte": ("a,b\n1,Zoë\n", H, ""),
    "clean-quoted-fields": ('"a",b\n1,"x, y"\n', H, ""),
    "quote-in-a-value": ('a,b\n1,x"y\n', H, Q),
    "quoted-empty": ('a,b\n1,""\n', H, "a doubled quote"),
    "doubled-quote": ('a,b\n1,"x""y"\n', H, "a doubled quote"),
    "doubled-single-quote": ("a,b\n1,'x''y'\n", {**H, "quote": "'"}, "a doubled quote"),
    "doubled-quote-char-unused": ('a,b\n1,\'x\'\n2,"p""q"\n', {**H, "quote": "'"}, ""),
    "escape-in-quotes": ('a,b\n1,"x\\"y"\n', H, Q),
    "blank-after-quote": ('a,b\n1,"x" \n', H, Q),
    "blank-before-quote": ('a,b\n1, "x"\n', H, Q),
    "unclosed-quote": ('a,b\n1,"x\n', H, Q),
    "quoted-line-break": ('a,b\n1,"x\ny"\n', H, Q),
    "quotes-and-null-value": ('a,b\n1,"x"\n', {**H, "nullValue": "NA"}, "nullValue with quotes"),
    "quotes-and-invalid-utf8": (b'a,b\n1,"caf\xe9"\n', H, Q),
    "empty-line": ("a,b\n\n1,x\n", H, "a line starts with a blank"),
    "trailing-empty-line": ("a,b\n1,x\n\n", H, "a line starts with a blank"),
    "whitespace-line": ("a,b\n \t\n1,x\n", H, "a line starts with a blank"),
    "crlf-empty-line": ("a,b\r\n\r\n1,x\r\n", H, "a line starts with a blank"),
    "leading-blank": ("a,b\n 1,x\n", H, "a line starts with a blank"),
    "leading-blank-first-line": (" a,b\n1,x\n", H, "a line starts with a blank"),
    "bom-then-blank": (b"\xef\xbb\xbf\na,b\n", H, "a line starts with a blank"),
    "empty-file": ("", H, "a line starts with a blank"),
    "lone-cr": ("a,b\n1,x\r2,y\n", H, "a lone \\r line end"),
    "invalid-utf8": (b"a,b\n1,caf\xe9\n", H, ""),  # Polars' lossy decoding replaces as Spark does
    "hangul-is-no-surrogate": ("a,b\n1,\ud7a3\n", H, ""),
    "encoded-surrogate": (b"a,b\n1,\xed\xa0\x80\n", H, "an encoded surrogate"),
    "comment-present": ("a,b\n1,x#\n", {**H, "comment": "#"}, "the comment character occurs"),
    "latin-1": ("a,b\n1,x\n", {**H, "encoding": "ISO-8859-1"}, "encoding ISO-8859-1"),
    "multi-line": ("a,b\n1,x\n", {**H, "multiLine": "true"}, "multiLine"),
    "drop-malformed": ("a,b\n1,x\n", {**H, "mode": "DROPMALFORMED"}, "mode DROPMALFORMED"),
    "trimming": ("a,b\n1,x\n", {**H, "ignoreTrailingWhiteSpace": "true"}, "white-space trimming"),
    "two-character-separator": ("a||b\n1||x\n", {**H, "sep": "||"}, "separator '||'"),
    "non-ascii-separator": ("a§b\n1§x\n", {**H, "sep": "§"}, "separator '§'"),
}


def plan_of(tmp_path: Path, content: str | bytes, options: dict[str, str]) -> tuple[str, str]:
    path = tmp_path / "case.csv"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    plan, _ = plan_csv(str(path), csv_options(options, label="t"), label="t")
    return plan.reader, plan.reason


@pytest.mark.parametrize("case", list(PLANS), ids=list(PLANS))
def test_each_file_takes_the_reader_its_bytes_and_options_allow(tmp_path: Path, case: str) -> None:
    content, options, reason = PLANS[case]
    assert plan_of(tmp_path, content, options) == ("exact" if reason else "native", reason)


BOUNDARY = [name for name in CSV_CASES if name.startswith(("native-", "exact-"))]


@pytest.mark.parametrize("case", BOUNDARY, ids=BOUNDARY)
def test_the_oracle_boundary_cases_take_the_reader_they_are_named_for(tmp_path: Path, case: str) -> None:
    content, options = CSV_CASES[case]
    assert plan_of(tmp_path, content, options)[0] == case.split("-")[0]


@pytest.mark.parametrize(
    ("last", "reason"),
    [
        ("\n\n", "a line starts with a blank"),
        ('3,"z" \n', Q),
        ('3,"z"\n', ""),
        ("3,x\r4,y\n", "a lone \\r line end"),
        ("3,x\r\n", ""),
    ],
)
def test_a_fact_at_the_end_of_a_large_file_is_found(tmp_path: Path, last: str, reason: str) -> None:
    content = "a,b\n" + "1,x\n" * 1_000_000 + last
    assert plan_of(tmp_path, content, H) == ("exact" if reason else "native", reason)
