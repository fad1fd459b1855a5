from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from datacoolie_core import DataCoolieRunConfig, ReplayConfig


def test_run_config_defaults() -> None:
    config = DataCoolieRunConfig()
    assert (config.job_num, config.job_index, config.max_workers, config.retry_count) == (1, 0, 4, 1)
    assert (config.stop_on_error, config.retry_delay) == (False, 5.0)
    assert (config.dry_run, config.retention_hours, config.allowed_function_prefixes) == (False, 168, [])
    assert len(config.job_id) == 36
    assert DataCoolieRunConfig().job_id != config.job_id


def test_run_config_coerces_datacoolie_spellings() -> None:
    config = DataCoolieRunConfig(stop_on_error="yes", dry_run="1", allowed_function_prefixes="pkg.a, pkg.b")
    assert config.stop_on_error is True
    assert config.dry_run is True
    assert config.allowed_function_prefixes == ["pkg.a", "pkg.b"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"job_num": 0}, "greater than or equal to 1"),
        ({"job_num": 4, "job_index": 4}, "job_index 4 must be below job_num 4"),
        ({"max_workers": 0}, "greater than or equal to 1"),
        ({"retry_count": -1}, "greater than or equal to 0"),
        ({"retry_delay": -0.5}, "greater than or equal to 0"),
        ({"max_worker": 2}, "Extra inputs are not permitted"),
        ({"column_name_mode": "camel"}, "'lower' or 'snake'"),
    ],
    ids=["job-num", "job-index", "workers", "retries", "delay", "typo", "name-mode"],
)
def test_run_config_rejects(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        DataCoolieRunConfig(**kwargs)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("2025-01-01", "2025-04-01", (date(2025, 1, 1), date(2025, 4, 1))),
        (0, "1000000", (0, 1_000_000)),
        ("2025-01-01T06:00:00", "2025-01-02", (datetime(2025, 1, 1, 6), datetime(2025, 1, 2))),
        (
            "2025-01-01T00:00:00+00:00",
            date(2025, 2, 1),
            (datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 2, 1, tzinfo=UTC)),
        ),
    ],
    ids=["dates", "ints", "date-with-datetime", "aware"],
)
def test_replay_bounds(start: Any, end: Any, expected: tuple[Any, Any]) -> None:
    replay = ReplayConfig(start=start, end=end)
    assert (replay.start, replay.end) == expected
    assert replay.save_watermark is False
    assert replay.chunk_interval is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"start": "2025-02-01", "end": "2025-01-01"}, "must be before end"),
        ({"start": "2025-01-01", "end": "2025-01-01"}, "must be before end"),
        ({"start": 0, "end": "2025-01-01"}, "both be integers"),
        ({"start": "yesterday", "end": "2025-01-01"}, "not an integer, an ISO date"),
        ({"start": 0, "end": 10, "chunk_interval": {"months": 1}}, "use step for integers"),
        ({"start": "2025-01-01", "end": "2025-02-01", "chunk_interval": {"step": 5}}, "step needs integer"),
        ({"start": 0, "end": 10, "chunk_interval": {"steps": 5}}, "unknown chunk_interval unit 'steps'"),
        ({"start": 0, "end": 10, "chunk_interval": {"step": 0}}, "positive integer"),
        ({"start": 0, "end": 10, "chunk_interval": {"step": 1, "days": 1}}, "exactly one unit"),
        ({"start": "2025-01-01T00:00:00+00:00", "end": "2025-01-02T00:00:00"}, "aware or both naive"),
    ],
    ids=["reversed", "empty", "mixed-kinds", "not-a-date", "months-on-ints", "step-on-dates", "unknown-unit",
         "zero-step", "two-units", "aware-and-naive"],
)  # fmt: skip
def test_replay_rejects(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        ReplayConfig(**kwargs)


def test_replay_is_frozen() -> None:
    replay = ReplayConfig(start=0, end=10, chunk_interval={"step": 5}, save_watermark="true")
    assert replay.chunk_unit == "step"
    assert replay.save_watermark is True
    with pytest.raises(ValidationError, match="frozen"):
        replay.start = 5  # type: ignore[misc]


def test_the_cli_documents_the_run_configs_defaults() -> None:
    # the CLI leaves the options unset (the run config decides); its help must say the same numbers
    from datacoolie_core.cli.parsers import build_parser

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    helps = {a.dest: a.help or "" for a in run._actions}
    config = DataCoolieRunConfig()
    assert f"(default {config.max_workers})" in helps["max_workers"]
    assert f"(default {config.retry_count})" in helps["retry_count"]
    assert f"(default {config.retry_delay:g})" in helps["retry_delay"]
    assert {a.dest: a.default for a in run._actions if a.dest in ("max_workers", "retry_count", "retry_delay")} == {
        "max_workers": None,
        "retry_count": None,
        "retry_delay": None,
    }
