"""Schema Registry settings of the registry formats (``avro-confluent.url``, ``basic-auth.*``, ...).

Flink's ``<format>.url`` / ``basic-auth.*`` / ``bearer-auth.*`` / ``ssl.truststore.location`` /
``properties.*`` become settings of confluent-kafka's ``SchemaRegistryClient``. Building the
client once at definition load (it connects to nothing) refuses a setting it does not know,
naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import KafkaOptionsError

_SETTINGS = {
    "url": "url",
    "basic-auth.user-info": "basic.auth.user.info",
    "bearer-auth.credentials-source": "bearer.auth.credentials.source",
    "bearer-auth.token": "bearer.auth.token",
    "ssl.truststore.location": "ssl.ca.location",
}


def client_config(fmt: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """confluent-kafka ``SchemaRegistryClient`` settings from format ``fmt``'s parsed options.

    Example:
        >>> client_config("avro-confluent", {"url": "http://sr:8081",
        ...                                  "properties": {"timeout": "5"}})
        {'url': 'http://sr:8081', 'timeout': 5}

    Raises:
        KafkaOptionsError: the client refuses a setting; the message names the option.
    """
    _basic_auth_source(fmt, settings)
    conf: dict[str, Any] = {
        target: settings[source] for source, target in _SETTINGS.items() if source in settings
    }
    origin = {target: f"{fmt}.{source}" for source, target in _SETTINGS.items()}
    for key, value in dict(settings.get("properties") or {}).items():
        conf[key] = _number(value)
        origin[key] = f"{fmt}.properties.{key}"
    try:
        if set(conf) == {"url"}:
            _check_urls(conf["url"])
        else:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            SchemaRegistryClient(dict(conf))
    except (ValueError, TypeError) as exc:
        named = [o for k, o in origin.items() if k in str(exc)] or [f"{fmt}.url"]
        raise KafkaOptionsError(
            f"The Schema Registry settings of format '{fmt}' are not usable: {exc} "
            f"(option {', '.join(repr(n) for n in named)}).",
            keys=tuple(named),
        ) from None
    return conf


def _check_urls(urls: Any) -> None:
    """What the client checks of settings that are a URL alone (comma-separated URLs, each
    http(s)), without importing it: its import costs a quarter of a second in every process
    that loads a code location declaring a registry table, most of which never use it."""
    if not isinstance(urls, str):
        raise TypeError(f"url must be a str, not {type(urls)}")
    for url in urls.split(","):
        url = url.strip().rstrip("/")
        if not url.startswith(("http", "mock")):
            raise ValueError(f"Invalid url {url}")


def _basic_auth_source(fmt: str, settings: Mapping[str, Any]) -> None:
    """``basic-auth.credentials-source``: the Python client takes the credentials from
    ``basic-auth.user-info`` (USER_INFO) or from the URL (URL); it cannot inherit SASL's."""
    source = settings.get("basic-auth.credentials-source")
    key = f"{fmt}.basic-auth.credentials-source"
    has_user_info = "basic-auth.user-info" in settings
    if source == "SASL_INHERIT":
        raise KafkaOptionsError(
            f"Option '{key}' = 'SASL_INHERIT' is not supported: the Python Schema Registry "
            f"client cannot reuse the Kafka client's SASL login; set '{fmt}.basic-auth.user-info'"
            " with USER_INFO instead.",
            keys=(key,),
        )
    if source == "USER_INFO" and not has_user_info:
        raise KafkaOptionsError(
            f"Option '{key}' = 'USER_INFO' needs '{fmt}.basic-auth.user-info' ('user:password').",
            keys=(key, f"{fmt}.basic-auth.user-info"),
        )
    if source == "URL" and has_user_info:
        raise KafkaOptionsError(
            f"Option '{key}' = 'URL' takes the credentials from '{fmt}.url' "
            f"(http://user:password@host); remove '{fmt}.basic-auth.user-info'.",
            keys=(key, f"{fmt}.basic-auth.user-info"),
        )


def _number(value: Any) -> Any:
    """Numbers written as text in options (``timeout = 5``) as the client expects them."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value


def default_subject(topics: Sequence[str], side: str) -> str | None:
    """Flink's default subject of a table of one topic: ``<topic>-value`` / ``<topic>-key``."""
    return f"{topics[0]}-{side}" if len(topics) == 1 else None


__all__ = ["client_config", "default_subject"]
