"""API request keys of ``source.configure`` that have structure: ``range_param_mapping`` (0.2.0)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

from datacoolie_core.models.base import MetadataModel, Name, located_error
from datacoolie_core.models.coerce import ensure_choice

OPERATORS = (">", ">=", "<", "<=")
RANGE_FORMATS = (
    "iso", "date", "timestamp", "timestamp_ms", "datetime", "datetime_ms", "integer", "int", "native_integer", "number",
)  # fmt: skip
REMOVED_API_KEYS = (
    "watermark_param_mapping",
    "watermark_to_param",
    "watermark_param_location",
    "watermark_param_format",
    "watermark_range_to_exclusive_offset",
)
"""0.1.x API keys the 0.2.0 schema forbids: ``range_param_mapping`` replaced them."""


def _operator(default: str) -> BeforeValidator:
    return BeforeValidator(
        lambda v: default if v is None else v if v in OPERATORS else ensure_choice(v, OPERATORS, "operator")
    )


def _binding(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


class LowerBinding(MetadataModel):
    location: Annotated[str, BeforeValidator(lambda v: ensure_choice(v, ("params", "body"), "location"))] = "params"
    name: Name
    operator: Annotated[str, _operator(">=")] = ">="


class UpperBinding(LowerBinding):
    operator: Annotated[str, _operator("<")] = "<"


class RangeParam(MetadataModel):
    """How one selection field maps onto request parameters of an API source."""

    lower: Annotated[LowerBinding | None, BeforeValidator(_binding)] = None
    upper: Annotated[UpperBinding | None, BeforeValidator(_binding)] = None
    format: Annotated[str, BeforeValidator(lambda v: ensure_choice(v, RANGE_FORMATS, "format"))] = "iso"
    response_column: str | None = None
    watermark_value: Annotated[
        str, BeforeValidator(lambda v: ensure_choice(v, ("observed_max", "request_end"), "watermark_value"))
    ] = "observed_max"

    @model_validator(mode="after")
    def _needs_a_bound(self) -> RangeParam:
        if self.lower is None and self.upper is None:
            raise located_error("lower", "a range_param_mapping entry needs lower, upper or both")
        return self


def check_removed_api_keys(data: Any) -> Any:
    """Reject the 0.1.x API keys, pointing at their replacement."""
    if isinstance(data, dict):
        for key in REMOVED_API_KEYS:
            if key in data:
                raise located_error(key, f"'{key}' was removed in DataCoolie 0.2.0; use range_param_mapping instead")
    return data
