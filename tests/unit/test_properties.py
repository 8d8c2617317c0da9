"""``properties.*`` → librdkafka: pass-through, Java translations, errors and redaction."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_kafka_flinklike.options import (
    KafkaOptionsError,
    KafkaTableSpec,
    client_config,
    is_secret,
    redact,
    translate_properties,
)
from dagster_kafka_flinklike.options._librdkafka import LIBRDKAFKA_PROPERTIES

from .test_options_support import BASE

SECRET = 'pa55-Wörd"x'
PLAIN = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
    f'password="{SECRET.replace(chr(34), chr(92) + chr(34))}";'
)
SCRAM = (
    "org.apache.flink.kafka.shaded.org.apache.kafka.common.security.scram.ScramLoginModule "
    'required username="bob" password="hunter2";'
)


def test_plain_jaas_becomes_username_and_password() -> None:
    config = client_config(
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN},
        role="producer",
    )
    assert config["sasl.username"] == "alice"
    assert config["sasl.password"] == SECRET
    assert config["sasl.mechanism"] == "PLAIN"
    assert config["security.protocol"] == "sasl_ssl"
    assert "sasl.jaas.config" not in config


@pytest.mark.parametrize(
    ("jaas", "user", "password"),
    [
        (SCRAM, "bob", "hunter2"),
        ('x.ScramLoginModule required username=\\"u\\" password=\\"p\\";', "u", "p"),
        ("x.ScramLoginModule required username=xx password=yy;", "xx", "yy"),
        ('x.ScramLoginModule   REQUIRED\n username = "a b"\n password = "c;d" ;', "a b", "c;d"),
        ('x.ScramLoginModule required username="u" password="p"', "u", "p"),
        ('x.ScramLoginModule required username="u" password="" tokenauth=false;', "u", ""),
    ],
)
def test_scram_jaas_spellings(jaas: str, user: str, password: str) -> None:
    config = client_config({"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas})
    assert (config["sasl.username"], config["sasl.password"]) == (user, password)
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"


def test_mechanism_defaults_to_the_login_module_when_unambiguous() -> None:
    assert client_config({"sasl.jaas.config": PLAIN})["sasl.mechanism"] == "PLAIN"
    config = client_config(
        {
            "sasl.jaas.config": "a.Krb5LoginModule required useKeyTab=true "
            'keyTab="/etc/k.keytab" principal="kafka/h@R" serviceName="kafka";'
        }
    )
    assert config["sasl.mechanism"] == "GSSAPI"
    assert config["sasl.kerberos.keytab"] == "/etc/k.keytab"
    assert config["sasl.kerberos.principal"] == "kafka/h@R"
    assert config["sasl.kerberos.service.name"] == "kafka"


def test_oauthbearer_login_modules() -> None:
    oidc = client_config(
        {
            "sasl.jaas.config": 'x.OAuthBearerLoginModule required clientId="c" clientSecret="s" '
            'scope="kafka";',
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        }
    )
    assert oidc["sasl.oauthbearer.method"] == "oidc"
    assert oidc["sasl.oauthbearer.client.secret"] == "s"
    assert oidc["sasl.mechanism"] == "OAUTHBEARER"
    unsecured = client_config(
        {
            "sasl.jaas.config": "x.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="alice";'
        }
    )
    assert unsecured["enable.sasl.oauthbearer.unsecure.jwt"] is True
    assert unsecured["sasl.oauthbearer.config"] == "principal=alice"


@pytest.mark.parametrize(
    ("props", "keys", "fragment"),
    [
        (
            {"sasl.jaas.config": "not jaas at all"},
            ("properties.sasl.jaas.config",),
            "is not a JAAS login module configuration",
        ),
        (
            {"sasl.jaas.config": 'x.PlainLoginModule required username="u" password="p'},
            ("properties.sasl.jaas.config",),
            "JAAS",
        ),
        (
            {"sasl.jaas.config": 'x.PlainLoginModule maybe username="u";'},
            ("properties.sasl.jaas.config",),
            "JAAS",
        ),
        (
            {"sasl.jaas.config": 'com.corp.CustomLoginModule required user="u";'},
            ("properties.sasl.jaas.config",),
            "'CustomLoginModule', which librdkafka cannot run",
        ),
        (
            {"sasl.jaas.config": 'x.PlainLoginModule required username="u";'},
            ("properties.sasl.jaas.config",),
            "lacks password",
        ),
        (
            {"sasl.jaas.config": PLAIN.replace(";", " extra=1;")},
            ("properties.sasl.jaas.config",),
            "sets 'extra' for PlainLoginModule",
        ),
        (
            {"sasl.jaas.config": SCRAM},
            ("properties.sasl.mechanism", "properties.sasl.jaas.config"),
            "SCRAM-SHA-256 or SCRAM-SHA-512",
        ),
        (
            {"sasl.jaas.config": SCRAM, "sasl.mechanism": "PLAIN"},
            ("properties.sasl.mechanism", "properties.sasl.jaas.config"),
            "needs SCRAM-SHA-256",
        ),
        (
            {
                "sasl.jaas.config": SCRAM.replace(";", " tokenauth=true;"),
                "sasl.mechanism": "SCRAM-SHA-256",
            },
            ("properties.sasl.jaas.config",),
            "delegation-token",
        ),
        (
            {"sasl.jaas.config": PLAIN, "sasl.username": "mallory"},
            ("properties.sasl.jaas.config", "properties.sasl.username"),
            "differently",
        ),
        (
            {"sasl.jaas.config": "x.OAuthBearerLoginModule required foo=1;"},
            ("properties.sasl.jaas.config",),
            "sets 'foo'",
        ),
    ],
)
def test_jaas_errors(props: dict[str, str], keys: tuple[str, ...], fragment: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties(props)
    assert set(info.value.keys) == set(keys)
    assert fragment in str(info.value)
    assert SECRET not in str(info.value) and "hunter2" not in str(info.value)


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (
            {"ssl.endpoint.identification.algorithm": ""},
            {"ssl.endpoint.identification.algorithm": "none"},
        ),
        (
            {"ssl.endpoint.identification.algorithm": "HTTPS"},
            {"ssl.endpoint.identification.algorithm": "https"},
        ),
        (
            {"ssl.truststore.location": "/certs/ca.pem", "ssl.truststore.type": "PEM"},
            {"ssl.ca.location": "/certs/ca.pem"},
        ),
        (
            {"ssl.truststore.location": "/certs/ca.crt", "ssl.truststore.password": "x"},
            {"ssl.ca.location": "/certs/ca.crt"},
        ),
        (
            {"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"},
            {"ssl.ca.pem": "-----BEGIN CERTIFICATE-----"},
        ),
        (
            {
                "ssl.keystore.location": "/certs/client.pem",
                "ssl.keystore.type": "pem",
                "ssl.key.password": "k",
            },
            {
                "ssl.certificate.location": "/certs/client.pem",
                "ssl.key.location": "/certs/client.pem",
                "ssl.key.password": "k",
            },
        ),
        (
            {"ssl.keystore.location": "/certs/client.p12", "ssl.keystore.password": "pw"},
            {"ssl.keystore.location": "/certs/client.p12", "ssl.keystore.password": "pw"},
        ),
        (
            {"ssl.keystore.location": "/certs/client", "ssl.keystore.type": "PKCS12"},
            {"ssl.keystore.location": "/certs/client"},
        ),
        (
            {"ssl.keystore.key": "-----BEGIN KEY-----", "ssl.keystore.certificate.chain": "C"},
            {"ssl.key.pem": "-----BEGIN KEY-----", "ssl.certificate.pem": "C"},
        ),
        ({"ssl.ca.location": "/ca.pem"}, {"ssl.ca.location": "/ca.pem"}),
        ({"ssl.truststore.type": "JKS"}, {}),
    ],
)
def test_ssl_translations(props: dict[str, str], expected: dict[str, str]) -> None:
    assert translate_properties(props) == expected


@pytest.mark.parametrize(
    ("props", "key", "fragment"),
    [
        (
            {"ssl.truststore.location": "/flink/usrlib/kafka.client.truststore.jks"},
            "properties.ssl.truststore.location",
            "JKS truststore, which librdkafka cannot read",
        ),
        (
            {"ssl.truststore.location": "/t.p12"},
            "properties.ssl.truststore.location",
            "PKCS12 truststore",
        ),
        (
            {"ssl.truststore.location": "/t", "ssl.truststore.type": "PKCS12"},
            "properties.ssl.truststore.location",
            "set 'properties.ssl.ca.location'",
        ),
        (
            {"ssl.truststore.location": "/t.pem", "ssl.truststore.type": "BCFKS"},
            "properties.ssl.truststore.type",
            "PEM, JKS, PKCS12",
        ),
        (
            {"ssl.keystore.location": "/flink/usrlib/kafka.client.keystore.jks"},
            "properties.ssl.keystore.location",
            "JKS keystore",
        ),
        (
            {"ssl.keystore.location": "/k"},
            "properties.ssl.keystore.location",
            "keytool -importkeystore -srckeystore keystore.jks",
        ),
        (
            {"ssl.truststore.location": "obs://bucket/ca.pem"},
            "properties.ssl.truststore.location",
            "remote location",
        ),
        (
            {"ssl.endpoint.identification.algorithm": "ldap"},
            "properties.ssl.endpoint.identification.algorithm",
            "'https' or ''",
        ),
    ],
)
def test_ssl_errors(props: dict[str, str], key: str, fragment: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties(props)
    assert info.value.keys == (key,)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("interceptor.classes", "interceptors"),
        ("partitioner.class", "'sink.partitioner'"),
        ("sasl.login.callback.handler.class", "sasl.oauthbearer"),
        ("security.providers", "OpenSSL"),
        ("metric.reporters", "metadata"),
        ("config.providers", "EnvVar"),
        ("ssl.protocol", "TLS"),
        ("ssl.enabled.protocols", "TLS"),
        ("ssl.engine.factory.class", "OpenSSL"),
        ("value.subject.name.strategy.class", "Java classes"),
        ("my.custom.classes", "Java classes"),
    ],
)
def test_java_only_settings_are_errors_naming_the_option(name: str, hint: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties({name: "com.example.X"})
    assert info.value.keys == (f"properties.{name}",)
    assert f"'properties.{name}'" in str(info.value)
    assert hint in str(info.value)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("bootstrap.server", "bootstrap.servers"),
        ("groupid", "group.id"),
        ("auto.offset.rest", "auto.offset.reset"),
        ("connector.auth.open", None),
    ],
)
def test_unknown_properties(name: str, suggestion: str | None) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties({name: "x"})
    assert info.value.keys == (f"properties.{name}",)
    if suggestion:
        assert f"did you mean '{suggestion}'" in str(info.value)


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"receive.buffer.bytes": "-1"}, {"socket.receive.buffer.bytes": "0"}),
        ({"send.buffer.bytes": "131072"}, {"socket.send.buffer.bytes": "131072"}),
        ({"buffer.memory": "33554432"}, {"queue.buffering.max.kbytes": "32768"}),
        ({"max.request.size": "2000000"}, {"message.max.bytes": "2000000"}),
        ({"fetch.max.wait.ms": "100"}, {"fetch.wait.max.ms": "100"}),
        ({"auto.offset.reset": "none"}, {"auto.offset.reset": "error"}),
        ({"auto.offset.reset": "EARLIEST"}, {"auto.offset.reset": "earliest"}),
        ({"acks": "all"}, {"acks": "-1"}),
        ({"acks": "1"}, {"acks": "1"}),
        ({"isolation.level": "read_uncommitted"}, {"isolation.level": "read_uncommitted"}),
        ({"enable.idempotence": "False"}, {"enable.idempotence": "false"}),
        ({"linger.ms": "5.5"}, {"linger.ms": "5.5"}),
        ({"compression.type": "zstd"}, {"compression.type": "zstd"}),
        ({"debug": "broker, topic"}, {"debug": "broker,topic"}),
        ({"allow.auto.create.topics": "false"}, {"allow.auto.create.topics": "false"}),
        ({"key.deserializer": "org.X"}, {}),
        ({"value.serializer": "org.X"}, {}),
        ({"max.block.ms": "1000"}, {}),
        ({"partition.discovery.interval.ms": "10000"}, {}),
        ({"client.id.prefix": "p"}, {}),
        ({"transactional.id": "t"}, {}),
    ],
)
def test_pass_through_and_renames(props: dict[str, str], expected: dict[str, str]) -> None:
    assert translate_properties(props) == expected


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("enable.idempotence", "yes", "'true' or 'false'"),
        ("linger.ms", "-1", "a number in [0, 900000]"),
        ("linger.ms", "soon", "a number"),
        ("message.max.bytes", "10", "[1000, 1000000000]"),
        ("auto.offset.reset", "oldest", "one of smallest, earliest"),
        ("security.protocol", "TLS", "one of plaintext, ssl"),
        ("debug", "everything", "comma-separated list"),
        ("receive.buffer.bytes", "lots", "a number"),
        ("acks", "most", "a number in [-1, 1000]"),
    ],
)
def test_bad_values_name_the_option(name: str, value: str, fragment: str) -> None:
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties({name: value})
    assert info.value.keys == (f"properties.{name}",)
    assert fragment in str(info.value) and repr(value) in str(info.value)


def test_bad_secret_values_are_never_shown() -> None:
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties({"sasl.oauthbearer.assertion.claim.exp.seconds": "s3cr3t"})
    assert "s3cr3t" in str(info.value)  # not a secret setting: shown
    with pytest.raises(KafkaOptionsError) as info:
        translate_properties({"ssl.keystore.password": "x", "ssl.keystore.location": "/k.jks"})
    assert "'x'" not in str(info.value)


def test_roles_keep_only_their_settings_and_consumers_never_auto_commit() -> None:
    props = {
        "bootstrap.servers": "b:9092",
        "group.id": "g",
        "acks": "all",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "true",
        "client.id": "c",
    }
    consumer = client_config(props, role="consumer")
    assert consumer == {
        "bootstrap.servers": "b:9092",
        "group.id": "g",
        "client.id": "c",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "isolation.level": "read_committed",
    }
    assert client_config(props, role="producer") == {
        "bootstrap.servers": "b:9092",
        "acks": "-1",
        "client.id": "c",
    }
    assert client_config(props, role="admin") == {"bootstrap.servers": "b:9092", "client.id": "c"}
    assert client_config({"isolation.level": "read_uncommitted"})["isolation.level"] == (
        "read_uncommitted"
    )
    with pytest.raises(KafkaOptionsError, match="role must be"):
        client_config(props, role="reader")


def test_key_prefix_names_options_in_messages() -> None:
    with pytest.raises(KafkaOptionsError) as info:
        client_config({"interceptor.classes": "x"}, key_prefix="")
    assert info.value.keys == ("interceptor.classes",)


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("sasl.password", True),
        ("sasl.jaas.config", True),
        ("ssl.key.password", True),
        ("ssl.keystore.password", True),
        ("ssl.truststore.password", True),
        ("sasl.oauthbearer.client.secret", True),
        ("ssl.key.pem", True),
        ("ssl.keystore.key", True),
        ("sasl.oauthbearer.config", True),
        ("SASL.PASSWORD", True),
        ("ssl.ca.location", False),
        ("sasl.username", False),
        ("bootstrap.servers", False),
        ("ssl.key.location", False),
        ("sasl.oauthbearer.assertion.private.key.passphrase", True),
    ],
)
def test_is_secret(key: str, secret: bool) -> None:
    assert is_secret(key) is secret


def test_redaction_everywhere_a_spec_can_be_shown() -> None:
    options: dict[str, Any] = {
        **BASE,
        "properties.sasl.mechanism": "PLAIN",
        "properties.sasl.jaas.config": PLAIN,
        "properties.ssl.key.password": "keypw",
    }
    spec = KafkaTableSpec.from_options(options)
    shown = [repr(spec), str(spec), str(spec.describe())]
    for text in shown:
        assert SECRET not in text and "keypw" not in text and "alice" not in text
    assert spec.describe()["properties.sasl.jaas.config"] == "******"
    assert spec.describe()["properties.sasl.mechanism"] == "PLAIN"
    assert redact({"sasl.password": "p", "a": "b"}) == {"sasl.password": "******", "a": "b"}


def test_errors_from_a_table_with_secrets_do_not_leak_them() -> None:
    options = {**BASE, "properties.sasl.jaas.config": PLAIN, "properties.sasl.mechanism": "X"}
    with pytest.raises(KafkaOptionsError) as info:
        KafkaTableSpec.from_options(options)
    assert SECRET not in str(info.value) and "alice" not in str(info.value)


def _installed_librdkafka_properties() -> dict[str, str]:
    import ctypes
    import glob
    import os
    import tempfile

    import confluent_kafka

    libs = glob.glob(
        os.path.join(
            os.path.dirname(confluent_kafka.__file__),
            "..",
            "confluent_kafka.libs",
            "librdkafka*.so*",
        )
    )
    if not libs:
        pytest.skip("the installed confluent-kafka has no bundled librdkafka to inspect")
    try:
        lib, libc = ctypes.CDLL(libs[0]), ctypes.CDLL("libc.so.6")
    except OSError as exc:
        pytest.skip(f"cannot load librdkafka or libc: {exc}")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_conf_properties_show.argtypes = [ctypes.c_void_p]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "props.txt").encode()
        handle = libc.fopen(path, b"w")
        lib.rd_kafka_conf_properties_show(handle)
        libc.fclose(handle)
        with open(path, encoding="utf-8") as dump:
            text = dump.read()
    rows = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 6 and parts[1] in ("*", "C", "P") and "dedicated API" not in parts[5]:
            rows[parts[0]] = parts[1]
    return rows


def test_librdkafka_table_matches_the_installed_library() -> None:
    installed = _installed_librdkafka_properties()
    assert set(LIBRDKAFKA_PROPERTIES) == set(installed)
    for name, scope in installed.items():
        assert LIBRDKAFKA_PROPERTIES[name][0] in (scope, "*"), name


def test_boolean_properties_reach_confluent_kafka_as_bools() -> None:
    from confluent_kafka import Producer

    config = client_config(
        {"bootstrap.servers": "127.0.0.1:9", "delivery.report.only.error": "TRUE"},
        role="producer",
    )
    assert config["delivery.report.only.error"] is True
    Producer(config).flush(0)  # confluent-kafka refuses the string 'true' for this one
