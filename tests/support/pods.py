"""Pods on one machine: Dagster's Kubernetes run launcher and step executor with the cluster taken out.

dagster-k8s runs a run as a Kubernetes Job of ``dagster api execute_run <args>`` (``K8sRunLauncher``)
and each step as a Job of ``dagster api execute_step`` (``k8s_job_executor``: a
``StepDelegatingExecutor`` with a ``K8sStepHandler``). Here the same commands, with the same
arguments, run as local processes, each a "pod": a folder of its own standing for the container's
filesystem (``/`` of the image), holding only what a pod would hold — the image's files at their
container paths and the instance ConfigMap mounted at ``$DAGSTER_HOME/dagster.yaml`` — and an
empty working directory. Its environment is built the way the kubelet builds it: the image's
environment, then ``envFrom`` of the named ConfigMaps and Secrets, then the variables Dagster sets
on the Job (the Postgres password from ``postgres_password_secret``'s key ``postgresql-password``,
as dagster-k8s references it: a missing key fails the pod, as Kubernetes refuses to start it).
Settings naming a container path (``/opt/…``) are rebased on the pod's folder, since there is no
container to give each pod its own ``/opt``.

:class:`Cluster` (a JSON file) holds what the API server would: ConfigMaps, Secrets, the image.
:class:`PodRunLauncher` is the instance's run launcher; :data:`pod_executor` takes
``k8s_job_executor``'s own config schema, so the shipped executor file configures it unchanged,
and applies the settings that mean something without a cluster the way ``k8s_job_executor`` does:
``max_concurrent``, ``retries``, ``tag_concurrency_limits``, ``step_dependency_config``,
``env_config_maps``, ``env_secrets``, ``env_vars``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._cli.api import ExecuteRunArgs, ResumeRunArgs  # what K8sRunLauncher runs in the run's pod
from dagster._core.definitions.executor_definition import multiple_process_executor_requirements
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.execution.retries import RetryMode
from dagster._core.execution.step_dependency_config import StepDependencyConfig
from dagster._core.executor.step_delegating import (
    CheckStepHealthResult,
    StepDelegatingExecutor,
    StepHandler,
    StepHandlerContext,
)
from dagster._core.launcher import LaunchRunContext, ResumeRunContext, RunLauncher
from dagster._core.storage.dagster_run import DagsterRun
from dagster._serdes import ConfigurableClass, ConfigurableClassData
from dagster_k8s.executor import _K8S_EXECUTOR_CONFIG_SCHEMA  # k8s_job_executor's own schema
from dagster_k8s.job import DAGSTER_PG_PASSWORD_SECRET_KEY, get_job_name_from_run_id, get_k8s_job_name

CONTAINER_PATHS = "/opt/"
"""Where the image and the pods' settings put files (``/opt/datacoolie``, ``/opt/dagster_home``)."""
FILESYSTEM = "fs"
LOG = "log"
RECORD = "pod.json"


class PodStartError(RuntimeError):
    """A pod the kubelet would refuse to start (``CreateContainerConfigError``)."""


@dataclass(frozen=True)
class Cluster:
    """What the Kubernetes API server and the registry hold for the pods of a test."""

    root: str
    """One folder per pod under it: ``fs/`` (the pod's filesystem), ``log`` and ``pod.json``."""
    config_maps: dict[str, dict[str, str]]
    secrets: dict[str, dict[str, str]]
    image_files: dict[str, str]
    """Container path -> file on this machine: what the image's ``COPY`` lines put in it."""
    image_env: dict[str, str]
    """The image's environment (``PATH``, where its Python packages are)."""
    workdir: str
    """The container path of every pod's working directory, created empty."""

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cluster:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))

    def pod_folder(self, name: str) -> Path:
        return Path(self.root) / name


@dataclass(frozen=True)
class PodSpec:
    """The container part of a Job, as dagster-k8s builds it."""

    name: str
    args: Sequence[str]
    env_config_maps: Sequence[str]
    env_secrets: Sequence[str]
    env: Mapping[str, str]
    instance_config_map: str
    dagster_home: str
    postgres_password_secret: str | None = None


@dataclass(frozen=True)
class Pod:
    name: str
    pid: int
    filesystem: Path
    cwd: Path


def start_pod(cluster: Cluster, spec: PodSpec) -> tuple[Pod, subprocess.Popen[bytes]]:
    """Create the pod's filesystem, build its environment, start its command; record ``pod.json``.

    Raises:
        PodStartError: a pod of that name exists, or a ConfigMap, Secret or key it names does not.
    """
    folder = cluster.pod_folder(spec.name)
    if folder.exists():
        raise PodStartError(f"pod {spec.name} already exists")
    filesystem = folder / FILESYSTEM
    env = _pod_env(cluster, spec, filesystem)
    _provision(cluster, spec, filesystem)
    cwd = _rebase(cluster.workdir, filesystem)
    Path(cwd).mkdir(parents=True)
    with (folder / LOG).open("wb") as log:
        process = subprocess.Popen(
            list(spec.args), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    pod = Pod(spec.name, process.pid, filesystem, Path(cwd))
    (folder / RECORD).write_text(json.dumps({"pid": pod.pid, "cwd": cwd, "command": list(spec.args[:3])}))
    return pod, process


def _provision(cluster: Cluster, spec: PodSpec, filesystem: Path) -> None:
    """The image's files at their container paths, and the instance ConfigMap's mount."""
    for container_path, source in cluster.image_files.items():
        target = Path(_rebase(container_path, filesystem))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    instance = _config_map(cluster, spec.instance_config_map)
    home = Path(_rebase(spec.dagster_home, filesystem))
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(instance["dagster.yaml"], encoding="utf-8")


def _pod_env(cluster: Cluster, spec: PodSpec, filesystem: Path) -> dict[str, str]:
    """The kubelet's order: image env, envFrom (ConfigMaps, then Secrets), then the Job's own env."""
    env = dict(cluster.image_env)
    for name in spec.env_config_maps:
        env |= _config_map(cluster, name)
    for name in spec.env_secrets:
        env |= _secret(cluster, name)
    env |= dict(spec.env) | {"DAGSTER_HOME": spec.dagster_home}
    if spec.postgres_password_secret:
        secret = _secret(cluster, spec.postgres_password_secret)
        if DAGSTER_PG_PASSWORD_SECRET_KEY not in secret:
            raise PodStartError(
                f"pod {spec.name}: couldn't find key {DAGSTER_PG_PASSWORD_SECRET_KEY} in Secret "
                f"{spec.postgres_password_secret} (the run launcher's postgres_password_secret)"
            )
        env["DAGSTER_PG_PASSWORD"] = secret[DAGSTER_PG_PASSWORD_SECRET_KEY]
    return {name: _rebase(value, filesystem) for name, value in env.items()}


def _config_map(cluster: Cluster, name: str) -> dict[str, str]:
    if name not in cluster.config_maps:
        raise PodStartError(f'configmap "{name}" not found')
    return cluster.config_maps[name]


def _secret(cluster: Cluster, name: str) -> dict[str, str]:
    if name not in cluster.secrets:
        raise PodStartError(f'secret "{name}" not found')
    return cluster.secrets[name]


def _rebase(value: str, filesystem: Path) -> str:
    """A container path as this pod sees it: under the pod's own folder."""
    return f"{filesystem}{value}" if value.startswith(CONTAINER_PATHS) else value


def stop_pod(cluster: Cluster, name: str) -> None:
    """SIGKILL the pod's process group if it still runs (``kubectl delete job``)."""
    record = cluster.pod_folder(name) / RECORD
    if not record.exists():
        return
    pid = int(json.loads(record.read_text())["pid"])
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


class PodRunLauncher(RunLauncher, ConfigurableClass):
    """``K8sRunLauncher`` on one machine: the run's worker is ``dagster api execute_run`` in a pod.

    The arguments are K8sRunLauncher's own (``ExecuteRunArgs`` with the launching instance's ref and
    ``set_exit_code_on_failure`` from ``fail_pod_on_run_failure``); so are the pod's ConfigMaps,
    Secrets, instance mount and ``DAGSTER_RUN_JOB_NAME``.
    """

    def __init__(
        self,
        cluster: str,
        instance_config_map: str,
        dagster_home: str,
        postgres_password_secret: str | None = None,
        env_config_maps: Sequence[str] = (),
        env_secrets: Sequence[str] = (),
        fail_pod_on_run_failure: bool = True,
        inst_data: ConfigurableClassData | None = None,
    ) -> None:
        super().__init__()
        self.cluster = Cluster.load(cluster)
        self.instance_config_map, self.dagster_home = instance_config_map, dagster_home
        self.postgres_password_secret = postgres_password_secret
        self.env_config_maps, self.env_secrets = list(env_config_maps), list(env_secrets)
        self.fail_pod_on_run_failure = fail_pod_on_run_failure
        self._inst_data = inst_data

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            "cluster": dg.Field(str, description="The Cluster file: ConfigMaps, Secrets, image, pods folder."),
            "instance_config_map": str,
            "dagster_home": str,
            "postgres_password_secret": dg.Field(str, is_required=False),
            "env_config_maps": dg.Field([str], is_required=False, default_value=[]),
            "env_secrets": dg.Field([str], is_required=False, default_value=[]),
            "fail_pod_on_run_failure": dg.Field(bool, is_required=False, default_value=True),
        }

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> PodRunLauncher:
        return cls(inst_data=inst_data, **config_value)

    def pod_spec(self, name: str, args: Sequence[str], env_config_maps: Sequence[str], env_secrets: Sequence[str],
                 env: Mapping[str, str]) -> PodSpec:  # fmt: skip
        """A Job's container with this launcher's settings merged in, as K8sContainerContext merges them."""
        return PodSpec(
            name=name, args=args, env=env, instance_config_map=self.instance_config_map,
            dagster_home=self.dagster_home, postgres_password_secret=self.postgres_password_secret,
            env_config_maps=list(dict.fromkeys([*self.env_config_maps, *env_config_maps])),
            env_secrets=list(dict.fromkeys([*self.env_secrets, *env_secrets])),
        )  # fmt: skip

    def launch_run(self, context: LaunchRunContext) -> None:
        self._start_run_worker(context.dagster_run, ExecuteRunArgs, None)

    @property
    def supports_resume_run(self) -> bool:
        return True

    def resume_run(self, context: ResumeRunContext) -> None:
        self._start_run_worker(context.dagster_run, ResumeRunArgs, context.resume_attempt_number)

    def _start_run_worker(
        self, run: DagsterRun, command: type[ExecuteRunArgs] | type[ResumeRunArgs], attempt: int | None
    ) -> None:
        origin = run.job_code_origin
        assert origin is not None, f"run {run.run_id} has no code origin"
        args = command(
            job_origin=origin,
            run_id=run.run_id,
            instance_ref=self._instance.get_ref(),
            set_exit_code_on_failure=self.fail_pod_on_run_failure,
        ).get_command_args()
        name = get_job_name_from_run_id(run.run_id, resume_attempt_number=attempt)
        start_pod(self.cluster, self.pod_spec(name, args, (), (), {"DAGSTER_RUN_JOB_NAME": origin.job_name}))
        self._instance.report_engine_event(f"Run worker started in pod {name}.", run, cls=self.__class__)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            return False
        self._instance.report_run_canceling(run)
        stop_pod(self.cluster, get_job_name_from_run_id(run_id))
        return True


class PodStepHandler(StepHandler):
    """``K8sStepHandler`` on one machine: each step is ``dagster api execute_step`` in a pod of its own,
    named as K8sStepHandler names the step's Job, with the same arguments and environment."""

    def __init__(self, env_config_maps: Sequence[str], env_secrets: Sequence[str], env_vars: Sequence[str]) -> None:
        super().__init__()
        self.env_config_maps, self.env_secrets = list(env_config_maps), list(env_secrets)
        # k8s env_vars: "NAME=value", or "NAME" for the launching process's own value
        self.env_vars = {
            v.partition("=")[0]: v.partition("=")[2] if "=" in v else os.environ.get(v, "") for v in env_vars
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def name(self) -> str:
        return "PodStepHandler"

    @staticmethod
    def _launcher(context: StepHandlerContext) -> PodRunLauncher:
        launcher = context.instance.run_launcher
        if not isinstance(launcher, PodRunLauncher):
            raise TypeError(f"pod_executor needs the instance's run launcher to be PodRunLauncher, not {launcher}")
        return launcher

    @staticmethod
    def _step_key(context: StepHandlerContext) -> str:
        keys = context.execute_step_args.step_keys_to_execute or []
        assert len(keys) == 1, "one step per pod"
        return keys[0]

    def _pod_name(self, context: StepHandlerContext) -> str:
        """K8sStepHandler's Job name: the run and step hashed, plus the attempt on a retry."""
        step_key = self._step_key(context)
        name = f"dagster-step-{get_k8s_job_name(context.execute_step_args.run_id, step_key)}"
        known = context.execute_step_args.known_state
        attempt = known.get_retry_state().get_attempt_count(step_key) if known else 0
        return f"{name}-{attempt}" if attempt else name

    def launch_step(self, step_handler_context: StepHandlerContext) -> Iterator[DagsterEvent]:
        context = step_handler_context
        step_key, name = self._step_key(context), self._pod_name(context)
        args = context.execute_step_args.get_command_args(skip_serialized_namedtuple=True)
        env = {e["name"]: e["value"] for e in context.execute_step_args.get_command_env()}
        env |= self.env_vars | {"DAGSTER_RUN_JOB_NAME": context.dagster_run.job_name, "DAGSTER_RUN_STEP_KEY": step_key}
        launcher = self._launcher(context)
        yield DagsterEvent.step_worker_starting(
            context.get_step_context(step_key),
            message=f'Executing step "{step_key}" in pod {name}.',
            metadata={"Pod name": dg.MetadataValue.text(name)},
        )
        _, process = start_pod(launcher.cluster, launcher.pod_spec(name, args, self.env_config_maps,
                                                                   self.env_secrets, env))  # fmt: skip
        self.processes[name] = process

    def check_step_health(self, step_handler_context: StepHandlerContext) -> CheckStepHealthResult:
        name = self._pod_name(step_handler_context)
        process = self.processes.get(name)
        if process is None:
            return CheckStepHealthResult.unhealthy(
                f"pod {name} for step {self._step_key(step_handler_context)} not found"
            )
        code = process.poll()
        if code not in (None, 0):
            return CheckStepHealthResult.unhealthy(f"pod {name} failed (exit {code})")
        return CheckStepHealthResult.healthy()

    def terminate_step(self, step_handler_context: StepHandlerContext) -> Iterator[DagsterEvent]:
        name = self._pod_name(step_handler_context)
        yield DagsterEvent.engine_event(
            step_handler_context.get_step_context(self._step_key(step_handler_context)),
            message=f"Deleting pod {name} for step",
            event_specific_data=EngineEventData(),
        )
        stop_pod(self._launcher(step_handler_context).cluster, name)


@dg.executor(
    name="k8s", config_schema=_K8S_EXECUTOR_CONFIG_SCHEMA, requirements=multiple_process_executor_requirements()
)
def pod_executor(init_context: dg.InitExecutorContext) -> StepDelegatingExecutor:
    """``k8s_job_executor`` with :class:`PodStepHandler`: the same executor, the same settings."""
    config: dict[str, Any] = dict(init_context.executor_config)
    handler = PodStepHandler(
        config.get("env_config_maps") or [], config.get("env_secrets") or [], config.get("env_vars") or []
    )
    retries = RetryMode.from_config(config["retries"])
    assert retries is not None, "k8s_job_executor's schema defaults retries"
    return StepDelegatingExecutor(
        handler,
        retries=retries,
        max_concurrent=config.get("max_concurrent"),
        tag_concurrency_limits=config.get("tag_concurrency_limits"),
        should_verify_step=True,
        step_dependency_config=StepDependencyConfig.from_config(config.get("step_dependency_config")),
    )
