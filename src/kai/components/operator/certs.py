"""The webhooks' TLS: a CA the operator creates and rotates, and the serving certificate it signs.

Kept in two Secrets of the install namespace: the CA (``kai-webhook-ca``: ``tls.crt``, ``tls.key``) and the
serving pair the admission pods mount (``tls.crt``, ``tls.key``, ``ca.crt``). The webhook configurations'
``caBundle`` holds the current CA and, for a rotation's overlap, the previous one, so a server still presenting a
certificate of the old CA is trusted until its pods pick up the new Secret.

- the CA lives ``CA_DAYS`` and is replaced ``RENEW_DAYS`` before it expires;
- the serving certificate lives ``SERVING_DAYS``, is renewed ``RENEW_DAYS`` before it expires, and is re-issued
  at once when the CA changes or the service names it must cover change.
"""

import base64
import datetime
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_SECRET = "kai-webhook-ca"
CA_DAYS, SERVING_DAYS, RENEW_DAYS = 365, 90, 30


@dataclass(frozen=True)
class Pair:
    cert: bytes
    key: bytes


@dataclass(frozen=True)
class Issued:
    ca: Pair
    previous: Pair | None
    """The CA before the last rotation (its certificate only), trusted until it expires."""
    serving: Pair
    bundle: bytes
    """PEM CAs the API server trusts: the current one, then the previous one while a rotation overlaps."""


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _builder(
    subject: str, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, now: datetime.datetime, days: int
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def new_ca(now: datetime.datetime) -> Pair:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kai-webhook-ca")])
    cert = (
        _builder("kai-webhook-ca", name, key, now, CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Pair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def new_serving(ca: Pair, dns_names: list[str], now: datetime.datetime) -> Pair:
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    cert = (
        _builder(dns_names[0], ca_cert.subject, key, now, SERVING_DAYS)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Pair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _due(cert_pem: bytes, now: datetime.datetime) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem)
    return cert.not_valid_after_utc - now < datetime.timedelta(days=RENEW_DAYS)


def _covers(serving: Pair, ca: Pair, dns_names: list[str]) -> bool:
    cert = x509.load_pem_x509_certificate(serving.cert)
    if cert.issuer != x509.load_pem_x509_certificate(ca.cert).subject:
        return False
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        )
    except x509.ExtensionNotFound:
        return False
    return sorted(names) == sorted(dns_names)


def _read(data: dict[str, str], cert: str, key: str | None) -> Pair | None:
    """A pair from a Secret's base64 data, or None when it is missing or unreadable (then it is made anew)."""
    try:
        pair = Pair(base64.b64decode(data[cert]), base64.b64decode(data[key]) if key else b"")
        x509.load_pem_x509_certificate(pair.cert)
    except (KeyError, ValueError):
        return None
    return pair


def ensure(
    ca_data: dict[str, str], serving_data: dict[str, str], dns_names: list[str], now: datetime.datetime
) -> Issued:
    """What the two Secrets must hold now, given what they hold (their base64 ``data``; empty when missing)."""
    ca = _read(ca_data, "tls.crt", "tls.key")
    previous = _read(ca_data, "previous.crt", None)
    if ca is None or _due(ca.cert, now):
        previous, ca = ca, new_ca(now)
    if previous is not None and x509.load_pem_x509_certificate(previous.cert).not_valid_after_utc <= now:
        previous = None
    serving = _read(serving_data, "tls.crt", "tls.key")
    if serving is None or _due(serving.cert, now) or not _covers(serving, ca, dns_names):
        serving = new_serving(ca, dns_names, now)
    return Issued(ca, previous, serving, ca.cert + (previous.cert if previous is not None else b""))


def ca_secret_data(issued: Issued) -> dict[str, str]:
    data = {"tls.crt": issued.ca.cert, "tls.key": issued.ca.key}
    if issued.previous is not None:
        data["previous.crt"] = issued.previous.cert
    return _encode(data)


def serving_secret_data(issued: Issued) -> dict[str, str]:
    return _encode({"tls.crt": issued.serving.cert, "tls.key": issued.serving.key, "ca.crt": issued.bundle})


def _encode(data: dict[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in data.items()}
