"""The Dagster boundary: a step body's errors, output streams and event metadata leave it masked."""

from __future__ import annotations

import sys
import traceback
from urllib.parse import quote, quote_plus

import dagster as dg
import pytest

from datacoolie_core.errors import MaskedError
from datacoolie_core.redaction import register_secret
from datacoolie_dagster.location.masked_steps import mask_event, mask_metadata, masked_step

SECRET = "Pa ss/w:rd@9+é"


def shows_secret(text: str) -> bool:
    """Whether ``text`` holds the secret raw or percent-encoded (what the tests below raise)."""
    return any(form in text for form in (SECRET, quote(SECRET), quote(SECRET, safe=""), quote_plus(SECRET)))


def failing_step() -> None:
    """A step body that fails with a ``dg.Failure`` naming the secret, caused by a driver error."""
    with masked_step():
        try:
            raise ConnectionError(f"refused {quote_plus(SECRET)}")
        except ConnectionError as e:
            raise dg.Failure(
                description=f"load failed: {SECRET}", metadata={"url": f"pg://u:{quote(SECRET, safe='')}@h"}
            ) from e


def test_a_failure_holding_a_secret_is_replaced_from_none() -> None:
    register_secret(SECRET)
    with pytest.raises(dg.Failure) as caught:
        failing_step()
    failure = caught.value
    assert failure.description == "load failed: ***"
    assert failure.metadata["url"] == dg.MetadataValue.text("pg://u:***@h")
    assert failure.__cause__ is None
    assert failure.__suppress_context__
    text = "".join(traceback.format_exception(failure))
    assert "ConnectionError" not in text
    assert not shows_secret(text)


def test_any_other_error_holding_a_secret_becomes_a_masked_error() -> None:
    register_secret(SECRET)
    with pytest.raises(MaskedError, match=r"ValueError: bad dsn \*\*\*") as caught, masked_step():
        raise ValueError(f"bad dsn {quote(SECRET)}")
    assert caught.value.error_type == "ValueError"
    assert not shows_secret("".join(traceback.format_exception(caught.value)))


def test_an_error_without_a_secret_passes_untouched() -> None:
    register_secret(SECRET)
    original = KeyError("orders")
    with pytest.raises(KeyError) as caught, masked_step():
        raise original
    assert caught.value is original


def test_the_body_output_streams_are_masked(capsys: pytest.CaptureFixture[str]) -> None:
    register_secret(SECRET)
    with masked_step():
        print(f"debug {SECRET}")
        print(f"debug {quote_plus(SECRET)}", file=sys.stderr)
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("debug ***\n", "debug ***\n")


def test_metadata_values_of_every_kind_are_masked() -> None:
    register_secret(SECRET)
    metadata = {
        "text": f"at {SECRET}",
        "json": dg.MetadataValue.json({"dsn": quote_plus(SECRET), "n": 1}),
        "path": dg.MetadataValue.path(f"/mnt/{SECRET}/orders"),
        "list": [SECRET, 1],
        "rows": dg.MetadataValue.int(3),
        SECRET: "key",
    }
    assert mask_metadata(metadata) == {
        "text": "at ***",
        "json": dg.MetadataValue.json({"dsn": "***", "n": 1}),
        "path": dg.MetadataValue.text("/mnt/***/orders"),
        "list": ["***", 1],
        "rows": dg.MetadataValue.int(3),
        "***": "key",
    }


def test_events_are_rebuilt_only_when_they_hold_a_secret() -> None:
    register_secret(SECRET)
    check = dg.AssetCheckResult(check_name="c", passed=True, metadata={"why": SECRET})
    result: dg.MaterializeResult[None] = dg.MaterializeResult(
        asset_key="t", metadata={"rows": 2}, check_results=[check]
    )
    masked = mask_event(result)
    assert masked.metadata == {"rows": 2}
    assert masked.check_results[0].metadata == {"why": dg.MetadataValue.text("***")}
    clean = dg.AssetMaterialization(asset_key="t", metadata={"rows": 2})
    assert mask_event(clean) is clean
    leaky = dg.AssetMaterialization(asset_key="t", partition="2024-01", metadata={"window": SECRET})
    assert mask_event(leaky).metadata == {"window": dg.MetadataValue.text("***")}
    assert mask_event(leaky).partition == "2024-01"
