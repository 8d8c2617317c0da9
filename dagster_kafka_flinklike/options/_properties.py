"""``properties.*`` as Flink users write them → librdkafka configuration, and secret redaction.

Names librdkafka shares with the Java client pass through (values checked against librdkafka's
types and ranges); Java-only names are translated, dropped when the connector owns them or
they have no effect, and rejected, naming the option, when librdkafka cannot honour them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import KafkaOptionsError
from ._librdkafka import LIBRDKAFKA_PROPERTIES
from ._security import translate_jaas, translate_ssl
from ._table import did_you_mean

REDACTED = "******"
_SECRET_MARKERS = (
    "password",
    "secret",
    "jaas",
    "token",
    "credential",
    "private.key",
    "key.pem",
    "keystore.key",
    "oauthbearer.config",
    "passphrase",
    "user-info",
    "user.info",
)

# Set by the connector itself, as Flink does; a user value is dropped (or overridden).
CONNECTOR_OWNED: dict[str, str] = {
    "key.deserializer": "records are read as bytes and decoded by the key format",
    "value.deserializer": "records are read as bytes and decoded by the value format",
    "key.serializer": "records are written as bytes encoded by the key format",
    "value.serializer": "records are written as bytes encoded by the value format",
    "enable.auto.commit": "always false: offsets are committed after a successful run",
    "enable.auto.offset.store": "always false: offsets are committed after a successful run",
    "transactional.id": "derived per asset from 'sink.transactional-id-prefix'",
    "partition.assignment.strategy": "the reader assigns planned partitions itself",
}
# Properties of Flink's KafkaSource/KafkaSink (not of the Kafka client): kept in the spec's
# ``properties`` for the connector, never passed to librdkafka.
CONNECTOR_PROPERTIES: dict[str, str] = {
    "client.id.prefix": "client ids '<prefix>-reader', '<prefix>-writer', '<prefix>-admin'",
    "partition.discovery.interval.ms": "same as 'scan.topic-partition-discovery.interval' (ms)",
    "flink.partition-discovery.interval-millis": "same as "
    "'scan.topic-partition-discovery.interval' (ms)",
    "commit.offsets.on.checkpoint": "commit offsets to the consumer group after each run "
    "(default true; false is refused under an exactly-once sink)",
    "register.consumer.metrics": "no effect: run metrics go to materialization metadata",
    "register.producer.metrics": "no effect: run metrics go to materialization metadata",
}
# Java client tuning with no librdkafka counterpart and no effect on results: dropped.
IGNORED_JAVA: dict[str, str] = dict.fromkeys(
    (
        "max.block.ms",
        "default.api.timeout.ms",
        "metrics.sample.window.ms",
        "metrics.num.samples",
        "metrics.recording.level",
        "auto.include.jmx.reporter",
        "internal.leave.group.on.close",
        "exclude.internal.topics",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.retry.backoff.ms",
        "sasl.login.retry.backoff.max.ms",
    ),
    "Java client tuning without effect in librdkafka",
)
# Java client settings librdkafka cannot honour: an error with this hint.
UNSUPPORTED_JAVA: dict[str, str] = {
    "interceptor.classes": "Java interceptors cannot run in librdkafka",
    "partitioner.class": "use the table option 'sink.partitioner'",
    "metric.reporters": "run metrics go to materialization metadata",
    "security.providers": "librdkafka uses OpenSSL and Cyrus SASL",
    "config.providers": "resolve secrets with Dagster EnvVar instead",
    "sasl.login.callback.handler.class": "librdkafka supports OIDC via sasl.oauthbearer.*",
    "sasl.client.callback.handler.class": "librdkafka supports OIDC via sasl.oauthbearer.*",
    "sasl.login.class": "librdkafka has its own login implementations",
    "ssl.engine.factory.class": "librdkafka uses OpenSSL",
    "ssl.provider": "librdkafka uses OpenSSL",
    "ssl.protocol": "librdkafka negotiates the TLS version with OpenSSL; remove the setting",
    "ssl.enabled.protocols": "librdkafka negotiates the TLS version with OpenSSL; remove it",
}


def _minus_one_is_zero(value: str) -> str:
    return "0" if value.strip() == "-1" else value


def _bytes_to_kbytes(value: str) -> str:
    return str(math.ceil(int(value) / 1024)) if value.strip().isdigit() else value


# Java name -> (librdkafka name, value conversion)
RENAMED: dict[str, tuple[str, Callable[[str], str]]] = {
    "receive.buffer.bytes": ("socket.receive.buffer.bytes", _minus_one_is_zero),
    "send.buffer.bytes": ("socket.send.buffer.bytes", _minus_one_is_zero),
    "buffer.memory": ("queue.buffering.max.kbytes", _bytes_to_kbytes),
    "max.request.size": ("message.max.bytes", str),
    "fetch.max.wait.ms": ("fetch.wait.max.ms", str),
}
_JAVA_VALUES = {"auto.offset.reset": {"none": "error"}, "acks": {"all": "-1"}}
_HANDLED = (
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
)


def is_secret(key: str) -> bool:
    """True when a setting's value must never be shown (passwords, JAAS, tokens, keys)."""
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def redact(properties: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``properties`` with every secret value replaced by ``******``.

    Example:
        >>> redact({"sasl.password": "s3cret", "acks": "all"})
        {'sasl.password': '******', 'acks': 'all'}
    """
    return {k: (REDACTED if is_secret(k) else v) for k, v in properties.items()}


def _check_value(key: str, value: str, origin: str) -> str:
    scope_kind_allowed = LIBRDKAFKA_PROPERTIES[key]
    kind, allowed = scope_kind_allowed[1], scope_kind_allowed[2]
    shown = "" if is_secret(origin) else f" but got {value[:40]!r}"
    text = _JAVA_VALUES.get(key, {}).get(value.strip().lower(), value.strip())
    if kind == "bool" and text.lower() in ("true", "false"):
        return text.lower()
    if kind in ("int", "float") and allowed is not None:
        try:
            number = int(text) if kind == "int" else float(text)
        except ValueError:
            number = None
        if number is not None and allowed[0] <= number <= allowed[1]:
            return text
        expected = f"a number in [{allowed[0]}, {allowed[1]}]"
    elif kind == "enum" and allowed:
        if text.lower() in allowed:
            return text.lower()
        expected = "one of " + ", ".join(allowed)
    elif kind == "flags" and allowed:
        flags = [f.strip().lower() for f in text.split(",")]
        if all(f in allowed for f in flags):
            return ",".join(flags)
        expected = "a comma-separated list of " + ", ".join(allowed)
    elif kind in ("str", "flags", "int", "float"):
        return value
    else:
        expected = "'true' or 'false'"
    raise KafkaOptionsError(f"Option '{origin}' expects {expected}{shown}.", keys=(origin,))


def translate_properties(
    properties: Mapping[str, str], *, key_prefix: str = "properties."
) -> dict[str, str]:
    """All ``properties`` as librdkafka settings, for any client role.

    Args:
        properties: client settings, keys without the ``properties.`` prefix.
        key_prefix: how the keys are named in messages (``properties.`` for table options).

    Raises:
        KafkaOptionsError: a setting librdkafka cannot honour, or a malformed value; the message
            names the option and never shows a secret.
    """
    props = {str(k): str(v) for k, v in properties.items()}
    out: dict[str, str] = {}
    origins: dict[str, str] = {}

    def name(key: str) -> str:
        return f"{key_prefix}{key}"

    def put(key: str, value: str, origin: str) -> None:
        if key in out and out[key] != value:
            raise KafkaOptionsError(
                f"Options '{origins[key]}' and '{origin}' both set librdkafka's '{key}' "
                f"differently; keep one.",
                keys=(origins[key], origin),
            )
        out[key], origins[key] = value, origin

    translate_ssl(props, put, name)
    translate_jaas(props, put, name)
    for key, value in props.items():
        if key in CONNECTOR_OWNED or key in CONNECTOR_PROPERTIES or key in IGNORED_JAVA:
            continue
        if key in RENAMED:
            target, convert = RENAMED[key]
            put(target, _check_value(target, convert(value), name(key)), name(key))
        elif key in UNSUPPORTED_JAVA or key.endswith((".class", ".classes")):
            hint = UNSUPPORTED_JAVA.get(key, "Java classes cannot be loaded by librdkafka")
            raise KafkaOptionsError(
                f"Option '{name(key)}' is a Java client setting librdkafka cannot honour: {hint}.",
                keys=(name(key),),
            )
        elif key in LIBRDKAFKA_PROPERTIES:
            put(key, _check_value(key, value, name(key)), name(key))
        else:
            known = [*LIBRDKAFKA_PROPERTIES, *RENAMED, *_HANDLED]
            raise KafkaOptionsError(
                f"Option '{name(key)}' is not a Kafka client setting librdkafka knows"
                f"{did_you_mean(key, known)}. See docs/options.md, 'Kafka client properties'.",
                keys=(name(key),),
            )
    return out


_ROLE_SCOPES = {"consumer": ("*", "C"), "producer": ("*", "P"), "admin": ("*",)}
_CONSUMER_OWNED = {"enable.auto.commit": "false", "enable.auto.offset.store": "false"}


def client_config(
    properties: Mapping[str, str], *, role: str = "consumer", key_prefix: str = "properties."
) -> dict[str, Any]:
    """librdkafka settings for ``properties`` (keys without the ``properties.`` prefix).

    Settings that do not apply to ``role`` (``consumer``, ``producer`` or ``admin``) are left
    out; a consumer never auto-commits and reads committed data unless told otherwise.

    Example:
        >>> client_config({"bootstrap.servers": "b:9092", "sasl.mechanism": "PLAIN",
        ...     "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="p";'},
        ...     role="producer")["sasl.username"]
        'u'

    Raises:
        KafkaOptionsError: see :func:`translate_properties`.
    """
    if role not in _ROLE_SCOPES:
        raise KafkaOptionsError(f"role must be consumer, producer or admin, got {role!r}.")
    translated = translate_properties(properties, key_prefix=key_prefix)
    # Booleans as Python bools: confluent-kafka reads some of them itself
    # (``delivery.report.only.error``) and refuses the string 'true'.
    config = role_config(
        {
            k: (v.strip().lower() == "true" if LIBRDKAFKA_PROPERTIES[k][1] == "bool" else v)
            for k, v in translated.items()
        },
        role,
    )
    if role == "consumer":
        config.update(_CONSUMER_OWNED)
        config.setdefault("isolation.level", "read_committed")
    return config


def role_config(config: Mapping[str, Any], role: str) -> dict[str, Any]:
    """The part of librdkafka settings ``config`` that applies to a ``role`` client.

    Lets one client's settings build another role's client for the same cluster (e.g. an
    admin client from a producer's settings) without librdkafka warning about settings the
    other role ignores. Settings librdkafka does not list are left out.

    Example:
        >>> role_config({"bootstrap.servers": "b:9092", "linger.ms": 5}, "admin")
        {'bootstrap.servers': 'b:9092'}
    """
    scopes = _ROLE_SCOPES[role]
    return {
        k: v
        for k, v in config.items()
        if k in LIBRDKAFKA_PROPERTIES and LIBRDKAFKA_PROPERTIES[k][0] in scopes
    }
