"""Dataflows: source -> transform -> destination (DataCoolie M-20 … M-30, M-45, M-46).

Connection references are resolved while validating: pass the document's connections by name in
the validation context (``{"connections": {name: Connection}}``) and an unknown name is an error at
``...source.connection_name`` with the closest defined name.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from datacoolie_core.columns import DATE_FOLDER_PARTITION
from datacoolie_core.models.base import (
    Bool,
    JsonObject,
    MetadataModel,
    Name,
    OpenConfigure,
    OptStr,
    StrList,
    located_error,
)
from datacoolie_core.models.coerce import build_path, ensure_choice, ensure_list, name_to_uuid
from datacoolie_core.models.connection import BackwardKeys, Connection
from datacoolie_core.models.source_api import RangeParam, check_removed_api_keys
from datacoolie_core.models.transform import OptSqlExpression, PartitionColumn, Transform
from datacoolie_core.suggestions import did_you_mean

LoadType = Literal["append", "overwrite", "merge_upsert", "merge_overwrite", "scd2"]
LOAD_TYPES: tuple[str, ...] = get_args(LoadType)
MERGE_LOAD_TYPES = ("merge_upsert", "merge_overwrite", "scd2")
ProcessingMode = Literal["batch", "microbatch", "streaming"]
PROCESSING_MODES: tuple[str, ...] = get_args(ProcessingMode)
WRITABLE_FORMATS = ("delta", "iceberg", "parquet", "csv", "json", "jsonl", "avro")
"""Destination formats DataCoolie has writers for (D-01): no database, API, function or Excel targets."""


def _load_type(value: Any) -> Any:
    if value is None:
        return "append"
    if isinstance(value, str) and value.strip().lower() == "full_load":
        return "overwrite"  # DataCoolie keeps full_load as an alias of overwrite (D-07)
    return ensure_choice(value, (*LOAD_TYPES, "full_load"), "load_type")


def _partition_columns(value: Any) -> Any:
    return [{"column": item} if isinstance(item, str) else item for item in ensure_list(value)]


PartitionColumns = Annotated[list[PartitionColumn], BeforeValidator(_partition_columns)]


class ConnectionRef(MetadataModel):
    """A source or destination's reference to its connection: by name, or an inline object.

    ``connection_name`` is canonical; the legacy ``connection`` key holds either a name or an inline
    connection object. After validation, :attr:`connection` is the resolved :class:`Connection`.
    """

    connection_name: OptStr = None
    inline_connection: Connection | None = Field(None, alias="connection")
    _connection: Connection | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _legacy_connection_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("connection"), str):
            if data.get("connection_name") is not None:
                raise located_error("connection", "give either connection_name or connection, not both")
            data = {k: v for k, v in data.items() if k != "connection"} | {"connection_name": data["connection"]}
        return data

    @field_validator("connection_name")
    @classmethod
    def _known_connection(cls, name: str | None, info: ValidationInfo) -> str | None:
        known = (info.context or {}).get("connections")
        if name is not None and known is not None and name not in known:
            raise ValueError(
                f"connection '{name}' is not defined{did_you_mean(name, known)}"
                + (f" (defined: {', '.join(sorted(known))})" if known else " (the document defines no connections)")
            )
        return name

    @model_validator(mode="after")
    def _resolve(self, info: ValidationInfo) -> ConnectionRef:
        if self.connection_name is not None and self.inline_connection is not None:
            raise located_error("connection", "give either connection_name or connection, not both")
        if self.connection_name is None and self.inline_connection is None:
            raise located_error(
                "connection_name", "required key 'connection_name' is missing (or give an inline 'connection')"
            )
        known = (info.context or {}).get("connections") or {}
        self._connection = self.inline_connection or known.get(self.connection_name)
        return self

    @property
    def connection(self) -> Connection:
        """The resolved connection."""
        # read from pydantic's private-attribute dict: ``self._connection`` goes through
        # BaseModel.__getattr__ (a failed ``hasattr`` per read), and paths ask for it ~20 times a dataflow
        connection: Connection | None = (self.__pydantic_private__ or {}).get("_connection")
        if connection is None:
            raise LookupError(
                f"connection '{self.connection_name}' was not resolved; validate with connections in context"
            )
        return connection

    def bind(self, connection: Connection) -> None:
        """Attach the resolved connection (providers that resolve references themselves)."""
        self._connection = connection


class SourceConfigure(BackwardKeys):
    """``source.configure``: read options, look-back (replaces the connection's), API request keys."""

    read_options: JsonObject = Field(default_factory=dict)
    endpoint: str | None = None
    method: str = "GET"
    params: dict[str, Any] = Field(default_factory=dict)
    body: dict[str, Any] = Field(default_factory=dict)
    data_path: str | None = None
    pagination_type: Annotated[
        str | None,
        BeforeValidator(
            lambda v: v if v is None else ensure_choice(v, ("offset", "cursor", "next_link"), "pagination_type")
        ),
    ] = None
    page_size: int = 100
    max_pages: int = 1000
    next_link_path: str = "next"
    next_link_bound_mode: Annotated[
        str, BeforeValidator(lambda v: ensure_choice(v, ("opaque", "repeat_query_bounds"), "next_link_bound_mode"))
    ] = "opaque"
    cursor_path: str = "next_cursor"
    cursor_param: str = "cursor"
    offset_param: str = "offset"
    limit_param: str = "limit"
    total_path: str | None = None
    offset_max_workers: int = 4
    rate_limit_delay: float = 0
    max_retries: int = 10
    range_param_mapping: dict[str, RangeParam] | None = Field(None, min_length=1)
    watermark_to_param_timezone: str | None = None
    watermark_range_interval_unit: Annotated[
        str | None,
        BeforeValidator(
            lambda v: v if v is None else ensure_choice(v, ("hour", "day", "month", "year"), "interval unit")
        ),
    ] = None
    watermark_range_interval_amount: int = 1
    watermark_range_start: str | None = None
    watermark_range_max_workers: int = 4

    @model_validator(mode="before")
    @classmethod
    def _no_removed_keys(cls, data: Any) -> Any:
        return check_removed_api_keys(data)

    @model_validator(mode="after")
    def _range_needs_mapping(self) -> SourceConfigure:
        if self.watermark_range_interval_unit is not None and not self.range_param_mapping:
            raise located_error("range_param_mapping", "watermark_range_interval_unit needs range_param_mapping")
        return self


class Source(ConnectionRef):
    """Where a dataflow reads: a table/folder, a query, or a Python function of a connection."""

    schema_name: OptStr = None
    table: OptStr = None
    query: OptStr = None
    """SQL: database query mode, SQL over registered lakehouse tables, or a ``.sql`` file reference."""
    python_function: OptStr = None
    """Dotted path ``pkg.module.fn`` of a function source."""
    watermark_columns: StrList = Field(default_factory=list)
    """Incremental columns; rows are read when any column is beyond its stored watermark."""
    filter_expression: OptSqlExpression = None
    """SQL predicate on raw source columns, applied after the watermark filter and before counting."""
    configure: Annotated[SourceConfigure, BeforeValidator(lambda v: {} if v in (None, "") else v)] = Field(
        default_factory=SourceConfigure
    )

    @model_validator(mode="after")
    def _selector(self) -> Source:
        if self._connection is None:
            return self
        kind = self._connection.connection_type
        if kind == "function" and not self.python_function:
            raise located_error("python_function", "a function connection's source needs python_function")
        if kind == "file" and not self.table:
            raise located_error("table", "a file source needs table (the folder under base_path/schema_name)")
        if kind in ("lakehouse", "database") and not (self.table or self.query):
            raise located_error("table", f"a {kind} source needs table or query")
        return self

    @property
    def path(self) -> str | None:
        """``base_path/schema_name/table`` of a file or lakehouse source; ``None`` without both ends."""
        base = self.connection.base_path
        return build_path(base, self.schema_name, self.table) if base and self.table else None

    @property
    def read_options(self) -> dict[str, Any]:
        """Connection read options overlaid by the source's (source wins)."""
        return self.connection.read_options | self.configure.read_options

    @property
    def backward(self) -> Any:
        """Effective look-back: a source-level config replaces the connection's entirely."""
        return self.configure.backward_config or self.connection.configure.backward_config


class DestinationConfigure(OpenConfigure):
    """``destination.configure``."""

    scd2_effective_column: OptSqlExpression = None
    """SQL expression giving ``__valid_from`` of an scd2 version; required for scd2."""
    replace_by_watermark: Bool = False
    write_options: JsonObject = Field(default_factory=dict)
    merge_options: JsonObject = Field(default_factory=dict)
    partition_columns: PartitionColumns | None = None
    partition_by: PartitionColumns | None = None
    """Alias of ``partition_columns`` written by DataCoolie's database metadata provider."""


class Destination(ConnectionRef):
    """Where a dataflow writes, and how (load strategy, keys, partitions)."""

    table: Name
    schema_name: OptStr = None
    load_type: Annotated[str, BeforeValidator(_load_type)] = "append"
    """append / overwrite (alias full_load) / merge_upsert / merge_overwrite / scd2."""
    merge_keys: StrList = Field(default_factory=list)
    partition_columns: PartitionColumns = Field(default_factory=list)
    configure: Annotated[DestinationConfigure, BeforeValidator(lambda v: {} if v in (None, "") else v)] = Field(
        default_factory=DestinationConfigure
    )

    @model_validator(mode="after")
    def _strategy_needs(self) -> Destination:
        if not self.partition_columns:
            self.partition_columns = self.configure.partition_columns or self.configure.partition_by or []
        if self.load_type in MERGE_LOAD_TYPES and not self.merge_keys:
            raise located_error("merge_keys", f"load_type '{self.load_type}' needs merge_keys")
        if self.load_type == "scd2" and not self.configure.scd2_effective_column:
            raise located_error(
                "configure.scd2_effective_column", "load_type 'scd2' needs configure.scd2_effective_column"
            )
        if self._connection is not None and self._connection.format not in WRITABLE_FORMATS:
            raise located_error(
                "connection_name",
                f"connection '{self._connection.name}' has format '{self._connection.format}', which cannot be a "
                f"destination (writable formats: {', '.join(WRITABLE_FORMATS)})",
            )
        return self

    @property
    def merge_keys_extended(self) -> list[str]:
        """Merge keys plus partition columns not already among them (M-28), order preserved."""
        lowered = {k.lower() for k in self.merge_keys}
        extra = [p.column for p in self.partition_columns if p.column.lower() not in lowered]
        return [*self.merge_keys, *extra]

    @property
    def path(self) -> str | None:
        base = self.connection.base_path
        return build_path(base, self.schema_name, self.table) if base else None

    @property
    def full_table_name(self) -> str:
        """Backtick-quoted ``catalog.database.schema.table`` of the non-empty parts (M-08)."""
        conn = self.connection
        parts = [conn.catalog, conn.database, self.schema_name, self.table]
        return ".".join(f"`{p}`" for p in parts if p)

    @property
    def destination_key(self) -> str:
        """Physical identity of the target (M-30): by qualified name when catalogued, else by path."""
        conn = self.connection
        if conn.catalog or conn.database:
            return f"table:{self.full_table_name.lower()}"
        if self.path:
            return f"path:{self.path.rstrip('/').lower()}"
        if conn.format == "iceberg":  # named by its catalog, whose name defaults to the connection's
            return f"table:`{conn.name.lower()}`.{self.full_table_name.lower()}"
        raise ValueError(f"destination '{self.table}' has neither a catalog/database nor a base_path")


class DataFlow(MetadataModel):
    """One ETL unit: read a source, transform, write a destination, save the watermark."""

    name: OptStr = None
    """Unique name; the default ``dataflow_id`` is derived from it (renaming changes the id)."""
    dataflow_id: OptStr = None
    workspace_id: OptStr = None
    description: OptStr = None
    stage: OptStr = None
    """Free label selected by ``run(stage=...)``; stages imply no order."""
    group_number: int | None = None
    """Co-location group: same job shard, ordered by execution_order. Null = independent."""
    execution_order: int | None = None
    """Order bucket within a group: lower buckets finish first, ties run in parallel, null is 0."""
    processing_mode: Annotated[
        str, BeforeValidator(lambda v: "batch" if v is None else ensure_choice(v, PROCESSING_MODES, "processing_mode"))
    ] = "batch"
    is_active: Bool = True
    source: Source
    destination: Destination
    transform: Annotated[Transform, BeforeValidator(lambda v: {} if v in (None, "") else v)] = Field(
        default_factory=Transform
    )
    configure: JsonObject = Field(default_factory=dict)
    """Free object DataCoolie only logs; ``configure.dagster`` holds our Dagster settings."""

    @model_validator(mode="after")
    def _identity_and_cross_checks(self) -> DataFlow:
        if self.name is None and self.dataflow_id is None:
            raise located_error("name", "required key 'name' is missing (a dataflow needs name or dataflow_id)")
        self.dataflow_id = self.dataflow_id or name_to_uuid(self.name or "")
        self.name = self.name or self.dataflow_id
        if self.destination.configure.replace_by_watermark:
            if self.destination.load_type != "merge_overwrite":
                raise located_error(
                    "destination.configure.replace_by_watermark",
                    "replace_by_watermark needs load_type 'merge_overwrite'",
                )
            if self.source._connection is not None and self.source.backward is None:
                raise located_error(
                    "destination.configure.replace_by_watermark",
                    "replace_by_watermark needs a backward look-back on the source or its connection",
                )
        return self

    @property
    def deduplicate_columns(self) -> list[str]:
        """Effective dedup keys: ``transform.deduplicate_columns`` else the (non-extended) merge keys."""
        return self.transform.deduplicate_columns or self.destination.merge_keys

    @property
    def order_columns(self) -> list[str]:
        """Effective dedup order: ``transform.latest_data_columns`` else the watermark columns that are
        data columns (``__date_folder_partition__`` is a folder date, not a column of the rows)."""
        return self.transform.latest_data_columns or [
            c for c in self.source.watermark_columns if c.lower() != DATE_FOLDER_PARTITION
        ]

    @property
    def label(self) -> str:
        """``name [id]``, the identity DataCoolie logs."""
        return f"{self.name} [{self.dataflow_id}]"
