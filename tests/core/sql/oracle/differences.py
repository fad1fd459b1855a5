"""Deliberate differences from Spark 3.5 (ANSI off): cases the oracle does not compare, with why.

Each entry is a regular expression matched (``re.search``) against a case's SQL, and the reason.
Keep it nearly empty: a difference is a promise to users, listed in docs/sql.md.
"""

from __future__ import annotations

import re

_DOUBLE = r"(\b[de]\b|\d(D|e0)\b)"
DIFFERENCES: dict[str, str] = {
    rf"{_DOUBLE}.*(%|\bMOD\b)|(%|\bMOD\b|PMOD).*{_DOUBLE}": (
        "% / MOD / PMOD on DOUBLE is a - b*trunc(a/b): exact while |a/b| < 2**53, while Java's fmod is "
        "exact for any quotient (Polars has no native fmod; 1e300 % 3 differs)"
    ),
}


def deliberate(sql: str) -> str | None:
    """The reason ``sql`` is a deliberate difference, or ``None``."""
    for pattern, reason in DIFFERENCES.items():
        if re.search(pattern, sql):
            return reason
    return None
