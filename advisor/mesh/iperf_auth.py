"""iperf3 authentication for the mesh: only our own client may use the servers a scan starts.

iperf3 (3.1+ built with OpenSSL) checks a client against ``--authorized-users-path`` (lines
``user,sha256("{user}password")``) after the client sends its credentials encrypted with the
server's RSA public key (``--rsa-public-key-path`` on the client, ``--rsa-private-key-path`` on the
server; iperf3(1), "AUTHENTICATION"). Each mesh run makes a fresh key pair and password, writes
them into the servers' and clients' private temp dirs (umask 077) and removes them with the test.
A host whose iperf3 lacks the options (no OpenSSL) runs its tests unauthenticated, and the mesh
report says so (``hosts.<name>.auth``).
"""

from __future__ import annotations

import hashlib
import secrets
import shlex
from dataclasses import dataclass

from advisor.util.host_tmp import MKTEMP

#: printed by AUTH_PROBE when the host's iperf3 can authenticate
AUTH_MARK = "STORADVISE-IPERF3-AUTH"
AUTH_PROBE = f"iperf3 --help 2>&1 | grep -q -- --rsa-public-key-path && echo {AUTH_MARK}; true"


@dataclass(frozen=True)
class IperfAuth:
    username: str
    password: str
    private_pem: str
    public_pem: str

    @classmethod
    def new(cls) -> "IperfAuth":
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
        public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        return cls("storadvise", secrets.token_hex(16), private, public)

    def users_line(self) -> str:
        digest = hashlib.sha256(("{" + self.username + "}" + self.password).encode()).hexdigest()
        return f"{self.username},{digest}\n"

    def server_files(self, d: str) -> str:
        """sh lines writing the key and users file into directory ``$d`` (already private)."""
        return _file(f"{d}/key.pem", self.private_pem) + _file(f"{d}/users.csv", self.users_line())

    def server_options(self, d: str) -> str:
        return f' --rsa-private-key-path "{d}/key.pem" --authorized-users-path "{d}/users.csv"'

    def client_env(self) -> str:
        return f"IPERF3_PASSWORD={shlex.quote(self.password)} "

    def client_options(self) -> str:
        return f' --username {shlex.quote(self.username)} --rsa-public-key-path "$ad/pub.pem"'

    def client_script(self, line: str) -> str:
        """``line`` (an iperf3 -c command using client_env/client_options) run with the public key
        in a private temp dir ``$ad``, removed afterwards; the exit status is kept."""
        return (
            f'ad=$({MKTEMP}) || exit 1\n'
            + _file('"$ad"/pub.pem', self.public_pem)
            + line + "\n"
            + 'rc=$?; rm -rf "$ad"; exit $rc\n'
        )


def supports_auth(stdout: str) -> bool:
    return AUTH_MARK in (stdout or "")


def _file(path: str, text: str) -> str:
    delim = "SA_AUTH_" + secrets.token_hex(6)
    return f"(umask 077; cat >{path} <<'{delim}'\n{text if text.endswith(chr(10)) else text + chr(10)}{delim}\n)\n"
