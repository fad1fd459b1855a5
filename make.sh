#!/usr/bin/env bash
# Set-up and entry points for a fresh machine that has only Python 3.11 and pip.
#   ./make.sh example   install, then validate and run the bundled example
#   ./make.sh ui [dagster dev args]   install, then the Dagster UI + daemon on the project's instance (.dagster/)
#   ./make.sh test [pytest args]   install, then lint and run the whole test suite in parallel (pytest-xdist)
#   ./make.sh install [dev,oracle]   only create .venv and install the project (pinned by constraints.txt)
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

install() {
  # $1: the extras to install (default dev); each set of extras has its own stamp.
  local extras=${1:-dev}
  local stamp="$VENV/.installed-${extras//,/-}"
  if [[ -f "$stamp" && "$stamp" -nt pyproject.toml && "$stamp" -nt constraints.txt ]]; then
    return
  fi
  "$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  # constraints.txt pins every package: no backtracking, the same versions everywhere.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[$extras]"
  touch "$stamp"
}

record_in_ui_instance() {
  # When the UI's instance exists (./make.sh ui made it), the CLI runs record what they build there
  # (docs/catalog.md): the UI then shows the tables and partitions loaded by ./make.sh example.
  if [[ -z "${DAGSTER_HOME:-}" && -f .dagster/dagster.yaml ]]; then
    export DAGSTER_HOME="$PWD/.dagster"
    echo "== recording the runs in the UI's Dagster instance: $DAGSTER_HOME"
  fi
}

example() {
  # The bundled example end to end, in ./data (docs/example.md): land a batch of source files (a new
  # batch on every call: new orders, updated orders, a late file of Q1 orders), run both stages
  # (incremental append, merge, scd2), then replay Q1 month by month. The replay selects on
  # created_at, the column of silver orders' order_month partitions and of its Dagster partitions,
  # so month 2024-01 is one set of rows everywhere; it loads the late orders, which are behind the
  # incremental updated_at watermark.
  installed || install
  local metadata=datacoolie_dagster/example/metadata.json
  local state=(--state-path data/state --log-path data/logs)
  record_in_ui_instance
  "$VENV/bin/datacoolie" validate "$metadata"
  echo "== land the next batch of source files (docs/example.md)"
  "$VENV/bin/python" -m datacoolie_dagster.example.generate --root data
  echo "== landing2bronze: append the new order files, overwrite the customer snapshot"
  "$VENV/bin/datacoolie" run --metadata "$metadata" --stage landing2bronze "${state[@]}"
  echo "== bronze2silver: orders merged incrementally (rows past the updated_at watermark), customers as SCD2"
  "$VENV/bin/datacoolie" run --metadata "$metadata" --stage bronze2silver "${state[@]}"
  echo "== replay of 2024-01..2024-03 on created_at, month by month (also loads the late orders)"
  "$VENV/bin/datacoolie" replay --metadata "$metadata" --stage bronze2silver --dataflow orders_bronze_to_silver \
    --start 2024-01-01 --end 2024-04-01 --chunk-interval-json '{"months": 1}' --chunk-column created_at "${state[@]}"
}

installed() {
  # Whether some install (any extras) is newer than pyproject.toml and constraints.txt.
  local stamp
  for stamp in "$VENV"/.installed-*; do
    [[ -f "$stamp" && "$stamp" -nt pyproject.toml && "$stamp" -nt constraints.txt ]] && return 0
  done
  return 1
}

ui() {
  # `dagster dev` (webserver + daemon) on a persistent instance: DAGSTER_HOME defaults to ./.dagster
  # (kept out of git), whose dagster.yaml is this repository's (queue limit, pools, Dagster's own
  # retries off, run monitoring). Without DAGSTER_HOME, dagster dev would use a temporary instance
  # whose runs, materializations and sensor ticks vanish on exit.
  installed || install
  export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.dagster}"
  mkdir -p "$DAGSTER_HOME"
  if [[ ! -f "$DAGSTER_HOME/dagster.yaml" || dagster.yaml -nt "$DAGSTER_HOME/dagster.yaml" ]]; then
    cp dagster.yaml "$DAGSTER_HOME/dagster.yaml"
  fi
  echo "Dagster instance: $DAGSTER_HOME (settings: $DAGSTER_HOME/dagster.yaml, copied from ./dagster.yaml)"
  echo "(dagster dev warns that ./dagster.yaml is not used: the instance uses that copy)"
  # Tables loaded before the instance existed (./make.sh example first, DataCoolie on Spark) are
  # recorded as they stand, so the catalog shows them (docs/catalog.md); already recorded: no-op.
  echo "== recording the tables that already exist in the instance (datacoolie-dagster adopt)"
  "$VENV/bin/datacoolie-dagster" adopt --instance "$DAGSTER_HOME" \
    || echo "warning: could not record the existing tables; the UI starts anyway" >&2
  exec "$VENV/bin/dagster" dev -w workspace.yaml "$@"
}

ensure_postgres() {
  # The database-source tests run against a real PostgreSQL server that they start themselves
  # from the Debian package's binaries (tests/support/postgres.py).
  if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    return
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing PostgreSQL (Debian package) for the database tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "warning: PostgreSQL is not installed and this user cannot apt-get it; its tests will skip (and fail under CI)" >&2
  fi
}

ensure_mariadb() {
  # The MySQL/MariaDB source tests run against a real MariaDB server that they start themselves
  # from the Debian package's binaries (tests/support/mariadb.py).
  if command -v mariadb-install-db >/dev/null && { command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]]; }; then
    return
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing MariaDB (Debian package mariadb-server) for the database tests..."
    apt-get update -qq
    # the tests never use a system service the package may start: they run their own on a free port
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
  else
    echo "warning: MariaDB is not installed and this user cannot apt-get it; its tests will skip (and fail under CI)" >&2
  fi
}

ensure_java() {
  # The Spark oracle tests (tests/core/sql/oracle, CSV typing) run Apache Spark in local mode.
  if command -v java >/dev/null; then
    return
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing Java 17 (Debian package) for the Spark oracle tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "warning: Java is not installed and this user cannot apt-get it; the Spark oracle tests will skip (and fail under CI)" >&2
  fi
}

ensure_browser() {
  # The real-browser UI test (tests/browser) drives Debian's Chromium through its chromedriver, so
  # Selenium never downloads a browser or a driver.
  if command -v chromium >/dev/null && [[ -x /usr/bin/chromedriver ]]; then
    return
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing Chromium and chromedriver (Debian packages) for the browser test..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "warning: Chromium is not installed and this user cannot apt-get it; the browser test will skip (and fail under CI)" >&2
  fi
}

ensure_redis() {
  # The Celery executor tests (tests/dagster/test_celery.py) use a real Redis server as the broker,
  # started by the tests themselves from the Debian package's binary (tests/support/redis.py).
  if command -v redis-server >/dev/null; then
    return
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing Redis (Debian package) for the Celery executor tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "warning: redis-server is not installed and this user cannot apt-get it; the Celery tests will skip (and fail under CI)" >&2
  fi
}

ensure_azurite() {
  # The abfss:// tests (tests/dagster/test_azure_tables.py) start Azurite, the Azure Storage
  # emulator, from the npm package installed beside the virtualenv (tests/support/azurite.py).
  local version=3.35.0
  if [[ -x "$VENV/azurite/node_modules/.bin/azurite-blob" ]]; then
    return
  fi
  if ! command -v npm >/dev/null && [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing Node.js and npm (Debian packages) for Azurite..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  if command -v npm >/dev/null; then
    echo "installing Azurite $version (npm) for the abfss:// tests..."
    npm install --prefix "$VENV/azurite" --no-audit --no-fund --silent "azurite@$version" >/dev/null
  else
    echo "warning: npm is not installed; the Azurite tests will skip (and fail under CI)" >&2
  fi
}

test() {
  install dev,oracle
  ensure_postgres
  ensure_mariadb
  ensure_java
  ensure_browser
  ensure_redis
  ensure_azurite
  "$VENV/bin/ruff" check datacoolie_core datacoolie_dagster datacoolie_dagster_hook tests benchmarks
  "$VENV/bin/ruff" format --check --quiet datacoolie_core datacoolie_dagster datacoolie_dagster_hook tests benchmarks
  "$VENV/bin/mypy" datacoolie_core datacoolie_dagster datacoolie_dagster_hook
  # one pytest-xdist worker per CPU (PYTEST_XDIST_AUTO_NUM_WORKERS=N for N), each with its own
  # servers, ports and temporary folders (tests/support/servers.py); an idle worker takes tests
  # queued for a busy one (worksteal). `./make.sh test -n 0 ...` runs in one process.
  "$VENV/bin/python" -m pytest -n auto --dist worksteal "$@"
}

case "${1:-}" in
  install) shift; install "$@" ;;
  example) example ;;
  ui) shift; ui "$@" ;;
  test) shift; test "$@" ;;
  *) echo "usage: ./make.sh install|example|ui|test [args]" >&2; exit 2 ;;
esac
