"""Sensing: the sensors that start table runs when data changes.

``sensable`` decides at load what is watched (no reader loaded there); ``observations`` and
``source_changes`` read the sources; ``sensors`` holds the source sensor and the automation sensor
(downstream tables following upstream), ``partition_sensors`` the partition sensor;
``watermark_feed`` and ``watermark_sensor`` follow watermarks moved outside Dagster.

Nothing is re-exported here: the code location imports the builders from their modules, and the
readers load with a sensor's first evaluation.
"""
