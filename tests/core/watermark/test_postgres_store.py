"""What only the PostgreSQL state store has: transactions, run bookkeeping, the URL's password.

The behaviour both stores share is ``test_state_store_contract.py``. Every test here needs a real
PostgreSQL server (``postgres`` + ``slow``), except the configuration errors at the end.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg2
import pytest

from datacoolie_core import FileProvider, WatermarkManager
from datacoolie_core.cli import main
from datacoolie_core.errors import DataCoolieError, WatermarkError
from datacoolie_core.orchestration.driver import DataCoolieDriver
from datacoolie_core.redaction import clear_secrets
from datacoolie_core.watermark.postgres_store import PostgresStateStore
from datacoolie_core.watermark.store import STATE_URL_VARIABLE, open_state_store, redact_url
from tests.core.metadata.test_api_provider import WS
from tests.core.metadata.test_api_provider import metadata as api_metadata
from tests.core.orchestration.test_dataflow_runner import T0, land, metadata
from tests.core.watermark.test_state_store_contract import HOLDER, PROCESS_TIMEOUT, spawn
from tests.support.api_server import API_KEY, State, orders, serve
from tests.support.postgres import PASSWORD


def rows(url: str, query: str) -> list[tuple[object, ...]]:
    with psycopg2.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute(query)
        return list(cursor.fetchall())


def test_a_save_is_one_transaction_rolled_back_whole_on_failure(state_url: str) -> None:
    store = PostgresStateStore(state_url)
    store.write("orders_1", '{"v": 1}')
    seen: list[str | None] = []

    def failing_save() -> None:
        with store.lock("orders_1"):
            store.write("orders_1", '{"v": 2}')
            seen.append(store.read("orders_1"))  # inside the lock: the lock's own transaction
            seen.append(PostgresStateStore(state_url).read("orders_1"))  # others: not before it commits
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        failing_save()
    assert seen == ['{"v": 2}', '{"v": 1}']
    assert store.read("orders_1") == '{"v": 1}'
    assert rows(state_url, "SELECT count(*) FROM datacoolie_state.watermark_history") == [(1,)]


def test_each_save_records_the_run_that_made_it(tmp_path: Path, state_url: str) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2], [10, 20])
    with DataCoolieDriver(metadata_base_path=str(path), state_url=state_url) as driver:
        (first,) = driver.run().runtimes
    land(tmp_path, "b", [3], [30])
    with DataCoolieDriver(metadata_base_path=str(path), state_url=state_url) as driver:
        (second,) = driver.run().runtimes
    assert (first.status, second.status) == ("succeeded", "succeeded")
    history = rows(state_url, "SELECT dataflow_run_id, value FROM datacoolie_state.watermark_history ORDER BY id")
    assert [run for run, _ in history] == [first.dataflow_run_id, second.dataflow_run_id]
    (current,) = rows(state_url, "SELECT dataflow_run_id, job_id FROM datacoolie_state.watermarks")
    assert current[0] == second.dataflow_run_id
    assert current[1]  # the job too
    # and nothing went to files
    assert not (path.parent / "watermarks").exists()
    provider = FileProvider(path, state_url=state_url)
    (dataflow,) = provider.get_dataflows()
    assert WatermarkManager(provider).get_watermark(str(dataflow.dataflow_id)) == {
        "updated_at": T0 + timedelta(minutes=30)
    }


def test_the_url_password_never_appears_in_errors(state_url: str) -> None:
    parts = urlsplit(state_url)
    wrong = urlunsplit((parts.scheme, f"{parts.username}:{PASSWORD}-not-it@{parts.hostname}:{parts.port}",
                        parts.path, "", ""))  # fmt: skip
    with pytest.raises(WatermarkError, match="PostgreSQL state store failed") as caught:
        PostgresStateStore(wrong).read("orders_1")
    assert PASSWORD not in str(caught.value)
    assert f"{parts.username}:***@{parts.hostname}" in str(caught.value)


def test_tables_made_by_a_dba_serve_a_user_who_may_not_create(state_url: str) -> None:
    PostgresStateStore(state_url).read("warm-up")  # creates the schema, as a DBA would from the docs
    user = f"etl_{uuid.uuid4().hex[:8]}"  # roles are cluster-wide
    admin = psycopg2.connect(state_url)
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'etl-user-secret'")
        cursor.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        cursor.execute(f"GRANT USAGE ON SCHEMA datacoolie_state TO {user}")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA datacoolie_state TO {user}")
        cursor.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA datacoolie_state TO {user}")
    admin.close()
    parts = urlsplit(state_url)
    user_url = urlunsplit((parts.scheme, f"{user}:etl-user-secret@{parts.hostname}:{parts.port}", parts.path, "", ""))
    store = PostgresStateStore(user_url)
    with store.lock("orders_1"):
        store.write("orders_1", '{"v": 1}', job_id="j1")
    assert store.read("orders_1") == '{"v": 1}'


def test_cli_reads_the_state_url_from_the_environment(
    tmp_path: Path, state_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2], [10, 20])
    monkeypatch.setenv(STATE_URL_VARIABLE, state_url)
    assert main(["run", "--metadata", str(path)]) == 0
    assert len(rows(state_url, "SELECT * FROM datacoolie_state.watermarks")) == 1
    assert not (path.parent / "watermarks").exists()
    # an explicit --state-path wins over the variable: an empty file store, which the destination's
    # log contradicts, so the run refuses instead of reading everything again
    assert main(["run", "--metadata", str(path), "--state-path", str(tmp_path / "state")]) == 1
    err = capsys.readouterr().err
    assert "the watermark is missing, but the destination holds this dataflow's writes" in err
    assert str(tmp_path / "state" / "watermarks") in err


# --- configuration errors (no server needed) -------------------------------------------------------


def test_state_path_and_state_url_together_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = metadata(tmp_path)
    code = main(["run", "--metadata", str(path), "--state-path", "s", "--state-url", "postgresql://u:pw-1234@h/db"])
    assert code == 2
    err = capsys.readouterr().err
    assert "pass --state-path or --state-url, not both" in err
    with pytest.raises(DataCoolieError, match="state_url and state_base_path both say where the state lives"):
        FileProvider(path, state_base_path="s", state_url="postgresql://h/db")


def test_an_unsupported_state_url_is_refused_without_its_password(tmp_path: Path) -> None:
    with pytest.raises(DataCoolieError, match=r"'mysql://u:\*\*\*@h/db' is not supported") as caught:
        open_state_store("mysql://u:hunter22@h/db")
    assert "hunter22" not in str(caught.value)
    with pytest.raises(DataCoolieError, match=r"state_url 'data/state' is not a postgresql://"):
        FileProvider(metadata(tmp_path), state_url="data/state")


@pytest.mark.parametrize(
    ("url", "shown"),
    [("postgresql://u:s3cret@h:5433/db", "postgresql://u:***@h:5433/db"),
     ("postgresql://u@h/db?password=s3cret&sslmode=require", "postgresql://u@h/db?password=***&sslmode=require"),
     ("postgresql://h/db", "postgresql://h/db")],
    ids=["userinfo", "query", "none"],
)  # fmt: skip
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_state_show_and_reset_work_on_postgresql(
    tmp_path: Path, state_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = metadata(tmp_path)
    land(tmp_path, "a", [1, 2], [10, 20])
    assert main(["run", "--metadata", str(path), "--state-url", state_url]) == 0
    capsys.readouterr()
    args = ["--metadata", str(path), "--dataflow", "orders", "--state-url", state_url]
    assert main(["state", "show", *args, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["verdict"] == "ok"
    assert facts["watermark_file"].endswith("datacoolie_state.watermarks state_key='bronze2silver_orders_" +
                                            facts["dataflow"].split("[")[1].rstrip("]") + "'")  # fmt: skip
    assert PASSWORD not in json.dumps(facts)
    assert "datacoolie_state.commit_journal" in facts["journal_file"]
    # reset (under the PostgreSQL writer lock): the watermark row goes, the next run reloads on purpose
    assert main(["state", "reset", *args, "--confirm"]) == 0
    assert rows(state_url, "SELECT count(*) FROM datacoolie_state.watermarks") == [(0,)]


WAITER = """
import sys
from pathlib import Path
from datacoolie_core import FileProvider
provider = FileProvider(Path(sys.argv[1]), state_url=sys.argv[2])
(dataflow,) = provider.get_dataflows()
with provider.destination_lock(dataflow.destination.destination_key):
    print("acquired", flush=True)
"""


def waiting_for_advisory_lock(url: str) -> bool:
    return rows(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == [(1,)]


def test_a_writer_waiting_for_the_table_lock_can_be_interrupted(tmp_path: Path, state_url: str) -> None:
    path = metadata(tmp_path)
    holder = spawn(HOLDER, str(path), "postgres", state_url)
    waiter = None
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        waiter = spawn(WAITER, str(path), state_url)
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not waiting_for_advisory_lock(state_url):  # the waiter is inside pg_advisory_lock
            assert waiter.poll() is None, waiter.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        waiter.send_signal(signal.SIGINT)  # Ctrl-C, or a Dagster run termination
        out, err = waiter.communicate(timeout=30)  # one lock-wait slice, not the holder's whole write
        assert "KeyboardInterrupt" in err
        assert "acquired" not in out
    finally:
        for process in (holder, waiter):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate(timeout=PROCESS_TIMEOUT)


def test_a_forked_child_leaves_its_parents_sessions_alone(state_url: str) -> None:
    store = PostgresStateStore(state_url)
    store.write("orders_1", '{"v": 1}')
    with store.named_lock("writer-orders"):  # a session in use ...
        assert store.read("orders_1") == '{"v": 1}'  # ... and one idle in the pool
        child = os.fork()
        if child == 0:  # the child uses the store, then exits as multiprocessing's children do
            code = 0 if store.read("orders_1") == '{"v": 1}' else 1
            os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # the parent's pooled session still works, and its writer lock is still held
        assert store.read("orders_1") == '{"v": 1}'
        held = rows(state_url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")
        assert held == [(1,)]


def test_a_metadata_api_keeps_its_journal_and_locks_in_postgresql(
    tmp_path: Path, state_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(State(records=orders(3))) as (base, api):
        api.metadata = api_metadata(base, tmp_path / "lake")
        monkeypatch.setenv("DATACOOLIE_METADATA_API_KEY", API_KEY)
        argv = ["run", "--metadata", base + WS, "--state-url", state_url, "--stage", "api2bronze"]
        try:
            assert main(argv) == 0
        finally:
            clear_secrets()  # the API key, as the API provider's own tests do
        (stored,) = api.watermarks.values()  # the watermark: in the API, as without a state URL
    assert json.loads(stored["current_value"])
    journal = rows(state_url, "SELECT state_key, value FROM datacoolie_state.commit_journal")
    assert len(journal) == 1
    assert json.loads(str(journal[0][1]))["state"] == "settled"
    assert rows(state_url, "SELECT count(*) FROM datacoolie_state.watermarks") == [(0,)]
    assert not list(tmp_path.rglob("pending_commit.json"))
