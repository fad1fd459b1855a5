"""Land one batch of example source data: order CSV files and a customer parquet snapshot.

    python -m datacoolie_dagster.example.generate [--root data] [--batch N]

Batch 1 holds 600 orders created January to June 2024 and 40 customers. Batch N >= 2 is the extract
of one month, M = July 2024 + (N - 2) months (see ``docs/example.md``):

* ``orders_000N.csv``: 40 new orders created in M, and 30 orders of the month before M whose status
  moved on (some amounts corrected too), with an ``updated_at`` in M;
* ``orders_000N_late.csv``: 6 orders created in an old month of Q1 2024 that arrive only now. Their
  ``updated_at`` is as old as their ``created_at``, behind the incremental watermark: only a replay of
  their window (a partition run, ``make.sh``'s Q1 replay) loads them into silver;
* ``customers.parquet``: a new snapshot in which 5 customers moved.

An order never changes its ``created_at`` (nor its customer or quantity): an update changes its
status, amount and ``updated_at``, so the order stays in the ``order_month`` partition it was created
in. Deterministic for a given batch number. Files appear atomically (written aside, then linked).
"""

from __future__ import annotations

import argparse
import os
import random
import re
from calendar import monthrange
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

STATUSES = (" NEW", "paid", "Shipped ", "delivered", "returned")
LATER_STATUSES = ("Shipped ", "delivered", "returned")
"""What an update moves an order to (untrimmed, mixed case: the silver dataflow cleans it)."""
START = datetime(2024, 1, 1)
FIRST_ORDERS = 600
NEW_ORDERS = 40
"""New orders per later batch, created in the batch's month."""
UPDATES = 30
"""Orders of the month before the batch's month updated by a later batch."""
LATE_ORDERS = 6
"""Orders per later batch created in an old month (Q1 2024) and landed late."""
LATE_MONTHS = 3
"""Late orders cycle through January, February and March 2024 (batch 2: February)."""

_ORDER_FILE = re.compile(r"orders_(\d{4})(_late)?\.csv")


def land_batch(root: Path, batch: int) -> list[Path]:
    """Write batch ``batch`` under ``root/landing`` and return the files written.

    An order file that is already there is kept as it is, and a batch whose order files are all
    there is not landed again (nothing written); otherwise the customer snapshot is replaced, as an
    export overwrites its previous file.
    """
    if batch < 1:
        raise ValueError(f"batch numbers start at 1, got {batch}")
    orders_dir = root / "landing" / "sales" / "orders"
    customers_dir = root / "landing" / "crm" / "customers"
    orders_dir.mkdir(parents=True, exist_ok=True)
    customers_dir.mkdir(parents=True, exist_ok=True)
    files = {orders_dir / f"orders_{batch:04d}.csv": orders(batch)}
    if batch > 1:
        files[orders_dir / f"orders_{batch:04d}_late.csv"] = late_orders(batch)
    written = [path for path, frame in files.items() if _publish(frame, path, replace=False)]
    customers_file = customers_dir / "customers.parquet"
    if written and _publish(_customers(batch), customers_file, replace=batch > 1):
        written.append(customers_file)
    return written


def orders(batch: int) -> pl.DataFrame:
    """The regular order file of ``batch``: its new orders, then its updates of earlier orders."""
    if batch == 1:
        return _first_orders()
    return pl.concat([_new_orders(batch), _updates(batch)])


def late_orders(batch: int) -> pl.DataFrame:
    """The late file of ``batch`` (>= 2): orders created in an old month, last updated back then."""
    rng = random.Random(f"late-{batch}")
    month = late_month(batch)
    first = _first_id(batch) + NEW_ORDERS
    created = [_in_month(rng, month) for _ in range(LATE_ORDERS)]
    return _frame(
        rng,
        list(range(first, first + LATE_ORDERS)),
        created,
        [c + timedelta(minutes=rng.randrange(0, 600)) for c in created],
    )


def batch_month(batch: int) -> datetime:
    """The first day of the month whose orders batch ``batch`` (>= 2) extracts."""
    return _add_months(datetime(2024, 7, 1), batch - 2)


def late_month(batch: int) -> datetime:
    """The first day of the old month of the late file of batch ``batch`` (>= 2)."""
    return _add_months(START, (batch - 1) % LATE_MONTHS)


def _first_orders() -> pl.DataFrame:
    # this draw order is batch 1's since the example's first version: keep it, tests count its rows
    rng = random.Random(1)
    ids = list(range(1, FIRST_ORDERS + 1))
    created = [START + timedelta(minutes=rng.randrange(0, 182 * 24 * 60)) for _ in ids]
    updated = [c + timedelta(minutes=rng.randrange(0, 600)) for c in created]
    return _frame(rng, ids, created, updated)


def _new_orders(batch: int) -> pl.DataFrame:
    """Orders first landed by ``batch`` (>= 2), created from the 2nd of its month.

    From the 2nd: an order of the month before may carry an ``updated_at`` of the 1st (created
    late on the 31st), and every row of a new extract must be newer than the previous extract.
    """
    rng = random.Random(batch)
    first = _first_id(batch)
    created = [_in_month(rng, batch_month(batch), skip_days=1) for _ in range(NEW_ORDERS)]
    updated = [c + timedelta(minutes=rng.randrange(0, 600)) for c in created]
    return _frame(rng, list(range(first, first + NEW_ORDERS)), created, updated)


def _updates(batch: int) -> pl.DataFrame:
    """``UPDATES`` orders created in the month before ``batch``'s month, as they are now."""
    rng = random.Random(f"updates-{batch}")
    previous = _add_months(batch_month(batch), -1)
    candidates = pl.concat(_landed(batch - 1)).filter(pl.col("created_at").str.starts_with(previous.strftime("%Y-%m")))
    picked = candidates[sorted(rng.sample(range(candidates.height), k=min(UPDATES, candidates.height)))]
    amounts = [a if rng.random() < 0.7 else f"{float(a) * rng.uniform(0.8, 1.0):.2f}" for a in picked["amount"]]
    updated = [_in_month(rng, batch_month(batch), skip_days=1) for _ in range(picked.height)]
    return picked.with_columns(
        status=pl.Series([rng.choice(LATER_STATUSES) for _ in range(picked.height)]),
        amount=pl.Series(amounts),
        updated_at=pl.Series([u.isoformat(sep=" ") for u in updated]),
    )


def _landed(last_batch: int) -> Iterator[pl.DataFrame]:
    """The new orders of batches 1..``last_batch`` as first landed (late orders are never updated).

    Their latest state too: an order is updated at most once, by the batch of the month after
    the month it was created in.
    """
    yield _first_orders()
    for batch in range(2, last_batch + 1):
        yield _new_orders(batch)


def _frame(rng: random.Random, ids: list[int], created: list[datetime], updated: list[datetime]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "order_id": ids,
            "customer_id": [rng.randrange(1, 41) for _ in ids],
            "status": [rng.choice(STATUSES) for _ in ids],
            "amount": [f"{rng.uniform(5, 900):.2f}" for _ in ids],
            "quantity": [rng.randrange(1, 10) for _ in ids],
            "created_at": [c.isoformat(sep=" ") for c in created],
            "updated_at": [u.isoformat(sep=" ") for u in updated],
        }
    )


def _customers(batch: int) -> pl.DataFrame:
    rng = random.Random(f"customers-{batch}")
    ids = list(range(1, 41))
    moved = set(rng.sample(ids, k=5)) if batch > 1 else set()
    cities = ("Lyon", "Porto", "Gdansk", "Leeds", "Graz")
    return pl.DataFrame(
        {
            "customer_id": ids,
            "name": [f"Customer {i:02d}" for i in ids],
            "email": [f"customer{i:02d}@example.com" for i in ids],
            "city": [cities[(i + (batch if i in moved else 0)) % len(cities)] for i in ids],
            "updated_at": [START + timedelta(days=30 * (batch if i in moved else 1)) for i in ids],
        }
    )


def _first_id(batch: int) -> int:
    """The first order id of batch ``batch`` (>= 2): each later batch owns a block of ids."""
    return FIRST_ORDERS + (batch - 2) * (NEW_ORDERS + LATE_ORDERS) + 1


def _in_month(rng: random.Random, month: datetime, *, skip_days: int = 0) -> datetime:
    days = monthrange(month.year, month.month)[1]
    return month + timedelta(minutes=rng.randrange(skip_days * 24 * 60, days * 24 * 60))


def _add_months(month: datetime, count: int) -> datetime:
    index = month.year * 12 + month.month - 1 + count
    return datetime(index // 12, index % 12 + 1, 1)


def _publish(frame: pl.DataFrame, path: Path, *, replace: bool) -> bool:
    """Write ``frame`` to ``path`` atomically; ``False`` when ``path`` exists and ``replace`` is off.

    Written aside first (a name no reader lists), then renamed or hard-linked into place: a sensor
    or a reader never sees half a file, and two processes landing the same batch write it once.
    """
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.suffix == ".csv":
            frame.write_csv(aside)
        else:
            frame.write_parquet(aside)
        if replace:
            os.replace(aside, path)
            return True
        try:
            os.link(aside, path)  # fails if the file exists: never a second copy with a newer mtime
        except FileExistsError:
            return False
        return True
    finally:
        aside.unlink(missing_ok=True)


def landed_batches(root: Path) -> list[int]:
    """The batch numbers whose order file is under ``root/landing``, in order."""
    folder = root / "landing" / "sales" / "orders"
    found = {int(m[1]) for p in folder.glob("orders_*.csv") if (m := _ORDER_FILE.fullmatch(p.name))}
    return sorted(found)


def next_batch(root: Path) -> int:
    """One more than the highest batch already landed."""
    landed = landed_batches(root)
    return landed[-1] + 1 if landed else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("data"), help="data root (default ./data)")
    parser.add_argument("--batch", type=int, default=None, help="batch number (default: the next one)")
    args = parser.parse_args()
    batch = args.batch or next_batch(args.root)
    written = land_batch(args.root, batch)
    for path in written:
        print(f"landed batch {batch}: {path}")
    if not written:
        print(f"batch {batch} was already landed under {args.root / 'landing'}: nothing written")


if __name__ == "__main__":
    main()
