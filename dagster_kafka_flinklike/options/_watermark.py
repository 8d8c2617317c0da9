"""A table's event time: Flink's ``WATERMARK FOR column AS column - INTERVAL 'delay'``."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import KafkaOptionsError


@dataclass(frozen=True)
class EventTime:
    """A source table's event-time column and its watermark delay (milliseconds).

    Flink's watermark is the largest event time seen minus the delay, and a window ``[start,
    end)`` fires once the watermark reaches ``end - 1``; Spark evicts a window once its
    watermark reaches ``end``. A Spark delay one millisecond shorter (:attr:`spark_delay`)
    closes the same windows at the same moments.

    Example:
        >>> EventTime("ts", 5000).spark_delay
        '4999 milliseconds'
    """

    column: str
    delay_ms: int

    def __post_init__(self) -> None:
        if self.delay_ms < 1:
            raise KafkaOptionsError(
                f"The watermark of {self.column!r} has no delay: Flink fires a window when an "
                f"event at its last millisecond arrives, Spark only at its end, so the results "
                f"would differ. Declare a delay of at least 1 ms (e.g. `WATERMARK FOR "
                f"{self.column} AS {self.column} - INTERVAL '0.001' SECOND`)."
            )

    @property
    def spark_delay(self) -> str:
        """Spark's ``withWatermark`` delay that evicts windows when Flink fires them."""
        return f"{self.delay_ms - 1} milliseconds"
