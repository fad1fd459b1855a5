"""The pydantic base of every metadata model, and the field types DataCoolie coerces.

Models are strict: a string is not an integer, an unknown key is an error. The few spellings
DataCoolie accepts on purpose (comma-string lists, string booleans, JSON-text objects) are declared
per field with the coercions of :mod:`datacoolie_core.models.coerce`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StringConstraints
from pydantic_core import PydanticCustomError

from datacoolie_core.models.coerce import ensure_choice, ensure_list, parse_json_object, strip_or_none, to_bool


class MetadataModel(BaseModel):
    """Base of the metadata models: strict types, unknown keys rejected.

    No ``use_attribute_docstrings``: it reads and tokenizes each model's source at import (about
    0.1 s of every ``datacoolie run``), and nothing reads the field descriptions.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        validate_assignment=False,
    )


class OpenConfigure(MetadataModel):
    """A ``configure`` object: known keys are typed, other keys are kept for plugins and drivers.

    The 0.2.0 schema allows any extra key in ``configure``, so an extra key is not an error; the
    validator still warns when one is a likely typo of a known key (see ``metadata.validation``).
    """

    model_config = ConfigDict(extra="allow")

    @property
    def extras(self) -> dict[str, Any]:
        """The keys this model does not know, as written."""
        return dict(self.model_extra or {})


def located_error(key: str, message: str) -> PydanticCustomError:
    """A validation error that belongs to ``key`` of the model being validated.

    Raised from a model validator, it lets the error report point at the key (``...format``)
    instead of the object that holds it.
    """
    return PydanticCustomError("located", "{message}", {"key": key, "message": message})


Bool = Annotated[bool, BeforeValidator(to_bool)]
"""A boolean that also accepts DataCoolie's string spellings (``"yes"``, ``"false"``, ``1``)."""

StrList = Annotated[list[str], BeforeValidator(ensure_list)]
"""A list of strings that also accepts a comma-separated string or a JSON array string."""

JsonObject = Annotated[dict[str, Any], BeforeValidator(parse_json_object)]
"""An object that also accepts JSON object text; blank or null becomes ``{}``."""

OptStr = Annotated[str | None, BeforeValidator(strip_or_none)]
"""An optional string, stripped; blank becomes ``None``."""

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A required, non-blank name."""


def choice(choices: tuple[str, ...], what: str) -> BeforeValidator:
    """A validator accepting one of ``choices`` (case-insensitive) or ``None``, suggesting the closest."""
    return BeforeValidator(lambda v: v if v is None else ensure_choice(v, choices, what))


def as_int(value: Any) -> Any:
    """Accept an integer written as decimal text (``"5432"``); other values pass to validation."""
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return value


IntLike = Annotated[int, BeforeValidator(as_int)]
"""An integer that also accepts decimal text (DataCoolie int-casts these fields)."""
