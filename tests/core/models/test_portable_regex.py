from __future__ import annotations

import pytest

from datacoolie_core.models.portable_regex import check_portable_regex


@pytest.mark.parametrize(
    "pattern",
    [
        "[^0-9+]",
        "^a+b*c?$",
        "(?:ab)+",
        "(ab)+",
        "[A-Za-z_][A-Za-z0-9_]*",
        "a{2,3}",
        "a{2}?",
        "x|y",
        "\\.",
        "[]a]",
        "a*?",
    ],
)
def test_portable_patterns_pass(pattern: str) -> None:
    check_portable_regex(pattern)


@pytest.mark.parametrize(
    ("pattern", "match"),
    [
        ("(?=a)b", "lookaround"),
        ("a(?!b)", "lookaround"),
        ("(?<=a)b", "lookaround"),
        ("(?P<x>a)", "named group"),
        ("(?<x>a)", "named group"),
        ("(?i)abc", "inline flag"),
        ("(a)\\1", "backreference"),
        ("\\d+", "not portable; use an explicit class"),
        ("[\\w]", "not portable"),
        ("a++", "possessive"),
        ("a{2}+", "possessive"),
        ("[a&&b]", "class set operation"),
        ("[a--b]", "class set operation"),
        ("(a+)+", "catastrophic backtracking"),
        ("(a|b)*", "catastrophic backtracking"),
        ("((a))*", "catastrophic backtracking"),
        ("(ab", "unbalanced '\\('"),
        ("ab)", "unbalanced '\\)'"),
        ("[ab", "unbalanced '\\['"),
        ("ab\\", "lone backslash"),
        ("a" * 4097, "longer than 4096"),
    ],
    ids=lambda v: v[:12] if isinstance(v, str) else None,
)
def test_non_portable_patterns_fail(pattern: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_portable_regex(pattern)
