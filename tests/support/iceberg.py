"""Iceberg test support: a SQL catalog (SQLite under ``tmp_path``) and an independent read-back.

The read-back loads the catalog afresh with pyiceberg (not through the engine's cached catalog)
and reads the table with ``table.scan().to_arrow()``: what any other Iceberg reader would see.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from pyiceberg.catalog import load_catalog
from pyiceberg.table import Table


def catalog_configure(root: Path, *, uri: str | None = None) -> dict[str, Any]:
    """``connection.configure`` of an Iceberg connection: warehouse ``root/lake``, catalog ``root/catalog.db``."""
    return {
        "base_path": str(root / "lake"),
        "catalog_properties": {"type": "sql", "uri": uri or f"sqlite:///{root / 'catalog' / 'catalog.db'}"},
    }


def iceberg_connection(root: Path, name: str = "lake", **extra: Any) -> dict[str, Any]:
    """A connection entry of a metadata document."""
    return {
        "name": name,
        "connection_type": "lakehouse",
        "format": "iceberg",
        "configure": catalog_configure(root) | extra,
    }


def load_table(root: Path, *ident: str, uri: str | None = None, catalog_name: str = "lake") -> Table:
    """The table, loaded by a catalog of its own (the SQL catalog keys its tables by catalog name)."""
    catalog = load_catalog(
        catalog_name,
        type="sql",
        uri=uri or f"sqlite:///{root / 'catalog' / 'catalog.db'}",
        warehouse=f"file://{root / 'lake'}",
    )
    return catalog.load_table(ident)


def read_back(root: Path, *ident: str, by: tuple[str, ...] = ("id",), uri: str | None = None) -> pl.DataFrame:
    """The table's rows as pyiceberg reads them, sorted by ``by``."""
    frame = pl.from_arrow(load_table(root, *ident, uri=uri).scan().to_arrow())
    assert isinstance(frame, pl.DataFrame)
    return frame.sort(list(by), maintain_order=True)


def seed_catalog(root: Path, catalog_name: str = "src") -> Any:
    """A SQL catalog under ``root`` (as :func:`catalog_configure` describes it), made by pyiceberg alone."""
    (root / "catalog").mkdir(parents=True, exist_ok=True)
    return load_catalog(
        catalog_name,
        type="sql",
        uri=f"sqlite:///{root / 'catalog' / 'catalog.db'}",
        warehouse=f"file://{root / 'lake'}",
    )


def seed_table(root: Path, ident: tuple[str, ...], *batches: pl.DataFrame, catalog_name: str = "src") -> Table:
    """A table created and appended to by pyiceberg itself, one snapshot (one data file) per batch."""
    catalog = seed_catalog(root, catalog_name)
    catalog.create_namespace_if_not_exists(ident[:-1])
    table = catalog.create_table(ident, schema=batches[0].to_arrow().schema)
    for frame in batches:
        table.append(frame.to_arrow())
    return table
