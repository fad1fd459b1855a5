"""Secret redaction for every output: one registry of known secret values, one :func:`mask`.

Secrets are registered when they are resolved (:func:`~datacoolie_core.secrets.resolve_connection_secrets`)
or found inline in a connection being prepared; from then on every output path of this process
masks them: CLI text and ``--json``, execution and system logs, every Python log record (a record
factory, installed with the first secret), error messages of :class:`~datacoolie_core.errors.DataCoolieError`,
runtime records, and on the Dagster side failure messages and event metadata.

Each secret is masked in the forms an output can carry it in (see :func:`secret_forms`): raw,
percent-encoded (``quote``, ``quote_plus``, URL userinfo, either hex case, twice-encoded), JSON- and
repr-escaped, base64 (of the secret, of ``user:secret``, and of the secret inside any longer base64
text once it is long enough), and, for a secret that is a URL, the password of its userinfo.

Values shorter than :data:`MIN_SECRET_LENGTH` are not masked: masking ``"a"`` would shred every
message. Such a secret is reported once (by length only) on the ``datacoolie.secrets`` logger.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO
from urllib.parse import quote, quote_plus, unquote, urlsplit

REDACTED = "***"
MIN_SECRET_LENGTH = 4
"""Shorter values are not masked (they would match everywhere)."""
MIN_BASE64_CORE = 8
"""A secret's base64 inside longer base64 text is masked by its stable middle, when that is this long."""

_USERINFO_SAFE = "!$&'()*+,;=:"
"""Characters RFC 3986 allows unencoded in a URL's userinfo (sub-delims and ``:``)."""

_logger = logging.getLogger("datacoolie.secrets")


class _Registry:
    """Every secret form known to this process, and the pattern that finds them (longest first)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.forms: set[str] = set()
        self.pattern: re.Pattern[str] | None = None

    def add(self, value: str, users: Iterable[str]) -> bool:
        """Register ``value``; ``True`` when something new was added."""
        forms = secret_forms(value, users=users)
        with self.lock:
            if forms <= self.forms:
                return False
            self.forms |= forms
            ordered = sorted(self.forms, key=len, reverse=True)  # a form containing another is masked whole
            self.pattern = re.compile("|".join(map(re.escape, ordered)))
            return True


_registry = _Registry()


def register_secret(value: object, *, users: Iterable[str | None] = ()) -> None:
    """Mask ``value`` (in every form) in every output of this process from now on.

    Args:
        value: the secret; ``None`` and empty values are ignored, shorter than
            :data:`MIN_SECRET_LENGTH` are reported and not masked.
        users: user names that go with the secret (``username``, ``client_id``), for the
            ``base64(user:secret)`` form of HTTP basic auth.
    """
    if value is None:
        return
    text = str(value)
    if not text:
        return
    if len(text) < MIN_SECRET_LENGTH:
        _logger.warning(
            "a secret shorter than %d characters is not masked in output; use a longer secret", MIN_SECRET_LENGTH
        )
        return
    if _registry.add(text, [u for u in users if u]):
        install_log_masking()


def register_secrets(values: Iterable[object], *, users: Iterable[str | None] = ()) -> None:
    """:func:`register_secret` for each of ``values``."""
    users = list(users)
    for value in values:
        register_secret(value, users=users)


def has_secrets() -> bool:
    """Whether any secret is registered (nothing to mask otherwise)."""
    return _registry.pattern is not None


def clear_secrets() -> None:
    """Forget every registered secret (tests; a long-lived process after rotating its secrets)."""
    with _registry.lock:
        _registry.forms.clear()
        _registry.pattern = None


def mask(text: str) -> str:
    """``text`` with every form of every registered secret replaced by ``***``."""
    pattern = _registry.pattern
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def mask_data(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with secrets masked, keys included."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {mask(k) if isinstance(k, str) else k: mask_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_data(v) for v in value]
    if isinstance(value, tuple):
        return tuple(mask_data(v) for v in value)
    return value


def format_exception(error: BaseException) -> str:
    """The full traceback of ``error`` (chained causes and contexts included), secrets masked."""
    return mask("".join(traceback.format_exception(error)))


def secret_forms(value: str, *, users: Iterable[str] = ()) -> set[str]:
    """Every spelling of ``value`` that :func:`mask` replaces (only forms of at least the minimum length).

    A URL-valued secret adds the forms of its userinfo password (a driver echoes the password alone);
    a multi-line secret (a PEM key) adds each of its lines (line-by-line output splits it).
    """
    forms = _text_forms(value) | _base64_forms(value, users)
    for line in {line.strip() for line in value.splitlines()} - {value}:
        forms |= _text_forms(line)
    parts = urlsplit(value) if "://" in value else None
    password = parts.password if parts is not None else None
    if password and password != value:
        for part in {password, unquote(password)} - {""}:
            forms |= _text_forms(part) | _base64_forms(part, [parts.username or ""] if parts else [])
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def _text_forms(value: str) -> set[str]:
    encoded = {
        quote(value, safe=""),
        quote(value),  # safe="/", the default
        quote(value, safe=_USERINFO_SAFE),
        quote_plus(value),
        quote_plus(value, safe="/"),
    }
    encoded |= {quote(e, safe="") for e in list(encoded)}  # a URL inside a URL
    encoded |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), e) for e in encoded}  # lower-case hex
    escaped = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1]}
    return {value} | encoded | escaped


def _base64_forms(value: str, users: Iterable[str]) -> set[str]:
    raw = value.encode("utf-8")
    whole = [raw, *(f"{user}:{value}".encode() for user in users)]
    forms = {enc(b).decode("ascii") for b in whole for enc in (base64.b64encode, base64.urlsafe_b64encode)}
    for offset in range(3):  # the secret at each byte alignment inside a longer encoded text
        start = -(-8 * offset // 6)  # first character made only of the secret's bits
        end = (8 * (offset + len(raw))) // 6  # past the last such character
        if end - start >= MIN_BASE64_CORE:
            padded = bytes(offset) + raw
            forms |= {enc(padded).decode("ascii")[start:end] for enc in (base64.b64encode, base64.urlsafe_b64encode)}
    return forms


# --- Python logging: every record masked at creation -------------------------------------------

_factory_lock = threading.Lock()
_factory_installed = False


def mask_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask a log record in place: message (with its args), traceback and stack text."""
    if not has_secrets():
        return record
    try:
        message = record.getMessage()
    except Exception:  # bad %-args: the handler reports it; nothing formatted to mask yet
        message = None
    if message is not None and mask(message) != message:
        record.msg, record.args = mask(message), None
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(record.exc_info[1])).rstrip()
        if mask(text) != text:
            # handlers format exc_text when set; exc_info would let them format the raw chain again
            record.exc_text, record.exc_info = mask(text), None
    if record.exc_text:
        record.exc_text = mask(record.exc_text)
    if record.stack_info:
        record.stack_info = mask(record.stack_info)
    return record


class MaskingFilter(logging.Filter):
    """A handler filter masking secrets in every record it passes (for handlers of your own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        mask_record(record)
        return True


def install_log_masking() -> None:
    """Mask every log record of this process at creation (idempotent; done with the first secret).

    A record factory, not a handler filter: records reach handlers we do not own (the user's,
    Dagster's managed loggers, Python's last-resort stderr handler) and each must see them masked.
    """
    global _factory_installed
    with _factory_lock:
        if _factory_installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return mask_record(previous(*args, **kwargs))

        logging.setLogRecordFactory(factory)
        _factory_installed = True


# --- text streams: stdout / stderr of a command or a Dagster step ------------------------------


class MaskingStream:
    """A text stream that masks secrets line by line before writing to ``target``.

    Whole lines are masked, so a secret written in pieces (``json.dump`` writes token by token) is
    still found; a partial line is masked and written on :meth:`flush` (progress lines, prompts).
    """

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            complete, newline, self._pending = (self._pending + text).rpartition("\n")
            if newline:
                self.target.write(mask(complete + newline))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, ""
            if pending:
                self.target.write(mask(pending))
        self.target.flush()

    def isatty(self) -> bool:
        return self.target.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ...: the target's
        return getattr(self.target, name)


@contextmanager
def masked_streams() -> Iterator[None]:
    """Route ``sys.stdout`` / ``sys.stderr`` through :class:`MaskingStream` for the block.

    Python-level writes only: a C extension writing to file descriptor 1 or 2 bypasses it.
    """
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskingStream(streams[0]), MaskingStream(streams[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = streams
