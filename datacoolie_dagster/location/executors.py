"""Which Dagster executor runs the steps of the code location's jobs, chosen by configuration.

The setting (``build_definitions(executor=…)``, the component's ``executor:``) names an executor and
its config, as Dagster's run config would under ``execution:``::

    executor: multiprocess                      # Dagster's default: one process per step, one host
    executor: {multiprocess: {max_concurrent: 8}}
    executor:                                   # one Celery task per step, on any worker host
      celery:
        broker: {env: DATACOOLIE_CELERY_BROKER}
        backend: {env: DATACOOLIE_CELERY_BACKEND}
    executor: {k8s: {job_namespace: dagster}}   # one Kubernetes Job per step

``DATACOOLIE_EXECUTOR_CONFIG`` gives the module code location (``datacoolie_dagster.definitions``,
the Docker image) the same setting from a YAML file (:func:`executor_setting_from_file`): a
top-level ``executor:`` as above, or dagster-celery's own worker file (``execution: config:``), so
that the code location and its Celery workers read one file.

It becomes the ``Definitions`` default executor, so it runs the sharded stage jobs (one step per
shard), the maintenance job and every asset run (Dagster's implicit asset job). The config is
checked against the executor's own schema when the code location loads: a typo fails the load
with Dagster's message, not the first run. ``celery`` and ``k8s`` need their Dagster library
(``pip install "datacoolie-dagster[celery]"`` / ``dagster-k8s``); see docs/deployment.md.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

import dagster as dg
import yaml

EXECUTORS = {
    "in_process": ("dagster", "in_process_executor", None),
    "multiprocess": ("dagster", "multiprocess_executor", None),
    "celery": ("dagster_celery", "celery_executor", "datacoolie-dagster[celery]"),
    "k8s": ("dagster_k8s", "k8s_job_executor", "dagster-k8s==0.29.27"),
}
"""name -> (module, attribute, what to install when the module is missing)."""

ExecutorSetting = str | Mapping[str, Mapping[str, Any] | None] | dg.ExecutorDefinition


class ExecutorSettingError(ValueError):
    """The ``executor`` setting names no known executor, or its config does not fit the executor."""


def build_executor(setting: ExecutorSetting | None) -> dg.ExecutorDefinition | None:
    """The executor a setting names, configured and checked; ``None`` keeps Dagster's default.

    Raises:
        ExecutorSettingError: unknown name, more than one name, a missing library or invalid config.
    """
    if setting is None or isinstance(setting, dg.ExecutorDefinition):
        return setting
    name, config = _name_and_config(setting)
    executor = _load(name)
    if not config:
        return executor
    configured = executor.configured(dict(config), name=name)
    _check_config(name, configured)
    return configured


def _name_and_config(setting: str | Mapping[str, Mapping[str, Any] | None]) -> tuple[str, Mapping[str, Any]]:
    if isinstance(setting, str):
        name, config = setting, None
    elif len(setting) == 1:
        ((name, config),) = setting.items()
    else:
        raise ExecutorSettingError(
            f"executor: name exactly one executor ({', '.join(EXECUTORS)}), got {', '.join(map(repr, setting)) or 'none'}"
        )
    if name not in EXECUTORS:
        raise ExecutorSettingError(f"executor: unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
    if config is not None and not isinstance(config, Mapping):
        raise ExecutorSettingError(f"executor.{name}: the config must be a mapping, got {type(config).__name__}")
    return name, config or {}


def _load(name: str) -> dg.ExecutorDefinition:
    module, attribute, install = EXECUTORS[name]
    try:
        executor = getattr(importlib.import_module(module), attribute)
    except ImportError as error:
        raise ExecutorSettingError(
            f"executor: {name!r} needs the {module} package, which is not installed ({error}); pip install {install!r}"
        ) from error
    assert isinstance(executor, dg.ExecutorDefinition)
    return executor


def _check_config(name: str, executor: dg.ExecutorDefinition) -> None:
    """Resolve the config once now, through a one-op job, so a bad key fails the load, not the run."""

    @dg.op(name="datacoolie_executor_probe")
    def probe() -> None:
        return None

    @dg.job(name="datacoolie_executor_probe", executor_def=executor)
    def probe_job() -> None:
        probe()

    try:
        dg.validate_run_config(probe_job)
    except dg.DagsterInvalidConfigError as error:
        raise ExecutorSettingError(f"executor.{name}: {error}") from error


def executor_setting_from_file(path: str | os.PathLike[str]) -> ExecutorSetting:
    """The setting in a YAML file: its ``executor:``, or the celery executor of a dagster-celery worker file.

    Raises:
        ExecutorSettingError: the file holds neither (naming the file and both accepted layouts).
    """
    with open(path, encoding="utf-8") as stream:
        document = yaml.safe_load(stream)
    if isinstance(document, Mapping) and "executor" in document:
        setting: ExecutorSetting = document["executor"]
        return setting
    execution = document.get("execution") if isinstance(document, Mapping) else None
    if isinstance(execution, Mapping) and isinstance(execution.get("config"), Mapping):
        return {"celery": execution["config"]}
    raise ExecutorSettingError(
        f"{os.fspath(path)}: expected a top-level 'executor:' (e.g. 'executor: {{celery: {{broker: …}}}}') "
        "or a dagster-celery worker file ('execution: {config: {broker: …}}')"
    )
