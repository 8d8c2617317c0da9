"""Exceptions raised by ``dagster_kafka_flinklike``.

Every exception the connector raises on purpose derives from :class:`KafkaConnectorError`, so
callers can catch the connector's own failures without also catching unrelated bugs.
"""

from __future__ import annotations


class KafkaConnectorError(Exception):
    """Base class of every error raised on purpose by ``dagster_kafka_flinklike``.

    Example:
        >>> try:
        ...     raise KafkaConnectorError("boom")
        ... except KafkaConnectorError as exc:
        ...     str(exc)
        'boom'
    """


class EmbeddedKafkaError(KafkaConnectorError):
    """The embedded development broker could not be fetched, formatted, started or stopped.

    The message says what failed and, when the broker process itself failed, ends with the tail
    of the broker's log so the cause is visible without opening the log file.

    Example:
        >>> from pathlib import Path
        >>> from dagster_kafka_flinklike.local import EmbeddedKafka
        >>> try:  # doctest: +SKIP
        ...     EmbeddedKafka(Path("/tmp/k")).start(timeout=1)
        ... except EmbeddedKafkaError as exc:
        ...     print(exc)
    """


class KafkaOptionsError(KafkaConnectorError, ValueError):
    """A connector option (Flink Kafka connector table option) is unknown or has a bad value.

    ``keys`` names the offending option keys so callers and tests can point at them.

    Example:
        >>> err = KafkaOptionsError("Option 'scan.startup.mode' is invalid.", keys=("x",))
        >>> err.keys
        ('x',)
    """

    def __init__(self, message: str, *, keys: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.keys: tuple[str, ...] = tuple(keys)
