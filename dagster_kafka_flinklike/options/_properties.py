"""``properties.*`` as Flink users write them → librdkafka configuration, and secret redaction."""

from __future__ import annotations

from collections.abc import Mapping

REDACTED = "******"
_SECRET_MARKERS = ("password", "secret", "jaas", "token", "credential", "private.key")

# Settings the connector owns, as Flink does: the source decides offsets and commits itself.
_CONSUMER_OWNED = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
}
_DROPPED = {"key.deserializer", "value.deserializer", "key.serializer", "value.serializer"}


def is_secret(key: str) -> bool:
    """True when a client setting's value must never be shown."""
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def redact(properties: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``properties`` with every secret value replaced by ``******``."""
    return {k: (REDACTED if is_secret(k) else v) for k, v in properties.items()}


def client_config(properties: Mapping[str, str], *, role: str = "consumer") -> dict[str, str]:
    """librdkafka settings for ``properties`` (keys without the ``properties.`` prefix).

    ``role`` is ``consumer``, ``producer`` or ``admin``; consumer-owned settings are overridden.
    """
    config = {k: v for k, v in properties.items() if k not in _DROPPED}
    if role == "consumer":
        config.update(_CONSUMER_OWNED)
    else:
        config.pop("group.id", None)
        for key in ("auto.offset.reset", "isolation.level", "enable.partition.eof"):
            config.pop(key, None)
    return config
