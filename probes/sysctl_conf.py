"""sysctl configuration files: their line grammar and the order they are applied in.

The persisted value is what a reboot would set. It is computed by the rules procps-ng
``sysctl --system`` uses (sysctl.conf(5), sysctl(8); systemd-sysctl, sysctl.d(5), agrees for
the directories it shares):

1. ``*.conf`` files are collected from ``/etc/sysctl.d``, ``/run/sysctl.d``,
   ``/usr/local/lib/sysctl.d``, ``/usr/lib/sysctl.d``, ``/lib/sysctl.d`` in that order of
   precedence: a file whose basename was already seen in an earlier directory is masked (this is
   how /etc overrides a vendor file; a symlink to /dev/null masks without setting anything);
2. the remaining files are applied sorted by basename regardless of directory; for the same key,
   a later line overrides an earlier one (within a file, too);
3. ``/etc/sysctl.conf`` is applied last (procps; systemd-sysctl reads it only through the
   ``/etc/sysctl.d/99-sysctl.conf`` symlink most distributions ship, which comes to the same).

Line syntax (both tools): blank lines and lines whose first non-blank character is ``#`` or
``;`` are comments (there are no trailing comments: the rest of the line is the value); ``key =
value`` with optional blanks; a leading ``-`` means "ignore failure" and is stripped; a key whose
first separator is ``/`` uses slashes as separators and dots inside a component
(``net/ipv4/conf/eth0.100/rp_filter`` is ``net.ipv4.conf.eth0/100.rp_filter``). Values with
several fields (``tcp_rmem``) have their blanks normalised to single spaces. Lines without
``=`` are ignored as both tools do (they warn). Glob keys (systemd's ``net.ipv4.conf.*.x``) are
not expanded: they are not recorded as setting any key.
"""

from __future__ import annotations

import importlib.util
import posixpath
import sys

from pydantic import BaseModel

from advisor.util.resources import playbooks_dir


def _sysctl_keys_module():
    """playbooks/module_utils/storadvise_sysctl_keys.py: the one key <-> /proc/sys path mapping,
    shared with the Ansible module that sets the keys (a module_utils file, not a package module)."""
    name = "storadvise_sysctl_keys"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, playbooks_dir() / "module_utils" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return mod


_KEYS = _sysctl_keys_module()
SYSCTL_KEY_RE = _KEYS.SYSCTL_KEY_RE
#: dotted form of a key; a key whose first separator is ``/`` swaps ``/`` and ``.``
normalize_sysctl_key = _KEYS.normalize_sysctl_key
#: ``net.ipv4.conf.eth0/100.rp_filter`` -> ``/proc/sys/net/ipv4/conf/eth0.100/rp_filter``
sysctl_proc_path = _KEYS.sysctl_proc_path

#: precedence order: a basename seen in an earlier directory masks the later ones
SYSCTL_DIRS: tuple[str, ...] = (
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
)
SYSCTL_CONF = "/etc/sysctl.conf"

_GLOB_CHARS = set("*?[")


def normalize_sysctl_value(value: str) -> str:
    return " ".join(value.split())


class ConfigLine(BaseModel):
    """One assignment in a sysctl configuration file."""

    file: str
    lineno: int
    line: str
    key: str
    value: str


def parse_sysctl_conf(path: str, text: str) -> list[ConfigLine]:
    """The assignments of one sysctl configuration file, in order."""
    out: list[ConfigLine] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if "=" not in stripped:
            continue
        key, _, value = stripped.partition("=")
        key = key.strip()
        if key.startswith("-"):
            key = key[1:].strip()
        if not key or _GLOB_CHARS & set(key) or not SYSCTL_KEY_RE.match(key):
            continue
        out.append(
            ConfigLine(file=path, lineno=lineno, line=stripped, key=normalize_sysctl_key(key), value=normalize_sysctl_value(value))
        )
    return out


def order_sysctl_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """(applied in order, masked) per procps ``sysctl --system``; see the module docstring."""
    chosen: dict[str, str] = {}
    masked: list[str] = []
    for directory in SYSCTL_DIRS:
        for path in sorted(p for p in paths if posixpath.dirname(p) == directory and p.endswith(".conf")):
            base = posixpath.basename(path)
            if base in chosen:
                masked.append(path)
            else:
                chosen[base] = path
    applied = [chosen[b] for b in sorted(chosen)]
    if SYSCTL_CONF in paths:
        applied.append(SYSCTL_CONF)
    return applied, masked
