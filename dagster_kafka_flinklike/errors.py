"""Exceptions raised by ``dagster_kafka_flinklike``.

Every exception the connector raises on purpose derives from :class:`KafkaConnectorError`, so
callers can catch the connector's own failures without also catching unrelated bugs.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any


class KafkaConnectorError(Exception):
    """Base class of every error raised on purpose by ``dagster_kafka_flinklike``.

    Example:
        >>> try:
        ...     raise KafkaConnectorError("boom")
        ... except KafkaConnectorError as exc:
        ...     str(exc)
        'boom'
    """


class EmbeddedServiceError(KafkaConnectorError):
    """An embedded development service (the Kafka broker, the Schema Registry, the Spark
    Connect server or the Spark standalone cluster) failed.

    The base of :class:`EmbeddedKafkaError`, :class:`EmbeddedSchemaRegistryError`,
    :class:`EmbeddedSparkConnectError` and :class:`EmbeddedSparkClusterError`: catch it to
    handle any local service that could not be fetched, started or stopped.

    Example:
        >>> issubclass(EmbeddedKafkaError, EmbeddedServiceError)
        True
    """


class EmbeddedKafkaError(EmbeddedServiceError):
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


class EmbeddedSchemaRegistryError(EmbeddedServiceError):
    """The embedded development Schema Registry could not be fetched, started or stopped.

    Like :class:`EmbeddedKafkaError`, a failure of the registry process itself ends the message
    with the tail of the registry's log.

    Example:
        >>> from pathlib import Path
        >>> from dagster_kafka_flinklike.local import EmbeddedSchemaRegistry
        >>> try:  # doctest: +SKIP
        ...     EmbeddedSchemaRegistry(Path("/tmp/sr")).start(timeout=1)
        ... except EmbeddedSchemaRegistryError as exc:
        ...     print(exc)
    """


class EmbeddedSparkConnectError(EmbeddedServiceError):
    """The local development Spark Connect server could not be started or stopped.

    Like :class:`EmbeddedKafkaError`, a failure of the server process itself ends the message
    with the tail of the server's log.

    Example:
        >>> from pathlib import Path
        >>> from dagster_kafka_flinklike.local import EmbeddedSparkConnect
        >>> try:  # doctest: +SKIP
        ...     EmbeddedSparkConnect(Path("/tmp/spark")).start(timeout=1)
        ... except EmbeddedSparkConnectError as exc:
        ...     print(exc)
    """


class EmbeddedSparkClusterError(EmbeddedServiceError):
    """The local Spark standalone cluster (a master and its workers) could not be started or
    stopped, or did not form; a process's failure ends the message with the tail of its log.

    Example:
        >>> from pathlib import Path
        >>> from dagster_kafka_flinklike.local import EmbeddedSparkCluster
        >>> try:  # doctest: +SKIP
        ...     EmbeddedSparkCluster(Path("/tmp/spark-cluster")).start(timeout=1)
        ... except EmbeddedSparkClusterError as exc:
        ...     print(exc)
    """


class SparkConnectError(KafkaConnectorError):
    """A Spark Connect session cannot be opened or used: a malformed ``sc://`` URL, PySpark's
    Connect client packages missing, or a session that cannot do what the connector needs.

    Example:
        >>> from dagster_kafka_flinklike.spark import connect_session
        >>> try:
        ...     connect_session("localhost:15002")
        ... except SparkConnectError as exc:
        ...     print(str(exc).split(":")[0])
        Spark Connect URL 'localhost
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


class KafkaOptionsWarning(UserWarning):
    """An accepted connector option that has no effect where the table is used.

    Flink accepts such options and ignores them (a sink option on a table that is only read,
    the offsets of a startup mode that is not selected); here they are accepted too, with this
    warning naming the option and why it does nothing. ``keys`` names the option keys.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warnings.warn(KafkaOptionsWarning("Option 'x' has no effect.", keys=("x",)))
        >>> caught[0].category.__name__, caught[0].message.keys
        ('KafkaOptionsWarning', ('x',))
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


class BlockingCheckError(KafkaConnectorError):
    """A blocking asset check failed before the run committed, so the run fails and records no
    checkpoint: an exactly-once run's transaction is aborted (nothing it wrote becomes
    visible); an at-least-once run keeps its checkpoint and group offsets, and the records it
    already delivered stay in the sink topic (its retry writes them again).

    ``checks`` names the failed checks. Re-running fails the same way until the data or the
    check's threshold changes.

    Example:
        >>> BlockingCheckError("kafka_dirty_data failed", checks=("kafka_dirty_data",)).checks
        ('kafka_dirty_data',)
    """

    def __init__(self, message: str, *, checks: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.checks: tuple[str, ...] = tuple(checks)


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


class KafkaComponentError(KafkaOptionsError):
    """A component's YAML declares something invalid: a table's option, an asset, a check.

    The message starts with where it is (``defs.yaml:12``, the ``location``) and names the table
    or asset and the option (``keys``); the original error is its ``__cause__``.

    Example:
        >>> err = KafkaComponentError("bad topic", location="defs.yaml:7", keys=("topic",))
        >>> str(err)
        'defs.yaml:7: bad topic'
    """

    def __init__(self, message: str, *, location: str, keys: tuple[str, ...] = ()) -> None:
        super().__init__(f"{location}: {message}", keys=keys)
        self.location = location


class KafkaErrorKind(StrEnum):
    """What the connector does about a Kafka client error (see :func:`classify_kafka_error`).

    Example:
        >>> KafkaErrorKind.RETRIABLE.value
        'retriable'
    """

    #: Passes with time (leader election, coordinator loading, a timeout): retry the call.
    RETRIABLE = "retriable"
    #: A newer producer with the same ``transactional.id`` (or the broker, after the
    #: transaction timeout) bumped the epoch: this producer must stop; nothing it sent commits.
    FENCED = "fenced"
    #: The transaction must be aborted; the run fails and a later run reads the same offsets.
    ABORTABLE = "abortable"
    #: The client is unusable (librdkafka raised a fatal error): close it and fail.
    FATAL = "fatal"
    #: Fails the same way again (configuration, authorization, a missing topic): fail now.
    PERMANENT = "permanent"


#: Error codes that pass with time although librdkafka may not flag them retriable: Kafka's
#: own retriable errors (a leader being elected or catching up after a restart, replicas
#: rejoining) and the client's transient states.
_WAIT_CODES = frozenset(
    {
        "OFFSET_NOT_AVAILABLE",
        "FENCED_LEADER_EPOCH",
        "UNKNOWN_LEADER_EPOCH",
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "KAFKA_STORAGE_ERROR",
        "NETWORK_EXCEPTION",
        "PREFERRED_LEADER_NOT_AVAILABLE",
        "UNSTABLE_OFFSET_COMMIT",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_FOR_PARTITION",
        "REQUEST_TIMED_OUT",
        "CONCURRENT_TRANSACTIONS",
        "_TIMED_OUT",
        "_TRANSPORT",
        "_ALL_BROKERS_DOWN",
        "_WAIT_COORD",
    }
)
#: Error codes of a producer whose epoch was bumped.
_FENCED_CODES = frozenset(
    {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED", "TRANSACTION_COORDINATOR_FENCED"}
)


def kafka_error_of(error: object) -> Any:
    """The confluent-kafka ``KafkaError`` carried by ``error``, or None.

    ``error`` may be a ``KafkaError``, a ``KafkaException`` (its first argument), or any
    exception whose chain of causes holds one (Spark and confluent-kafka wrap them).
    """
    seen = 0
    current: object = error
    while current is not None and seen < 10:
        if hasattr(current, "code") and hasattr(current, "retriable"):
            return current
        args = getattr(current, "args", ())
        if args and hasattr(args[0], "code") and hasattr(args[0], "retriable"):
            return args[0]
        if not isinstance(current, BaseException):
            return None
        current, seen = current.__cause__ or current.__context__, seen + 1
    return None


def classify_kafka_error(error: object) -> KafkaErrorKind | None:
    """How to handle a Kafka client error, by its error code and librdkafka's own flags.

    The one classifier of the connector: the admin calls, the writers and the transactional
    path all decide retry / abort / fail through it, never by matching message text. None when
    ``error`` carries no ``KafkaError``.

    Example:
        >>> from confluent_kafka import KafkaError
        >>> classify_kafka_error(KafkaError(KafkaError.PRODUCER_FENCED))
        <KafkaErrorKind.FENCED: 'fenced'>
        >>> classify_kafka_error(KafkaError(KafkaError.NOT_COORDINATOR))
        <KafkaErrorKind.RETRIABLE: 'retriable'>
    """
    found = kafka_error_of(error)
    if found is None:
        return None
    name = found.name()
    if name in _FENCED_CODES:
        return KafkaErrorKind.FENCED
    if found.fatal():
        return KafkaErrorKind.FATAL
    if found.txn_requires_abort():
        return KafkaErrorKind.ABORTABLE
    if found.retriable() or name in _WAIT_CODES:
        return KafkaErrorKind.RETRIABLE
    return KafkaErrorKind.PERMANENT


class KafkaClientError(KafkaConnectorError):
    """A Kafka request failed (after the retries its kind allows): the cluster is unreachable,
    a request timed out, or the broker refused it.

    ``kind`` says what kind of failure it was (:func:`classify_kafka_error`), ``kafka_error``
    carries confluent-kafka's original error when there is one.

    Example:
        >>> KafkaClientError("Could not read the cluster's metadata").kind is None
        True
    """

    def __init__(self, message: str, cause: object = None) -> None:
        super().__init__(message)
        self.kafka_error = kafka_error_of(cause) if cause is not None else None
        self.kind = classify_kafka_error(cause) if cause is not None else None


class KafkaAuthenticationError(KafkaClientError):
    """The cluster refused this client's SASL login or TLS certificate, or the client does not
    trust the broker's certificate: it fails at the first connection (a retry cannot help),
    and ``keys`` names the options to fix. The message never shows a secret.

    Example:
        >>> KafkaAuthenticationError("refused", keys=("properties.sasl.jaas.config",)).keys
        ('properties.sasl.jaas.config',)
    """

    def __init__(self, message: str, cause: object = None, *, keys: tuple[str, ...] = ()) -> None:
        super().__init__(message, cause)
        self.keys = keys


class KafkaYamlError(KafkaOptionsError):
    """A YAML document the connector reads itself (a data-ingestion pipeline) is not valid YAML,
    references itself, nests too deep, or declares something invalid.

    The message starts with where it is: ``file:line:column:`` for a file, ``line L, column C:``
    for text; ``keys`` names the keys at fault. It never quotes the document's text, which may
    hold a password. ``reason`` is the message without the place.

    Example:
        >>> str(KafkaYamlError("not valid YAML.", file="p.yaml", line=3, column=7))
        'p.yaml:3:7: not valid YAML.'
        >>> KafkaYamlError("not valid YAML.", line=3, column=7).reason
        'not valid YAML.'
    """

    def __init__(
        self,
        message: str,
        *,
        line: int,
        column: int,
        file: str | None = None,
        keys: tuple[str, ...] = (),
    ) -> None:
        where = f"{file}:{line}:{column}" if file is not None else f"line {line}, column {column}"
        super().__init__(f"{where}: {message}", keys=keys)
        self.reason = message
        self.file = file
        self.line = line
        self.column = column


class SchemaRegistryErrorKind(StrEnum):
    """What the connector does about a Schema Registry error (see
    :func:`classify_registry_error`).

    Only :attr:`NOT_FOUND` of a schema a record names makes that record dirty; every other kind
    fails the run and leaves the checkpoint where it was.

    Example:
        >>> SchemaRegistryErrorKind.UNAVAILABLE.value
        'unavailable'
    """

    #: The schema, subject or version asked for does not exist (HTTP 404): a record naming it
    #: can never be read, so it is dirty.
    NOT_FOUND = "not-found"
    #: The registry cannot be reached, timed out or failed (connection errors, HTTP 408, 429,
    #: 5xx): the run fails; a later run reads the same records.
    UNAVAILABLE = "unavailable"
    #: The registry refused the credentials (HTTP 401, 403, an OAuth token not issued).
    UNAUTHORIZED = "unauthorized"
    #: The registry refused to register a schema its compatibility level forbids (HTTP 409).
    INCOMPATIBLE = "incompatible"
    #: Any other refusal (HTTP 400, 422, ...): the same request fails again.
    REFUSED = "refused"


#: HTTP statuses of a registry that is failing or overloaded (confluent-kafka retries them).
_REGISTRY_UNAVAILABLE = frozenset({408, 429, 500, 502, 503, 504})


def _registry_kind(error: BaseException) -> SchemaRegistryErrorKind | None:
    """The kind of one exception (not its causes), or None when it is no registry error."""
    kind = getattr(error, "registry_kind", None)
    if isinstance(kind, SchemaRegistryErrorKind):
        return kind
    status = getattr(error, "http_status_code", None)
    if isinstance(status, int):  # confluent-kafka's SchemaRegistryError: the registry answered
        if status == 404:
            return SchemaRegistryErrorKind.NOT_FOUND
        if status in (401, 403):
            return SchemaRegistryErrorKind.UNAUTHORIZED
        if status == 409:
            return SchemaRegistryErrorKind.INCOMPATIBLE
        if status in _REGISTRY_UNAVAILABLE or status >= 500:
            return SchemaRegistryErrorKind.UNAVAILABLE
        return SchemaRegistryErrorKind.REFUSED
    if type(error).__name__ == "OAuthTokenError":
        return SchemaRegistryErrorKind.UNAUTHORIZED
    module = type(error).__module__ or ""
    if module.startswith(("httpx", "httpcore", "ssl", "socket")) or isinstance(error, OSError):
        return SchemaRegistryErrorKind.UNAVAILABLE  # transport: refused, reset, DNS, timeouts
    return None


def classify_registry_error(error: object) -> SchemaRegistryErrorKind | None:
    """How to handle a failed Schema Registry request, by the registry's HTTP status or the
    transport's failure.

    The one classifier of registry errors, as :func:`classify_kafka_error` is of Kafka's: the
    registry formats' decoders (JVM preload and Python workers alike) and their writers decide
    dirty record / failed run through it. None when ``error`` (and its chain of causes) holds
    no registry or transport error.

    Example:
        >>> from confluent_kafka.schema_registry.error import SchemaRegistryError
        >>> classify_registry_error(SchemaRegistryError(404, 40403, "Schema not found"))
        <SchemaRegistryErrorKind.NOT_FOUND: 'not-found'>
        >>> classify_registry_error(SchemaRegistryError(503, 50003, "unavailable"))
        <SchemaRegistryErrorKind.UNAVAILABLE: 'unavailable'>
        >>> classify_registry_error(ConnectionRefusedError(111, "Connection refused"))
        <SchemaRegistryErrorKind.UNAVAILABLE: 'unavailable'>
    """
    current: object = error
    for _ in range(10):
        if not isinstance(current, BaseException):
            return None
        kind = _registry_kind(current)
        if kind is not None:
            return kind
        current = current.__cause__ or current.__context__
    return None


def redacted_url(url: object) -> str:
    """Registry URL(s) as they may be shown: credentials in them (``user:password@``) hidden.

    Example:
        >>> redacted_url("https://svc:s3cret@sr.example.com:8081,http://b:8081")
        'https://***@sr.example.com:8081,http://b:8081'
    """
    return re.sub(r"(://)[^/@,\s]*@", r"\1***@", str(url))


class SchemaRegistryClientError(KafkaConnectorError):
    """A Schema Registry request failed: the registry is unreachable, timed out, answered 5xx,
    refused the credentials or refused to register a schema.

    Never dirty data: the run fails, nothing is committed, and a later run reads the same
    records. ``kind`` says what failed (:func:`classify_registry_error`), ``url`` is the
    registry's address with any credentials hidden.

    Example:
        >>> err = SchemaRegistryClientError(
        ...     "writer schema 7 could not be fetched", url="http://u:p@sr:8081",
        ...     kind=SchemaRegistryErrorKind.UNAVAILABLE)
        >>> str(err)
        'Schema Registry http://***@sr:8081 (unavailable): writer schema 7 could not be fetched'
    """

    def __init__(
        self, message: str, *, url: object, kind: SchemaRegistryErrorKind | None = None
    ) -> None:
        self.url = redacted_url(url)
        self.kind = kind
        self.registry_kind = kind
        label = f" ({kind.value})" if kind is not None else ""
        super().__init__(f"Schema Registry {self.url}{label}: {message}")

    @classmethod
    def raised_in_task(cls, error: BaseException) -> SchemaRegistryClientError | None:
        """The error a Spark task raised, rebuilt from the exception Spark raises on the driver
        (its text ends with the task's traceback); None when the task raised another error.

        Example:
            >>> found = SchemaRegistryClientError.raised_in_task(RuntimeError(
            ...     "Traceback ...\\ndagster_kafka_flinklike.errors.SchemaRegistryClientError: "
            ...     "Schema Registry http://sr:8081 (unavailable): fetching schema 3 failed"))
            >>> found.url, found.kind
            ('http://sr:8081', <SchemaRegistryErrorKind.UNAVAILABLE: 'unavailable'>)
        """
        if isinstance(error, cls):
            return error
        found = re.findall(
            r"dagster_kafka_flinklike\.errors\.SchemaRegistryClientError: Schema Registry "
            r"(\S+?)(?: \(([a-z-]+)\))?: (.+?)(?: SQLSTATE: \w+)?$",
            str(error),
            re.MULTILINE,
        )
        if not found:
            return None
        url, kind, message = found[-1]
        known = {k.value: k for k in SchemaRegistryErrorKind}
        rebuilt = cls(message, url=url, kind=known.get(kind))
        rebuilt.__cause__ = error
        return rebuilt
