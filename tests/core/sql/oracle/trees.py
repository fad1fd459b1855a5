"""Random well-typed expression trees (hypothesis): operators, constructs and functions composed.

Each strategy yields SQL of one Spark kind, so every tree type-checks in Spark; the leaves are the
input table's columns and literals of the kind, including typed NULLs.
"""

from __future__ import annotations

from hypothesis import strategies as st

Tree = st.SearchStrategy[str]
LEAVES: dict[str, tuple[str, ...]] = {
    "int": ("i", "j", "0", "-7", "2147483647", "CAST(NULL AS INT)"),
    "double": ("d", "e", "2.5D", "-0.0D", "1e10"),
    "decimal": ("m", "1.5", "-0.25"),
    "string": ("s", "t", "n", "'abc'", "''", "'12'", "CAST(NULL AS STRING)"),
    "boolean": ("b", "c", "true", "CAST(NULL AS BOOLEAN)"),
    "date": ("dt", "DATE'2024-02-29'"),
}
NUMBERS = ("int", "double", "decimal")


def _binary(template: str, left: Tree, right: Tree) -> Tree:
    return st.tuples(left, right).map(lambda pair: template.format(*pair))


def trees(kind: str, depth: int = 3) -> Tree:
    """SQL expressions of Spark kind ``kind``, nested up to ``depth`` levels."""
    leaf = st.sampled_from(LEAVES[kind])
    if depth == 0:
        return leaf
    sub = {name: trees(name, depth - 1) for name in LEAVES}
    number = st.one_of(*(sub[name] for name in NUMBERS))
    options: list[Tree] = [leaf, leaf]
    if kind == "int":
        options += [_binary("({} {} {})".replace(" {} ", f" {op} ", 1), sub["int"], sub["int"]) for op in "+-*%"]
        options += [sub["double"].map(lambda x: f"CAST({x} AS INT)"), sub["string"].map(lambda x: f"CAST({x} AS INT)"),
                    _binary("PMOD({}, {})", sub["int"], sub["int"]), sub["string"].map(lambda x: f"LENGTH({x})")]  # fmt: skip
    if kind == "double":
        options += [_binary("({} / {})", number, number), _binary("({} + {})", sub["double"], number),
                    _binary("({} * {})", number, sub["double"]), sub["string"].map(lambda x: f"CAST({x} AS DOUBLE)")]  # fmt: skip
    if kind == "decimal":
        options += [_binary("({} + {})", sub["decimal"], sub["int"]), _binary("({} - {})", sub["decimal"], sub["decimal"]),
                    sub["double"].map(lambda x: f"CAST({x} AS DECIMAL(12,3))")]  # fmt: skip
    if kind == "string":
        options += [_binary("({} || {})", sub["string"], st.one_of(sub["string"], number)),
                    number.map(lambda x: f"CAST({x} AS STRING)"), sub["string"].map(lambda x: f"UPPER({x})"),
                    _binary("CONCAT({}, {})", sub["string"], sub["date"])]  # fmt: skip
    if kind == "date":
        options += [_binary("DATE_ADD({}, {})", sub["date"], st.sampled_from(("1", "-1", "j"))),
                    sub["string"].map(lambda x: f"CAST({x} AS DATE)")]  # fmt: skip
    if kind == "boolean":
        comparable = st.sampled_from(("=", "<", ">=", "<>", "<=>"))
        options += [
            st.tuples(number, comparable, number).map(" ".join),
            st.tuples(sub["string"], comparable, st.one_of(sub["string"], number)).map(" ".join),
            _binary("({} AND {})", sub["boolean"], sub["boolean"]), _binary("({} OR {})", sub["boolean"], sub["boolean"]),
            sub["boolean"].map(lambda x: f"NOT {x}"), number.map(lambda x: f"{x} IS NULL"),
            _binary("{} IN (1, 2.5, NULL, {})", number, number), _binary("{} BETWEEN -1 AND {}", number, number),
            sub["string"].map(lambda x: f"{x} NOT LIKE 'a%'"), sub["string"].map(lambda x: f"{x} LIKE '%1_'"),
        ]  # fmt: skip
    conditional = st.tuples(sub["boolean"], sub[kind], sub[kind])
    options += [conditional.map(lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"),
                conditional.map(lambda t: f"IF({t[0]}, {t[1]}, {t[2]})"),
                _binary("COALESCE({}, {})", sub[kind], sub[kind])]  # fmt: skip
    return st.one_of(*options)


def any_tree(depth: int = 3) -> Tree:
    return st.one_of(*(trees(kind, depth) for kind in LEAVES))
