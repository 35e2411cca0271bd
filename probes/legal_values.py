"""What a name read from a host may look like, before it becomes a fact.

Names from a host end up in plans (Ansible variables, module arguments) and reports. A compromised
or broken host could print a device called ``sda;reboot`` or a GPFS attribute ``pagepool=1,x``;
the parsers check each name against the syntax the real system allows and refuse the whole
probe's output with a ``ProbeParseError`` naming the field. Sources for each syntax are cited at
the pattern.
"""

from __future__ import annotations

import re

from probes.probe import ProbeParseError

#: a block device's name under /sys/block: the kernel's disk_name() -> letters, digits, '-', '_',
#: '.', ':' and '!' (sysfs spelling of '/' as in cciss!c0d0); at most 32 characters (DISK_NAME_LEN)
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:!+-]{0,31}")
#: a network interface's name: at most 15 characters (IFNAMSIZ - 1), none of '/', ':' or blanks
#: (net/core/dev.c dev_valid_name); here also no quote, '$' or other shell or udev metacharacter, as
#: the name reaches ``ethtool`` command lines and udev rules
IFACE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,14}")
#: a GPFS configuration attribute as mmlsconfig/mmdiag print it (pagepool, maxMBpS, verbsRdma,
#: nsdBufSpace, worker1Threads, ...): an identifier, dots and dashes allowed
GPFS_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
#: a SANtricity volume / logical drive label: up to 30 characters of letters, digits, '_', '-' and
#: '#' (SANtricity Storage Manager CLI reference, "Naming conventions"); a little wider (64, '.')
#: for other firmware, but never a quote, bracket, ';' or control character that would break out
#: of ``set logicalDrive ["name"]`` in an SMcli script
SMCLI_NAME = re.compile(r"[A-Za-z0-9_#.-][A-Za-z0-9_#. -]{0,63}")
#: an absolute file path without control characters (newline, NUL) and of at most PATH_MAX
ABSOLUTE_PATH = re.compile(r"/[^\x00-\x1f\x7f]{0,4094}")


def check_name(value: str, pattern: re.Pattern[str], field: str) -> str:
    """``value`` if it matches ``pattern``; else a ``ProbeParseError`` naming ``field``."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ProbeParseError(f"{field}: {str(value)[:60]!r} is not a legal name for it")
    return value


def check_path(value: str, field: str) -> str:
    if not isinstance(value, str) or not ABSOLUTE_PATH.fullmatch(value):
        raise ProbeParseError(f"{field}: {str(value)[:60]!r} is not an absolute path without control characters")
    return value
