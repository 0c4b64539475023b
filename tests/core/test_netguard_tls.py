"""HTTPS through the guard: the connection goes to the checked address, yet SNI and the certificate check
use the URL's host name (a certificate for ``localhost`` is accepted for ``https://localhost``, and refused
for ``https://127.0.0.1`` although both reach the same socket)."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agentloft.core import netguard
from agentloft.core.netguard import AllowList, NetError
from tests.tools.types.local_server import LocalWeb


def self_signed(directory: Path, name: str) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


@pytest.fixture(scope="module")
def tls_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalWeb, ssl.SSLContext]]:
    cert, key = self_signed(tmp_path_factory.mktemp("tls"), "localhost")
    web = LocalWeb(tls=(cert, key))
    web.server.start()
    yield web, ssl.create_default_context(cafile=cert)
    web.server.stop()


async def test_https_keeps_the_name_for_sni_and_certificate(tls_web: tuple[LocalWeb, ssl.SSLContext]) -> None:
    web, trust = tls_web
    resp = await netguard.request("GET", f"https://localhost:{web.port}/echo", allow=AllowList.parse(["localhost"]),
                                  verify=trust)
    assert resp.ok and resp.json_body()["headers"]["host"] == f"localhost:{web.port}"


async def test_certificate_is_checked_against_the_url_host(tls_web: tuple[LocalWeb, ssl.SSLContext]) -> None:
    web, trust = tls_web
    with pytest.raises(NetError, match=r"CERTIFICATE_VERIFY_FAILED"):
        await netguard.request("GET", f"https://127.0.0.1:{web.port}/echo", allow=AllowList.parse(["127.0.0.1"]),
                               verify=trust)


async def test_untrusted_certificate_is_refused(tls_web: tuple[LocalWeb, ssl.SSLContext]) -> None:
    web, _ = tls_web
    with pytest.raises(NetError, match="CERTIFICATE_VERIFY_FAILED"):
        await netguard.request("GET", f"https://localhost:{web.port}/echo", allow=AllowList.parse(["localhost"]))
