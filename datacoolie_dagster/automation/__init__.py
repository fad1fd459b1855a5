"""Automation: what starts runs without a person clicking.

Sensors for new source data (``sensing`` decides at load what is watched; ``observations``,
``source_changes``, ``partition_sensors`` read the sources), for watermarks moved outside Dagster
(``watermark_feed``, ``watermark_sensor``) and for downstream tables following upstream
(``sensors``); cron schedules and their catch-up; retries of failed automated runs
(``retry_policy`` decides, ``retries`` acts); live-run limits per stage (``limits``).
"""
