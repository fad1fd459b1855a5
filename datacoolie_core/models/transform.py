"""The transform block of a dataflow and its typed rule objects (DataCoolie M-31 … M-44)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints, field_validator, model_validator

from datacoolie_core.models.base import (
    Bool,
    IntLike,
    JsonObject,
    MetadataModel,
    Name,
    OpenConfigure,
    OptStr,
    StrList,
    choice,
    located_error,
)
from datacoolie_core.models.coerce import ensure_list, strip_or_none
from datacoolie_core.models.portable_regex import check_portable_regex

ValueOperation = Literal["trim", "case", "regex_replace", "empty_to_null", "fill_null", "map"]
MaskingMethod = Literal["redact", "nullify", "partial", "numeric_bucket", "date_truncate"]
HashAlgorithm = Literal["sha256", "xxhash64"]
VALUE_OPERATIONS: tuple[str, ...] = get_args(ValueOperation)
MASKING_METHODS: tuple[str, ...] = get_args(MaskingMethod)
HASH_ALGORITHMS: tuple[str, ...] = get_args(HashAlgorithm)


def _scalar(value: Any) -> Any:
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise ValueError(f"expected a string, number or boolean, got {type(value).__name__}")
    return value


Scalar = Annotated[Any, AfterValidator(_scalar)]
"""A JSON scalar (string, number, boolean) or null."""


ObjectList = BeforeValidator(ensure_list)
"""A list of objects; JSON array text is accepted too (metadata exported from spreadsheets)."""


def _unique_columns(columns: list[str], what: str) -> list[str]:
    """Columns must be non-blank and unique ignoring case."""
    seen: dict[str, str] = {}
    for column in columns:
        if not column.strip():
            raise ValueError(f"{what} must not contain a blank column name")
        if column.lower() in seen:
            raise ValueError(f"{what} lists column '{column}' twice (names compare case-insensitively)")
        seen[column.lower()] = column
    return columns


class SchemaHint(MetadataModel):
    """A column-level type hint applied by the schema converter (transformer slot 10)."""

    column_name: Name
    data_type: Name
    """Target type, e.g. ``long``, ``decimal``, ``timestamp``, ``date`` (interpreted per ``schema_hint_type_system``)."""
    format: OptStr = None
    """Date/timestamp parse pattern, Java (``yyyy-MM-dd``) or strftime style."""
    precision: IntLike | None = None
    scale: IntLike | None = None
    default_value: str | None = None
    ordinal_position: IntLike | None = 0
    is_active: Bool = True

    @property
    def type_string(self) -> str:
        """``data_type(precision,scale)`` when a precision is set, else ``data_type``."""
        if self.precision is None:
            return self.data_type
        return f"{self.data_type}({self.precision},{self.scale or 0})"


class SharedSchemaHint(MetadataModel):
    """A top-level ``schema_hints`` group, matched to dataflows by source connection and table."""

    connection_name: OptStr = None
    connection_id: OptStr = None
    table_name: Name
    schema_name: OptStr = None
    hints: list[SchemaHint]

    @model_validator(mode="after")
    def _needs_connection(self) -> SharedSchemaHint:
        if self.connection_name is None and self.connection_id is None:
            raise located_error("connection_name", "a schema_hints group needs connection_name or connection_id")
        return self


def _compiles(sql: str) -> str:
    # sqlglot and Polars load with the first expression checked, not with the models (datacoolie_core.lazy)
    from datacoolie_core.sql.to_polars import validate_expression

    return validate_expression(sql)


SqlExpression = Annotated[str, AfterValidator(_compiles)]
"""One SQL expression over the row's columns (Spark SQL), checked to compile when the metadata loads."""
OptSqlExpression = Annotated[SqlExpression | None, BeforeValidator(strip_or_none)]


class PartitionColumn(MetadataModel):
    """A destination partition column, optionally derived by a SQL ``expression`` (slot 80)."""

    column: Name
    expression: OptSqlExpression = None


class AdditionalColumn(MetadataModel):
    """A computed column added in transformer slot 30."""

    column: Name
    expression: Annotated[SqlExpression, StringConstraints(strip_whitespace=True, min_length=1)]


class ValueRule(MetadataModel):
    """A value cleaning rule (slot 5): trim, case, regex_replace, empty_to_null, fill_null, map."""

    operation: Annotated[str, choice(VALUE_OPERATIONS, "value rule operation")]
    columns: list[str] = Field(min_length=1)
    order: int = Field(100, ge=0)
    mode: Annotated[str | None, choice(("lower", "upper"), "case mode")] = None
    pattern: str | None = Field(None, max_length=4096)
    replacement: str = ""
    value: Scalar = None
    mapping: dict[str, str] = Field(default_factory=dict)
    on_unmapped: Annotated[str, choice(("keep", "null"), "on_unmapped")] = "keep"

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str]) -> list[str]:
        return _unique_columns(columns, "columns")

    @field_validator("pattern")
    @classmethod
    def _portable(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            check_portable_regex(pattern)
        return pattern

    @model_validator(mode="after")
    def _operation_needs(self) -> ValueRule:
        needs = {"case": "mode", "regex_replace": "pattern", "fill_null": "value", "map": "mapping"}
        key = needs.get(self.operation)
        if key and getattr(self, key) in (None, {}):
            raise located_error(key, f"operation '{self.operation}' needs a non-empty '{key}'")
        return self


class MaskingRule(MetadataModel):
    """A masking rule (slot 84): redact, nullify, partial, numeric_bucket, date_truncate."""

    method: Annotated[str, choice(MASKING_METHODS, "masking method")]
    columns: list[str] = Field(min_length=1)
    value: Scalar = None
    keep_start: int = Field(0, ge=0)
    keep_end: int = Field(0, ge=0)
    mask_char: str = Field("*", min_length=1, max_length=1)
    bucket_size: float | None = Field(None, gt=0)
    unit: Annotated[str | None, choice(("year", "month", "day", "hour"), "date_truncate unit")] = None

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str]) -> list[str]:
        return _unique_columns(columns, "columns")

    @model_validator(mode="after")
    def _method_needs(self) -> MaskingRule:
        needs = {"redact": "value", "numeric_bucket": "bucket_size", "date_truncate": "unit"}
        key = needs.get(self.method)
        if key and getattr(self, key) is None:
            raise located_error(key, f"masking method '{self.method}' needs '{key}'")
        return self


class HashColumn(MetadataModel):
    """A hash of ordered columns written to ``target_column`` (slot 18)."""

    target_column: Name
    columns: list[str] = Field(min_length=1)
    algorithm: Annotated[str, choice(HASH_ALGORITHMS, "hash algorithm")] = "sha256"
    serialization: Annotated[str, choice(("dc_hash_v1",), "hash serialization")] = "dc_hash_v1"

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str]) -> list[str]:
        return _unique_columns(columns, "columns")


class TransformConfigure(OpenConfigure):
    """``transform.configure``; keys not listed here pass through to user transformers."""

    convert_timestamp_ntz: Bool = True
    timestamp_timezone: OptStr = None
    deduplicate_by_rank: Bool = False
    missing_column_policy: Annotated[str, choice(("error", "ignore"), "missing_column_policy")] = "error"


class Transform(MetadataModel):
    """Everything between read and write. All optional."""

    deduplicate_columns: StrList = Field(default_factory=list)
    """Dedup keys; default ``destination.merge_keys``."""
    latest_data_columns: StrList = Field(default_factory=list)
    """Columns picking the latest row of a dedup key (descending, nulls last); default the watermark columns."""
    filter_expression: OptSqlExpression = None
    """SQL predicate applied after computed columns (slot 35)."""
    additional_columns: Annotated[list[AdditionalColumn], ObjectList] = Field(default_factory=list)
    schema_hints: Annotated[list[SchemaHint], ObjectList] = Field(default_factory=list)
    select_columns: StrList = Field(default_factory=list)
    drop_columns: StrList = Field(default_factory=list)
    rename_columns: JsonObject = Field(default_factory=dict)
    value_rules: Annotated[list[ValueRule], ObjectList] = Field(default_factory=list)
    hash_columns: Annotated[list[HashColumn], ObjectList] = Field(default_factory=list)
    masking_rules: Annotated[list[MaskingRule], ObjectList] = Field(default_factory=list)
    configure: Annotated[TransformConfigure, BeforeValidator(lambda v: {} if v in (None, "") else v)] = Field(
        default_factory=TransformConfigure
    )

    @field_validator("select_columns", "drop_columns")
    @classmethod
    def _projection(cls, columns: list[str], info: Any) -> list[str]:
        return _unique_columns(columns, info.field_name)

    @field_validator("rename_columns")
    @classmethod
    def _renames(cls, renames: dict[str, Any]) -> dict[str, Any]:
        check_renames(renames)
        return renames

    @model_validator(mode="after")
    def _cross_checks(self) -> Transform:
        if self.select_columns and self.drop_columns:
            raise located_error("drop_columns", "select_columns and drop_columns cannot be used together; keep one")
        targets = [h.target_column.lower() for h in self.hash_columns]
        duplicate = next((t for t in targets if targets.count(t) > 1), None)
        if duplicate:
            raise located_error("hash_columns", f"target_column '{duplicate}' is produced by two hash columns")
        masked: dict[str, int] = {}
        for index, rule in enumerate(self.masking_rules):
            for column in rule.columns:
                if column.lower() in masked:
                    raise located_error(
                        f"masking_rules[{index}].columns",
                        f"column '{column}' is already masked by masking_rules[{masked[column.lower()]}]",
                    )
                masked[column.lower()] = index
        return self


def check_renames(renames: dict[str, Any]) -> None:
    """Renames are atomic: no duplicate targets, chains, cycles or no-ops (case-insensitive)."""
    sources = {old.lower() for old in renames}
    targets: dict[str, str] = {}
    for old, new in renames.items():
        if not isinstance(new, str) or not new.strip():
            raise ValueError(f"rename of '{old}' must be a non-empty string")
        if not old.strip():
            raise ValueError("rename_columns has a blank source column")
        if new.lower() in targets:
            raise ValueError(f"'{targets[new.lower()]}' and '{old}' are both renamed to '{new}'")
        if new.lower() in sources:
            raise ValueError(
                f"'{old}' -> '{new}' renames onto a column that is itself renamed "
                "(chains, cycles and no-op renames are not allowed)"
            )
        targets[new.lower()] = old
