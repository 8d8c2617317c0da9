"""SASL and TLS end to end, on a real broker with secured listeners (the embedded Kafka's
``KafkaListenerSecurity``: SASL_PLAINTEXT and SASL_SSL with SCRAM-SHA-512 and PLAIN, SSL with
client certificates required, PEM files it generates).

Every path connects with the ``properties.*`` a Flink user writes: the source, the
at-least-once and the exactly-once sink, the new-data sensor and the checks. A wrong password
or an untrusted certificate fails at the first connection with an error that names the option.
No secret shows anywhere a person or a log could see it: captured logs, the Dagster event log
and run metadata, ``repr``/``str`` of the public objects, error messages.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    build_sensor_context,
    instance_for_test,
    materialize,
)
from dagster._serdes import serialize_value

from dagster_kafka_flinklike import (
    KafkaAuthenticationError,
    KafkaOptionsError,
    KafkaTableSpec,
)
from dagster_kafka_flinklike.local import EmbeddedKafka, KafkaListenerSecurity
from dagster_kafka_flinklike.local._security import write_certificates
from dagster_kafka_flinklike.local.fetch import find_java
from dagster_kafka_flinklike.source.admin import KafkaAdmin
from tests.conftest import consume_all, produce, wait_for_topic
from tests.integration.security_location import copy, pipeline, resources, table

pytestmark = [pytest.mark.spark]

#: Every secret here holds this; nothing a person or a log sees may.
MARK = "s3cr3t"
PASSWORD = f"pw-{MARK}-{uuid.uuid4().hex[:8]}"
CASES = [
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SSL", None),
    ("SASL_SSL", "PLAIN"),
]
RECORDS = 40


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedKafka]:
    broker = EmbeddedKafka(
        tmp_path_factory.mktemp("secured-kafka"),
        security=KafkaListenerSecurity({"alice": PASSWORD}),
    )
    broker.start(timeout=180)
    try:
        yield broker
    finally:
        broker.stop()


def _properties(broker: EmbeddedKafka, protocol: str, mechanism: str | None) -> dict[str, str]:
    return broker.flink_properties(protocol, **({"mechanism": mechanism} if mechanism else {}))


def _topic(broker: EmbeddedKafka, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # PLAINTEXT: setup
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(60)
    wait_for_topic(admin, name, 2)
    return name


def _ids(broker: EmbeddedKafka, topic: str) -> list[int]:
    messages = consume_all(broker.bootstrap_servers, topic, 2)
    return sorted(json.loads(m.value())["id"] for m in messages)


def _records(first: int, count: int) -> list[tuple[None, bytes, int]]:
    return [
        (None, json.dumps({"id": i, "payload": f"p{i}"}).encode(), i % 2)
        for i in range(first, first + count)
    ]


def _without_secret(where: str, text: str) -> None:
    assert MARK not in text, f"a secret shows in {where}"
    assert PASSWORD not in text, f"the password shows in {where}"


_SCAN = """
query Scan($runId: ID!, $repo: RepositorySelector!) {
  assetNodes { assetKey { path } description metadataEntries { __typename label description
    ... on JsonMetadataEntry { jsonString } ... on TextMetadataEntry { text }
    ... on UrlMetadataEntry { url } } }
  runsOrError { ... on Runs { results { runId status runConfigYaml tags { key value } } } }
  logsForRun(runId: $runId) { ... on EventConnection { events { __typename
    ... on MessageEvent { message }
    ... on MaterializationEvent { metadataEntries { label
      ... on JsonMetadataEntry { jsonString } ... on TextMetadataEntry { text } } } } } }
  allTopLevelResourceDetailsOrError(repositorySelector: $repo) {
    ... on ResourceDetailsList { results { name description
      configFields { name description defaultValueAsJson }
      configuredValues { key value type } } } }
}
"""


def _graphql_answers(instance: DagsterInstance, setup: dict[str, Any], run_id: str) -> str:
    """What the webserver answers about the assets, resources and runs: Dagster's GraphQL
    schema over a code server that loads the secured pipeline."""
    from dagster_graphql.test.utils import (
        define_out_of_process_context,
        execute_dagster_graphql,
        infer_repository_selector,
    )

    from tests.integration import security_location

    os.environ["DKF_SECURITY_LOCATION"] = json.dumps(setup)
    try:
        with define_out_of_process_context(security_location.__file__, "defs", instance) as ctx:
            repo = infer_repository_selector(ctx)
            answer = execute_dagster_graphql(ctx, _SCAN, {"runId": run_id, "repo": repo})
    finally:
        del os.environ["DKF_SECURITY_LOCATION"]
    assert answer.data["assetNodes"] and answer.data["logsForRun"]["events"]
    resources = answer.data["allTopLevelResourceDetailsOrError"]["results"]
    assert {r["name"] for r in resources} >= {"kafka", "pyspark"}
    text = json.dumps(answer.data)
    assert "properties.sasl.jaas.config" in text  # the secret's option is shown, redacted
    return text


@pytest.mark.parametrize(("protocol", "mechanism"), CASES, ids=[f"{p}-{m}" for p, m in CASES])
def test_every_path_connects_with_the_properties_a_flink_user_writes(
    secured, spark, tmp_path, protocol, mechanism, caplog, capfd
) -> None:
    with contextlib.ExitStack() as instance_stack:
        _every_path(secured, tmp_path, protocol, mechanism, caplog, capfd, instance_stack)


def _every_path(  # type: ignore[no-untyped-def]
    secured, tmp_path, protocol, mechanism, caplog, capfd, instance_stack
) -> None:
    caplog.set_level(logging.DEBUG)
    props = _properties(secured, protocol, mechanism)
    if mechanism is not None:
        assert PASSWORD in props["properties.sasl.jaas.config"]  # the test plants the secret
    tag = f"{protocol.lower()}-{(mechanism or 'cert').lower()}-{uuid.uuid4().hex[:6]}"
    setup = {
        "properties": props,
        "source": _topic(secured, f"sec-in-{tag}"),
        "eos": _topic(secured, f"sec-eos-{tag}"),
        "alo": _topic(secured, f"sec-alo-{tag}"),
        "tag": tag,
    }
    produce(secured.bootstrap_servers, setup["source"], _records(0, RECORDS))
    eos, alo, sensor = pipeline(**setup)
    run_resources = resources()
    instance = instance_stack.enter_context(instance_for_test(temp_dir=str(tmp_path)))

    first = materialize([eos, alo], instance=instance, resources=run_resources)
    assert first.success
    assert _ids(secured, setup["eos"]) == list(range(RECORDS))
    assert _ids(secured, setup["alo"]) == list(range(RECORDS))
    check_keys = list(eos.check_keys)
    assert len(check_keys) == 4
    done = instance.event_log_storage.get_latest_asset_check_execution_by_key(check_keys)
    assert set(done) == set(check_keys)
    assert all(record.evaluation.passed for record in done.values()), done

    # The sensor sees what arrived since, through the secured listener.
    produce(secured.bootstrap_servers, setup["source"], _records(RECORDS, 6))
    context = build_sensor_context(
        instance=instance,
        resources={"kafka": run_resources["kafka"]},
        definitions=Definitions(assets=[eos, alo], sensors=[sensor], resources=run_resources),
    )
    began = time.monotonic()
    ticked = sensor(context)
    assert time.monotonic() - began < 30
    assert len(ticked.run_requests) == 1, ticked.skip_reason
    [observation] = ticked.asset_events
    assert observation.metadata["pendingRecords"].value == 6

    second = materialize([eos], instance=instance, resources=run_resources)
    assert second.success
    assert _ids(secured, setup["eos"]) == list(range(RECORDS + 6))

    # Nothing a person or a log sees holds the secret.
    logged = [serialize_value(e) for r in (first, second) for e in instance.all_logs(r.run_id)]
    _without_secret("the Dagster event log", "\n".join(logged))
    _without_secret("the captured logs", caplog.text)
    out, err = capfd.readouterr()
    _without_secret("stdout/stderr", out + err)
    for shown in (*eos.specs_by_key.values(), *run_resources.values(), sensor, eos):
        _without_secret(f"repr of {type(shown).__name__}", repr(shown) + str(shown))
    source_spec = KafkaTableSpec.from_options(
        {"connector": "kafka", "topic": "t", "format": "json", **props},
        columns=[{"name": "id", "type": "BIGINT"}],
        role="source",
    )
    _without_secret("repr of KafkaTableSpec", repr(source_spec) + str(source_spec))
    if protocol == "SASL_SSL":  # once: a code server takes a while to start
        _without_secret("GraphQL answers", _graphql_answers(instance, setup, second.run_id))


def _wrong(broker: EmbeddedKafka, case: str, tmp_path: Path) -> dict[str, str]:
    """Properties that the broker refuses (``case``), with the option that is wrong."""
    if case in ("scram", "plain"):
        props = _properties(
            broker, "SASL_PLAINTEXT", "SCRAM-SHA-512" if case == "scram" else "PLAIN"
        )
        jaas = props["properties.sasl.jaas.config"]
        props["properties.sasl.jaas.config"] = jaas.replace(PASSWORD, f"wrong-{MARK}")
        return props
    other = write_certificates(tmp_path / "other-authority")  # certificates of another CA
    props = _properties(broker, "SSL", None)
    if case == "untrusted-broker":
        props["properties.ssl.truststore.location"] = str(other / "ca.pem")
    else:
        props["properties.ssl.keystore.location"] = str(other / "client-keystore.pem")
    return props


@pytest.mark.parametrize(
    ("case", "option"),
    [
        ("scram", "properties.sasl.jaas.config"),
        ("plain", "properties.sasl.jaas.config"),
        ("untrusted-broker", "properties.ssl.truststore.location"),
        ("untrusted-client", "properties.ssl.keystore.location"),
    ],
)
def test_a_refused_login_or_certificate_fails_at_once_naming_the_option(
    secured, tmp_path, case, option
) -> None:
    props = _wrong(secured, case, tmp_path)
    admin = KafkaAdmin({k.removeprefix("properties."): v for k, v in props.items()}, timeout_s=30)
    began = time.monotonic()
    with pytest.raises(KafkaAuthenticationError) as info:
        admin.partitions(["anything"])
    assert time.monotonic() - began < 10, "a refusal waited for the timeout"
    assert option in str(info.value) and option in info.value.keys
    assert props["properties.bootstrap.servers"] in str(info.value)
    _without_secret("the error message", str(info.value))


def test_a_run_with_a_wrong_password_fails_naming_the_option_and_keeps_its_checkpoint(
    secured, spark, tmp_path
) -> None:
    props = _properties(secured, "SASL_PLAINTEXT", "SCRAM-SHA-512")
    tag = uuid.uuid4().hex[:6]
    source_topic, sink_topic = (
        _topic(secured, f"sec-bad-in-{tag}"),
        _topic(secured, f"sec-bad-{tag}"),
    )
    produce(secured.bootstrap_servers, source_topic, _records(0, 10))
    wrong = _wrong(secured, "scram", tmp_path)
    sink = table(sink_topic, props, "sink")
    asset = copy("copy_bad", table(source_topic, wrong, "source"), sink, [])
    instance = DagsterInstance.ephemeral(tempdir=str(tmp_path))
    began = time.monotonic()
    result = materialize([asset], instance=instance, resources=resources(), raise_on_error=False)
    assert not result.success
    assert time.monotonic() - began < 60
    [failure] = result.get_step_failure_events()
    text = serialize_value(failure)
    assert "KafkaAuthenticationError" in text and "properties.sasl.jaas.config" in text
    _without_secret("the failure event", text)
    assert not instance.get_latest_materialization_event(AssetKey("copy_bad"))
    assert consume_all(secured.bootstrap_servers, sink_topic, 2) == []


def _keytool() -> str:
    """The JDK's keytool, beside the java the embedded Kafka runs on."""
    return str(Path(os.path.realpath(find_java())).with_name("keytool"))


def _run(*command: str) -> None:
    if command[0] == "keytool":
        command = (_keytool(), *command[1:])
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def test_the_commands_a_jks_error_gives_make_stores_that_connect(secured, tmp_path) -> None:
    """Seed SSL examples use JKS stores: the errors say how to get what librdkafka reads, and
    following them (with a real keytool and openssl) gives stores that connect."""
    tls = secured.data_dir / "tls"
    store = "changeit-" + MARK
    truststore, keystore = tmp_path / "truststore.jks", tmp_path / "keystore.jks"
    _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", str(tls / "ca.pem"),
         "-keystore", str(truststore), "-storepass", store)  # fmt: skip
    _run("openssl", "pkcs12", "-export", "-in", str(tls / "client-keystore.pem"), "-out",
         str(tmp_path / "made.p12"), "-passout", f"pass:{store}")  # fmt: skip
    _run("keytool", "-importkeystore", "-srckeystore", str(tmp_path / "made.p12"),
         "-srcstoretype", "PKCS12", "-srcstorepass", store, "-destkeystore", str(keystore),
         "-deststoretype", "JKS", "-deststorepass", store, "-noprompt")  # fmt: skip

    props = secured.flink_properties("SSL")
    jks = {**props, "properties.ssl.truststore.location": str(truststore)}
    jks |= {"properties.ssl.keystore.location": str(keystore)}
    del jks["properties.ssl.truststore.type"], jks["properties.ssl.keystore.type"]
    messages = []
    for key in ("ssl.truststore.location", "ssl.keystore.location"):
        only = {k: v for k, v in jks.items() if "store" not in k or k.endswith(key)}
        with pytest.raises(KafkaOptionsError) as info:
            KafkaAdmin({k.removeprefix("properties."): v for k, v in only.items()})
        messages.append(str(info.value))
    assert "keytool -list -rfc -keystore truststore.jks > ca.pem" in messages[0]
    assert "keytool -importkeystore -srckeystore keystore.jks" in messages[1]

    # The commands, as the messages give them (with the store password a user types).
    with (tmp_path / "ca.pem").open("wb") as out:
        subprocess.run(
            [_keytool(), "-list", "-rfc", "-keystore", str(truststore), "-storepass", store],
            stdout=out,
            check=True,
            timeout=120,
        )
    _run("keytool", "-importkeystore", "-srckeystore", str(keystore), "-srcstorepass", store,
         "-destkeystore", str(tmp_path / "keystore.p12"), "-deststoretype", "PKCS12",
         "-deststorepass", store, "-noprompt")  # fmt: skip
    _run("openssl", "pkcs12", "-in", str(tmp_path / "keystore.p12"), "-nodes", "-out",
         str(tmp_path / "keystore.pem"), "-passin", f"pass:{store}")  # fmt: skip
    converted = {
        "bootstrap.servers": props["properties.bootstrap.servers"],
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tmp_path / "ca.pem"),
    }
    for keystore_options in (
        {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(tmp_path / "keystore.p12"),
         "ssl.keystore.password": store},
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "keystore.pem")},
    ):  # fmt: skip
        admin = KafkaAdmin({**converted, **keystore_options}, timeout_s=30)
        assert admin.metadata().brokers
