"""The secret registry and ``mask``: every form of a registered secret, in text, records, streams and errors."""

from __future__ import annotations

import base64
import io
import json
import logging
import pickle
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest

from datacoolie_core.cli.output import run_masked
from datacoolie_core.errors import MaskedError, SourceError
from datacoolie_core.models import Connection
from datacoolie_core.models.runtime import DataFlowRuntimeInfo
from datacoolie_core.redaction import (
    MIN_SECRET_LENGTH,
    MaskingFilter,
    MaskingStream,
    format_exception,
    mask,
    mask_data,
    register_secret,
)
from datacoolie_core.secrets import EnvSecretProvider, resolve_connection_secrets

SECRET = 'Pa ss/w:rd@9+é"x'
"""Every encoding differs from the raw text: space, slash, colon, at, plus, non-ASCII, quote."""
USER = "etl_user"


def shows_secret(text: str) -> bool:
    """Whether ``text`` holds the secret raw or percent-encoded (what the tests below raise)."""
    return any(form in text for form in (SECRET, quote(SECRET), quote(SECRET, safe=""), quote_plus(SECRET)))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


FORMS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "quote-no-safe": lambda s: quote(s, safe=""),
    "quote-default": quote,
    "quote-plus": quote_plus,
    "userinfo": lambda s: quote(s, safe="!$&'()*+,;=:"),
    "lower-hex": lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(s, safe="")),
    "twice-encoded": lambda s: quote(quote(s, safe=""), safe=""),
    "json": lambda s: json.dumps(s)[1:-1],
    "json-utf8": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    "repr": lambda s: repr(s)[1:-1],
    "base64": lambda s: b64(s.encode()),
    "base64-urlsafe": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    "basic-auth": lambda s: b64(f"{USER}:{s}".encode()),
}


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_every_form_of_a_registered_secret_is_masked(form: Callable[[str], str]) -> None:
    register_secret(SECRET, users=[USER])
    spelled = form(SECRET)
    assert mask(f"before {spelled} after") == "before *** after"


@pytest.mark.parametrize("prefix", [b"", b"u:", b"ab:"], ids=["offset-0", "offset-2", "offset-1"])
def test_a_long_secret_is_masked_inside_any_base64_text(prefix: bytes) -> None:
    """base64(anything + secret + anything): the secret's bits never show, whatever the user name."""
    secret = "correct-horse-battery"
    register_secret(secret)  # no user known: the alignment cores do it
    encoded = b64(prefix + secret.encode() + b"@host")
    masked = mask(f"Authorization: Basic {encoded}")
    assert "***" in masked
    offset = len(prefix) % 3
    start = -(-8 * offset // 6)  # the first base64 character made of the secret's bits only
    core = b64(bytes(offset) + secret.encode())[start : start + 12]
    assert core in encoded
    assert core not in masked


def test_the_password_of_a_url_secret_is_masked_alone() -> None:
    """A driver echoes only the userinfo password of a URL secret (libpq: invalid percent-encoded token)."""
    register_secret("postgresql://etl:50%off-Secret@db.example:5432/warehouse")
    assert mask('invalid percent-encoded token: "50%off-Secret"') == 'invalid percent-encoded token: "***"'


@pytest.mark.parametrize(("secret", "masked"), [("abc", False), ("abcd", True)], ids=["3-chars", "4-chars"])
def test_secrets_shorter_than_the_minimum_are_not_masked_and_reported(
    secret: str, masked: bool, caplog: pytest.LogCaptureFixture
) -> None:
    assert MIN_SECRET_LENGTH == 4
    with caplog.at_level(logging.WARNING, logger="datacoolie.secrets"):
        register_secret(secret)
    assert (mask(f"x {secret} y") == "x *** y") is masked
    reported = [r.getMessage() for r in caplog.records if r.name == "datacoolie.secrets"]
    assert reported == (
        [] if masked else ["a secret shorter than 4 characters is not masked in output; use a longer secret"]
    )
    assert all(secret not in line for line in reported)


def test_a_secret_containing_another_is_masked_whole() -> None:
    register_secret("hunter")
    register_secret("hunter2-extended")
    assert mask("pw=hunter2-extended; old=hunter") == "pw=***; old=***"


def test_mask_data_masks_keys_and_nested_values() -> None:
    register_secret(SECRET)
    data = {SECRET: [SECRET, (quote(SECRET, safe=""), 3)], "n": None}
    assert mask_data(data) == {"***": ["***", ("***", 3)], "n": None}


def test_nothing_is_masked_before_a_secret_is_registered() -> None:
    assert mask(SECRET) == SECRET


def test_resolution_registers_the_secret_with_its_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_DB_PASSWORD", "s3cr")  # short: only the basic-auth form knows the user
    connection = Connection.model_validate(
        {
            "name": "api",
            "connection_type": "database",
            "configure": {"database_type": "postgresql", "username": USER, "password": "DB_PASSWORD"},
            "secrets_ref": {"env:APP_": ["password"]},
        }
    )
    resolve_connection_secrets(connection, EnvSecretProvider())
    assert mask(f"basic {b64(f'{USER}:s3cr'.encode())} raw s3cr") == "basic *** raw ***"


def test_every_log_record_is_masked_at_creation_whatever_the_logger() -> None:
    """Records reach handlers we do not own (the user's, Dagster's, last resort): each sees them masked."""
    register_secret(SECRET)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # a plain handler: no filter of ours
    other = logging.getLogger("some.user.library")
    other.addHandler(handler)
    try:
        other.warning("connecting with %s", quote_plus(SECRET))
        try:
            raise RuntimeError(f"inner {SECRET}")
        except RuntimeError as inner:
            try:
                raise ValueError(f"outer {quote(SECRET, safe='')}") from inner
            except ValueError:
                other.exception("failed with %r", SECRET)
    finally:
        other.removeHandler(handler)
    text = stream.getvalue()
    assert "connecting with ***" in text
    assert "failed with '***'" in text
    assert "RuntimeError: inner ***" in text
    assert "ValueError: outer ***" in text
    assert not shows_secret(text)


def test_the_masking_filter_masks_records_created_before_the_secret() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s", (SECRET,), None)
    register_secret(SECRET)
    assert MaskingFilter().filter(record)
    assert record.getMessage() == "token ***"


def test_the_stream_masks_a_secret_written_in_pieces() -> None:
    register_secret(SECRET)
    target = io.StringIO()
    stream = MaskingStream(target)
    for piece in ('{"password": "', json.dumps(SECRET)[1:6], json.dumps(SECRET)[6:-1], '"}\n', "partial ", SECRET):
        stream.write(piece)
    assert target.getvalue() == '{"password": "***"}\n'
    stream.flush()
    assert target.getvalue() == '{"password": "***"}\npartial ***'


def test_each_line_of_a_multi_line_secret_is_masked_in_line_by_line_output() -> None:
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----"
    register_secret(key)
    target = io.StringIO()
    stream = MaskingStream(target)
    for line in f"client key:\n{key}\n".splitlines(keepends=True):  # a logger writing line by line
        stream.write(line)
    assert target.getvalue() == "client key:\n***\n***\n***\n***\n"


def test_datacoolie_errors_and_runtime_records_show_no_secret() -> None:
    register_secret(SECRET)
    error = SourceError(f"cannot open '{SECRET}/orders'")
    assert str(error) == "cannot open '***/orders'"
    runtime = DataFlowRuntimeInfo("id", "orders")
    runtime.finish("failed", error=ValueError(f"driver said {quote_plus(SECRET)}"))
    assert runtime.error_message == "driver said ***"


def chained_source_error() -> SourceError:
    """A ``SourceError`` raised from a driver error that names the secret (percent-encoded)."""
    try:
        try:
            raise ConnectionError(f"refused for {quote(SECRET)}")
        except ConnectionError as e:
            raise SourceError("cannot read the source") from e
    except SourceError as raised:
        return raised


def test_a_masked_error_keeps_the_masked_traceback_and_pickles() -> None:
    register_secret(SECRET)
    raised = chained_source_error()
    stand_in = MaskedError.of(raised)
    assert not shows_secret(format_exception(raised))
    assert stand_in.error_type == "SourceError"
    assert str(stand_in).startswith("datacoolie_core.errors.SourceError: cannot read the source")
    assert "ConnectionError: refused for ***" in str(stand_in)
    assert pickle.loads(pickle.dumps(stand_in)).traceback_text == stand_in.traceback_text


def test_an_unexpected_cli_exception_prints_a_masked_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    register_secret(SECRET)

    def crash() -> int:
        try:
            raise OSError(f"cannot reach {quote_plus(SECRET)}")
        except OSError as e:
            raise KeyError("lookup failed") from e

    assert run_masked(crash) == 1
    err = capsys.readouterr().err
    assert "OSError: cannot reach ***" in err
    assert "KeyError: 'lookup failed'" in err
    assert quote_plus(SECRET) not in err
