# A code-location image: `docker build -t datacoolie-dagster .`, then serve the definitions over gRPC
# to a Dagster webserver/daemon (workspace entry: grpc_server host=<container> port=4000).
# Mount your metadata and set DATACOOLIE_METADATA (default: the bundled example) and DATACOOLIE_HOME
# (state and logs; default /opt/datacoolie/data).
FROM python:3.11-slim

WORKDIR /opt/datacoolie
COPY pyproject.toml constraints.txt README.md ./
COPY datacoolie_core ./datacoolie_core
COPY datacoolie_dagster ./datacoolie_dagster
COPY datacoolie_dagster_hook ./datacoolie_dagster_hook
# the README's install, without the dev tools: every version pinned by constraints.txt.
# EXTRA_PACKAGES adds a deployment's Dagster libraries, pinned there too: "dagster-k8s" for
# deploy/k8s, "dagster-celery redis" for Celery workers, plus "dagster-aws" for step logs on S3
# (docs/deployment.md).
ARG EXTRA_PACKAGES=""
RUN pip install --no-cache-dir -c constraints.txt . $EXTRA_PACKAGES \
 && useradd --create-home datacoolie
COPY workspace.yaml dagster.yaml ./

ENV DAGSTER_HOME=/opt/dagster_home \
    DATACOOLIE_HOME=/opt/datacoolie/data
RUN mkdir -p "$DAGSTER_HOME" "$DATACOOLIE_HOME" && cp dagster.yaml "$DAGSTER_HOME/" \
 && chown -R datacoolie "$DAGSTER_HOME" /opt/datacoolie
USER datacoolie

EXPOSE 4000
CMD ["dagster", "code-server", "start", "-h", "0.0.0.0", "-p", "4000", "-m", "datacoolie_dagster.definitions", "--working-directory", "/opt/datacoolie"]
