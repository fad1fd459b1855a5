"""The import graph of the packages, read from the source: no circle, core's layers point one way,
and the Dagster layer builds on core's public surface only.

Every ``import`` and ``from … import`` counts except those under ``if TYPE_CHECKING:``. An import
inside a function (deferred so that a heavy module loads on first use) is still a dependency: it
obeys the same rules; the few that do not are listed below, each with why.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPOSITORY = Path(__file__).parents[1]
PACKAGES = ("datacoolie_core", "datacoolie_dagster", "datacoolie_dagster_hook")

CORE_LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    # lowest first; a module may import its own layer and the layers above it in this list only
    (
        "foundation",
        frozenset(
            {"lazy", "types", "columns", "errors", "redaction", "suggestions", "input_bounds", "backoff", "faults"}
            | {"plugins", "process_exit", "engine", "gc_pause"}
        ),
    ),
    ("models", frozenset({"models"})),
    ("platform", frozenset({"secrets", "platform"})),
    ("expressions", frozenset({"sql", "transforms"})),
    ("storage", frozenset({"sources", "destinations", "watermark", "logging"})),
    ("metadata", frozenset({"metadata", "observers"})),
    ("orchestration", frozenset({"orchestration"})),
    ("entry points", frozenset({"cli", "api", ""})),  # "": the package root's re-exports
)
"""Core's layers, by the first name under ``datacoolie_core`` (a subpackage or a top-level module)."""

UPWARD_EXCEPTIONS = {
    ("datacoolie_core.models.run_config", "datacoolie_core.orchestration.replay.windows"):
        "a ReplayConfig refuses a range of too many chunks when it is built, with the window arithmetic",
    ("datacoolie_core.models.transform", "datacoolie_core.sql.to_polars"):
        "a transform's expression is checked against the SQL translator when the model is built",
    ("datacoolie_core.metadata.confinement", "datacoolie_core.orchestration.preparation.query"):
        "validation classifies a query reference as a run would prepare it",
}  # fmt: skip
"""Deferred imports from a lower layer to a higher one: a model or validator calling the code that
gives its check meaning, loaded only when a document needs it."""

DEFERRED_CIRCLES = {
    frozenset({"datacoolie_core.models.run_config", "datacoolie_core.orchestration.replay.windows"}):
        "the same check as above, the other way: windows reads the chunk units of the run config",
    frozenset({"datacoolie_core.watermark.store", "datacoolie_core.watermark.postgres_store"}):
        "the store factory loads the PostgreSQL store (psycopg2) only for a postgresql:// state URL",
}  # fmt: skip
"""Circles closed only by a deferred import. None exists at import time (checked separately)."""

PUBLIC_SURFACE = frozenset({"datacoolie_core", "datacoolie_core.api", "datacoolie_core.columns"})
"""What the Dagster layer may import from core: the package root, the integration API and the
system column names (constants every writer and reader shares)."""

SURFACE_EXCEPTIONS: dict[str, str] = {}
"""Dagster-layer modules that still import core's internals."""


def module_name(path: Path) -> str:
    parts = path.relative_to(REPOSITORY).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (REPOSITORY / package).rglob("*.py")}


def _owner(name: str) -> str | None:
    """The module of ours ``name`` is or lives in (``pkg.mod.attr`` -> ``pkg.mod``); None if not ours."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
    for alias in node.names:
        yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base


@cache
def imports(module: str, *, deferred: bool = True) -> frozenset[str]:
    """The modules of ours ``module`` imports (those inside functions too unless ``deferred=False``)."""
    path = modules()[module]
    found: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import | ast.ImportFrom) and (deferred or not nested):
                found.update(t for t in map(_owner, _targets(child, module, path.name == "__init__.py")) if t)
            visit(child, nested)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return frozenset(found - {module})


def circles(*, deferred: bool) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in imports(v, deferred=deferred):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = {stack.pop()}
            while v not in group:
                group.add(stack.pop())
            if len(group) > 1:
                found.append(frozenset(group))

    for module in sorted(modules()):
        if module not in index:
            connect(module)
    return found


def core_layer(module: str) -> int:
    head = module.split(".")[1] if "." in module else ""
    for rank, (_, members) in enumerate(CORE_LAYERS):
        if head in members:
            return rank
    raise AssertionError(f"{module}: '{head}' is in no layer of CORE_LAYERS; place it there")


def edges(prefix: str) -> Iterator[tuple[str, str]]:
    for module in sorted(modules()):
        if module.split(".")[0] == prefix:
            yield from ((module, target) for target in sorted(imports(module)))


def test_no_circle_at_import_time() -> None:
    assert circles(deferred=False) == []


def test_no_circle_but_the_listed_deferred_ones() -> None:
    assert set(circles(deferred=True)) == set(DEFERRED_CIRCLES)


def test_every_core_module_has_a_layer() -> None:
    for module in modules():
        if module.startswith("datacoolie_core"):
            core_layer(module)


def test_core_imports_point_down_its_layers() -> None:
    upward = [
        f"{m} ({CORE_LAYERS[core_layer(m)][0]}) imports {t} ({CORE_LAYERS[core_layer(t)][0]})"
        for m, t in edges("datacoolie_core")
        if t.startswith("datacoolie_core") and core_layer(t) > core_layer(m) and (m, t) not in UPWARD_EXCEPTIONS
    ]
    assert upward == []


def test_the_listed_exceptions_are_still_needed() -> None:
    # an exception nobody needs any more is removed, so the rules stay as strict as the code allows
    present = set(edges("datacoolie_core"))
    assert [edge for edge in UPWARD_EXCEPTIONS if edge not in present] == []
    importing_internals = {m for m, t in dagster_to_core() if t not in PUBLIC_SURFACE}
    assert set(SURFACE_EXCEPTIONS) - importing_internals == set()


def test_core_never_imports_the_dagster_layer() -> None:
    assert [(m, t) for m, t in edges("datacoolie_core") if not t.startswith("datacoolie_core")] == []


def dagster_to_core() -> Iterator[tuple[str, str]]:
    for prefix in ("datacoolie_dagster", "datacoolie_dagster_hook"):
        yield from ((m, t) for m, t in edges(prefix) if t.startswith("datacoolie_core"))


def test_the_dagster_layer_imports_only_cores_public_surface() -> None:
    internal = [
        f"{m} imports {t}" for m, t in dagster_to_core() if t not in PUBLIC_SURFACE and m not in SURFACE_EXCEPTIONS
    ]
    assert internal == []


def test_the_public_api_loads_nothing_heavy() -> None:
    # an integration imports the surface at load; each name loads its own module on first use
    code = (
        "import sys, datacoolie_core.api, datacoolie_core.columns\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'polars', 'pydantic', 'deltalake', 'sqlglot'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPOSITORY)
    assert done.stdout.strip() == "[]"


def test_every_public_name_resolves() -> None:
    import datacoolie_core.api as api

    assert [name for name in api.__all__ if getattr(api, name, None) is None] == []
