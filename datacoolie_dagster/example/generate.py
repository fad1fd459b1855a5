"""Land one batch of example source data: order CSV files and a customer parquet snapshot.

    python -m datacoolie_dagster.example.generate [--root data] [--batch N]

Batch 1 holds 600 orders of January to June 2024 and 40 customers; every later batch lands a new
order file (new orders plus updates of earlier ones, with later ``updated_at``) and a new customer
snapshot in which a few customers changed — so each run of the example has incremental work, merges
and slowly changing dimension versions to show. Deterministic for a given batch number.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

STATUSES = (" NEW", "paid", "Shipped ", "delivered", "returned")
START = datetime(2024, 1, 1)


def land_batch(root: Path, batch: int) -> list[Path]:
    """Write batch ``batch`` under ``root/landing`` and return the files written."""
    rng = random.Random(batch)
    orders_dir = root / "landing" / "sales" / "orders"
    customers_dir = root / "landing" / "crm" / "customers"
    orders_dir.mkdir(parents=True, exist_ok=True)
    customers_dir.mkdir(parents=True, exist_ok=True)
    orders = _orders(rng, batch)
    orders_file = orders_dir / f"orders_{batch:04d}.csv"
    orders.write_csv(orders_file)
    customers_file = customers_dir / "customers.parquet"
    _customers(rng, batch).write_parquet(customers_file)
    return [orders_file, customers_file]


def _orders(rng: random.Random, batch: int) -> pl.DataFrame:
    new = 600 if batch == 1 else 40
    first_new = 1 if batch == 1 else 600 + (batch - 2) * 40 + 1
    ids = list(range(first_new, first_new + new))
    if batch > 1:
        ids += rng.sample(range(1, first_new), k=min(30, first_new - 1))  # updates of earlier orders
    created = [START + timedelta(minutes=rng.randrange(0, 182 * 24 * 60)) for _ in ids]
    # a later batch is extracted later: its updates are newer than anything landed before
    extracted = START + timedelta(days=182 + batch)
    updated = [
        c + timedelta(minutes=rng.randrange(0, 600))
        if batch == 1
        else extracted + timedelta(minutes=rng.randrange(0, 600))
        for c in created
    ]
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


def _customers(rng: random.Random, batch: int) -> pl.DataFrame:
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


def next_batch(root: Path) -> int:
    """One more than the highest batch already landed."""
    landed = sorted((root / "landing" / "sales" / "orders").glob("orders_*.csv"))
    return int(landed[-1].stem.split("_")[1]) + 1 if landed else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("data"), help="data root (default ./data)")
    parser.add_argument("--batch", type=int, default=None, help="batch number (default: the next one)")
    args = parser.parse_args()
    batch = args.batch or next_batch(args.root)
    for path in land_batch(args.root, batch):
        print(f"landed batch {batch}: {path}")


if __name__ == "__main__":
    main()
