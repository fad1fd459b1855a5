"""The ``date_folder_partitions`` pattern of a connection (DataCoolie S-12, D-14), parsed.

Pure: used by the date-folder reader (:mod:`datacoolie_core.sources.date_folders`) and by
``datacoolie validate``, which reports a pattern a source cannot read before any run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DATE_PLACEHOLDERS = ("year", "month", "day", "hour")
"""The placeholders of a date-folder pattern, in the only order they may appear."""
_DIGITS = {"year": 4, "month": 2, "day": 2, "hour": 2}
_PLACEHOLDER = re.compile(r"\{(\w*)\}")


@dataclass(frozen=True)
class Level:
    """One ``/`` level of a pattern: a literal prefix, one placeholder, a literal suffix."""

    placeholder: str
    regex: re.Pattern[str]


def parse_pattern(pattern: str) -> tuple[Level, ...]:
    """The levels of a ``date_folder_partitions`` pattern.

    Raises:
        ValueError: a level without exactly one placeholder, an unknown placeholder, placeholders out
            of the order year, month, day, hour, or a level that leaves the table folder.
    """
    levels: list[Level] = []
    texts = pattern.strip("/").split("/")
    if len(texts) > len(DATE_PLACEHOLDERS):
        raise ValueError(f"{len(texts)} levels, at most {len(DATE_PLACEHOLDERS)} (year, month, day, hour)")
    for index, text in enumerate(texts):
        names = _PLACEHOLDER.findall(text)
        expected = DATE_PLACEHOLDERS[index]
        if len(names) != 1:
            raise ValueError(f"level {index + 1} '{text}' must hold exactly one placeholder ({{{expected}}})")
        if names[0] != expected:
            raise ValueError(
                f"level {index + 1} has '{{{names[0]}}}' where '{{{expected}}}' belongs; placeholders are "
                f"{', '.join('{' + p + '}' for p in DATE_PLACEHOLDERS)}, one per level, in that order"
            )
        prefix, suffix = text.split("{" + names[0] + "}")
        if "{" in prefix + suffix or "}" in prefix + suffix:
            raise ValueError(f"level {index + 1} '{text}' has a stray brace")
        regex = re.compile(re.escape(prefix) + rf"(\d{{{_DIGITS[names[0]]}}})" + re.escape(suffix))
        levels.append(Level(names[0], regex))
    return tuple(levels)
