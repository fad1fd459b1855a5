"""Names of the columns the framework adds, and the order they trail the business columns in (D-18)."""

from __future__ import annotations

FILE_NAME = "__file_name"
FILE_PATH = "__file_path"
FILE_MODIFICATION_TIME = "__file_modification_time"
"""Also a pseudo watermark column: prunes files by modification time before reading."""
DATE_FOLDER_PARTITION = "__date_folder_partition__"
"""Pseudo watermark key of date-folder file sources (never a data column)."""

CREATED_AT = "__created_at"
UPDATED_AT = "__updated_at"
UPDATED_BY = "__updated_by"
DATAFLOW_RUN_ID = "__dataflow_run_id"
AUTHOR = "DataCoolie"
"""Value of ``__updated_by``, as DataCoolie writes it."""

VALID_FROM = "__valid_from"
VALID_TO = "__valid_to"
IS_CURRENT = "__is_current"

SYSTEM_COLUMNS = (CREATED_AT, UPDATED_AT, UPDATED_BY, DATAFLOW_RUN_ID)
"""Replaced on every write (stale copies from a DataCoolie-written source are dropped)."""
FILE_COLUMNS = (FILE_NAME, FILE_PATH, FILE_MODIFICATION_TIME)
SCD2_COLUMNS = (VALID_FROM, VALID_TO, IS_CURRENT)
TRAILING_COLUMNS = (*SCD2_COLUMNS, *FILE_COLUMNS, *SYSTEM_COLUMNS)
"""Framework columns, in the order they follow the business columns."""
PSEUDO_WATERMARK_COLUMNS = (FILE_MODIFICATION_TIME, DATE_FOLDER_PARTITION)
