"""One moto S3 server for the object-storage tests (fixtures in ``tests/support/s3.py``)."""

from tests.support.s3 import s3, s3_server

__all__ = ["s3", "s3_server"]
