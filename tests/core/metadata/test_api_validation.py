"""``datacoolie validate`` knows the API source and connection options (S-25 … S-28, 0.2.0 keys)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datacoolie_core.cli import main
from datacoolie_core.metadata import validate_document


def document(source_configure: dict[str, Any], connection_configure: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "connections": [
            {"name": "shop", "connection_type": "api",
             "configure": {"base_url": "https://shop.example.com/api", **(connection_configure or {})}},
            {"name": "lake", "format": "delta", "configure": {"base_path": "/tmp/lake"}},
        ],
        "dataflows": [
            {"name": "orders", "source": {"connection_name": "shop", "watermark_columns": ["updated_at"],
                                          "configure": {"endpoint": "orders", **source_configure}},
             "destination": {"connection_name": "lake", "table": "orders"}},
        ],
    }  # fmt: skip


FULL = {
    "method": "POST", "params": {"status": "open"}, "body": {"fields": ["id"]}, "data_path": "data.items",
    "pagination_type": "next_link", "page_size": 50, "max_pages": 10, "next_link_path": "links.next",
    "next_link_bound_mode": "repeat_query_bounds", "rate_limit_delay": 0.5, "max_retries": 3,
    "range_param_mapping": {"updated_at": {"lower": {"name": "since", "location": "body", "operator": ">"},
                                           "upper": "until", "format": "timestamp_ms",
                                           "watermark_value": "request_end"}},
    "watermark_to_param_timezone": "Europe/Paris",
}  # fmt: skip
AUTH = {"auth_type": "oauth2_client_credentials", "token_url": "https://shop.example.com/token", "client_id": "c",
        "client_secret": "s", "token_auth_method": "client_secret_basic", "token_request_body_format": "json",
        "default_headers": {"Accept": "application/json"}, "timeout": 10}  # fmt: skip


def test_every_api_option_validates_cleanly() -> None:
    result = validate_document(document(FULL, AUTH))
    assert (result.errors, result.warnings) == ([], [])


@pytest.mark.parametrize(
    ("source_configure", "connection_configure", "path", "message"),
    [
        ({"pagination_typ": "offset"}, None, "dataflows[0].source.configure.pagination_typ",
         "did you mean 'pagination_type'?"),
        ({}, {"api_key_heder": "X-Key"}, "connections[0].configure.api_key_heder", "did you mean 'api_key_header'?"),
    ],
)  # fmt: skip
def test_an_unknown_api_option_gets_did_you_mean_at_its_path(
    source_configure: dict[str, Any], connection_configure: dict[str, Any] | None, path: str, message: str
) -> None:
    result = validate_document(document(source_configure, connection_configure))
    assert [(w.path, message in w.message) for w in result.warnings] == [(path, True)]


@pytest.mark.parametrize(
    ("source_configure", "connection_configure", "path", "message"),
    [
        ({"pagination_type": "offest"}, None, "dataflows[0].source.configure.pagination_type", "did you mean 'offset'"),
        ({"range_param_mapping": {"updated_at": {"lowr": "since"}}}, None,
         "dataflows[0].source.configure.range_param_mapping.updated_at.lowr", "did you mean 'lower'"),
        ({"range_param_mapping": {"updated_at": {"lower": "since", "format": "epoch"}}}, None,
         "dataflows[0].source.configure.range_param_mapping.updated_at.format", "timestamp_ms"),
        ({"next_link_bound_mode": "repeat"}, None, "dataflows[0].source.configure.next_link_bound_mode",
         "repeat_query_bounds"),
        ({}, {"auth_type": "oauth2"}, "connections[0].configure.auth_type", "oauth2_client_credentials"),
    ],
)  # fmt: skip
def test_a_wrong_api_value_is_an_error_at_its_path(
    source_configure: dict[str, Any], connection_configure: dict[str, Any] | None, path: str, message: str
) -> None:
    result = validate_document(document(source_configure, connection_configure))
    assert result.errors[0].path == path  # (a broken connection also leaves its references unresolved)
    assert message in result.errors[0].message


def test_datacoolie_validate_reports_an_api_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps(document({"data_pth": "items"})))
    main(["validate", str(path)])
    out = capsys.readouterr()
    assert "dataflows[0].source.configure.data_pth" in out.out + out.err
    assert "did you mean 'data_path'?" in out.out + out.err
