"""DataCoolie "portable regex v1": the regex subset that behaves the same on every engine (M-41).

``regex_replace`` patterns must mean the same thing in Rust's regex crate (Polars), Java (Spark)
and Python, and must not backtrack catastrophically. So lookaround, backreferences, named groups,
inline flags, shorthand classes (``\\d`` is Unicode-aware in some engines and not in others),
possessive quantifiers, class set operations and quantified groups that contain quantifiers,
alternation or nested groups are rejected before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PATTERN_LENGTH = 4096
_SHORTHANDS = set("dwsbDWSBkpPAZzGhHvVRX")
_QUANTIFIER_BRACE = re.compile(r"\{\d+(,\d*)?\}")


@dataclass
class _Group:
    quantified_inside: bool = False
    alternation: bool = False
    nested: bool = False


def check_portable_regex(pattern: str) -> None:
    """Raise ``ValueError`` naming the first non-portable construct of ``pattern``."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"pattern is longer than {MAX_PATTERN_LENGTH} characters")
    stack: list[_Group] = [_Group()]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            _check_escape(pattern, i)
            i += 2
        elif char == "[":
            i = _skip_class(pattern, i)
        elif char == "(":
            _check_group_opening(pattern, i)
            stack[-1].nested = True
            stack.append(_Group())
            i += 3 if pattern.startswith("(?:", i) else 1
        elif char == ")":
            if len(stack) == 1:
                raise ValueError(f"unbalanced ')' at position {i}")
            group = stack.pop()
            end = _quantifier_end(pattern, i + 1)
            if end and (group.quantified_inside or group.alternation or group.nested):
                raise ValueError(
                    f"quantified group ending at position {i} contains a quantifier, alternation or "
                    "nested group (catastrophic backtracking risk); rewrite it without the outer quantifier"
                )
            stack[-1].quantified_inside |= group.quantified_inside or bool(end)
            i = end or i + 1
        elif char == "|":
            stack[-1].alternation = True
            i += 1
        else:
            end = _quantifier_end(pattern, i)
            if end:
                stack[-1].quantified_inside = True
                i = end
            else:
                i += 1
    if len(stack) > 1:
        raise ValueError("unbalanced '(' : a group is never closed")


def _check_escape(pattern: str, i: int) -> None:
    if i + 1 >= len(pattern):
        raise ValueError("pattern ends with a lone backslash")
    nxt = pattern[i + 1]
    if nxt.isdigit():
        raise ValueError(f"backreference or digit escape '\\{nxt}' at position {i} is not portable")
    if nxt in _SHORTHANDS:
        raise ValueError(
            f"escape '\\{nxt}' at position {i} is not portable; use an explicit class such as [0-9] or [A-Za-z0-9_]"
        )


def _skip_class(pattern: str, start: int) -> int:
    """Index after the character class starting at ``start``; checks escapes and set operations."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            _check_escape(pattern, i)
            i += 2
            continue
        if char == "]":
            return i + 1
        if char == "[":
            raise ValueError(f"nested character class at position {i} is not portable")
        if pattern[i : i + 2] in ("&&", "--", "~~"):
            raise ValueError(f"class set operation '{pattern[i : i + 2]}' at position {i} is not portable")
        i += 1
    raise ValueError(f"unbalanced '[' at position {start}: the character class is never closed")


def _check_group_opening(pattern: str, i: int) -> None:
    if not pattern.startswith("(?", i) or pattern.startswith("(?:", i):
        return
    head = pattern[i : i + 4]
    if head.startswith(("(?=", "(?!", "(?<=", "(?<!")):
        kind = "lookaround"
    elif head.startswith(("(?P", "(?<", "(?'")):
        kind = "named group"
    else:
        kind = "inline flag group"
    raise ValueError(f"{kind} at position {i} is not portable; only plain '(...)' and '(?:...)' groups are")


def _quantifier_end(pattern: str, i: int) -> int:
    """If a quantifier starts at ``i``, the index after it (lazy ``?`` included), else 0."""
    if i >= len(pattern):
        return 0
    if pattern[i] in "*+?":
        end = i + 1
    else:
        match = _QUANTIFIER_BRACE.match(pattern, i)
        if not match:
            return 0
        end = match.end()
    if pattern.startswith("+", end):
        raise ValueError(f"possessive quantifier at position {i} is not portable")
    if pattern.startswith("?", end):
        end += 1
    return end
