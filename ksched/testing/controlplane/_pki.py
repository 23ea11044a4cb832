"""The cluster CA kube-apiserver trusts for client certificates (``--client-ca-file``), and
the client certificates it signs: what kubeadm's ``ca.crt`` and the ``client-certificate-data``
of ``scheduler.conf`` are on a real control-plane host."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._process import ControlPlaneError


def _crypto() -> Any:
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as e:  # pragma: no cover - the test extra brings it
        raise ControlPlaneError(
            "the control plane needs the 'cryptography' package for its CA "
            "(pip install 'ksched[test]')"
        ) from e
    return x509, hashes, serialization, ec, ExtendedKeyUsageOID, NameOID


def _pem_key(key: Any) -> bytes:
    _, _, serialization, _, _, _ = _crypto()
    return bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


class ClientCA:
    """A self-signed CA (P-256, a day's validity) that issues client certificates."""

    def __init__(self, cert: Any, key: Any) -> None:
        self.cert = cert
        self.key = key

    @classmethod
    def create(cls, cert_path: Path, key_path: Path, name: str = "kubernetes") -> ClientCA:
        """A new CA, written to ``cert_path`` and ``key_path`` (0600)."""
        x509, hashes, serialization, ec, _, name_oid = _crypto()
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(name_oid.COMMON_NAME, name)])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=True,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(key))
        key_path.chmod(0o600)
        return cls(cert, key)

    def issue(self, user: str, groups: Sequence[str] = ()) -> tuple[bytes, bytes]:
        """A client certificate (PEM) and its key for ``user`` (CN) in ``groups`` (O), as
        kube-apiserver's x509 authenticator reads them."""
        x509, hashes, serialization, ec, eku, name_oid = _crypto()
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(name_oid.ORGANIZATION_NAME, g) for g in groups]
        attrs.append(x509.NameAttribute(name_oid.COMMON_NAME, user))
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([eku.CLIENT_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)
