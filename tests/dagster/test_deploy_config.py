"""The deployment files in deploy/ against the schemas of the libraries that read them.

Kubernetes (deploy/k8s, never run here): the instance's ``K8sRunLauncher`` config against
``K8sRunLauncher.config_type()``, the whole ``dagster.yaml`` against Dagster's instance schema, the
executor file against ``k8s_job_executor``'s schema (through our load-time check), the raw
Kubernetes blocks against the kubernetes client's models (dagster-k8s's own ``k8s_model_from_dict``),
and the names the files share (ConfigMaps, ServiceAccount). Celery (deploy/celery, run end to end
by test_celery.py): the worker file against ``celery_executor``'s schema via dagster-celery's CLI.

``dagster._config`` / ``dagster._core.instance.config`` are private: they are the reference the
schemas are checked with (dagster-celery's own CLI validates its worker file the same way).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import kubernetes
import pytest
import yaml
from dagster._config import process_config  # the reference
from dagster._core.instance.config import dagster_instance_config  # the reference
from dagster.components.testing import create_defs_folder_sandbox
from dagster_celery.cli import get_validated_config
from dagster_k8s import K8sRunLauncher
from dagster_k8s.models import k8s_model_from_dict

from datacoolie_dagster import DataCoolieComponent
from datacoolie_dagster.example import METADATA_PATH
from datacoolie_dagster.location import executors
from datacoolie_dagster.location.executors import ExecutorSettingError, build_executor, executor_setting_from_file
from tests.dagster.cli_support import REPOSITORY
from tests.dagster.conftest import definitions

DEPLOY = REPOSITORY / "deploy"
K8S = DEPLOY / "k8s"
PG_ENV = {"DATACOOLIE_PG_HOST": "db", "DATACOOLIE_PG_PORT": "5432", "DATACOOLIE_PG_USER": "u",
          "DATACOOLIE_PG_PASSWORD": "p", "DAGSTER_PG_PASSWORD": "p", "DATACOOLIE_PG_DB": "d",
          "DATACOOLIE_LOG_BUCKET": "logs", "DATACOOLIE_LOG_PREFIX": "dagster/compute-logs", "AWS_REGION": "eu-west-1",
          "DATACOOLIE_S3_ENDPOINT": "http://s3:9000"}  # fmt: skip


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def manifests() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / "manifests.yaml").read_text(encoding="utf-8")) if d]


@pytest.fixture
def pg_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PG_ENV.items():
        monkeypatch.setenv(name, value)


def launcher_config(document: dict[str, Any]) -> dict[str, Any]:
    launcher = document["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    config: dict[str, Any] = launcher["config"]
    return config


def test_the_k8s_run_launcher_config_fits_dagster_k8s_schema() -> None:
    config = launcher_config(load(K8S / "dagster.yaml"))

    result = process_config(K8sRunLauncher.config_type(), config)

    assert result.success, [e.message for e in result.errors or []]
    assert result.value is not None
    assert result.value["instance_config_map"] == "dagster-instance"


def test_a_misspelt_run_launcher_key_is_refused_by_that_schema() -> None:
    config = launcher_config(load(K8S / "dagster.yaml"))
    config["job_namespce"] = config.pop("job_namespace")

    result = process_config(K8sRunLauncher.config_type(), config)

    assert not result.success
    assert any("job_namespce" in e.message for e in result.errors or [])


@pytest.mark.usefixtures("pg_env")
@pytest.mark.parametrize("folder", ["k8s", "celery"])
def test_each_instance_file_fits_dagster_instance_schema(folder: str) -> None:
    config, _ = dagster_instance_config(str(DEPLOY / folder))

    assert config["storage"]["postgres"]["postgres_db"]["hostname"] == {"env": "DATACOOLIE_PG_HOST"}
    assert config["run_monitoring"]["enabled"] is True


def test_a_misspelt_instance_key_is_refused_by_dagster_instance_schema(tmp_path: Path) -> None:
    text = (K8S / "dagster.yaml").read_text(encoding="utf-8").replace("run_monitoring:", "run_monitorin:")
    (tmp_path / "dagster.yaml").write_text(text, encoding="utf-8")

    with pytest.raises(dg.DagsterInvalidConfigError, match="run_monitorin"):
        dagster_instance_config(str(tmp_path))


def test_the_k8s_executor_file_fits_k8s_job_executor_schema() -> None:
    executor = build_executor(executor_setting_from_file(K8S / "executor.yaml"))

    assert executor is not None
    assert executor.name == "k8s"


def test_a_misspelt_k8s_executor_key_fails_the_load(tmp_path: Path) -> None:
    document = load(K8S / "executor.yaml")
    document["executor"]["k8s"]["max_concurent"] = document["executor"]["k8s"].pop("max_concurrent")
    (tmp_path / "executor.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")

    with pytest.raises(ExecutorSettingError, match=r"(?s)executor\.k8s: .*max_concurent"):
        build_executor(executor_setting_from_file(tmp_path / "executor.yaml"))


def test_the_raw_kubernetes_blocks_are_valid_kubernetes_models() -> None:
    launcher = launcher_config(load(K8S / "dagster.yaml"))
    step = load(K8S / "executor.yaml")["executor"]["k8s"]["step_k8s_config"]
    for container in (launcher["run_k8s_config"]["container_config"], step["container_config"]):
        model = k8s_model_from_dict(kubernetes.client.V1Container, {"name": "step", **container})
        assert model.resources.requests["cpu"]


def test_the_k8s_files_agree_on_the_names_they_share() -> None:
    launcher = launcher_config(load(K8S / "dagster.yaml"))
    executor = load(K8S / "executor.yaml")["executor"]["k8s"]
    kustomization = load(K8S / "kustomization.yaml")
    objects = {(o["kind"], o["metadata"]["name"]) for o in manifests()}
    config_maps = {g["name"] for g in kustomization["configMapGenerator"]} | {n for k, n in objects if k == "ConfigMap"}

    assert launcher["instance_config_map"] in config_maps
    assert "dagster-workspace" in config_maps
    for settings in (launcher, executor):
        assert ("ServiceAccount", settings["service_account_name"]) in objects
        assert set(settings["env_config_maps"]) <= config_maps
        assert settings["job_namespace"] == kustomization["namespace"]
    # every pod mounts the instance ConfigMap where the launcher's dagster_home expects it
    for deployment in (o for o in manifests() if o["kind"] == "Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert f"{launcher['dagster_home']}/dagster.yaml" in mounts, deployment["metadata"]["name"]


@pytest.mark.usefixtures("pg_env")
def test_the_celery_worker_file_fits_celery_executor_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATACOOLIE_CELERY_BROKER", "redis://broker:6379/0")
    monkeypatch.setenv("DATACOOLIE_CELERY_BACKEND", "redis://broker:6379/1")

    config = get_validated_config(str(DEPLOY / "celery" / "worker.yaml"))  # what `dagster-celery worker start -y` runs

    assert config["broker"] == "redis://broker:6379/0"
    assert config["config_source"]["task_acks_late"] is True
    # the step's own lines reach its captured log (Celery would swallow them into its logger)
    assert config["config_source"]["worker_redirect_stdouts"] is False
    # a step lost with its worker runs again within minutes, not hours
    assert config["config_source"]["broker_transport_options"]["visibility_timeout"] <= 600
    # the code location reads the same file (DATACOOLIE_EXECUTOR_CONFIG) as its celery executor
    executor = build_executor(executor_setting_from_file(DEPLOY / "celery" / "worker.yaml"))
    assert executor is not None
    assert executor.name == "celery"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("spark", r"unknown executor 'spark'; known: in_process, multiprocess, celery, k8s"),
        ({"celery": {}, "k8s": {}}, r"name exactly one executor .* got 'celery', 'k8s'"),
        ({"multiprocess": {"max_concurent": 2}}, r"(?s)executor\.multiprocess: .*max_concurent"),
        ({"celery": "redis://x"}, r"executor\.celery: the config must be a mapping, got str"),
    ],
)
def test_a_bad_executor_setting_is_refused_with_its_reason(setting: Any, message: str) -> None:
    with pytest.raises(ExecutorSettingError, match=message):
        build_executor(setting)


def test_an_executor_file_without_a_known_layout_is_refused(tmp_path: Path) -> None:
    (tmp_path / "executor.yaml").write_text("celery: {broker: redis://x}\n", encoding="utf-8")

    with pytest.raises(ExecutorSettingError, match=r"executor\.yaml: expected a top-level 'executor:'"):
        executor_setting_from_file(tmp_path / "executor.yaml")


def test_the_executor_runs_the_stage_jobs_and_the_asset_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    defs = definitions(tmp_path, executor={"multiprocess": {"max_concurrent": 3}}, include_sensors=False)

    for job in ("datacoolie_landing2bronze", "datacoolie_all_stages", "__ASSET_JOB"):
        assert defs.resolve_job_def(job).executor_def.name == "multiprocess", job
    default = definitions(tmp_path, include_sensors=False)
    assert default.resolve_job_def("datacoolie_landing2bronze").executor_def is dg.multi_or_in_process_executor


def test_the_component_takes_the_executor_from_defs_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATACOOLIE_CELERY_BROKER", "redis://broker:6379/0")
    with create_defs_folder_sandbox() as sandbox:
        folder = sandbox.scaffold_component(component_cls=DataCoolieComponent, defs_path="datacoolie")
        (folder / "defs.yaml").write_text(
            "type: datacoolie_dagster.DataCoolieComponent\n"
            "attributes:\n"
            "  metadata_path: metadata/pipeline.json\n"
            "  include_sensors: false\n"
            "  executor:\n"
            "    celery:\n"
            "      broker: {env: DATACOOLIE_CELERY_BROKER}\n"
            "      config_source: {task_acks_late: true}\n",
            encoding="utf-8",
        )
        (sandbox.project_root / "metadata").mkdir()
        shutil.copy(METADATA_PATH, sandbox.project_root / "metadata" / "pipeline.json")
        monkeypatch.chdir(sandbox.project_root)
        with sandbox.build_all_defs() as defs:
            executors = {
                j: defs.resolve_job_def(j).executor_def.name for j in ("datacoolie_bronze2silver", "__ASSET_JOB")
            }

    assert executors == {"datacoolie_bronze2silver": "celery", "__ASSET_JOB": "celery"}


def test_an_executor_whose_library_is_missing_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        executors.EXECUTORS, "celery", ("no_such_dagster_celery", "celery_executor", "datacoolie-dagster[celery]")
    )

    with pytest.raises(
        ExecutorSettingError,
        match=r"'celery' needs the no_such_dagster_celery package.*pip install 'datacoolie-dagster\[celery\]'",
    ):
        build_executor({"celery": {"broker": "redis://x"}})


def env_config_map() -> dict[str, str]:
    (config_map,) = [o for o in manifests() if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "datacoolie-env"]
    data: dict[str, str] = config_map["data"]
    return data


def image_files() -> dict[str, str]:
    """deploy/k8s/Dockerfile's ``COPY <source> <destination>``: destination -> source (build args resolved)."""
    lines = (K8S / "Dockerfile").read_text(encoding="utf-8").splitlines()
    args = dict(line.split()[1].split("=", 1) for line in lines if line.startswith("ARG ") and "=" in line)
    copies = [line.split()[1:] for line in lines if line.startswith("COPY ")]
    resolved = {}
    for source, destination in copies:
        for name, value in args.items():
            source = source.replace(f"${{{name}}}", value)
        resolved[destination] = source
    return resolved


def test_every_k8s_pod_finds_the_code_locations_files_in_the_image() -> None:
    files, env = image_files(), env_config_map()

    # the metadata and the executor file are in the image, at the paths the environment names
    assert files[env["DATACOOLIE_METADATA"]] == "datacoolie_dagster/example/metadata.json"
    assert files[env["DATACOOLIE_EXECUTOR_CONFIG"]] == "deploy/k8s/executor.yaml"
    assert all((REPOSITORY / source).is_file() for source in files.values())


def test_no_k8s_pod_mounts_a_shared_volume() -> None:
    """Only the ConfigMaps of the instance and the workspace are mounted; runs and steps declare no volume."""
    launcher = launcher_config(load(K8S / "dagster.yaml"))
    executor = load(K8S / "executor.yaml")["executor"]["k8s"]
    for settings in (launcher, executor):
        assert not settings.get("volumes")
        assert not settings.get("volume_mounts")
        pod = {**settings.get("run_k8s_config", {}), **settings.get("step_k8s_config", {})}
        assert "volumes" not in pod.get("pod_spec_config", {})
    for deployment in (o for o in manifests() if o["kind"] == "Deployment"):
        volumes = deployment["spec"]["template"]["spec"]["volumes"]
        assert {next(iter(set(v) - {"name"})) for v in volumes} == {"configMap"}, deployment["metadata"]["name"]
        assert {v["configMap"]["name"] for v in volumes} <= {"dagster-instance", "dagster-workspace"}


@pytest.mark.usefixtures("pg_env")
@pytest.mark.parametrize("folder", ["k8s", "celery"])
def test_step_logs_go_to_s3_read_with_the_lakes_credentials(folder: str) -> None:
    config, _ = dagster_instance_config(str(DEPLOY / folder))

    manager = config["compute_logs"]
    assert (manager["module"], manager["class"]) == ("dagster_aws.s3.compute_log_manager", "S3ComputeLogManager")
    assert manager["config"]["bucket"] == {"env": "DATACOOLIE_LOG_BUCKET"}
    assert "local_artifact_storage" not in config  # each host's own $DAGSTER_HOME: nothing shared
    if folder == "k8s":
        names = {name for v in manager["config"].values() if isinstance(v, dict) for name in v.values()}
        assert names <= set(env_config_map())
        webserver = next(o for o in manifests() if o["metadata"]["name"] == "dagster-webserver")
        (container,) = webserver["spec"]["template"]["spec"]["containers"]
        assert {"secretRef": {"name": "datacoolie-s3"}} in container["envFrom"]  # it reads the logs


def test_a_k8s_pod_loads_the_code_location_from_the_image_alone(tmp_path: Path) -> None:
    """A fresh process in an empty working directory with the image's files and datacoolie-env
    (paths under ``tmp_path`` for ``/``): every job of the location runs its steps as Kubernetes Jobs."""
    env = env_config_map()
    image = tmp_path / "image"
    for destination, source in image_files().items():
        (image / destination.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPOSITORY / source, image / destination.lstrip("/"))
    pod = {name: str(image / value.lstrip("/")) if value.startswith("/opt/") else value for name, value in env.items()}
    work = tmp_path / "pod"
    work.mkdir()
    script = (
        "import datacoolie_dagster.definitions as d\n"
        "jobs = ['datacoolie_landing2bronze', 'datacoolie_all_stages', 'datacoolie_maintenance', '__ASSET_JOB']\n"
        "print(sorted({d.defs.resolve_job_def(j).executor_def.name for j in jobs}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=work, capture_output=True, text=True, timeout=120,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPOSITORY), "HOME": str(work), **pod},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "['k8s']"
