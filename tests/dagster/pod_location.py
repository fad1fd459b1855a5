"""The code location of the Kubernetes-shaped test: the image's own, with the cluster taken out.

It loads ``datacoolie_dagster.definitions`` as the image's code server does (the metadata and
executor file at the paths ``datacoolie-env`` names, the state store ``DATACOOLIE_STATE_URL``, the
engine's logs on stdout), which builds ``k8s_job_executor`` from the shipped executor file; then
swaps that executor for :data:`tests.support.pods.pod_executor` configured by the very same block
of the very same file, so every step runs in a pod of its own with the manifests' executor settings.
"""

from __future__ import annotations

from dagster_shared.record import copy

import datacoolie_dagster.definitions as image
from datacoolie_dagster.location.executors import executor_setting_from_file
from tests.support.pods import pod_executor

if image.EXECUTOR_CONFIG is None:
    raise RuntimeError("DATACOOLIE_EXECUTOR_CONFIG is not set: the pods run the shipped executor file")
SETTING = executor_setting_from_file(image.EXECUTOR_CONFIG)
if not isinstance(SETTING, dict) or set(SETTING) != {"k8s"}:
    raise RuntimeError(f"{image.EXECUTOR_CONFIG}: expected the k8s executor, got {SETTING!r}")
K8S_CONFIG = SETTING["k8s"]
"""The shipped ``executor: k8s:`` block, unchanged."""

defs = copy(image.defs, executor=pod_executor.configured(K8S_CONFIG, name="k8s"))
