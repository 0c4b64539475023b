"""Debian's ``slapd`` as a private directory on a free port, its own config and database in a temporary
directory, loaded from ``tests/fakes/ldap/seed.ldif`` before it starts (``slapadd``), so it answers from
its first connection. Needs the packages ``slapd`` and ``ldap-utils`` (``scripts/test`` installs them as
root).

It speaks TLS with a certificate for 127.0.0.1 signed by a throwaway CA (``ca``, see ``tls_ca``): on
``url`` plain LDAP that StartTLS upgrades, on ``ldaps_url`` TLS from the first byte."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.fakes.openai_server import free_port
from tests.fakes.tls_ca import TestCa

SEED = Path(__file__).parent / "ldap" / "seed.ldif"
SUFFIX = "dc=example,dc=com"
CONFIG = """include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {dir}/slapd.pid
access to attrs=userPassword by self read by anonymous auth by * none
access to * by users read by * none
database mdb
maxsize 10485760
directory {dir}/db
suffix "{suffix}"
rootdn "cn=root,{suffix}"
rootpw root-pw
"""
TLS_CONFIG = """TLSCACertificateFile {ca}
TLSCertificateFile {cert}
TLSCertificateKeyFile {key}
"""


def _binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if found is None:
        raise RuntimeError(f"the test directory needs {name} (Debian packages slapd and ldap-utils)")
    return found


class LdapServer:
    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.port = free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.ldaps_port = free_port()
        self.ldaps_url = f"ldaps://127.0.0.1:{self.ldaps_port}"
        self.ca = TestCa()
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 20.0) -> LdapServer:
        (self.dir / "db").mkdir(parents=True, exist_ok=True)
        conf = self.dir / "slapd.conf"
        ca = self.dir / "ca.crt"
        ca.write_text(self.ca.pem)
        cert, key = self.ca.issue(self.dir, ["127.0.0.1"])
        conf.write_text(CONFIG.format(dir=self.dir, suffix=SUFFIX) + TLS_CONFIG.format(ca=ca, cert=cert, key=key))
        subprocess.run([_binary("slapadd"), "-f", str(conf), "-l", str(SEED)], check=True, capture_output=True)
        self._proc = subprocess.Popen(
            [_binary("slapd"), "-f", str(conf), "-h", f"{self.url}/ {self.ldaps_url}/", "-d", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout_s
        while not (self._listening(self.port) and self._listening(self.ldaps_port)):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                err = self._proc.stderr.read().decode() if self._proc.stderr and self._proc.poll() is not None else ""
                self.stop()
                raise RuntimeError(f"slapd did not start: {err}")
            time.sleep(0.05)  # polling the port: the condition itself, checked 20 times a second
        return self

    @staticmethod
    def _listening(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None
