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


class OffsetsError(KafkaConnectorError):
    """Start or stop offsets cannot be resolved (no committed offset, deleted range, ...)."""


class DeserializationError(KafkaConnectorError):
    """Records could not be decoded into the table's schema (dirty data).

    Carries where the (first) record came from so it can be found again in Kafka.
    """

    def __init__(
        self,
        message: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class DeliveryError(KafkaConnectorError):
    """Records could not be delivered to Kafka; the run fails and the checkpoint stays put."""


class TransactionError(KafkaConnectorError):
    """A Kafka transaction could not be started or committed, or the producer was fenced."""


class FlinkSqlError(KafkaOptionsError):
    """A Flink SQL script could not be parsed, or a table it declares is invalid.

    The message starts with the ``line`` and ``column`` (both 1-based) of the offending token so
    the user can find it in their script; ``keys`` names option keys when an option is at fault.
    Messages never quote the values of secret options (passwords, JAAS configuration, keys).

    Example:
        >>> err = FlinkSqlError("expected ')'", line=3, column=7)
        >>> str(err)
        "line 3, column 7: expected ')'"
    """

    def __init__(self, message: str, *, line: int, column: int, keys: tuple[str, ...] = ()) -> None:
        super().__init__(f"line {line}, column {column}: {message}", keys=keys)
        self.line = line
        self.column = column
