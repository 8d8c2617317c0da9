"""The Schema Registry error classifier: which failures make a record dirty and which fail the run,
and how a task's registry failure reaches the driver."""

from __future__ import annotations

import httpx
import pytest
from confluent_kafka.schema_registry.error import OAuthTokenError, SchemaRegistryError

from dagster_kafka_flinklike.errors import (
    SchemaRegistryClientError,
    SchemaRegistryErrorKind,
    classify_registry_error,
    redacted_url,
)
from dagster_kafka_flinklike.formats import _registry

K = SchemaRegistryErrorKind


@pytest.mark.parametrize(
    ("status", "kind"),
    [(404, K.NOT_FOUND), (401, K.UNAUTHORIZED), (403, K.UNAUTHORIZED), (409, K.INCOMPATIBLE),
     (400, K.REFUSED), (422, K.REFUSED), (408, K.UNAVAILABLE), (429, K.UNAVAILABLE),
     (500, K.UNAVAILABLE), (502, K.UNAVAILABLE), (503, K.UNAVAILABLE), (504, K.UNAVAILABLE),
     (507, K.UNAVAILABLE)],
)  # fmt: skip
def test_the_registry_s_answers(status: int, kind: SchemaRegistryErrorKind) -> None:
    assert classify_registry_error(SchemaRegistryError(status, status * 100 + 1, "x")) is kind


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.ReadTimeout("timed out"),
        httpx.ConnectTimeout("timed out"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        ConnectionResetError(104, "Connection reset by peer"),
        TimeoutError("timed out"),
    ],
)
def test_transport_failures_are_unavailable(error: BaseException) -> None:
    assert classify_registry_error(error) is K.UNAVAILABLE


def test_a_refused_token_is_unauthorized_and_causes_are_followed() -> None:
    assert classify_registry_error(OAuthTokenError("no token", 401)) is K.UNAUTHORIZED
    try:
        try:
            raise SchemaRegistryError(503, 50003, "busy")
        except SchemaRegistryError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert classify_registry_error(outer) is K.UNAVAILABLE


def test_errors_of_the_data_are_no_registry_errors() -> None:
    assert classify_registry_error(ValueError("not JSON")) is None
    assert classify_registry_error(KeyError("x")) is None
    assert classify_registry_error("not an exception") is None


def test_request_raises_not_found_for_404_and_our_error_for_the_rest() -> None:
    conf = {"url": "https://svc:s3cret@sr.example.com"}

    def answer(error: Exception):
        def call() -> None:
            raise error

        return call

    missing = SchemaRegistryError(404, 40403, "Schema not found")
    with pytest.raises(_registry.SchemaNotFound, match="fetching writer schema 9"):
        _registry.request(conf, "fetching writer schema 9", answer(missing))
    with pytest.raises(SchemaRegistryClientError) as info:
        _registry.request(conf, "fetching writer schema 9", answer(httpx.ConnectError("refused")))
    assert info.value.kind is K.UNAVAILABLE
    assert str(info.value).startswith(
        "Schema Registry https://***@sr.example.com (unavailable): fetching writer schema 9 "
        "failed: ConnectError: refused."
    )
    assert "s3cret" not in str(info.value)
    with pytest.raises(SchemaRegistryClientError) as unknown:  # no registry error: still fails
        _registry.request(conf, "listing", answer(TypeError("bug")))
    assert unknown.value.kind is None


def test_a_task_s_registry_failure_is_rebuilt_on_the_driver() -> None:
    original = SchemaRegistryClientError(
        "fetching writer schema 4 failed: SchemaRegistryError: down (HTTP status code 503)",
        url="http://u:p@sr:8081",
        kind=K.UNAVAILABLE,
    )
    spark_text = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in decode\n'
        f"dagster_kafka_flinklike.errors.SchemaRegistryClientError: {original}"
    )
    wrapper = RuntimeError(spark_text)
    found = SchemaRegistryClientError.raised_in_task(wrapper)
    assert found is not None
    assert str(found) == str(original)
    assert (found.url, found.kind) == ("http://***@sr:8081", K.UNAVAILABLE)
    assert found.__cause__ is wrapper
    assert SchemaRegistryClientError.raised_in_task(RuntimeError("ValueError: other")) is None
    assert SchemaRegistryClientError.raised_in_task(original) is original


def test_redacted_url_hides_every_credential() -> None:
    assert redacted_url("http://a:b@h1:1,https://c@h2") == "http://***@h1:1,https://***@h2"
    assert redacted_url("http://h:8081/path") == "http://h:8081/path"
