"""An adversarial deployment: connections whose secrets come from the environment, and sources that
put those secrets into errors, logs and prints for real; and the grep that looks for them.

:func:`write_deployment` writes the metadata and returns the environment it needs
(``DC_LEAK_<NAME>`` = secret). The function sources below are named by ``source.python_function``
(``tests.core.adversarial.leaky.<name>``): they receive the connection with its secrets resolved.
:func:`scan` searches every file of the artifacts for every spelling of every secret.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

import polars as pl

from datacoolie_core.models.dataflow import Source
from datacoolie_core.sources.base import ReadRange

HERE = "tests.core.adversarial.leaky"
ENV_PREFIX = "DC_LEAK_"
API_USER = "etl_user"
STAGE = "leaks"

_log = logging.getLogger("tests.core.adversarial.leaky")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Deployment:
    root: Path
    metadata: Path
    env: dict[str, str]
    """``DC_LEAK_*`` -> secret value."""

    @property
    def secrets(self) -> dict[str, str]:
        return {k.removeprefix(ENV_PREFIX): v for k, v in self.env.items()}


def write_deployment(root: Path) -> Deployment:
    """Metadata under ``root`` (lake at ``root/lake``) and the secret environment it needs."""
    port = closed_port()
    secrets = {
        "API_PASSWORD": 'Api:pa ss+wörd/42"x',
        "API_TOKEN": "tok-Ü+/=~secret 99",
        "PG_PASSWORD": "Pg pass/wörd+1%",
        # a URL secret whose password was not percent-encoded: the driver echoes the password alone
        "PG_URL": f"postgresql://etl:50%off-Secret@127.0.0.1:{port}/warehouse",
        # a MySQL URL secret (unencoded password) for the closed port: refused, never echoed
        "MYSQL_URL": f"mysql://etl:My%sql-Secret-9@127.0.0.1:{port}/shop",
        "SQLITE_PATH": str(root / "vault-Sq1ite-T0ken-42" / "db.sqlite"),  # missing: the error names it
        "CSV_ROOT": str(root / "mnt" / "sas-Tok3n-CSV-7f3a"),
    }
    document = {"connections": _connections(port), "dataflows": _dataflows()}
    metadata = root / "metadata.json"
    metadata.write_text(json.dumps(document, indent=2))
    return Deployment(root, metadata, {ENV_PREFIX + k: v for k, v in secrets.items()})


def _connections(port: int) -> list[dict[str, Any]]:
    ref = f"env:{ENV_PREFIX}"
    return [
        {"name": "api", "connection_type": "function",
         "configure": {"username": API_USER, "password": "API_PASSWORD", "token": "API_TOKEN"},
         "secrets_ref": {ref: ["password", "token"]}},
        {"name": "pg_placeholder", "connection_type": "database",
         "configure": {"database_type": "postgresql", "username": "etl", "password": "PG_PASSWORD",
                       "url": f"postgresql://{{user}}:{{password}}@127.0.0.1:{port}/warehouse"},
         "secrets_ref": {ref: ["password"]}},
        {"name": "pg_url", "connection_type": "database",
         "configure": {"database_type": "postgresql", "url": "PG_URL"}, "secrets_ref": {ref: ["url"]}},
        {"name": "mysql_url", "connection_type": "database",
         "configure": {"url": "MYSQL_URL"}, "secrets_ref": {ref: ["url"]}},
        {"name": "sqlite_vault", "connection_type": "database",
         "configure": {"database_type": "sqlite", "database": "SQLITE_PATH"}, "secrets_ref": {ref: ["database"]}},
        {"name": "csv_vault", "connection_type": "file", "format": "csv",
         "configure": {"base_path": "CSV_ROOT"}, "secrets_ref": {ref: ["base_path"]}},
        {"name": "lake", "connection_type": "lakehouse", "format": "delta", "configure": {"base_path": "./lake"}},
    ]  # fmt: skip


def _dataflows() -> list[dict[str, Any]]:
    sources = {
        "leaky_api": {"connection_name": "api", "python_function": f"{HERE}.leaky_api"},
        "api_ok": {"connection_name": "api", "python_function": f"{HERE}.api_rows"},
        "pg_refused": {"connection_name": "pg_placeholder", "table": "orders"},
        "pg_echo": {"connection_name": "pg_url", "table": "orders"},
        "mysql_refused": {"connection_name": "mysql_url", "table": "orders"},
        "sqlite_missing": {"connection_name": "sqlite_vault", "table": "orders"},
        "csv_missing": {"connection_name": "csv_vault", "table": "orders"},
    }
    return [
        {"name": name, "stage": STAGE, "source": source,
         "destination": {"connection_name": "lake", "schema_name": "leaks", "table": name, "load_type": "append"}}
        for name, source in sources.items()
    ]  # fmt: skip


# --- python-function sources ----------------------------------------------------------------


def leaky_api(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """A careless API client: logs, prints and raises its credentials in every spelling."""
    configure = source.connection.configure
    password, token = str(configure.password), str(configure.token)
    _log.warning("calling the API as %s with token %s", API_USER, token)
    print(f"debug: Authorization: Bearer {token}")
    print(f"debug: Authorization: Basic {b64(f'{API_USER}:{password}')}", file=sys.stderr)
    try:
        raise ConnectionError(f"token rejected: {quote_plus(token)} / {b64(token)} / {json.dumps(password)}")
    except ConnectionError as e:
        _log.exception("retrying with %s", quote(password))
        raise RuntimeError(
            f"GET https://{API_USER}:{quote(password, safe='')}@api.example.com/v1?token={quote(token)} failed; "
            f"Authorization: Basic {b64(f'{API_USER}:{password}')}; password={password!r}"
        ) from e


def api_rows(*, source: Source, watermark: Any, read_range: ReadRange | None) -> pl.DataFrame:
    """A good API client: it succeeds (its table is written) and keeps its secrets to itself."""
    return pl.DataFrame({"id": [1, 2], "token_length": [len(str(source.connection.configure.token))] * 2})


# --- the grep ---------------------------------------------------------------------------------

USERINFO_SAFE = "!$&'()*+,;=:"


def spellings(secret: str, user: str | None = None) -> set[str]:
    """How an output can spell ``secret``, computed here independently of the code under test."""
    forms = {
        secret, quote(secret, safe=""), quote(secret), quote_plus(secret), quote(secret, safe=USERINFO_SAFE),
        b64(secret), base64.urlsafe_b64encode(secret.encode()).decode(),
        json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1],
    }  # fmt: skip
    forms |= {json.dumps(f)[1:-1] for f in list(forms)}  # JSON inside JSON (Dagster's serialized events)
    if user:
        forms.add(b64(f"{user}:{secret}"))
    password = urlsplit(secret).password if "://" in secret else None
    if password:
        forms |= spellings(password)
    return {f for f in forms if len(f) >= 4}


@dataclass
class Scan:
    """What :func:`scan` read and found."""

    files: list[Path] = field(default_factory=list)
    forms: int = 0
    hits: list[str] = field(default_factory=list)

    def kinds(self) -> set[str]:
        """Which kinds of artifact were read (``system_logs``, ``compute_logs``, ``_delta_log``, ``sqlite`` ...)."""
        found = set()
        for path in self.files:
            parts = set(path.parts)
            found |= parts & {"system_logs", "dataflow_run_log", "job_run_log", "compute_logs", "_delta_log"}
            if path.suffix == ".db":
                found.add("sqlite")
        return found


def scan(roots: list[Path], secrets: dict[str, str], user: str = API_USER) -> Scan:
    """Every file under ``roots``, read as bytes, searched for every spelling of every secret."""
    needles = {(name, form) for name, value in secrets.items() for form in spellings(value, user)}
    result = Scan(forms=len(needles))
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            result.files.append(path)
            data = path.read_bytes()
            result.hits += [f"{path}: {name} as {form!r}" for name, form in needles if form.encode() in data]
    return result
