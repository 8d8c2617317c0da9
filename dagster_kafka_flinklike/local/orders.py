"""Deterministic order records for the demo and tests (the seeds' order schema).

Batch ``n`` always yields the same orders, with order ids unique across batches, so a test can
compute the expected per-channel counts and revenue independently of the pipeline.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

CHANNELS = ("webShop", "appShop", "miniAppShop", "storeShop")
USERS = ("Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi")
AREAS = ("330106", "330110", "330102", "330108")
ORDER_COLUMNS = [
    {"name": "order_id", "type": "STRING"},
    {"name": "order_channel", "type": "STRING"},
    {"name": "order_time", "type": "TIMESTAMP(3)"},
    {"name": "pay_amount", "type": "DOUBLE"},
    {"name": "real_pay", "type": "DOUBLE"},
    {"name": "pay_time", "type": "STRING"},
    {"name": "user_id", "type": "STRING"},
    {"name": "user_name", "type": "STRING"},
    {"name": "area_id", "type": "STRING"},
]


def generate_orders(batch: int, count: int) -> Iterator[dict[str, Any]]:
    """The ``count`` orders of batch number ``batch`` (same input, same orders).

    Example:
        >>> next(generate_orders(0, 1))["order_id"]
        '2026112100000000000'
    """
    rng = random.Random(batch * 1_000_003 + count)
    start = datetime(2026, 11, 21) + timedelta(hours=batch)
    for i in range(count):
        user = rng.randrange(len(USERS))
        pay = round(rng.uniform(5, 500), 2)
        ordered = start + timedelta(seconds=i)
        yield {
            "order_id": f"20261121{batch:05d}{i:06d}",
            "order_channel": CHANNELS[rng.randrange(len(CHANNELS))],
            "order_time": ordered.strftime("%Y-%m-%d %H:%M:%S"),
            "pay_amount": pay,
            "real_pay": round(pay * rng.choice((1.0, 1.0, 0.9, 0.8)), 2),
            "pay_time": (ordered + timedelta(seconds=rng.randrange(1, 300))).strftime(
                "%Y-%m-%d %H:%M:%S"
            ),
            "user_id": f"{user + 1:04d}",
            "user_name": USERS[user],
            "area_id": AREAS[rng.randrange(len(AREAS))],
        }


def encode_order(order: dict[str, Any]) -> tuple[bytes, bytes]:
    """The Kafka key (order id) and JSON value of an order."""
    return order["order_id"].encode(), json.dumps(order, separators=(",", ":")).encode()
