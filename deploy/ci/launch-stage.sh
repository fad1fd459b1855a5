#!/usr/bin/env bash
# Launch every shard of a DataCoolie stage job on a Dagster deployment, follow the runs to their end,
# and exit 0 only if every run succeeded (docs/ci.md). Settings come from the environment:
#
#   JOB             the stage job, e.g. datacoolie_landing2bronze (required)
#   SHARDS          number of shards, one run each (default 1)
#   DAGSTER_URL     the deployment's webserver, e.g. https://dagster.internal: runs are submitted and
#                   followed through its GraphQL API (DAGSTER_TOKEN, if set, is sent as a bearer token).
#                   Unset: `dagster job launch` into the instance at DAGSTER_HOME (its dagster.yaml and
#                   the DATACOOLIE_PG_* variables it reads), with WORKSPACE (default workspace.yaml)
#   CI_RUN_ID       tag ci/run on every run (default: $GITHUB_RUN_ID, $CI_PIPELINE_ID or "local")
#   TIMEOUT         seconds to wait for the runs (default 3600)
#   QUEUED_TIMEOUT  seconds a run may stay QUEUED with no dagster-daemon alive (default 120)
set -euo pipefail

: "${JOB:?set JOB to the stage job, e.g. datacoolie_landing2bronze}"
SHARDS="${SHARDS:-1}"
CI_RUN_ID="${CI_RUN_ID:-${GITHUB_RUN_ID:-${CI_PIPELINE_ID:-local}}}"
TIMEOUT="${TIMEOUT:-3600}"
QUEUED_TIMEOUT="${QUEUED_TIMEOUT:-120}"
WORKSPACE="${WORKSPACE:-workspace.yaml}"

run_ids=()
for ((index = 0; index < SHARDS; index++)); do
  config="{\"job_num\": $SHARDS, \"job_index\": $index}"
  if [[ -n "${DAGSTER_URL:-}" ]]; then
    run_id=$(datacoolie-dagster launch --url "$DAGSTER_URL" --job "$JOB" --config-json "$config" \
      --tag "ci/run=$CI_RUN_ID" --tag "ci/shard=$index")
  else
    # the run id is chosen here, so the wait below can follow the run
    run_id=$(python3 -c 'import uuid; print(uuid.uuid4())')
    dagster job launch -w "$WORKSPACE" -j "$JOB" --config-json "$config" --run-id "$run_id" \
      --tags "{\"ci/run\": \"$CI_RUN_ID\", \"ci/shard\": \"$index\"}" >&2
  fi
  echo "launched $JOB shard $index/$SHARDS: run $run_id"
  run_ids+=("$run_id")
done

if [[ -n "${DAGSTER_URL:-}" ]]; then
  where=(--url "$DAGSTER_URL")
else
  where=()
fi
exec datacoolie-dagster wait "${where[@]}" --timeout "$TIMEOUT" --queued-timeout "$QUEUED_TIMEOUT" "${run_ids[@]}"
