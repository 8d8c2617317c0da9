"""``python -m tests.oracle`` (``make flink-oracle``): install the oracle ahead of the tests."""

import logging

from tests.oracle import flink_oracle

logging.basicConfig(level=logging.INFO, format="%(message)s")
print(flink_oracle().python)
