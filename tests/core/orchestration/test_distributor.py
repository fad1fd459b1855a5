"""Job sharding: group_number % job_num, else md5(dataflow_id) % job_num; deterministic across processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from datacoolie_core import Connection, DataCoolieRunConfig, DataFlow
from datacoolie_core.orchestration.distributor import JobDistributor

REPO = Path(__file__).parents[3]
LAKE = Connection.model_validate({"name": "lake", "format": "delta", "configure": {"base_path": "/lake"}})


def flow(name: str, *, group: int | None = None, dataflow_id: str | None = None, active: bool = True) -> DataFlow:
    document = {
        "name": name,
        "dataflow_id": dataflow_id,
        "group_number": group,
        "is_active": active,
        "source": {"connection_name": "lake", "table": f"src_{name}"},
        "destination": {"connection_name": "lake", "table": f"dst_{name}"},
    }
    return DataFlow.model_validate(document, context={"connections": {"lake": LAKE}})


def md5_shard(dataflow_id: str, job_num: int) -> int:
    return int(hashlib.md5(dataflow_id.encode()).hexdigest(), 16) % job_num


@pytest.mark.parametrize(
    ("group", "job_num", "shard"),
    [
        pytest.param(0, 4, 0, id="group-0"),
        pytest.param(6, 4, 2, id="group-6-of-4"),
        pytest.param(7, 1, 0, id="single-job"),
        pytest.param(-1, 4, 3, id="negative-maps-into-range"),
        pytest.param(-8, 3, 1, id="negative-multiple"),
        pytest.param(10**12 + 5, 10, 5, id="large-group"),
    ],
)
def test_grouped_dataflow_goes_to_group_modulo(group: int, job_num: int, shard: int) -> None:
    assert JobDistributor.shard_of(flow("orders", group=group), job_num) == shard


@pytest.mark.parametrize(
    ("dataflow_id", "job_num", "shard"),
    [
        # digests pinned from `md5 -s`: orders = 12c500ed…be87, a = 0cc175b9…2661, the uuid = 648b604e…539d
        pytest.param("orders", 4, 3, id="orders-of-4"),
        pytest.param("orders", 3, 1, id="orders-of-3"),
        pytest.param("a", 7, 0, id="a-of-7"),
        pytest.param("3f2504e0-4f89-41d3-9a0c-0305e82c3301", 7, 4, id="uuid-of-7"),
    ],
)
def test_ungrouped_dataflow_goes_to_md5_modulo(dataflow_id: str, job_num: int, shard: int) -> None:
    assert JobDistributor.shard_of(flow("x", dataflow_id=dataflow_id), job_num) == shard


def test_ungrouped_id_defaults_to_uuid5_of_the_name() -> None:
    dataflow = flow("orders")

    assert JobDistributor.shard_of(dataflow, 7) == md5_shard(str(dataflow.dataflow_id), 7)


def test_a_whole_group_stays_on_one_shard() -> None:
    members = [flow(f"member_{i}", group=5) for i in range(50)]

    assert {JobDistributor.shard_of(m, 4) for m in members} == {1}
    assert len({md5_shard(str(m.dataflow_id), 4) for m in members}) > 1  # ids alone would scatter them


@pytest.mark.parametrize("job_num", [2, 3, 4, 8])
def test_ids_spread_uniformly(job_num: int) -> None:
    ids = [str(uuid.UUID(int=n * 0x9E3779B97F4A7C15 % 2**128, version=4)) for n in range(10_000)]

    counts = Counter(JobDistributor.shard_of(flow("x", dataflow_id=i), job_num) for i in ids)

    expected = len(ids) / job_num
    assert set(counts) == set(range(job_num))
    assert all(abs(c - expected) <= 0.05 * expected for c in counts.values()), counts


def test_shards_are_stable_across_processes() -> None:
    names = [f"flow_{i}" for i in range(200)]
    here = {n: JobDistributor.shard_of(flow(n), 5) for n in names}
    script = (
        "import json, sys\n"
        "from tests.core.orchestration.test_distributor import flow\n"
        "from datacoolie_core.orchestration.distributor import JobDistributor\n"
        "names = json.loads(sys.argv[1])\n"
        "print(json.dumps({n: JobDistributor.shard_of(flow(n), 5) for n in names}))\n"
    )
    env = os.environ | {"PYTHONHASHSEED": "12345"}

    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(names)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    assert json.loads(out.stdout) == here
    assert len(set(here.values())) == 5


def test_select_keeps_order_and_only_this_shard() -> None:
    flows = [flow(f"f{i}", group=i) for i in range(10)]

    mine = JobDistributor(job_num=3, job_index=1).select(flows)

    assert [f.name for f in mine] == ["f1", "f4", "f7"]


def test_every_dataflow_is_owned_by_exactly_one_job() -> None:
    flows = [flow(f"f{i}") for i in range(40)] + [flow(f"g{i}", group=i % 6) for i in range(20)]

    owners = Counter(f.name for index in range(4) for f in JobDistributor(4, index).select(flows))

    assert owners == Counter({f.name: 1 for f in flows})


def test_single_job_keeps_everything_in_order() -> None:
    flows = [flow(f"f{i}", group=i if i % 2 else None) for i in range(10)]

    assert JobDistributor().select(flows) == flows


def test_select_drops_inactive_unless_asked() -> None:
    flows = [flow("a"), flow("b", active=False), flow("c")]

    assert [f.name for f in JobDistributor().select(flows)] == ["a", "c"]
    assert [f.name for f in JobDistributor().select(flows, active_only=False)] == ["a", "b", "c"]


def test_from_config() -> None:
    distributor = JobDistributor.from_config(DataCoolieRunConfig(job_num=4, job_index=2))

    assert (distributor.job_num, distributor.job_index) == (4, 2)
    assert distributor.owns(flow("x", group=6))
    assert not distributor.owns(flow("x", group=7))


@pytest.mark.parametrize(
    ("job_num", "job_index", "message"),
    [
        pytest.param(0, 0, "job_num must be a positive integer", id="zero-jobs"),
        pytest.param(-2, 0, "job_num must be a positive integer", id="negative-jobs"),
        pytest.param(3, 3, r"job_index must be an integer in 0\.\.2", id="index-too-high"),
        pytest.param(3, -1, r"job_index must be an integer in 0\.\.2", id="negative-index"),
        pytest.param(True, 0, "job_num must be a positive integer", id="boolean"),
    ],
)
def test_invalid_distribution_raises(job_num: int, job_index: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JobDistributor(job_num=job_num, job_index=job_index)
