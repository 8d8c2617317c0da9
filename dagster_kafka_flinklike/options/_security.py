"""Java client security settings Flink users write, translated to librdkafka's.

``sasl.jaas.config`` login modules become ``sasl.username``/``sasl.password`` (or the Kerberos
and OAUTHBEARER settings); PEM truststores and keystores become ``ssl.ca.location`` and
``ssl.certificate.location``/``ssl.key.location``; PKCS#12 keystores pass through. Java
keystores librdkafka cannot read are an error that says what to use instead. No message ever
contains a setting's value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import KafkaOptionsError

Put = Callable[[str, str, str], None]  # (librdkafka key, value, origin key)

_JAAS = re.compile(
    r"\s*(?P<module>[A-Za-z_$][\w$.]*)\s+(?P<flag>required|requisite|sufficient|optional)\b"
    r"(?P<opts>.*?)\s*;?\s*",
    re.S | re.I,
)
_JAAS_OPTION = re.compile(
    r"\s*(?P<key>[A-Za-z_][\w.-]*)\s*=\s*(?:\\\"(?P<escaped>.*?)\\\""
    r"|\"(?P<quoted>(?:[^\"\\]|\\.)*)\"|(?P<bare>[^\s\";]+))",
    re.S,
)
_MECHANISMS = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "Krb5LoginModule": ("GSSAPI",),
    "OAuthBearerLoginModule": ("OAUTHBEARER",),
}


def _parse_jaas(name: str, text: str) -> tuple[str, dict[str, str]]:
    m = _JAAS.fullmatch(text)
    options: dict[str, str] = {}
    rest = m.group("opts") if m else ""
    while m and rest.strip():
        om = _JAAS_OPTION.match(rest)
        if om is None:
            m = None
            break
        if om.group("quoted") is not None:
            value = re.sub(r"\\(.)", r"\1", om.group("quoted"), flags=re.S)
        else:
            value = om.group("escaped") if om.group("escaped") is not None else om.group("bare")
        options[om.group("key")] = value
        rest = rest[om.end() :]
    if m is None:
        raise KafkaOptionsError(
            f"Option '{name}' is not a JAAS login module configuration of the form "
            f'\'<LoginModule class> required username="..." password="...";\'.',
            keys=(name,),
        )
    return m.group("module").rsplit(".", 1)[-1], options


def translate_jaas(props: dict[str, str], put: Put, name: Callable[[str], str]) -> None:
    """Pop ``sasl.jaas.config`` from ``props`` and ``put`` its librdkafka equivalents."""
    if "sasl.jaas.config" not in props:
        return
    key = name("sasl.jaas.config")
    module, options = _parse_jaas(key, props.pop("sasl.jaas.config"))
    if module not in _MECHANISMS:
        supported = ", ".join(_MECHANISMS)
        raise KafkaOptionsError(
            f"Option '{key}' uses login module '{module[:60]}', which librdkafka cannot run. "
            f"Supported login modules: {supported}.",
            keys=(key,),
        )
    _check_mechanism(props, module, key, name)
    put("sasl.mechanism", props.pop("sasl.mechanism", "") or _MECHANISMS[module][0], key)
    if module in ("PlainLoginModule", "ScramLoginModule"):
        if options.get("tokenauth", "false").lower() == "true":
            raise KafkaOptionsError(
                f"Option '{key}' uses delegation-token authentication (tokenauth=true), which "
                f"librdkafka does not support.",
                keys=(key,),
            )
        _take(
            options,
            key,
            module,
            {"username": "sasl.username", "password": "sasl.password"},
            required=("username", "password"),
            ignore=("tokenauth",),
            put=put,
        )
    elif module == "Krb5LoginModule":
        mapping = {
            "keyTab": "sasl.kerberos.keytab",
            "principal": "sasl.kerberos.principal",
            "serviceName": "sasl.kerberos.service.name",
        }
        ignore = ("useKeyTab", "storeKey", "useTicketCache", "debug", "doNotPrompt", "renewTGT")
        _take(options, key, module, mapping, required=(), ignore=ignore, put=put)
    else:
        _oauthbearer(options, key, props, put)


def _check_mechanism(
    props: dict[str, str], module: str, key: str, name: Callable[[str], str]
) -> None:
    if "sasl.mechanisms" in props:
        props.setdefault("sasl.mechanism", props.pop("sasl.mechanisms"))
    mechanism = props.get("sasl.mechanism")
    expected = _MECHANISMS[module]
    if mechanism is None and len(expected) > 1:
        raise KafkaOptionsError(
            f"Option '{key}' uses {module}: set '{name('sasl.mechanism')}' to "
            f"{' or '.join(expected)}.",
            keys=(name("sasl.mechanism"), key),
        )
    if mechanism is not None and mechanism.strip().upper() not in expected:
        raise KafkaOptionsError(
            f"Option '{name('sasl.mechanism')}' is '{mechanism[:30]}', but '{key}' uses "
            f"{module}, which needs {' or '.join(expected)}.",
            keys=(name("sasl.mechanism"), key),
        )
    if mechanism is not None:
        props["sasl.mechanism"] = mechanism.strip().upper()


def _take(
    options: dict[str, str],
    key: str,
    module: str,
    mapping: dict[str, str],
    *,
    required: tuple[str, ...],
    ignore: tuple[str, ...],
    put: Put,
) -> None:
    missing = [o for o in required if o not in options]
    if missing:
        raise KafkaOptionsError(
            f"Option '{key}' ({module}) lacks {', '.join(missing)}.", keys=(key,)
        )
    for option, value in options.items():
        if option in mapping:
            put(mapping[option], value, key)
        elif option not in ignore:
            raise KafkaOptionsError(
                f"Option '{key}' sets '{option[:40]}' for {module}, which librdkafka cannot "
                f"honour.",
                keys=(key,),
            )


def _oauthbearer(options: dict[str, str], key: str, props: dict[str, str], put: Put) -> None:
    if "unsecuredLoginStringClaim_sub" in options:
        put("enable.sasl.oauthbearer.unsecure.jwt", "true", key)
        put(
            "sasl.oauthbearer.config",
            f"principal={options.pop('unsecuredLoginStringClaim_sub')}",
            key,
        )
    elif "clientId" in options:
        put("sasl.oauthbearer.method", "oidc", key)
    mapping = {
        "clientId": "sasl.oauthbearer.client.id",
        "clientSecret": "sasl.oauthbearer.client.secret",
        "scope": "sasl.oauthbearer.scope",
    }
    _take(options, key, "OAuthBearerLoginModule", mapping, required=(), ignore=(), put=put)


#: How to get what librdkafka reads out of the Java stores (shown in the errors).
_TRUSTSTORE_TO_PEM = {
    "JKS": "keytool -list -rfc -keystore truststore.jks > ca.pem",
    "PKCS12": "openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem",
}
_KEYSTORE_TO_PKCS12 = (
    "keytool -importkeystore -srckeystore keystore.jks -destkeystore keystore.p12 "
    "-deststoretype PKCS12"
)
_PKCS12_TO_PEM = "then openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem"
_PEM_SUFFIXES = (".pem", ".crt", ".cer", ".key")
_STORE_TYPES = ("PEM", "JKS", "PKCS12")


def _store_type(location: str | None, declared: str | None, type_key: str) -> str:
    if declared is not None:
        kind = declared.strip().upper()
        if kind not in _STORE_TYPES:
            raise KafkaOptionsError(
                f"Option '{type_key}' must be one of {', '.join(_STORE_TYPES)}.", keys=(type_key,)
            )
        return kind
    lowered = (location or "").lower()
    if lowered.endswith(_PEM_SUFFIXES):
        return "PEM"
    return "PKCS12" if lowered.endswith((".p12", ".pfx")) else "JKS"


def _local(location: str, key: str) -> str:
    if "://" in location:
        raise KafkaOptionsError(
            f"Option '{key}' names a remote location; librdkafka reads local files only: copy "
            f"the file to the machines that run the job and give its local path.",
            keys=(key,),
        )
    return location


def translate_ssl(props: dict[str, str], put: Put, name: Callable[[str], str]) -> None:
    """Pop the Java truststore/keystore settings and ``put`` librdkafka's equivalents."""
    algorithm = props.pop("ssl.endpoint.identification.algorithm", None)
    if algorithm is not None:
        key = name("ssl.endpoint.identification.algorithm")
        value = algorithm.strip().lower() or "none"
        if value not in ("none", "https"):
            raise KafkaOptionsError(
                f"Option '{key}' must be 'https' or '' (no hostname verification).", keys=(key,)
            )
        put("ssl.endpoint.identification.algorithm", value, key)
    location = props.pop("ssl.truststore.location", None)
    kind = _store_type(
        location, props.pop("ssl.truststore.type", None), name("ssl.truststore.type")
    )
    props.pop("ssl.truststore.password", None)  # a PEM CA file has no password
    if "ssl.truststore.certificates" in props:
        put(
            "ssl.ca.pem",
            props.pop("ssl.truststore.certificates"),
            name("ssl.truststore.certificates"),
        )
    if location is not None:
        key = name("ssl.truststore.location")
        if kind != "PEM":
            raise KafkaOptionsError(
                f"Option '{key}' points to a {kind} truststore, which librdkafka cannot read. "
                f"Export the CA certificate(s) to a PEM file ({_TRUSTSTORE_TO_PEM.get(kind, '')}"
                f") and set '{key}' to it with '{name('ssl.truststore.type')}' = 'PEM' (or set "
                f"'{name('ssl.ca.location')}').",
                keys=(key,),
            )
        put("ssl.ca.location", _local(location, key), key)
    _translate_keystore(props, put, name)


def _translate_keystore(props: dict[str, str], put: Put, name: Callable[[str], str]) -> None:
    location = props.pop("ssl.keystore.location", None)
    kind = _store_type(location, props.pop("ssl.keystore.type", None), name("ssl.keystore.type"))
    password = props.pop("ssl.keystore.password", None)
    if "ssl.keystore.key" in props:
        put("ssl.key.pem", props.pop("ssl.keystore.key"), name("ssl.keystore.key"))
    if "ssl.keystore.certificate.chain" in props:
        put(
            "ssl.certificate.pem",
            props.pop("ssl.keystore.certificate.chain"),
            name("ssl.keystore.certificate.chain"),
        )
    if location is None:
        return
    key = name("ssl.keystore.location")
    location = _local(location, key)
    if kind == "JKS":
        raise KafkaOptionsError(
            f"Option '{key}' points to a JKS keystore, which librdkafka cannot read. Convert "
            f"it to PKCS#12 ({_KEYSTORE_TO_PKCS12}) and set '{name('ssl.keystore.type')}' = "
            f"'PKCS12', or to one PEM file of key and certificates ({_PKCS12_TO_PEM}) with "
            f"'{name('ssl.keystore.type')}' = 'PEM'.",
            keys=(key,),
        )
    if kind == "PKCS12":
        put("ssl.keystore.location", location, key)
        if password is not None:
            put("ssl.keystore.password", password, name("ssl.keystore.password"))
    else:
        put("ssl.certificate.location", location, key)
        put("ssl.key.location", location, key)
