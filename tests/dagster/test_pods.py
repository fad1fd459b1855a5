"""The Kubernetes deployment of deploy/k8s, run with the cluster taken out: one pod per run, one per step.

There is no cluster here. What dagster-k8s does with one is done with the same Dagster machinery on
this machine (``tests.support.pods``): the run's worker is ``dagster api execute_run`` with the
arguments ``K8sRunLauncher`` gives it, and each step is ``dagster api execute_step`` with the
arguments ``K8sStepHandler`` gives it, run by ``StepDelegatingExecutor`` configured by the shipped
``executor.yaml`` block (``max_concurrent``, ``retries``, ``env_config_maps``, ``env_secrets``).
Every process is a "pod": a folder of its own standing for the container's filesystem, with the
image's files (the metadata and executor file at the paths of deploy/k8s/Dockerfile's ``COPY``), the
instance ConfigMap (deploy/k8s/dagster.yaml) at ``$DAGSTER_HOME/dagster.yaml``, an empty working
directory, and an environment made only of the image's, the ConfigMap ``datacoolie-env`` of
deploy/k8s/manifests.yaml and the Secrets the docs tell the operator to create.

What differs from the shipped files, and why: the run launcher (``PodRunLauncher`` for
``K8sRunLauncher``, which needs a cluster), PostgreSQL's address and database (the test server's),
the log bucket and region (a fresh bucket on moto) and ``AWS_ENDPOINT_URL_S3`` (moto instead of
AWS S3). A pod of its own (the webserver's role) submits the sharded stage job with
``dagster job launch``, which queues it (the shipped instance has a run queue); the test's own
instance takes the daemon's part and launches it through the run launcher, which starts the run's
pod. The lake is on S3 and the state in PostgreSQL.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster_k8s.job import DAGSTER_PG_PASSWORD_SECRET_KEY

from tests.dagster.cli_support import BIN, REPOSITORY
from tests.dagster.s3_stage_support import STAGE, assert_tables_hold_their_sources, write_stage
from tests.dagster.test_deploy_config import env_config_map, image_files
from tests.support.pods import FILESYSTEM, LOG, RECORD, Cluster, PodSpec, start_pod, stop_pod
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, S3Server, start_moto

K8S = REPOSITORY / "deploy" / "k8s"
DATAFLOWS = 8
SHARDS = 4
ROWS = 500
STAGE_JOB = f"datacoolie_{STAGE}"
LOCATION = "tests.dagster.pod_location"
RUN_TIMEOUT = 600.0
SUBSTITUTED = {"DATACOOLIE_PG_HOST", "DATACOOLIE_PG_USER", "DATACOOLIE_LOG_BUCKET", "AWS_REGION"}
"""The only values of ``datacoolie-env`` the test replaces: the addresses of its own servers."""


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    with start_moto() as server:
        yield server


def instance_config(cluster_file: Path, database: dict[str, str]) -> dict[str, Any]:
    """deploy/k8s/dagster.yaml with PostgreSQL's port and database the test server's, and the run
    launcher PodRunLauncher with the K8sRunLauncher's settings that mean something without a cluster."""
    config: dict[str, Any] = yaml.safe_load((K8S / "dagster.yaml").read_text(encoding="utf-8"))
    postgres = config["storage"]["postgres"]["postgres_db"]
    postgres |= {"port": int(database["DATACOOLIE_PG_PORT"]), "db_name": database["DATACOOLIE_PG_DB"]}
    shipped = config["run_launcher"]["config"]
    kept = ("instance_config_map", "postgres_password_secret", "dagster_home", "env_config_maps", "env_secrets",
            "fail_pod_on_run_failure")  # fmt: skip
    config["run_launcher"] = {
        "module": "tests.support.pods",
        "class": "PodRunLauncher",
        "config": {"cluster": str(cluster_file)} | {k: shipped[k] for k in kept},
    }
    return config


@dataclass(frozen=True)
class Deployment:
    root: Path
    cluster: Cluster
    bucket: str
    server: S3Server
    viewer_env: dict[str, str]
    """A host reading the deployment (the webserver's role): datacoolie-env and the Secrets."""

    def pods(self) -> dict[str, dict[str, Any]]:
        """Every pod that ran: name -> its ``pod.json`` (pid, working directory, command)."""
        root = Path(self.cluster.root)
        return {p.parent.name: json.loads(p.read_text()) for p in root.glob(f"*/{RECORD}")}

    def provisioned(self) -> set[str]:
        """The files a pod starts with: the image's, and the instance ConfigMap's mount."""
        return {*self.cluster.image_files, "/opt/dagster_home/dagster.yaml"}


def secrets(database: dict[str, str]) -> dict[str, dict[str, str]]:
    """The two Secrets docs/deployment.md has the operator create, with the keys it names."""
    password = database["DATACOOLIE_PG_PASSWORD"]
    state_url = "postgresql://{DATACOOLIE_PG_USER}:{DATACOOLIE_PG_PASSWORD}@{DATACOOLIE_PG_HOST}:{DATACOOLIE_PG_PORT}/{DATACOOLIE_PG_DB}"
    return {
        "datacoolie-postgres": {
            "DAGSTER_PG_PASSWORD": password,
            "postgresql-password": password,
            "DATACOOLIE_STATE_URL": state_url.format(**database),
        },
        "datacoolie-s3": {"AWS_ACCESS_KEY_ID": ACCESS_KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY},
    }


def deploy(root: Path, database: dict[str, str], server: S3Server) -> Deployment:
    """The cluster of the test: the image, ``datacoolie-env``, the instance ConfigMap and the Secrets."""
    bucket = server.bucket()
    build = root / "build"
    build.mkdir()
    credentials = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")  # the keys of the datacoolie-s3 Secret
    write_stage(build / "pipeline.json", server, bucket, dataflows=DATAFLOWS, rows=ROWS, credentials=credentials)
    env = env_config_map()
    files = {dest: str(REPOSITORY / source) for dest, source in image_files().items()}
    files[env["DATACOOLIE_METADATA"]] = str(build / "pipeline.json")  # docker build --build-arg METADATA=…
    datacoolie_env = env | {
        "DATACOOLIE_PG_HOST": database["DATACOOLIE_PG_HOST"],
        "DATACOOLIE_PG_USER": database["DATACOOLIE_PG_USER"],
        "DATACOOLIE_LOG_BUCKET": bucket,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL_S3": server.endpoint,  # boto3's S3 endpoint: moto, not AWS
    }
    assert {k for k in env if env[k] != datacoolie_env[k]} <= SUBSTITUTED
    cluster_file = root / "cluster.json"
    instance = yaml.safe_dump(instance_config(cluster_file, database))
    cluster = Cluster(
        root=str(root / "pods"),
        config_maps={"datacoolie-env": datacoolie_env, "dagster-instance": {"dagster.yaml": instance}},
        secrets=secrets(database),
        image_files=files,
        image_env={"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(REPOSITORY), "LANG": "C.UTF-8"},
        workdir="/opt/work",
    )
    cluster.save(cluster_file)
    viewer_env = datacoolie_env | {k: v for s in cluster.secrets.values() for k, v in s.items() if k.isupper()}
    return Deployment(root, cluster, bucket, server, viewer_env)


def launch(deployment: Deployment, run_id: str) -> None:
    """``dagster job launch`` in a pod of its own (the webserver's role): it loads the code location
    from the image's files and queues the run."""
    args = [str(BIN / "dagster"), "job", "launch", "-m", LOCATION, "-d", str(REPOSITORY), "-j", STAGE_JOB,
            "--config-json", json.dumps({"job_num": SHARDS}), "--run-id", run_id]  # fmt: skip
    spec = PodSpec("dagster-launch", args, ["datacoolie-env"], ["datacoolie-postgres", "datacoolie-s3"], {},
                   "dagster-instance", "/opt/dagster_home")  # fmt: skip
    _, process = start_pod(deployment.cluster, spec)
    code = process.wait(timeout=RUN_TIMEOUT)
    log = (Path(deployment.cluster.root) / spec.name / "log").read_text(errors="replace")
    assert code == 0, f"dagster job launch exited {code}:\n{log[-4000:]}"


@pytest.fixture
def viewer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """Opens the deployment's Dagster instance in this process, with the instance ConfigMap and env."""
    opened: list[dg.DagsterInstance] = []

    def open_instance(deployment: Deployment) -> dg.DagsterInstance:
        for name, value in deployment.viewer_env.items():
            monkeypatch.setenv(name, value)
        home = tmp_path / "viewer"
        home.mkdir()
        (home / "dagster.yaml").write_text(deployment.cluster.config_maps["dagster-instance"]["dagster.yaml"])
        opened.append(dg.DagsterInstance.from_config(str(home)))
        return opened[-1]

    yield open_instance
    for instance in opened:
        instance.dispose()


def dequeue(instance: dg.DagsterInstance, run_id: str) -> None:
    """The daemon's part (the run queue: deploy/k8s/dagster.yaml's ``max_concurrent_runs``): launch the
    queued run through the instance's run launcher, which starts the run's pod."""
    run = instance.get_run_by_id(run_id)
    assert run is not None
    assert run.status == dg.DagsterRunStatus.QUEUED, run.status
    instance.launch_run(run_id, workspace=None)  # type: ignore[arg-type]  # the pod launcher needs none


def wait_for_run(instance: dg.DagsterInstance, run_id: str, deployment: Deployment) -> dg.DagsterRun:
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.is_finished:
            return run
        time.sleep(0.5)
    logs = {name: (Path(deployment.cluster.root) / name / "log").read_text(errors="replace")[-1500:]
            for name in deployment.pods()}  # fmt: skip
    pytest.fail(f"run {run_id} not finished after {RUN_TIMEOUT:.0f} s; pods: {logs}")


def events(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> list[Any]:
    return [r.dagster_event for r in instance.all_logs(run_id, of_type=kind) if r.dagster_event]


def step_log(instance: dg.DagsterInstance, run_id: str, step: str) -> str:
    """The captured stdout and stderr of ``step``, read through the viewer's instance (from S3)."""
    captured = [
        e.logs_captured_data
        for e in events(instance, run_id, dg.DagsterEventType.LOGS_CAPTURED)
        if step in (e.logs_captured_data.step_keys or [])
    ]
    assert captured, f"no captured logs for {step}"
    manager = instance.compute_log_manager
    assert type(manager).__name__ == "S3ComputeLogManager"
    data = manager.get_log_data(manager.build_log_key_for_run(run_id, captured[-1].file_key))
    return (data.stdout or b"").decode() + (data.stderr or b"").decode()


def assert_one_pod_per_step(instance: dg.DagsterInstance, run_id: str, deployment: Deployment) -> dict[str, int]:
    """Dagster's own record of which process ran what: the run worker's and each step's events carry
    their process id, which is the id of the pod's process that the launcher or step handler started."""
    pods = deployment.pods()
    pid_of_pod = {name: int(record["pid"]) for name, record in pods.items()}
    (run_start,) = events(instance, run_id, dg.DagsterEventType.RUN_START)
    assert run_start.pid == pid_of_pod[f"dagster-run-{run_id}"]
    pod_of_step = {e.step_key: str(e.event_specific_data.metadata["Pod name"].value)
                   for e in events(instance, run_id, dg.DagsterEventType.STEP_WORKER_STARTING)}  # fmt: skip
    pid_of_step = {e.step_key: e.pid for e in events(instance, run_id, dg.DagsterEventType.STEP_START)}
    assert set(pid_of_step) == set(pod_of_step)
    for step, pid in pid_of_step.items():
        assert pid == pid_of_pod[pod_of_step[step]], f"{step} did not run in its pod's process"
    pids = [run_start.pid, *pid_of_step.values()]
    assert len(set(pids)) == len(pids), f"a process ran more than one step: {pid_of_step}"
    cwds = [pods[name]["cwd"] for name in [f"dagster-run-{run_id}", *pod_of_step.values()]]
    assert len(set(cwds)) == len(cwds)
    return pid_of_step


def assert_nothing_on_local_disk(deployment: Deployment) -> None:
    """No file on this machine but what the test put there: every pod's filesystem holds what it
    started with, the pods' working directories are still empty, and the viewer's DAGSTER_HOME (the
    daemon's role: the instance that launched the run, whose folder the run's instance ref names)
    holds its dagster.yaml alone. So no table, state, step output or log is on a local disk: a step
    that read another step's output from a folder would find it here, on one machine, but not in a
    cluster, and this check fails on it."""
    for name, record in deployment.pods().items():
        assert list(Path(record["cwd"]).iterdir()) == [], f"pod {name} wrote in its working directory"
    expected = {"cluster.json", "build/pipeline.json", "viewer/dagster.yaml"}
    for name in deployment.pods():
        expected |= {f"pods/{name}/{LOG}", f"pods/{name}/{RECORD}"}
        expected |= {f"pods/{name}/{FILESYSTEM}{path}" for path in deployment.provisioned()}
    files = {str(p.relative_to(deployment.root)) for p in deployment.root.rglob("*") if p.is_file()}
    assert files - expected == set(), "written on a local disk"
    assert expected - files == set()


def test_the_documented_secrets_hold_every_key_the_pods_read() -> None:
    """The K8sRunLauncher's ``postgres_password_secret`` makes each run and step pod read the key
    ``postgresql-password`` of that Secret: Kubernetes does not start a pod whose Secret lacks it, so
    the docs must have the operator create it."""
    launcher = yaml.safe_load((K8S / "dagster.yaml").read_text(encoding="utf-8"))["run_launcher"]["config"]
    docs = (REPOSITORY / "docs" / "deployment.md").read_text(encoding="utf-8")
    (paragraph,) = [p for p in docs.split("\n- ") if p.startswith("The Secrets you create:")]

    assert f"`{launcher['postgres_password_secret']}` (" in paragraph
    assert f"`{DAGSTER_PG_PASSWORD_SECRET_KEY}`" in paragraph
    # the keys the test's pods get are the documented ones
    names = (
        "DATACOOLIE_PG_USER",
        "DATACOOLIE_PG_PASSWORD",
        "DATACOOLIE_PG_HOST",
        "DATACOOLIE_PG_PORT",
        "DATACOOLIE_PG_DB",
    )
    placeholders = dict.fromkeys(names, "x")
    for name, keys in secrets(placeholders).items():
        assert f"`{name}` (" in paragraph
        assert all(f"`{key}`" in paragraph for key in keys), (name, keys)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.s3
def test_each_step_runs_in_a_pod_of_its_own_with_only_the_shipped_configuration(
    tmp_path: Path, postgres_database: dict[str, str], s3_server: S3Server, viewer: Any
) -> None:
    deployment = deploy(tmp_path, postgres_database, s3_server)
    instance = viewer(deployment)  # creates Dagster's tables once, as the webserver's first start does
    run_id = str(uuid.uuid4())
    try:
        launch(deployment, run_id)
        dequeue(instance, run_id)
        run = wait_for_run(instance, run_id, deployment)
    finally:
        for name in deployment.pods():
            stop_pod(deployment.cluster, name)

    assert run.status == dg.DagsterRunStatus.SUCCESS, [e.message for e in instance.all_logs(run_id)][-20:]
    shards = {f"datacoolie_run_shard[shard_{i}]" for i in range(SHARDS)}
    pid_of_step = assert_one_pod_per_step(instance, run_id, deployment)
    assert shards < set(pid_of_step)
    assert_tables_hold_their_sources(s3_server, deployment.bucket, dataflows=DATAFLOWS, rows=ROWS)
    assert_nothing_on_local_disk(deployment)
    for i in range(SHARDS):
        text = step_log(instance, run_id, f"datacoolie_run_shard[shard_{i}]")
        assert f"shard {i}/{SHARDS}:" in text, text[-2000:]
        assert '"_type": "dataflow_run_log"' in text  # the engine's log: in the step's log, on S3
    assert s3_server.keys(f"s3://{deployment.bucket}/dagster/compute-logs/")
    handler = [e.message for e in events(instance, run_id, dg.DagsterEventType.ENGINE_EVENT)]
    assert any("PodStepHandler" in (m or "") for m in handler), handler
