"""Secured listeners of the embedded Kafka: SASL (SCRAM-SHA-512 and PLAIN) and TLS.

Beside its PLAINTEXT listener, a broker given a :class:`KafkaListenerSecurity` opens
``SASL_PLAINTEXT``, ``SSL`` (client certificates required) and ``SASL_SSL`` listeners, with a
certificate authority, a broker certificate and a client certificate that it generates as PEM
files (the ``cryptography`` package). Its users log in with SCRAM-SHA-512 or PLAIN. Tests and
demos then connect with exactly the ``properties.*`` a Flink user writes
(:meth:`KafkaListenerSecurity.flink_properties`).
"""

from __future__ import annotations

import datetime
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EmbeddedKafkaError

#: The secured listeners, by security protocol, and the port each takes.
LISTENER_PORTS: dict[str, str] = {
    "SASL_PLAINTEXT": "sasl_port",
    "SSL": "ssl_port",
    "SASL_SSL": "sasl_ssl_port",
}
#: The SASL mechanisms the SASL listeners accept.
SASL_MECHANISMS = ("SCRAM-SHA-512", "PLAIN")
#: Files in the broker's ``tls/`` directory.
#: The client's keystore holds its key and certificate chain, as a Java PEM keystore does.
CA_FILE, BROKER_FILE, CLIENT_KEYSTORE_FILE = ("ca.pem", "broker.pem", "client-keystore.pem")
TLS_DIR = "tls"
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_VALID_DAYS = 825


def _default_users() -> dict[str, str]:
    return {"dkf": secrets.token_urlsafe(18)}


@dataclass(frozen=True, repr=False)
class KafkaListenerSecurity:
    """The secured listeners of an embedded broker and the users who may log in to them.

    Args:
        users: user name to password; each may log in with SCRAM-SHA-512 and PLAIN (one
            generated user, ``dkf``, by default). Passwords never appear in ``repr``.

    Example:
        >>> security = KafkaListenerSecurity({"alice": "alice-secret"})
        >>> security
        KafkaListenerSecurity(users=['alice'])
    """

    users: Mapping[str, str] = field(default_factory=_default_users)

    def __post_init__(self) -> None:
        if not self.users:
            raise EmbeddedKafkaError("KafkaListenerSecurity needs at least one user.")
        for name, password in self.users.items():
            if not _NAME.fullmatch(name):
                raise EmbeddedKafkaError(
                    f"User name {name[:64]!r} of the embedded Kafka must be 1 to 64 letters, "
                    "digits, '_', '.' or '-'."
                )
            if not password or any(c in password for c in '"\\\n\r;'):
                raise EmbeddedKafkaError(
                    f"The password of user {name!r} of the embedded Kafka must be non-empty, "
                    "without quotes, backslashes, semicolons or line breaks."
                )

    def __repr__(self) -> str:
        return f"KafkaListenerSecurity(users={sorted(self.users)})"

    # ------------------------------------------------------------------ the broker's side

    def server_properties(
        self, data_dir: Path, host: str, ports: Mapping[str, int]
    ) -> dict[str, str]:
        """The broker settings of the secured listeners (after the PLAINTEXT and CONTROLLER
        ones, which stay for the broker's own and the tests' administration)."""
        tls = write_certificates(data_dir / TLS_DIR)
        secured = {protocol: ports[port] for protocol, port in LISTENER_PORTS.items()}
        listeners = ",".join(f"{p}://{host}:{port}" for p, port in secured.items())
        props = {
            "listeners": f"PLAINTEXT://{host}:{ports['port']},CONTROLLER://{host}:"
            f"{ports['controller_port']},{listeners}",
            "advertised.listeners": f"PLAINTEXT://{host}:{ports['port']},{listeners}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
            + ",".join(f"{p}:{p}" for p in secured),
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls / BROKER_FILE),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls / CA_FILE),
            "listener.name.ssl.ssl.client.auth": "required",
        }
        plain_users = " ".join(f'user_{name}="{pw}"' for name, pw in sorted(self.users.items()))
        for listener in ("sasl_plaintext", "sasl_ssl"):
            props[f"listener.name.{listener}.plain.sasl.jaas.config"] = (
                f"{_LOGIN_MODULES['PLAIN']} required {plain_users};"
            )
            props[f"listener.name.{listener}.scram-sha-512.sasl.jaas.config"] = (
                f"{_LOGIN_MODULES['SCRAM-SHA-512']} required;"
            )
        return props

    def create_scram_users(self, admin: Any, timeout: float) -> None:
        """Create (or update) every user's SCRAM-SHA-512 credential through ``admin``, an
        AdminClient on the PLAINTEXT listener."""
        from confluent_kafka.admin import (
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        upserts = [
            UserScramCredentialUpsertion(name, info, password.encode())
            for name, password in self.users.items()
        ]
        futures = admin.alter_user_scram_credentials(upserts, request_timeout=timeout)
        for name, future in futures.items():
            try:
                future.result(timeout=timeout + 1)
            except Exception as exc:
                raise EmbeddedKafkaError(
                    f"Could not create the SCRAM-SHA-512 credential of user {name!r} on the "
                    f"embedded Kafka: {type(exc).__name__}."
                ) from exc

    # ------------------------------------------------------------------ the client's side

    def flink_properties(
        self,
        data_dir: Path,
        protocol: str,
        *,
        mechanism: str = "SCRAM-SHA-512",
        user: str | None = None,
    ) -> dict[str, str]:
        """The ``properties.*`` options a Flink user writes to connect to ``protocol``'s
        listener (without ``properties.bootstrap.servers``): a JAAS login for the SASL
        protocols, the PEM truststore for the TLS ones and, for ``SSL``, the client
        keystore (its key and certificate chain in one PEM file).

        Example:
            >>> s = KafkaListenerSecurity({"alice": "pw"})
            >>> s.flink_properties(Path("/k"), "SASL_PLAINTEXT", mechanism="PLAIN")[
            ...     "properties.sasl.mechanism"]
            'PLAIN'
        """
        if protocol not in LISTENER_PORTS:
            raise EmbeddedKafkaError(
                f"The embedded Kafka has no {protocol!r} listener; it has "
                f"{', '.join(LISTENER_PORTS)}."
            )
        tls = data_dir / TLS_DIR
        props = {"properties.security.protocol": protocol}
        if protocol.startswith("SASL"):
            if mechanism not in SASL_MECHANISMS:
                raise EmbeddedKafkaError(
                    f"The embedded Kafka accepts SASL mechanisms {', '.join(SASL_MECHANISMS)}, "
                    f"not {mechanism!r}."
                )
            name = user if user is not None else sorted(self.users)[0]
            password = self.users[name]
            props["properties.sasl.mechanism"] = mechanism
            props["properties.sasl.jaas.config"] = (
                f'{_LOGIN_MODULES[mechanism]} required username="{name}" password="{password}";'
            )
        if protocol.endswith("SSL"):
            props["properties.ssl.truststore.type"] = "PEM"
            props["properties.ssl.truststore.location"] = str(tls / CA_FILE)
        if protocol == "SSL":
            props["properties.ssl.keystore.type"] = "PEM"
            props["properties.ssl.keystore.location"] = str(tls / CLIENT_KEYSTORE_FILE)
        return props


def write_certificates(directory: Path) -> Path:
    """A certificate authority, a broker certificate for 127.0.0.1/localhost and a client
    certificate, as PEM files in ``directory`` (made once; kept across restarts)."""
    files = [directory / f for f in (CA_FILE, BROKER_FILE, CLIENT_KEYSTORE_FILE)]
    if all(f.is_file() for f in files):
        return directory
    try:
        from cryptography import x509  # noqa: F401
    except ImportError as exc:  # pragma: no cover - a dependency of dagster's
        raise EmbeddedKafkaError(
            "The embedded Kafka's TLS listeners need the 'cryptography' package: "
            "pip install cryptography."
        ) from exc
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _certificate("dkf embedded Kafka CA", None, server=False, ca=True)
    broker_key, broker_cert = _certificate("127.0.0.1", (ca_key, ca_cert), server=True)
    client_key, client_cert = _certificate("dkf-client", (ca_key, ca_cert), server=False)
    _write(directory / CA_FILE, _pem(ca_cert))
    _write(directory / BROKER_FILE, _pem(broker_key) + _pem(broker_cert) + _pem(ca_cert))
    _write(directory / CLIENT_KEYSTORE_FILE, _pem(client_key) + _pem(client_cert) + _pem(ca_cert))
    return directory


def _write(path: Path, data: bytes) -> None:
    path.touch(mode=0o600)
    path.write_bytes(data)


def _pem(item: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    if hasattr(item, "public_bytes"):
        return bytes(item.public_bytes(serialization.Encoding.PEM))
    return bytes(
        item.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _certificate(
    name: str, issuer: tuple[Any, Any] | None, *, server: bool, ca: bool = False
) -> tuple[Any, Any]:
    """A new EC P-256 key and its certificate, signed by ``issuer`` (or self-signed)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_key, signer_cert = issuer if issuer is not None else (key, None)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(signer_cert.subject if signer_cert is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        usage = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
        builder = builder.add_extension(usage, critical=True)
    else:
        purposes = [ExtendedKeyUsageOID.CLIENT_AUTH]
        if server:
            purposes.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
            names = [
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.DNSName("localhost"),
            ]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(purposes), critical=False)
    return key, builder.sign(signer_key, hashes.SHA256())
