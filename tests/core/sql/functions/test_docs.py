"""docs/sql-functions.md lists exactly the supported functions, by family (it is generated from the code).

Regenerate the list after adding a function: ``python -m tests.core.sql.functions.test_docs``.
"""

from __future__ import annotations

import re
from pathlib import Path

from datacoolie_core.sql import SUPPORTED_FUNCTIONS
from datacoolie_core.sql.functions import FAMILIES
from datacoolie_core.sql.to_polars import OPERATOR_FUNCTIONS

DOC = Path(__file__).parents[4] / "docs" / "sql-functions.md"
START, END = "<!-- functions:start (generated) -->", "<!-- functions:end -->"


def render() -> str:
    """The generated section: one line per family, names in backticks."""
    lines = [START, "", f"{len(SUPPORTED_FUNCTIONS)} functions.", ""]
    for title, module in FAMILIES.items():
        names = sorted(module.SUPPORTED)
        lines.append(f"- **{title}** ({len(names)}): {', '.join(f'`{n}`' for n in names)}")
    operators = ", ".join(f"`{n}`" for n in sorted(OPERATOR_FUNCTIONS))
    lines += [f"- **Arithmetic spelled as functions** (compiled with the operators, see docs/sql.md): {operators}"]
    return "\n".join([*lines, "", END])


def test_doc_lists_exactly_the_supported_functions() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(START) : text.index(END) + len(END)]
    assert section == render(), "docs/sql-functions.md is stale: run python -m tests.core.sql.functions.test_docs"
    listed = set(re.findall(r"`([A-Z0-9_]+)`", section))
    assert listed == set(SUPPORTED_FUNCTIONS)


if __name__ == "__main__":
    current = DOC.read_text(encoding="utf-8")
    DOC.write_text(current[: current.index(START)] + render() + current[current.index(END) + len(END) :])
