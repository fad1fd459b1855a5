"""Automation: what starts runs without a person clicking.

Sensors for new source data, for watermarks moved outside Dagster and for downstream tables
following upstream live in :mod:`.sensing`; cron schedules and their catch-up in ``schedules``;
retries of failed automated runs (``retry_policy`` decides, ``retries`` acts); live-run limits per
stage (``limits``).
"""
