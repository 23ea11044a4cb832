"""Serving TLS for ksched's HTTP servers: a context from certificate files, or a
self-signed certificate made at start (kube-scheduler's in-memory default when neither
``--tls-cert-file`` nor ``--cert-dir`` is given), and the identity of a verified client
certificate."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import socket
import ssl
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "cert_identity",
    "self_signed_hosts",
    "self_signed_pem",
    "self_signed_ssl_context",
    "server_ssl_context",
]

#: kube-scheduler's self-signed serving certificate is valid for a year, too.
SELF_SIGNED_VALIDITY = dt.timedelta(days=365)


def server_ssl_context(
    cert: str | Path, key: str | Path, client_ca: str | Path | None = None
) -> ssl.SSLContext:
    """Serving TLS; with ``client_ca`` client certificates are asked for and verified
    against it (a certificate it did not sign fails the handshake; none at all is left to
    the server to answer, so the client learns why)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert), str(key))
    if client_ca:
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(cafile=str(client_ca))
    return ctx


def self_signed_pem(hosts: Iterable[str]) -> tuple[bytes, bytes]:
    """A self-signed serving certificate and its key (PEM) for ``hosts`` (DNS names and IP
    addresses, all in the subjectAltName), valid for a year from a minute ago."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = []
    seen: set[str] = set()
    for h in hosts:
        if not h or h in seen:
            continue
        seen.add(h)
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"ksched@{int(now.timestamp())}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def self_signed_hosts(bind_address: str | None) -> list[str]:
    """What a self-signed certificate names: localhost, this host's name, loopback, and the
    bind address when it is a specific one."""
    hosts = ["localhost", socket.gethostname(), "127.0.0.1", "::1"]
    if bind_address and bind_address not in ("0.0.0.0", "::"):
        hosts.append(bind_address)
    return hosts


def self_signed_ssl_context(
    bind_address: str | None, client_ca: str | Path | None = None
) -> ssl.SSLContext:
    """``server_ssl_context`` over a fresh self-signed certificate (the files it goes
    through live only while loading, in a private directory)."""
    cert, key = self_signed_pem(self_signed_hosts(bind_address))
    with tempfile.TemporaryDirectory(prefix="ksched-tls-") as d:
        cert_path, key_path = Path(d, "tls.crt"), Path(d, "tls.key")
        cert_path.write_bytes(cert)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        return server_ssl_context(cert_path, key_path, client_ca)


def cert_identity(peercert: Any) -> tuple[str, list[str]] | None:
    """(user, groups) of a verified client certificate as kube's x509 authenticator reads
    it (``ssl.SSLSocket.getpeercert()``'s dict): the subject's CommonName (the last one, as
    Go's pkix.Name keeps) and its Organizations in order; None without a CommonName."""
    if not isinstance(peercert, dict):
        return None
    cn: str | None = None
    orgs: list[str] = []
    for rdn in peercert.get("subject", ()):
        for attr, value in rdn:
            if attr == "commonName":
                cn = value
            elif attr == "organizationName":
                orgs.append(value)
    if not cn:
        return None
    return cn, orgs
