"""Where ``datacoolie-dagster wait`` reads runs from: the instance, or a webserver's GraphQL API.

Both readers answer the same three questions (a run's state, its events after a cursor, the last
heartbeat of the daemon that dequeues runs) in the shapes of :mod:`.run_events`. The instance reader
needs ``DAGSTER_HOME`` (and the database its ``dagster.yaml`` names); the GraphQL reader only the
webserver's URL, as a CI runner outside the deployment reaches it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlparse

from datacoolie_dagster.commands.run_events import RunEvent, RunState

if TYPE_CHECKING:
    import dagster as dg
    from dagster_graphql import DagsterGraphQLClient
    from gql import Client

QUEUE_DAEMON = "QUEUED_RUN_COORDINATOR"
"""The daemon type that dequeues runs (``dagster-daemon``'s run coordinator loop)."""
TOKEN_ENV = "DAGSTER_TOKEN"
"""Environment variable: a token sent as ``Authorization: Bearer …`` to the webserver (never an argument,
so it stays out of the process list and the CI log)."""
PAGE = 1000
"""Events per read; a run's backlog is read page after page."""


class RunSource(Protocol):
    """Reads runs of one deployment. A run that does not exist is a :class:`RunNotFoundError`."""

    def state(self, run_id: str) -> RunState: ...

    def events(self, run_id: str, cursor: str | None) -> tuple[list[RunEvent], str | None]:
        """The events after ``cursor`` (all of them from ``None``) and the cursor after the last one."""
        ...

    def queue_heartbeat(self) -> float | None:
        """Epoch seconds of the run-queue daemon's last heartbeat; ``None``: it never sent one."""
        ...


class RunNotFoundError(LookupError):
    def __init__(self, run_id: str, where: str) -> None:
        super().__init__(f"no run {run_id} in {where}; check the run id (printed by the launch) and the deployment")


class InstanceRunSource:
    """Runs of the Dagster instance at ``DAGSTER_HOME`` (SQLite, or the PostgreSQL it names)."""

    def __init__(self, instance: dg.DagsterInstance, home: str) -> None:
        self.instance, self.home = instance, home

    def state(self, run_id: str) -> RunState:
        record = self.instance.get_run_record_by_id(run_id)
        if record is None:
            raise RunNotFoundError(run_id, f"the instance at {self.home}")
        run = record.dagster_run
        return RunState(
            run_id,
            run.status.value,
            run.job_name,
            record.create_timestamp.timestamp(),
            record.start_time,
            record.end_time,
        )

    def events(self, run_id: str, cursor: str | None) -> tuple[list[RunEvent], str | None]:
        events: list[RunEvent] = []
        while True:
            page = self.instance.get_records_for_run(run_id, cursor=cursor, limit=PAGE)
            events += [_instance_event(r.event_log_entry) for r in page.records]
            cursor = page.cursor if page.records else cursor
            if not page.has_more:
                return events, cursor

    def queue_heartbeat(self) -> float | None:
        heartbeat = self.instance.get_daemon_heartbeats().get(QUEUE_DAEMON)
        return heartbeat.timestamp if heartbeat is not None else None


@contextmanager
def instance_source(home: str) -> Iterator[InstanceRunSource]:
    import dagster as dg

    with dg.DagsterInstance.from_config(home) as instance:
        yield InstanceRunSource(instance, home)


def _instance_event(entry: Any) -> RunEvent:
    event = entry.dagster_event
    level = logging.getLevelName(entry.level)
    if event is None:
        return RunEvent("LOG_MESSAGE", entry.user_message, entry.step_key, level)
    kind = event.event_type.name
    if kind == "ASSET_MATERIALIZATION":
        materialization = event.step_materialization_data.materialization
        return RunEvent(
            kind,
            event.message or "",
            event.step_key,
            level,
            asset=materialization.asset_key.to_user_string(),
            partition=materialization.partition,
            metadata={k: getattr(v, "value", v) for k, v in materialization.metadata.items()},
        )
    return RunEvent(kind, event.message or "", event.step_key, level, error=_instance_error(event))


def _instance_error(event: Any) -> str | None:
    if event.event_type.name == "STEP_FAILURE":
        data = event.step_failure_data
        described = data.user_failure_data.description if data.user_failure_data else None
        return described or (data.error.message if data.error else None)
    if event.event_type.name == "RUN_FAILURE" and event.event_specific_data is not None:
        error = getattr(event.event_specific_data, "error", None)
        return error.message if error is not None else None
    return None


RUN_QUERY = """
query RunState($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { runId status jobName creationTime startTime endTime }
    ... on RunNotFoundError { message }
    ... on PythonError { message }
  }
}
"""
EVENTS_QUERY = """
query RunEvents($runId: ID!, $cursor: String, $limit: Int) {
  logsForRun(runId: $runId, afterCursor: $cursor, limit: $limit) {
    __typename
    ... on EventConnection {
      cursor
      hasMore
      events {
        __typename
        ... on MessageEvent { message level stepKey eventType }
        ... on MaterializationEvent {
          assetKey { path }
          partition
          metadataEntries {
            label
            ... on IntMetadataEntry { intRepr }
            ... on FloatMetadataEntry { floatValue }
            ... on TextMetadataEntry { text }
          }
        }
        ... on ExecutionStepFailureEvent { error { message } failureMetadata { description } }
        ... on RunFailureEvent { error { message } }
      }
    }
    ... on RunNotFoundError { message }
    ... on PythonError { message }
  }
}
"""
HEARTBEAT_QUERY = """
query QueueHeartbeat($daemonType: String!) {
  instance { daemonHealth { daemonStatus(daemonType: $daemonType) { lastHeartbeatTime } } }
}
"""


class GraphQLRunSource:
    """Runs of the deployment behind a Dagster webserver, read through its GraphQL API."""

    def __init__(self, url: str, client: Client) -> None:
        self.url, self.client = url, client

    def _query(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        from gql import gql

        answer: dict[str, Any] = self.client.execute(gql(query), variable_values=dict(variables))
        return answer

    def state(self, run_id: str) -> RunState:
        run = self._query(RUN_QUERY, {"runId": run_id})["runOrError"]
        if run["__typename"] == "RunNotFoundError":
            raise RunNotFoundError(run_id, f"the deployment at {self.url}")
        if run["__typename"] != "Run":
            raise RuntimeError(f"{self.url}: reading run {run_id} failed: {run.get('message')}")
        return RunState(run_id, run["status"], run["jobName"], run["creationTime"], run["startTime"], run["endTime"])

    def events(self, run_id: str, cursor: str | None) -> tuple[list[RunEvent], str | None]:
        events: list[RunEvent] = []
        while True:
            page = self._query(EVENTS_QUERY, {"runId": run_id, "cursor": cursor, "limit": PAGE})["logsForRun"]
            if page["__typename"] != "EventConnection":
                raise RuntimeError(f"{self.url}: reading the events of run {run_id} failed: {page.get('message')}")
            events += [_graphql_event(e) for e in page["events"]]
            cursor = page["cursor"] or cursor
            if not page["hasMore"]:
                return events, cursor

    def queue_heartbeat(self) -> float | None:
        health = self._query(HEARTBEAT_QUERY, {"daemonType": QUEUE_DAEMON})["instance"]["daemonHealth"]
        last: float | None = health["daemonStatus"]["lastHeartbeatTime"]
        return last


def _graphql_event(event: Mapping[str, Any]) -> RunEvent:
    kind = "LOG_MESSAGE" if event["__typename"] == "LogMessageEvent" else str(event.get("eventType") or "")
    error = (event.get("failureMetadata") or {}).get("description") or (event.get("error") or {}).get("message")
    asset = "/".join(event["assetKey"]["path"]) if event.get("assetKey") else None
    metadata = {e["label"]: _entry_value(e) for e in event.get("metadataEntries") or []}
    return RunEvent(
        kind,
        event.get("message") or "",
        event.get("stepKey"),
        event.get("level") or "INFO",
        asset=asset,
        partition=event.get("partition"),
        metadata=metadata,
        error=error,
    )


def _entry_value(entry: Mapping[str, Any]) -> Any:
    if entry.get("intRepr") is not None:
        return int(entry["intRepr"])
    if "floatValue" in entry:
        return entry["floatValue"]
    return entry.get("text")


def graphql_clients(url: str) -> tuple[DagsterGraphQLClient, Client]:
    """Dagster's GraphQL client for ``url`` (the webserver's root, with any path prefix) and a raw
    ``gql`` client over the same transport for the queries it has no method for."""
    from dagster_graphql import DagsterGraphQLClient
    from gql import Client
    from gql.transport.requests import RequestsHTTPTransport

    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"--url {url!r} is not a webserver URL; pass e.g. http://dagster.internal:3000")
    token = os.environ.get(TOKEN_ENV)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    transport = RequestsHTTPTransport(url=f"{url.rstrip('/')}/graphql", use_json=True, timeout=60, headers=headers)
    return DagsterGraphQLClient(parsed.netloc, transport=transport), Client(transport=transport)
