"""The README and docs/ as a guide: every relative link resolves, every user page is reachable from
``docs/index.md``, every design record from ``docs/dev/index.md``, and the README stays a front page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).parents[1]
DOCS = REPOSITORY / "docs"
README = REPOSITORY / "README.md"
README_MAX_LINES = 200
# [text](target) outside code spans; the target is relative unless it has a scheme or starts with '#'
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def documents() -> list[Path]:
    """Every Markdown page a reader of the repository follows links in."""
    return [README, REPOSITORY / "benchmarks" / "README.md", *sorted(DOCS.rglob("*.md"))]


def links(page: Path) -> list[str]:
    """The link targets of ``page``, code blocks and code spans left out (they show syntax, not links)."""
    text = CODE_SPAN.sub("", FENCE.sub("", page.read_text()))
    return [a or b for a, b in LINK.findall(text)]


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub renders for ``page``: lower case, punctuation dropped, spaces to '-'."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def relative_links(page: Path) -> list[str]:
    return [t for t in links(page) if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve()
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == [], f"{page.relative_to(REPOSITORY)} links to what does not exist"


def linked_pages(index: Path) -> set[Path]:
    return {(index.parent / t.partition("#")[0]).resolve() for t in relative_links(index)}


def test_every_user_page_is_linked_from_the_guide() -> None:
    index = DOCS / "index.md"
    pages = {p.resolve() for p in DOCS.glob("*.md")} - {index.resolve()}
    missing = sorted(p.name for p in pages - linked_pages(index))
    assert missing == [], "docs/index.md does not link these user pages"


def test_every_design_record_is_linked_from_the_dev_index() -> None:
    index = DOCS / "dev" / "index.md"
    pages = {p.resolve() for p in (DOCS / "dev").glob("*.md")} - {index.resolve()}
    missing = sorted(p.name for p in pages - linked_pages(index))
    assert missing == [], "docs/dev/index.md does not list these design records"
    assert index.resolve() in linked_pages(DOCS / "index.md"), "the guide does not link docs/dev/index.md"


def test_the_readme_is_a_front_page_that_leads_into_the_guide() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move details into docs/"
    assert (DOCS / "index.md").resolve() in linked_pages(README)


# a page speaks of the product, never of how it was made: no work-item numbers or references
BUILD_HISTORY = re.compile(r"\bissue[- ]?#?\d+|\bitem \d+ of\b", re.I)


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_page_tells_how_the_project_was_built(page: Path) -> None:
    found = [m.group(0) for m in BUILD_HISTORY.finditer(page.read_text())]
    assert found == [], f"{page.relative_to(REPOSITORY)} speaks of how it was built, not of the product"
