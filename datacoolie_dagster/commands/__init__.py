"""Operator commands: the ``datacoolie-dagster`` CLI for deployments and CI.

``backfill`` queues only partitions that are not done, ``rebuild`` re-materializes one partition
and everything downstream, and ``cli`` wires them with ``tick`` (one sensor/schedule evaluation)
and the options they share (``cli_options``).
"""
