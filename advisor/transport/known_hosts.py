"""known_hosts for the SSH transport: reading entries for a host (hashed entries, ``[host]:port``,
patterns and negations, as OpenSSH matches them), appending a newly trusted key, and the key labels
and fingerprints printed in errors (advisor/transport/ssh.py verifies host keys with these)."""

from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import hmac
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import paramiko

from advisor.transport.base import TransportError

_KEY_LABELS = {"ssh-ed25519": "ED25519", "ssh-rsa": "RSA", "ssh-dss": "DSA"}
_known_hosts_lock = threading.Lock()


def key_label(key_type: str) -> str:
    if key_type.startswith("ecdsa-"):
        return "ECDSA"
    return _KEY_LABELS.get(key_type, key_type.upper())


def fingerprint(blob: bytes) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key blob."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def describe_key(key_type: str, blob: bytes) -> str:
    return f"{key_label(key_type)} {fingerprint(blob)}"


# --------------------------------------------------------------------------------------------
# known_hosts


@dataclass
class KnownKey:
    key_type: str
    blob: bytes
    path: Path
    line: int
    revoked: bool = False


def _host_field_matches(field_: str, name: str) -> bool:
    if field_.startswith("|1|"):
        try:
            return hmac.compare_digest(paramiko.HostKeys.hash_host(name, field_), field_)
        except (binascii.Error, AssertionError, ValueError):
            return False
    matched = False
    for pat in field_.split(","):
        neg = pat.startswith("!")
        pat = pat[1:] if neg else pat
        if _glob(pat, name):
            if neg:
                return False
            matched = True
    return matched


def _glob(pattern: str, name: str) -> bool:
    """OpenSSH host pattern: ``*`` and ``?`` are wildcards, everything else (``[``, ``]``) literal."""
    if "*" not in pattern and "?" not in pattern:
        return pattern.lower() == name.lower()
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, name, re.IGNORECASE) is not None


def read_known_hosts(path: Path, name: str) -> list[KnownKey]:
    """Entries of ``path`` for ``name`` (``host`` or ``[host]:port``); plain, hashed, wildcard."""
    out: list[KnownKey] = []
    try:
        text = Path(path).read_text(errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return out
    except OSError as e:
        raise TransportError(f"known_hosts {path}: cannot read: {e.strerror or e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        marker = None
        if parts[0].startswith("@"):
            marker, parts = parts[0], parts[1:]
            if marker not in ("@revoked",):
                continue  # @cert-authority: certificates are not used here
        if len(parts) < 3:
            continue
        try:
            blob = base64.b64decode(parts[2], validate=True)
        except (binascii.Error, ValueError):
            continue
        if marker == "@revoked" or _host_field_matches(parts[0], name):
            out.append(KnownKey(parts[1], blob, Path(path), n, revoked=marker == "@revoked"))
    return out


def append_known_host(path: Path, name: str, key_type: str, blob: bytes) -> None:
    """Append ``name key_type base64`` to ``path`` (created 0600, its dir 0700, if missing)."""
    path = Path(path)
    with _known_hosts_lock:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                size = f.seek(0, os.SEEK_END)
                prefix = b""
                if size:
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        prefix = b"\n"
                f.write(prefix + f"{name} {key_type} {base64.b64encode(blob).decode()}\n".encode())
                f.flush()
                os.fsync(f.fileno())
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
