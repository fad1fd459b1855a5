"""``datacoolie run`` / ``validate`` with ``--metadata sqlite:///…`` and ``postgresql://…``: real files, real tables."""

from __future__ import annotations

import json
import socket
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
import sqlalchemy as sa

from datacoolie_core.cli import main
from datacoolie_core.metadata.database_provider import DatabaseProvider
from datacoolie_core.redaction import clear_secrets
from tests.core.metadata.test_database_provider import insert


@pytest.fixture
def metadata_db(tmp_path: Path) -> str:
    """A SQLite metadata database: parquet orders -> a Delta table, incremental on updated_at."""
    url = f"sqlite:///{tmp_path / 'metadata.db'}"
    sa.create_engine(url).connect().close()
    DatabaseProvider(url, state_base_path=tmp_path, workspace_id="sales").create_tables()
    insert(url, "dc_framework_connections", connection_id="c-land", workspace_id="sales", name="landing",
           format="parquet", configure=json.dumps({"base_path": str(tmp_path / "landing")}), is_active=True)  # fmt: skip
    insert(url, "dc_framework_connections", connection_id="c-lake", workspace_id="sales", name="lake",
           format="delta", configure=json.dumps({"base_path": str(tmp_path / "lake")}), is_active=True)  # fmt: skip
    insert(url, "dc_framework_dataflows", dataflow_id="d-orders", workspace_id="sales", name="orders",
           stage="bronze", is_active=True, source_connection_id="c-land", source_table="orders",
           source_watermark_columns="updated_at", destination_connection_id="c-lake", destination_table="orders",
           destination_load_type="append")  # fmt: skip
    return url + "?workspace_id=sales"


def land(tmp_path: Path, name: str, ids: list[int], day: int) -> None:
    folder = tmp_path / "landing" / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame({"id": ids, "updated_at": [datetime(2026, 3, day, i) for i in range(len(ids))]})
    frame.write_parquet(folder / f"{name}.parquet")


def stored_watermark(url: str) -> tuple[str, str | None]:
    engine = sa.create_engine(url.split("?")[0])
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT current_value, previous_value FROM dc_framework_watermarks")).one()
    engine.dispose()
    return row[0], row[1]


def test_datacoolie_run_reads_metadata_and_saves_watermarks_in_the_database(
    metadata_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--metadata", metadata_db, "--state-path", str(tmp_path / "state"), "--json"]
    land(tmp_path, "a", [1, 2, 3], day=1)
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    current, previous = stored_watermark(metadata_db)
    assert json.loads(current) == {"updated_at": {"__datetime__": "2026-03-01T02:00:00"}}
    assert previous is None

    land(tmp_path, "b", [4, 5], day=2)
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dataflows"][0]["source"]["rows_read"] == 2  # only the rows after the stored watermark
    assert pl.read_delta(str(tmp_path / "lake" / "orders"))["id"].sort().to_list() == [1, 2, 3, 4, 5]
    current, previous = stored_watermark(metadata_db)
    assert json.loads(current) == {"updated_at": {"__datetime__": "2026-03-02T01:00:00"}}
    assert json.loads(previous or "") == {"updated_at": {"__datetime__": "2026-03-01T02:00:00"}}


def test_datacoolie_validate_reads_a_database_and_names_table_row_and_column(
    metadata_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", metadata_db]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK: 1 valid dataflow(s)")
    url = metadata_db.split("?")[0]
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE dc_framework_dataflows SET destination_load_type = 'apend'"))
    engine.dispose()
    assert main(["validate", metadata_db]) == 2
    err = capsys.readouterr().err
    assert "dc_framework_dataflows (dataflow_id 'd-orders'), column destination_load_type" in err
    assert "did you mean 'append'?" in err


def test_a_database_url_needs_a_state_path_and_its_password_is_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://meta:Sup3r-secret-pw@127.0.0.1:{port}/meta?workspace_id=sales"
    assert main(["run", "--metadata", url]) == 2
    err = capsys.readouterr().err
    assert "needs a state path (--state-path" in err
    assert "Sup3r-secret-pw" not in err
    try:
        assert main(["run", "--metadata", url, "--state-path", str(tmp_path / "state"), "--json"]) == 2
        assert main(["validate", url]) == 2
        captured = capsys.readouterr()
        assert "cannot read the metadata database" in captured.err
        assert "Sup3r-secret-pw" not in captured.out + captured.err
        assert "meta:***@127.0.0.1" in captured.err
    finally:
        clear_secrets()


def test_datacoolie_state_shows_and_resets_a_watermark_in_the_database(
    metadata_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--metadata", metadata_db, "--state-path", str(tmp_path / "state")]
    land(tmp_path, "a", [1, 2, 3], day=1)
    assert main(["run", *common]) == 0
    capsys.readouterr()
    assert main(["state", "show", "--dataflow", "orders", *common, "--json"]) == 0
    assert "2026-03-01T02:00:00" in capsys.readouterr().out
    assert main(["state", "reset", "--dataflow", "orders", *common, "--confirm"]) == 0
    assert "done: remove the watermark" in capsys.readouterr().out
    engine = sa.create_engine(metadata_db.split("?")[0])
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM dc_framework_watermarks")).scalar() == 0
    engine.dispose()
