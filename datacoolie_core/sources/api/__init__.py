"""REST API sources (DataCoolie S-25 … S-28): request, auth, pagination, watermark push-down."""

from datacoolie_core.sources.api.reader import ApiReader

__all__ = ["ApiReader"]
