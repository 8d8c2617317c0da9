"""The avro and avro-confluent options: defaults, the Schema Registry settings, Flink's subject
completion, deprecated keys, and every refusal with the option it names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dagster_kafka_flinklike.formats.avro_confluent import aligned
from dagster_kafka_flinklike.options import Column, avro_schema

from .test_options_support import DROP, build, expect_error

URL = "http://registry:8081"
CONFLUENT = {"format": "avro-confluent", "avro-confluent.url": URL}


def test_avro_defaults() -> None:
    spec = build({"format": "avro"})
    assert spec.value_format.settings == {"encoding": "binary", "timestamp_mapping.legacy": True}


def test_avro_confluent_client_settings_and_default_subjects() -> None:
    spec = build(
        {
            **CONFLUENT,
            "avro-confluent.basic-auth.credentials-source": "USER_INFO",
            "avro-confluent.basic-auth.user-info": "me:secret",
            "avro-confluent.properties.timeout": "5",
            "key.format": "avro-confluent",
            "key.avro-confluent.url": URL,
            "key.fields": "id",
        }
    )
    value, key = spec.value_format.settings, spec.key_format.settings  # type: ignore[union-attr]
    assert value["registry"] == {
        "url": URL,
        "basic.auth.user.info": "me:secret",
        "timeout": 5,
    }
    assert (value["subject"], key["subject"]) == ("orders-value", "orders-key")
    assert "me:secret" not in repr(spec)  # secrets never shown


def test_given_subject_wins_and_a_topic_list_has_no_default() -> None:
    given = build({**CONFLUENT, "avro-confluent.subject": "shop.Order"})
    assert given.value_format.settings["subject"] == "shop.Order"
    several = build({**CONFLUENT, "topic": "a;b"}, role="source")
    assert "subject" not in several.value_format.settings


def test_deprecated_flink_keys_still_work() -> None:
    spec = build(
        {
            "format": "avro-confluent",
            "avro-confluent.schema-registry.url": URL,
            "avro-confluent.schema-registry.subject": "s",
        }
    )
    assert spec.value_format.settings["url"] == URL
    assert spec.value_format.settings["subject"] == "s"


@pytest.mark.parametrize(
    ("changes", "keys", "fragment"),
    [
        ({"avro-confluent.url": DROP}, ("avro-confluent.url",), "needs the Schema Registry's URL"),
        ({"avro-confluent.url": "not a url"}, ("avro-confluent.url",), "Invalid url"),
        (
            {"avro-confluent.properties.no.such": "1"},
            ("avro-confluent.properties.no.such",),
            "Unrecognized properties: no.such",
        ),
        (
            {"avro-confluent.ssl.keystore.location": "/k.jks"},
            ("avro-confluent.ssl.keystore.location",),
            "reads PEM files, not Java keystores",
        ),
        (
            {"avro-confluent.ssl.truststore.location": "/t.jks"},
            ("avro-confluent.ssl.truststore.location",),
            "keytool -exportcert -rfc",
        ),
        (
            {"avro-confluent.ssl.truststore.password": "x"},
            ("avro-confluent.ssl.truststore.password",),
            "PEM truststores have no password",
        ),
        (
            {"avro-confluent.basic-auth.credentials-source": "JAAS"},
            ("avro-confluent.basic-auth.credentials-source",),
            "USER_INFO",
        ),
        (
            {"avro-confluent.basic-auth.credentials-source": "SASL_INHERIT"},
            ("avro-confluent.basic-auth.credentials-source",),
            "cannot reuse the Kafka client's SASL login",
        ),
        (
            {"avro-confluent.basic-auth.credentials-source": "USER_INFO"},
            ("avro-confluent.basic-auth.credentials-source", "avro-confluent.basic-auth.user-info"),
            "needs 'avro-confluent.basic-auth.user-info'",
        ),
        ({"avro-confluent.schema": "{not json"}, ("avro-confluent.schema",), "not an Avro schema"),
        ({"avro-confluent.schema": '"long"'}, ("avro-confluent.schema",), "record schema"),
        ({"avro-confluent.bogus": "1"}, ("avro-confluent.bogus",), "Unsupported option"),
    ],
)
def test_avro_confluent_refusals(changes: dict[str, Any], keys: tuple[str, ...], fragment: str):
    expect_error({**CONFLUENT, **changes}, keys, fragment)


@pytest.mark.parametrize(
    ("changes", "columns", "keys", "fragment"),
    [
        ({"avro.codec": "snappy"}, None, ("avro.codec",), "has no codec"),
        ({"avro.encoding": "xml"}, None, ("avro.encoding",), "binary"),
        (
            {},
            (Column("order-id", "BIGINT"),),
            ("format",),
            "Column or field 'order-id' cannot be an Avro field name",
        ),
        ({}, (Column("bag", "MULTISET<STRING>"),), ("format",), "cannot hold type MULTISET"),
        ({}, (Column("m", "MAP<INT, STRING>"),), ("format",), "Avro maps need STRING keys"),
    ],
)
def test_avro_refusals(changes: dict[str, Any], columns: Any, keys: tuple[str, ...], fragment: str):
    kwargs = {"columns": columns} if columns else {}
    expect_error({"format": "avro", **changes}, keys, fragment, **kwargs)


def test_an_explicit_schema_is_not_derived_from_the_columns() -> None:
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]})
    spec = build(
        {**CONFLUENT, "avro-confluent.schema": schema}, columns=(Column("order-id", "BIGINT"),)
    )
    assert spec.value_format.settings["schema"] == schema


def test_flinks_schema_derivation() -> None:
    schema = json.loads(
        avro_schema(
            [
                Column("id", "BIGINT NOT NULL"),
                Column("amount", "DECIMAL(10, 2)"),
                Column("day", "DATE NOT NULL"),
                Column("ts", "TIMESTAMP(6)"),
                Column("lts", "TIMESTAMP_LTZ(3) NOT NULL"),
                Column("tags", "ARRAY<STRING NOT NULL>"),
                Column("address", "ROW<city STRING NOT NULL>"),
            ],
            legacy=False,
        )
    )
    assert (schema["name"], schema["namespace"]) == ("record", "org.apache.flink.avro.generated")
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["id"] == "long"
    assert types["amount"] == [
        "null",
        {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
    ]
    assert types["day"] == {"type": "int", "logicalType": "date"}
    assert types["ts"] == ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]
    assert types["lts"] == {"type": "long", "logicalType": "timestamp-millis"}
    assert types["tags"] == ["null", {"type": "array", "items": "string"}]
    assert types["address"] == [
        "null",
        {
            "type": "record",
            "name": "record_address",
            "fields": [{"name": "city", "type": "string"}],
        },
    ]
    nullable = [f for f in schema["fields"] if isinstance(f["type"], list)]
    assert [f["name"] for f in nullable] == ["amount", "ts", "tags", "address"]
    assert all(f["default"] is None for f in nullable)
    assert all("default" not in f for f in schema["fields"] if f not in nullable)


def test_reader_record_names_follow_the_writer() -> None:
    reader = json.loads(avro_schema([Column("a", "ROW<b INT>")]))
    writer = {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [{"name": "a", "type": {"type": "record", "name": "Inner", "fields": []}}],
    }
    out = aligned(reader, writer)
    assert (out["name"], out["aliases"]) == ("record", ["shop.Order", "Order"])
    assert out["fields"][0]["type"][1]["aliases"] == ["shop.Inner", "Inner"]


def test_reader_records_alias_a_named_type_the_writer_uses_twice() -> None:
    """The writer's second use of a record type is its name: the reader's record for it gets
    the alias too, and the reader still defines each of its names once."""
    reader = json.loads(avro_schema([Column("ship", "ROW<city STRING>"),
                                     Column("bill", "ROW<city STRING>")]))  # fmt: skip
    address = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}
    writer = {"type": "record", "name": "Order", "namespace": "shop",
              "fields": [{"name": "ship", "type": address},
                         {"name": "bill", "type": ["null", "Address"]}]}  # fmt: skip
    out = aligned(reader, writer)
    ship, bill = (f["type"][1] for f in out["fields"])
    assert (ship["name"], ship["aliases"]) == ("record_ship", ["shop.Address", "Address"])
    assert (bill["name"], bill["aliases"]) == ("record_bill", ["shop.Address", "Address"])


@pytest.mark.parametrize(
    "url", ["http://a:8081", "https://a, http://b/", "ftp://x", "mock://", "sr:8081", "", 5]
)
def test_a_url_alone_is_checked_as_the_registry_client_checks_it(url: Any) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from dagster_kafka_flinklike.options._registry import _check_urls

    def outcome(check: Any) -> str:
        try:
            check()
        except (ValueError, TypeError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return "ok"

    client = outcome(lambda: SchemaRegistryClient({"url": url}))
    assert outcome(lambda: _check_urls(url)) == client


DEBEZIUM_AVRO = {"format": "debezium-avro-confluent", "debezium-avro-confluent.url": URL}


def test_debezium_avro_confluent_is_a_registry_changelog_format() -> None:
    """Flink's option names, the subject completed from the topic, the deprecated keys, the
    client settings; a changelog table (row kinds)."""
    spec = build({**DEBEZIUM_AVRO, "debezium-avro-confluent.properties.timeout": "5",
                  "debezium-avro-confluent.basic-auth.user-info": "me:secret"})  # fmt: skip
    settings = spec.value_format.settings
    assert spec.is_changelog
    assert settings["subject"] == "orders-value"
    assert settings["registry"] == {"url": URL, "basic.auth.user.info": "me:secret", "timeout": 5}
    old = build({"format": "debezium-avro-confluent",
                 "debezium-avro-confluent.schema-registry.url": URL,
                 "debezium-avro-confluent.schema-registry.subject": "cdc"})  # fmt: skip
    assert (old.value_format.settings["url"], old.value_format.settings["subject"]) == (URL, "cdc")


def test_debezium_avro_confluent_refusals_name_the_option() -> None:
    expect_error({"format": "debezium-avro-confluent"}, ("debezium-avro-confluent.url",),
                 "needs the Schema Registry's URL")  # fmt: skip
    expect_error({**DEBEZIUM_AVRO, "debezium-avro-confluent.ignore-parse-errors": "true"},
                 ("debezium-avro-confluent.ignore-parse-errors",),
                 "Unsupported option 'debezium-avro-confluent.ignore-parse-errors'")  # fmt: skip
    expect_error({**DEBEZIUM_AVRO, "debezium-avro-confluent.ssl.keystore.location": "k.jks"},
                 ("debezium-avro-confluent.ssl.keystore.location",), "reads PEM files")  # fmt: skip
    expect_error({**DEBEZIUM_AVRO, "debezium-avro-confluent.schema": "[1]"},
                 ("debezium-avro-confluent.schema",), "must be an Avro record schema")  # fmt: skip
    expect_error({"format": "json", "key.format": "debezium-avro-confluent",
                  "key.debezium-avro-confluent.url": URL, "key.fields": "id"},
                 ("key.format",), "is a changelog format")  # fmt: skip


def test_debezium_avro_confluent_schema_must_be_the_envelope() -> None:
    from dagster_kafka_flinklike.errors import KafkaOptionsError
    from dagster_kafka_flinklike.formats import debezium_avro

    not_envelope = json.dumps({"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}]})  # fmt: skip
    spec = build({**DEBEZIUM_AVRO, "debezium-avro-confluent.schema": not_envelope})
    with pytest.raises(KafkaOptionsError, match="fields 'before', 'after' and 'op'") as info:
        debezium_avro.FORMAT.decode_changelog_stages(None, [Column("id", "BIGINT")], [],
                                              spec.value_format)  # fmt: skip
    assert info.value.keys == ("debezium-avro-confluent.schema",)
