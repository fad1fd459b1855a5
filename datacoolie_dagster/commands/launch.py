"""``datacoolie-dagster launch --url URL --job JOB``: submit a run to a webserver, print its run id.

For a CI job that does not host the deployment: no ``DAGSTER_HOME``, no code location loaded
locally (``dagster job launch`` starts a code server for every launch). The run is submitted with
Dagster's GraphQL client (``DagsterGraphQLClient.submit_job_execution``) and goes through the
deployment's run queue like any other; the run id is the only thing written to stdout, so
``run_id=$(datacoolie-dagster launch …)`` hands it to ``datacoolie-dagster wait``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from datacoolie_dagster.commands.run_events import USAGE
from datacoolie_dagster.commands.run_sources import TOKEN_ENV, graphql_clients


def add_launch_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    launch = commands.add_parser("launch", help="submit a job run to a Dagster webserver; print the run id")
    launch.add_argument("--url", required=True, help=f"Dagster webserver (token, if any: ${TOKEN_ENV})")
    launch.add_argument("-j", "--job", required=True, help="job name, e.g. datacoolie_landing2bronze")
    launch.add_argument("--config-json", default="{}", help='run config, e.g. \'{"job_num": 3, "job_index": 0}\'')
    launch.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE", help="run tag (repeatable)")
    launch.add_argument("--location", help="code location of the job (needed only when two define it)")
    launch.add_argument("--repository", default="__repository__", help="repository of the job (__repository__)")
    launch.set_defaults(handler=run_launch)


def run_launch(args: argparse.Namespace) -> int:
    try:
        config = _config(args.config_json)
        tags = parse_tags(args.tag)
        client, _ = graphql_clients(args.url)
    except ValueError as error:
        print(f"datacoolie-dagster launch: {error}", file=sys.stderr)
        return USAGE
    from dagster_graphql import DagsterGraphQLClientError

    try:
        run_id = client.submit_job_execution(
            args.job,
            repository_location_name=args.location,
            repository_name=args.repository if args.location else None,
            run_config=config,
            tags=tags,
        )
    except DagsterGraphQLClientError as error:
        print(f"datacoolie-dagster launch: job {args.job!r} at {args.url} was not launched: {error}", file=sys.stderr)
        return USAGE
    print(run_id)
    return 0


def parse_tags(pairs: list[str]) -> dict[str, str]:
    """``["ci/pipeline=123", …]`` -> ``{"ci/pipeline": "123"}``."""
    tags = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--tag {pair!r} is not KEY=VALUE, e.g. --tag ci/pipeline=$GITHUB_RUN_ID")
        tags[key] = value
    return tags


def _config(text: str) -> dict[str, Any]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--config-json is not JSON ({error}): {text!r}") from error
    if not isinstance(config, dict):
        raise ValueError(f"--config-json must be a JSON object, e.g. '{{\"job_num\": 3}}', not {text!r}")
    return config
