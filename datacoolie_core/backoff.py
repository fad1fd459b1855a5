"""How long to wait before retrying an HTTP request: ``Retry-After`` when the server says, else 2^n capped."""

from __future__ import annotations

import email.utils
import time

MAX_BACKOFF = 30.0
"""The longest exponential wait (DataCoolie S-25: ``min(2^attempt, 30)``)."""
MAX_RETRY_AFTER = 300.0
"""A server asking for more than this is still retried after this long (a run must not hang for hours)."""


def retry_after(header: str | None, attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): ``Retry-After`` (seconds or HTTP date), else 2^n capped."""
    if header:
        text = header.strip()
        try:
            return max(0.0, min(float(text), MAX_RETRY_AFTER))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(text)
            return max(0.0, min(when.timestamp() - time.time(), MAX_RETRY_AFTER))
        except (TypeError, ValueError):
            pass
    return float(min(2**attempt, MAX_BACKOFF))
