"""CSV and JSON-lines sources read as Spark 3.5 reads them: each case is one file, read by PySpark
(the ``spark`` fixture, UTC, ANSI off) and by our file reader, and compared column names, types
(Spark type -> Polars dtype) and values row by row.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from datacoolie_core.sources import ReadRange
from tests.core.sources.helpers import read
from tests.core.sources.test_file import business, file_source, folder_of

H = {"header": "true"}
HI = {"header": "true", "inferSchema": "true"}

CSV_CASES: dict[str, tuple[str | bytes, dict[str, str]]] = {
    # typing: strings unless inferSchema
    "no-header-defaults": ("id,code,flag\n1,0179,true\n", {}),
    "header-strings": ("id,code,flag\n1,0179,true\n2,,false\n", H),
    "infer-leading-zero-and-bool": ("id,code,flag\n1,0179,true\n2,0042,FALSE\n", HI),
    "infer-no-header": ("1,x\n2,y\n", {"inferSchema": "true"}),
    "infer-types": (
        "i,l,d,b,s,n,dt,ts,tsT,tsZ,dec,big\n"
        "1,9999999999,1.5,true,x,,2024-01-01,2024-01-01 10:00:00,2024-01-01T10:00:00,2024-01-01T10:00:00+02:00,"
        "1.25,99999999999999999999\n"
        "2,3,2,FALSE,y,,2024-02-29,2024-01-02 11:00:00.123,2024-01-01T10:00:00.5,2024-01-01T10:00:00Z,2.5,1\n",
        HI,
    ),
    "infer-mixed-columns": ("a,b,c,d,e,f\n1,1,1,true,2024-01-01,2024-01-01\n2.5,x,true,1,2024-01-01 10:00:00,x\n", HI),
    "infer-int-long-decimal": ("a,b,c,d\n1,1,1,1.5\n2147483648,99999999999999999999,1.5,99999999999999999999\n", HI),
    "infer-huge-number-is-double": ("a,b\n123456789012345678901234567890123456789012,1\n1,-2147483649\n", HI),
    "infer-bool-case": ("a,b\nTrue,tRuE\nFALSE,1\n", HI),
    "infer-blanks-around-numbers": ("a,b,c,d\n-1, 2,3 ,1.5 \n", HI),
    "infer-number-forms": ("a,b,c,d,e\n.5,5.,1E-3,0x10,1_000\n", HI),
    "infer-plus-and-suffix": ("a,b,c,d\n+5,007,1e3,1d\n", HI),
    "infer-nan-infinity": ("a,b,c\nNaN,Infinity,-Infinity\n1,2,3\n", HI),
    "infer-all-null-column": ("a,b\n1,\n2,\n", HI),
    "infer-timestamp-shapes": (
        "a,b,c,d,e,f,g\n2024-01-01T10:00,2024-01-01 10:00:00.123456789,2024-1-1,2024-01-01T10:00:00.000+0200,"
        "20240101,2024-01-01 10:00:00 UTC,2024-01-01T10\n",
        HI,
    ),
    "infer-date-and-timestamp-mix": ("a,b\n2024-01-01,2024-01-01\n2024-01-01 10:00:00,x\n", HI),
    "infer-timestamp-format": (
        "a,b,c\n01/02/2024 10:00,2024-01-01 10:00:00,2024-01-02\n",
        {**HI, "timestampFormat": "MM/dd/yyyy HH:mm"},
    ),
    "infer-date-format": ("a,b,c\n01/02/2024,2024-01-02,2024-01-02 10:00:00\n", {**HI, "dateFormat": "MM/dd/yyyy"}),
    "infer-null-value": ("a\nNA\n1\n", {**HI, "nullValue": "NA"}),
    "infer-ragged": ("a,b,c\n1,2\n1,2,3,4\n5,x,6\n", HI),
    # nulls and empties
    "empty-and-quoted-empty": ('a,b,c\n1,"",x\n2,,"  y  "\n', H),
    "null-value": ("a,b\nNA,\n1,NA\n", {**H, "nullValue": "NA"}),
    "null-value-quoted": ('a,b\n"NA",NA\n"",\n', {**H, "nullValue": "NA"}),
    "empty-value": ('a,b\n"",\n1,x\n', {**H, "emptyValue": "EMPTY"}),
    # quotes and escapes
    "backslash-escapes": ('a,b\n1,"he said ""hi"""\n2,"x\\"y"\n3,"back\\\\slash"\n', H),
    "escape-is-quote": ('a,b\n1,"he said ""hi"""\n2,"x\\"y"\n', {**H, "escape": '"'}),
    "quoted-then-text": ('a,b,c\n"a,b"c,d\n', H),
    "unclosed-quote": ('a,b,c\n1,"x,y\n', H),
    "blanks-around-quotes": ('a,b\n "x" ,y\n"x" ,y\n', H),
    "unquoted-escapes": ('a,b\na\\"b,x\\\\y\nq"r,z"\n', H),
    "escape-before-other": ('a,b\n"a\\nb","c\\\\"\n', H),
    "escape-before-end": ('a,b\n"abc\\",x\n', H),
    "single-quote": ("a,b\n'x,y',z\n", {**H, "quote": "'"}),
    "quoting-off": ('a,b\n"x,y",z\n', {**H, "quote": ""}),
    "quotes-with-two-character-separator": ('a||b||c\n"x||y"||"p"q||\n', {**H, "sep": "||"}),
    "custom-escape": ("a,b\n'x^'y',z\n'p^^',q\n", {**H, "quote": "'", "escape": "^"}),
    "quoted-values-with-null-value-infer": ('a,b\n"1",NA\n"2","NA"\n', {**HI, "nullValue": "NA"}),
    "quoted-numbers-infer": ('a,b,c\n"1","1,000","true"\n"2","2,500","false"\n', HI),
    "empty-value-infer": ('a,b\n"",1\n"",2\n', {**HI, "emptyValue": "0"}),
    "quoted-field-across-lines-infer": ('a,b\n1,"2\n3"\n4,5\n', HI),
    # whitespace
    "blanks-kept": ("a,b\n 1 , x \n2,y\n", H),
    "leading-blanks-before-quotes-ignored": ('a,b\n  "x, y"  ,z\n', {**H, "ignoreLeadingWhiteSpace": "true"}),
    "trailing-blanks-only": ("a,b\n 1 , x \n", {**H, "ignoreTrailingWhiteSpace": "true"}),
    "ignore-white-space": (
        'a,b\n 1 , x \n "x" ,y\n" x ",y\n',
        {**H, "ignoreLeadingWhiteSpace": "true", "ignoreTrailingWhiteSpace": "true"},
    ),
    # lines
    "blank-lines": ("a,b\n1,x\n\n\n2,y\n", H),
    "blank-and-space-lines": ("\n\na,b\n1,x\n  \n2,y\n", H),
    "crlf": ("a,b\r\n1,x\r\n2,y\r\n", H),
    "cr-only": ("a,b\r1,x\r2,y\r", H),
    "lone-cr-in-a-value": ('a,b\n1,"x\ry"\n2,z\n', H),
    "no-final-newline": ("a,b\n1,x", H),
    "comment-off": ("a,b\n#x,1\n2,3\n", H),
    "comment": ("#c\na,b\n#x,1\n2,3\n", {**H, "comment": "#"}),
    "quoted-newline-single-line-mode": ('a,b\n1,"x\ny"\n2,z\n', H),
    "multi-line": ('a,b\n1,"x\ny"\n2,z\n', {**H, "multiLine": "true"}),
    "multi-line-escapes-and-blanks": ('a,b\n"x\ny","p\\"q"\n\n2,"y\n\nz"\n', {**H, "multiLine": "true"}),
    "multi-line-doubled-quotes": ('a,b\n"x ""y""","p"\n', {**H, "multiLine": "true", "escape": '"'}),
    "header-only": ("a,b\n", H),
    "header-only-infer": ("a,b\n", HI),
    # separators
    "tab": ("a\tb\n1\tx\n", {**H, "sep": "\t"}),
    "tab-escaped": ("a\tb\n1\tx\n", {**H, "sep": "\\t"}),
    "semicolon-delimiter": ("a;b\n1;x,y\n", {**H, "delimiter": ";"}),
    "two-character-separator": ("a||b\n1||x|y\n", {**H, "sep": "||"}),
    # header names
    "duplicate-and-empty-names": ("id,ID,x,,id\n1,2,3,4,5\n", H),
    "quoted-names": ('"a b","c,d"\n1,2\n', H),
    "names-keep-blanks": (" a , b \n1,2\n", H),
    "null-value-name": ("a,NA\n1,2\n", {**H, "nullValue": "NA"}),
    "short-header": ("a,b\n1,2,3\n", H),
    # modes
    "ragged-permissive": ("a,b,c\n1,2\n1,2,3,4\n", H),
    "drop-malformed": ("a,b\n1,2\n3\n4,5,6\n7,8\n", {**H, "mode": "DROPMALFORMED"}),
    # encodings
    "utf8-bom": (b"\xef\xbb\xbfid,name\n1,x\n", H),
    "latin-1": ("id,name\n1,caf\xe9\n".encode("latin-1"), {**H, "encoding": "ISO-8859-1"}),
    "cp1252": ("id,name\n1,\u20ac5\n".encode("cp1252"), {**H, "encoding": "cp1252"}),
    "invalid-utf8-replaced": ("id,name\n1,caf\xe9\n".encode("latin-1"), H),
    "utf8-multibyte": ("id,name\n1,Zoë 日本\n", H),
    # the boundary of Polars' own CSV scan (csv_native.plan_csv): "native-" cases just qualify, "exact-"
    # ones just fail to; test_csv_plan.py pins which reader each takes
    "native-nulls-and-ragged": ("a,b,c\n1,x,\n,,\n1,2\n1,2,3,4\n", H),
    "native-backslashes-without-quotes": ("a,b\nx\\y,\\\nz\\,w\n", H),
    "native-crlf-ragged": ("a,b,c\r\n1,2\r\n1,2,3,4\r\n,\r\n", H),
    "native-no-header-bom-ragged": (b"\xef\xbb\xbf1,x\n2\n3,y,z\n", {}),
    "native-blanks-inside-lines": ("a\tb\n1 2\t x \n3\t\n", {**H, "sep": "\\t"}),
    "native-null-value-and-names": ("id,NA,,ID\nNA,1,,2\n", {**H, "nullValue": "NA"}),
    "native-comment-absent": ("a,b\n1,x\n", {**H, "comment": "#"}),
    "native-quoting-off": ('a,b\n"x",y"\\"\n', {**H, "quote": ""}),
    "native-infer": ("a,b,c\n1,2.5,2024-01-01\n,x,2024-01-02\n", HI),
    "native-invalid-utf8-sequences": (
        b"id,n\xe9\n1,caf\xe9\n2,\xe6\x97x\n3,\xc0\xafy\n4,\xed\x9f\xbfz\n5,\x80\x80w\n6,\xf4\x90\x80\x80v\n7,\xe6\x97\xa5\xe6\n",
        H,
    ),
    "native-header-trailing-separator": ("a,b,\n1,2,3\n4\n", H),
    "native-single-column": ("a\n1\nx y\n", H),
    "native-space-separator": ("a b\n1  x\n", {**H, "sep": " "}),
    "native-no-final-newline-short": ("a,b,c\n1,x", H),
    "native-one-quote-late": ('a,b\n1,x\n2,"y,z"\n', H),
    "native-quoted-fields": ('"id","name, full"\n1,"a, b"\n"2"," x "\n3,"p\'q"\n4\n', H),
    "native-quoted-crlf": ('a,b\r\n"1","x,y"\r\n2,"z"\r\n', H),
    "native-quoted-infer": ('"a","b","c"\n"1","2024-01-01","1,5"\n"2","x",\n', HI),
    "native-quoted-single-quote": ("a,b\n'x,y',z\n'\"',w\n", {**H, "quote": "'"}),
    "native-quoted-no-header": ('"x,y",1\n"z",\n', {}),
    "native-quoted-custom-escape-absent": ("a,b\n'x\\y',z\n", {**H, "quote": "'", "escape": "^"}),
    "native-quoted-single-quote-double-quotes-plain": ('a,b\n1,\'x\'\n2,"p""q"\n', {**H, "quote": "'"}),
    "exact-quoted-empty": ('a,b\n1,""\n', H),
    "exact-quoted-escape": ('a,b\n1,"x\\"y"\n', H),
    "exact-quoted-backslash-end": ('a,b\n1,"x\\\\"\n', H),
    "exact-blank-after-quote": ('a,b\n"x" ,y\n', H),
    "exact-text-after-quote": ('a,b\n"x"y,z\n', H),
    "exact-blank-before-quote": ('a,b\n1, "x"\n', H),
    "exact-unclosed-quote": ('a,b\n1,"x\n2,y\n', H),
    "exact-quote-inside-plain": ('a,b\n1,x"y\n', H),
    "exact-quoted-null-value": ('a,b\n"NA",NA\n"x",y\n', {**H, "nullValue": "NA"}),
    "exact-quoted-line-break": ('a,b\n1,"x\ny"\n', H),
    "exact-doubled-quote": ('a,b\n1,"x""y"\n', H),
    "exact-escape-is-quote-late": ('a,b\n1,x\n2,"y""z"\n', {**H, "escape": '"'}),
    "exact-whitespace-line-late": ("a,b\n1,x\n \t\n2,y\n", H),
    "exact-trailing-blank-line": ("a,b\n1,x\n\n", H),
    "exact-crlf-blank-line": ("a,b\r\n1,x\r\n\r\n2,y\r\n", H),
    "exact-leading-space-value": ("a,b\n 1,x\n", H),
    "exact-leading-space-header": (" a,b\n1,x\n", H),
    "exact-comment-present": ("a,b\n1,x#y\n#c,d\n", {**H, "comment": "#"}),
    "exact-invalid-utf8-quoted": (b'id,name\n1,"caf\xe9"\n2,\xe6\x97x\n', H),
    "exact-encoded-surrogates": (b"id,n\n1,\xed\xa0\x80z\n2,\xed\xbf\xbf\n3,\xed\xa0\n", H),
    "exact-space-separator-leading-empty": ("a b\n 1 x\n", {**H, "sep": " "}),
    "exact-lone-cr-late": ("a,b\n1,x\n2,y\r3,z\n", H),
}

JSON_CASES: dict[str, tuple[str, dict[str, str]]] = {
    "scalars-sorted-by-name": (
        '{"b":1,"a":"x","c":1.5,"d":true,"e":null}\n{"b":2,"a":"y","c":2,"d":false,"e":null}\n',
        {},
    ),
    "mixed-types": ('{"a":1,"b":1,"c":"2024-01-01"}\n{"a":"x","b":2.5,"c":"2024-01-02"}\n{"a":true,"b":3}\n', {}),
    "int-then-float": ('{"a":1}\n{"a":1.5}\n{"a":null}\n', {}),
    "leading-zero-string": ('{"a":"0179","b":"true"}\n', {}),
    "nested-struct-and-array": ('{"a":{"y":1,"x":"s"},"b":[1,2]}\n{"a":{"x":"t","z":true},"b":[3.5]}\n', {}),
    "primitives-as-string": ('{"a":1,"b":1.5,"c":true,"d":"x"}\n', {"primitivesAsString": "true"}),
    "blank-lines": ('{"a":1}\n\n{"a":2}\n', {}),
    "multi-line-array": ('[{"a":1},\n{"a":2}]\n', {"multiLine": "true"}),
}


def spark_dtype(field_type: Any) -> pl.DataType:
    """The Polars dtype of a Spark type (session time zone UTC)."""
    from pyspark.sql import types as t

    simple: dict[type, pl.DataType] = {
        t.StringType: pl.String(), t.IntegerType: pl.Int32(), t.LongType: pl.Int64(), t.DoubleType: pl.Float64(),
        t.BooleanType: pl.Boolean(), t.TimestampType: pl.Datetime("us", "UTC"), t.DateType: pl.Date(),
        t.NullType: pl.Null(),
    }  # fmt: skip
    if isinstance(field_type, t.DecimalType):
        return pl.Decimal(field_type.precision, field_type.scale)
    if isinstance(field_type, t.StructType):
        return pl.Struct({f.name: spark_dtype(f.dataType) for f in field_type.fields})
    if isinstance(field_type, t.ArrayType):
        return pl.List(spark_dtype(field_type.elementType))
    return simple[type(field_type)]


def spark_frame(frame: Any) -> pl.DataFrame:
    """A Spark DataFrame as Polars: same names, the mapped dtypes, the collected rows."""
    schema = {f.name: spark_dtype(f.dataType) for f in frame.schema.fields}
    rows = [r.asDict(recursive=True) for r in frame.collect()]
    naive = {n: pl.Datetime("us") if isinstance(d, pl.Datetime) else d for n, d in schema.items()}
    data = pl.DataFrame(rows, schema=naive, orient="row") if rows else pl.DataFrame(schema=naive)
    return data.with_columns(
        pl.col(n).dt.replace_time_zone("UTC") for n, d in schema.items() if isinstance(d, pl.Datetime)
    )


def ours(tmp_path: Path, fmt: str, content: str | bytes, options: dict[str, str]) -> tuple[Path, pl.DataFrame | None]:
    path = folder_of(tmp_path) / f"case.{fmt}"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    result = read(file_source(tmp_path, fmt, configure={"read_options": options}))
    return path, None if result is None else business(result.data)


@pytest.mark.parametrize("case", list(CSV_CASES), ids=list(CSV_CASES))
def test_csv_reads_as_spark_reads_it(spark: Any, tmp_path: Path, case: str) -> None:
    content, options = CSV_CASES[case]
    path, got = ours(tmp_path, "csv", content, options)
    expected = spark_frame(spark.read.options(**options).csv(str(path)))
    if expected.height == 0:
        assert got is None  # no rows: the dataflow is skipped
        return
    assert got is not None
    assert_frame_equal(got, expected)


@pytest.mark.parametrize("case", list(JSON_CASES), ids=list(JSON_CASES))
def test_json_lines_read_as_spark_reads_them(spark: Any, tmp_path: Path, case: str) -> None:
    content, options = JSON_CASES[case]
    path, got = ours(tmp_path, "jsonl", content, options)
    expected = spark_frame(spark.read.options(**options).json(str(path)))
    assert got is not None
    assert_frame_equal(got, expected)


BOUNDS: dict[str, tuple[str, Any, Any]] = {
    # a text column against typed bounds: Spark casts the column to the bound's type
    "timestamps": ("2024-01-31 23:00:00\n2024-02-01 08:00:00\n2024-02-01T00:00:00Z\n 2024-02-03 \nx\n",
                   datetime(2024, 2, 1), datetime(2024, 2, 3)),
    "dates": ("2024-01-31\n2024-02-01 10:00\n2024-2-2\nx\n", date(2024, 2, 1), date(2024, 2, 3)),
    "integers": ("9\n10\n100\n100.5\n 50 \n1e2\nx\n", 9, 100),
    "doubles": ("1.5\n2.25\n3\nNaN\n", 1.5, 3.0),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BOUNDS), ids=list(BOUNDS))
def test_typed_bounds_on_a_text_column_select_as_spark_selects(spark: Any, tmp_path: Path, case: str) -> None:
    from pyspark.sql import functions as F

    values, start, end = BOUNDS[case]
    path = folder_of(tmp_path) / "case.csv"
    path.write_text("v\n" + values)
    frame = spark.read.options(header="true").csv(str(path))
    expected = [r.v for r in frame.filter((F.col("v") >= F.lit(start)) & (F.col("v") < F.lit(end))).collect()]
    result = read(file_source(tmp_path, "csv", configure={"read_options": H}), read_range=ReadRange("v", start, end))
    assert (result.data["v"].to_list() if result else []) == expected
