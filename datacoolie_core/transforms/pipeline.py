"""The transformer pipeline: fixed slots, run in order over a lazy frame (DataCoolie T-01, T-02, T-15).

Every dataflow runs the same twelve slots; a slot with nothing to do returns no label. Slot numbers
are part of the contract (renumbering would change what dedup, partition expressions and renames
see): 5 value rules · 10 schema hints · 18 hashes · 20 dedup · 30 computed columns · 35 row filter ·
40-50 user plugins · 60 SCD2 columns · 70 system columns · 80 partitions · 84 masking ·
85 projection · 90 column names.

Transformers only add expressions to the :class:`polars.LazyFrame`; the caller collects once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import polars as pl

from datacoolie_core.errors import TransformError
from datacoolie_core.models.dataflow import DataFlow
from datacoolie_core.plugins import entry_points_of
from datacoolie_core.suggestions import did_you_mean
from datacoolie_core.transforms.base import TransformContext, Transformer
from datacoolie_core.transforms.column_names import ColumnNameSanitizer
from datacoolie_core.transforms.computed_columns import ColumnAdder
from datacoolie_core.transforms.deduplicate import Deduplicator
from datacoolie_core.transforms.hash_columns import HashColumnAdder
from datacoolie_core.transforms.masking import DataMasker
from datacoolie_core.transforms.partition_columns import PartitionHandler
from datacoolie_core.transforms.projection import ColumnProjector
from datacoolie_core.transforms.row_filter import RowFilter
from datacoolie_core.transforms.scd2_columns import SCD2ColumnAdder
from datacoolie_core.transforms.schema_hints import SchemaConverter
from datacoolie_core.transforms.system_columns import SystemColumnAdder
from datacoolie_core.transforms.value_rules import ColumnValueTransformer

DEFAULT_TRANSFORMERS: tuple[Transformer, ...] = (
    ColumnValueTransformer(),
    SchemaConverter(),
    HashColumnAdder(),
    Deduplicator(),
    ColumnAdder(),
    RowFilter(),
    SCD2ColumnAdder(),
    SystemColumnAdder(),
    PartitionHandler(),
    DataMasker(),
    ColumnProjector(),
    ColumnNameSanitizer(),
)
"""The built-in slots; stateless, so one instance serves every dataflow and thread."""

TRANSFORMERS: dict[str, Transformer] = {transformer.name: transformer for transformer in DEFAULT_TRANSFORMERS}
"""The built-in transformers by name (plugins: :func:`plugin_transformers`)."""

ROW_CHANGING = frozenset({Deduplicator.name, RowFilter.name})
"""The built-in slots that may drop rows; every other built-in slot keeps each row (and adds none)."""

PLUGIN_GROUP = "datacoolie.transformers"
PLUGIN_ORDERS = range(40, 51)
"""Slots 40-50 belong to user plugins; everything else is the framework's."""


def run_pipeline(
    frame: pl.LazyFrame | pl.DataFrame,
    ctx: TransformContext,
    *,
    transformers: Sequence[Transformer] | None = None,
) -> tuple[pl.LazyFrame, list[str]]:
    """Run the transformers over ``frame`` in slot order.

    Args:
        frame: the rows read (a DataFrame is made lazy).
        ctx: this execution's constants.
        transformers: replaces the default slots and plugins entirely (tests, custom drivers).

    Returns:
        The lazy result (not collected) and the labels of the transformers that applied, in order.

    Raises:
        TransformError: from a transformer as is; any other exception wrapped, naming the
            transformer and the dataflow, with the original as its cause.

    Example:
        >>> lazy, applied = run_pipeline(df, TransformContext(dataflow, run_id, now))  # doctest: +SKIP
        >>> applied  # doctest: +SKIP
        ['SchemaConverter(2 casts)', 'Deduplicator', 'ColumnAdder', 'SystemColumnAdder', 'ColumnNameSanitizer(lower)']
    """
    lazy = frame.lazy()
    applied: list[str] = []
    for transformer in build_pipeline(transformers):
        try:
            lazy, label = transformer.apply(lazy, ctx)
        except TransformError:
            raise
        except Exception as e:
            raise TransformError(
                f"dataflow '{ctx.dataflow.name}': transformer {transformer.name} (slot {transformer.order}) failed: "
                f"{type(e).__name__}: {e}; applied before it: {applied or 'none'}; check that slot's metadata"
            ) from e
        if label:
            applied.append(label)
    return lazy, applied


def keeps_rows(dataflow: DataFlow, transformers: Sequence[Transformer] | None = None) -> bool:
    """Whether the pipeline surely keeps every row of ``dataflow``: as many rows out as read in.

    True for the built-in slots alone (no plugin, no custom ``transformers``) when neither row
    filter nor deduplication applies: those are the only built-in slots that drop rows.
    """
    if transformers is not None or plugin_transformers():
        return False
    return not dataflow.transform.filter_expression and not (dataflow.deduplicate_columns and dataflow.order_columns)


def kept_rows(applied: Sequence[str]) -> bool:
    """Whether the labels of :func:`run_pipeline` name no slot that drops rows (labels start with the name)."""
    return not any(label.partition("(")[0] in ROW_CHANGING for label in applied)


def build_pipeline(transformers: Sequence[Transformer] | None = None) -> list[Transformer]:
    """``transformers`` (default: the built-in slots plus plugins) stably sorted by ``order``.

    Raises:
        TransformError: a plugin cannot be loaded, is not a transformer, or sits outside slots 40-50.
    """
    chosen = [*DEFAULT_TRANSFORMERS, *plugin_transformers()] if transformers is None else list(transformers)
    return sorted(chosen, key=lambda transformer: transformer.order)  # sorted() is stable


def get_transformer(name: str) -> Transformer:
    """The built-in or plugin transformer called ``name``.

    Raises:
        TransformError: no transformer has that name; the message lists the known ones.
    """
    known = {t.name: t for t in (*DEFAULT_TRANSFORMERS, *plugin_transformers())}
    if name not in known:
        raise TransformError(f"unknown transformer '{name}'{did_you_mean(name, known)}; known: {', '.join(known)}")
    return known[name]


@cache
def plugin_transformers() -> tuple[Transformer, ...]:
    """Transformers registered in the ``datacoolie.transformers`` entry-point group, loaded once.

    An entry point names a transformer instance or a class constructed without arguments.
    """
    builtin = {t.name for t in DEFAULT_TRANSFORMERS}
    found: list[Transformer] = []
    for entry in entry_points_of(PLUGIN_GROUP):
        try:
            loaded = entry.load()
            transformer = loaded() if isinstance(loaded, type) else loaded
        except Exception as e:
            raise TransformError(
                f"transformer plugin '{entry.name}' ({entry.value}) cannot be loaded: {type(e).__name__}: {e}; "
                "fix or uninstall the package that registers it"
            ) from e
        _check_plugin(entry.name, transformer, builtin)
        found.append(transformer)
    return tuple(found)


def _check_plugin(entry_name: str, transformer: object, builtin: set[str]) -> None:
    name, order = getattr(transformer, "name", None), getattr(transformer, "order", None)
    if not isinstance(name, str) or not isinstance(order, int) or not callable(getattr(transformer, "apply", None)):
        raise TransformError(
            f"transformer plugin '{entry_name}' is not a Transformer (needs name: str, order: int and apply()); "
            "see datacoolie_core.transforms.base.Transformer"
        )
    if order not in PLUGIN_ORDERS:
        raise TransformError(
            f"transformer plugin '{entry_name}' ({name}) has order {order}; plugins must use slots 40-50 "
            "(the others are the framework's)"
        )
    if name in builtin:
        raise TransformError(f"transformer plugin '{entry_name}' reuses the built-in name '{name}'; rename it")
