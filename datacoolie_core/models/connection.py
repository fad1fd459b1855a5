"""Connections: where data is read from and written to (DataCoolie M-11 … M-19)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field, field_validator, model_validator

from datacoolie_core.models.base import (
    Bool,
    IntLike,
    JsonObject,
    MetadataModel,
    Name,
    OpenConfigure,
    OptStr,
    choice,
    located_error,
)
from datacoolie_core.models.coerce import (
    ensure_choice,
    ensure_list,
    name_to_uuid,
    normalize_path,
    parse_json_object,
)

ConnectionType = Literal["file", "lakehouse", "database", "api", "function", "streaming"]
Format = Literal["delta", "iceberg", "parquet", "csv", "json", "jsonl", "avro", "excel", "sql", "api", "function"]
CONNECTION_TYPES: tuple[str, ...] = get_args(ConnectionType)
FORMATS: tuple[str, ...] = get_args(Format)

CONNECTION_TYPE_FORMATS: dict[str, tuple[str, ...]] = {
    "file": ("parquet", "csv", "json", "jsonl", "avro", "excel"),
    "lakehouse": ("delta", "iceberg"),
    "database": ("sql",),
    "api": ("api",),
    "function": ("function",),
    "streaming": (),
}
"""Formats each connection type accepts; the first one is the default when ``format`` is omitted."""

SCHEMA_HINT_TYPE_SYSTEMS = (
    "spark_sql", "spark sql", "spark", "postgresql", "postgres", "mysql",
    "mssql", "sql server", "sqlserver", "oracle", "sqlite",
)  # fmt: skip
DATABASE_TYPES = ("postgresql", "mysql", "mssql", "oracle", "sqlite")
DATABASE_AUTH_TYPES = ("password", "service_principal", "managed_identity", "access_token")
SECRET_KEYS = frozenset(
    {"password", "token", "auth_token", "api_key_value", "client_secret", "aws_secret_access_key", "aws_session_token"}
    | {
        "azure_storage_account_key",
        "azure_storage_sas_token",
        "azure_storage_client_secret",
        "google_service_account_key",
    }
)
"""Configure keys whose values are never echoed in reprs or error messages."""
API_AUTH_TYPES = ("bearer", "api_key", "basic", "oauth2_client_credentials", "aws_sigv4")


class BackwardConfig(MetadataModel):
    """Look-back applied to the stored watermark before filtering (``configure.backward``)."""

    years: int | None = None
    months: int | None = None
    days: int | None = None
    hours: int | None = None
    closing_day: int | None = None


class BackwardKeys(OpenConfigure):
    """The flat ``backward_*`` keys shared by connection and source ``configure``."""

    backward_years: int | None = None
    backward_months: int | None = None
    backward_days: int | None = None
    backward_hours: int | None = None
    backward_closing_day: int | None = None
    backward: BackwardConfig | None = None

    @property
    def backward_config(self) -> BackwardConfig | None:
        """The effective look-back: the nested ``backward`` object wins over the flat keys."""
        if self.backward is not None:
            return self.backward
        flat = {
            key: getattr(self, f"backward_{key}")
            for key in ("years", "months", "days", "hours", "closing_day")
            if getattr(self, f"backward_{key}") is not None
        }
        return BackwardConfig(**flat) if flat else None


class ConnectionConfigure(BackwardKeys):
    """``connection.configure``: the union of the keys of every connection type in the 0.2.0 schema."""

    base_path: OptStr = None
    """Root folder of a file or lakehouse connection; relative paths resolve against the working directory."""
    read_options: JsonObject = Field(default_factory=dict)
    write_options: JsonObject = Field(default_factory=dict)
    merge_options: JsonObject = Field(default_factory=dict)
    use_schema_hint: Bool = True
    """Attach shared ``schema_hints`` groups to dataflows reading from this connection."""
    schema_hint_type_system: Annotated[str | None, choice(SCHEMA_HINT_TYPE_SYSTEMS, "schema_hint_type_system")] = None
    use_hive_partitioning: Bool = False
    date_folder_partitions: OptStr = None
    # lakehouse
    catalog: OptStr = None
    database: OptStr = None
    athena_output_location: OptStr = None
    generate_manifest: Bool = False
    register_symlink_table: Bool = False
    symlink_database_prefix: str = "symlink_"
    catalog_properties: JsonObject = Field(default_factory=dict, repr=False)
    """Iceberg: pyiceberg catalog properties (``type``, ``uri``, ``warehouse``, ...); docs/iceberg.md."""
    # database
    database_type: Annotated[str | None, choice(DATABASE_TYPES, "database_type")] = None
    auth_type: OptStr = None
    """``password`` (default) / ``service_principal`` / ... for databases; ``bearer`` / ... for APIs."""
    host: OptStr = None
    port: IntLike | None = None
    username: str | None = None
    password: str | None = Field(None, repr=False)
    tenant_id: str | None = None
    token: str | None = Field(None, repr=False)
    driver: str | None = None
    url: str | None = None
    encrypt: str | None = None
    # api
    base_url: OptStr = None
    timeout: float | None = None
    auth_token: str | None = Field(None, repr=False)
    api_key_header: str | None = None
    api_key_value: str | None = Field(None, repr=False)
    token_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = Field(None, repr=False)
    token_auth_method: str | None = None
    scope: str | None = None
    watermark_to_param_timezone: str | None = None
    default_headers: dict[str, str] = Field(default_factory=dict)
    token_request_body_format: Annotated[str, choice(("form", "json"), "token_request_body_format")] = "form"
    token_request_extras: dict[str, Any] = Field(default_factory=dict)
    aws_region: str | None = None
    aws_service: str | None = None
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = Field(None, repr=False)
    aws_session_token: str | None = Field(None, repr=False)
    # object storage (docs/object-storage.md)
    storage_options: JsonObject = Field(default_factory=dict)
    """Options of delta-rs and Polars' cloud readers for an object-store ``base_path`` (``s3://`` ...)."""

    @field_validator("base_path")
    @classmethod
    def _normalize_base_path(cls, value: str | None) -> str | None:
        return normalize_path(value) if value else value


def _parse_secrets_ref(value: Any) -> Any:
    parsed = parse_json_object(value)
    if not parsed:
        return None
    return {key: ensure_list(fields) for key, fields in parsed.items()}


class Connection(MetadataModel):
    """An endpoint: a file root, a lakehouse path, a database, an API or a Python function."""

    name: Name
    """Unique connection name; the default ``connection_id`` is derived from it."""
    connection_id: OptStr = None
    workspace_id: OptStr = None
    connection_type: Annotated[str | None, choice(CONNECTION_TYPES, "connection_type")] = None
    """Endpoint category; derived from ``format`` when omitted."""
    format: Annotated[str | None, choice(FORMATS, "format")] = None
    """Data format; defaults to the first format of the connection type (``parquet`` for files)."""
    catalog: OptStr = None
    database: OptStr = None
    configure: Annotated[ConnectionConfigure, BeforeValidator(parse_json_object)] = Field(
        default_factory=ConnectionConfigure
    )
    secrets_ref: Annotated[dict[str, list[str]] | None, BeforeValidator(_parse_secrets_ref)] = None
    """``{secret source: [configure field, ...]}``: those configure values name secrets resolved at run time."""
    is_active: Bool = True

    @model_validator(mode="after")
    def _derive_and_check(self) -> Connection:
        self._derive_type_and_format()
        if self.connection_id is None:
            self.connection_id = name_to_uuid(self.name)
        self.catalog = self.catalog or self.configure.catalog
        self.database = self.database or (self.configure.database if self.connection_type == "lakehouse" else None)
        self._check_auth_type()
        self._check_secrets_ref()
        return self

    def _derive_type_and_format(self) -> None:
        if self.connection_type is None:
            fmt = self.format or "parquet"
            self.connection_type = next(t for t, fmts in CONNECTION_TYPE_FORMATS.items() if fmt in fmts)
            self.format = fmt
            return
        allowed = CONNECTION_TYPE_FORMATS[self.connection_type]
        if not allowed:
            raise located_error("connection_type", f"connection_type '{self.connection_type}' is not supported")
        if self.format is None:
            self.format = allowed[0]
        elif self.format not in allowed:
            raise located_error(
                "format",
                f"format '{self.format}' is not valid for connection_type '{self.connection_type}' "
                f"(allowed: {', '.join(allowed)}); fix the format or drop connection_type to derive it",
            )

    def _check_auth_type(self) -> None:
        auth = self.configure.auth_type
        known = {"database": DATABASE_AUTH_TYPES, "api": API_AUTH_TYPES}.get(self.connection_type or "")
        if auth is None or known is None:
            return
        try:
            ensure_choice(auth, known, f"auth_type for a {self.connection_type} connection")
        except ValueError as e:
            raise located_error("configure.auth_type", str(e)) from None

    def _check_secrets_ref(self) -> None:
        seen: dict[str, str] = {}
        configured = self.configure.model_dump(exclude_unset=True) | self.configure.extras
        for source, fields in (self.secrets_ref or {}).items():
            for field in fields:
                if field in seen:
                    raise located_error(
                        "secrets_ref",
                        f"configure field '{field}' is listed under two secret sources "
                        f"('{seen[field]}' and '{source}'); keep it under one",
                    )
                seen[field] = source
                if field not in configured:
                    raise located_error(
                        "secrets_ref",
                        f"secret field '{field}' is not in configure; add configure.{field} "
                        "holding the secret's name, or remove it from secrets_ref",
                    )

    @property
    def base_path(self) -> str | None:
        return self.configure.base_path

    @property
    def read_options(self) -> dict[str, Any]:
        return self.configure.read_options

    @property
    def write_options(self) -> dict[str, Any]:
        return self.configure.write_options

    @property
    def use_schema_hint(self) -> bool:
        return self.configure.use_schema_hint

    @property
    def is_lakehouse(self) -> bool:
        return self.connection_type == "lakehouse"
