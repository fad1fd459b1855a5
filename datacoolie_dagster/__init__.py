"""datacoolie_dagster: DataCoolie metadata as a Dagster code location.

The definitions factory (assets per destination table, replay partitions, sharded driver jobs)
builds on ``datacoolie_core``'s public API only.
"""
