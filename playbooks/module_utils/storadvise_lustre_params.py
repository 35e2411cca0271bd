# -*- coding: utf-8 -*-
# storadvise: Lustre's permanent parameters (lctl set_param -P), shared by the lustre.params probe, the
# lustre adapter and the lustre_tuning role's module. Pure Python, no Ansible imports.
"""Lustre permanent parameters: the MGS's ``params`` configuration log.

``lctl set_param -P NAME=VALUE`` on the MGS appends a record to the ``params`` log; every client
applies the records in order when it mounts (and when the log changes), so they are what a client
gets at boot. ``lctl llog_print params`` prints the log in YAML flow form, one record per line
(lctl-llog_print(8), the Lustre Operations Manual "Setting Permanent Parameters with lctl
set_param -P")::

    - { index: 2, event: set_param, device: general, parameter: osc.*.max_dirty_mb, value: 32 }

A parameter name is ``TYPE.DEVICE.PARAM``; a pattern globs each dot-separated component on its own
(``osc.*.max_dirty_mb``), as lctl does. The value of a parameter at boot is the last record whose
pattern matches it; ``lctl set_param -P -d NAME`` removes NAME's records.
"""

from __future__ import annotations

import fnmatch
import re

#: a set_param record of ``lctl llog_print params``
_RECORD = re.compile(r"^- \{ ?index: (\d+), event: set_param, device: (\S+), parameter: (\S+), value: (.*?) ?\}$")
#: any other record (another event): printed by llog_print, not a permanent parameter
_OTHER = re.compile(r"^- \{ ?index: (\d+), ")


def parse_llog_params(text):
    """The set_param records of ``lctl llog_print params``: [{index, parameter, value, line}] in index
    order. Continuation lines (indented) belong to the record above. ValueError names the first line
    that is not a record."""
    lines = []
    for raw in str(text).splitlines():
        if not raw.strip():
            continue
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] = lines[-1] + " " + raw.strip()
        else:
            lines.append(raw.strip())
    out = []
    for n, line in enumerate(lines, 1):
        m = _RECORD.match(line)
        if m:
            out.append({"index": int(m.group(1)), "parameter": m.group(3), "value": m.group(4).strip(), "line": line})
        elif not _OTHER.match(line):
            raise ValueError("lctl llog_print params, record %d: not '- { index: N, event: ... }': %r" % (n, line[:80]))
    out.sort(key=lambda r: r["index"])
    return out


def matches(pattern, name):
    """Does the parameter pattern (globs per component, '.' or '/' between them) match ``name``?"""
    p = str(pattern).replace("/", ".").split(".")
    n = str(name).split(".")
    if len(p) != len(n):
        return False
    return all(fnmatch.fnmatchcase(b, a) for a, b in zip(p, n))


def boot_record(records, name):
    """The record that sets ``name`` at mount (the last one matching it), or None."""
    found = None
    for r in records:
        if matches(r["parameter"], name):
            found = r
    return found


def exact_value(records, pattern):
    """The value the log holds for exactly this pattern (its last record), or None."""
    found = None
    for r in records:
        if r["parameter"] == pattern:
            found = r["value"]
    return found


def any_client_pattern(name):
    """The pattern that names ``name`` on every client of its file system: the mount instance of the
    device (``-osc-ffff88203b1e4000``, the llite device's ``-ffff88203b1e4000``) becomes ``*``.
    ``osc.atlas-OST0000-osc-ffff88203b1e4000.max_rpcs_in_flight`` -> ``osc.atlas-OST0000-osc-*.max_rpcs_in_flight``.
    None when the name is not TYPE.DEVICE.PARAM of a client device."""
    kind, _, rest = str(name).partition(".")
    device, _, param = rest.rpartition(".")
    if kind not in ("osc", "mdc", "llite") or not device or not param:
        return None
    head, sep, instance = device.rpartition("-")
    if not sep or not re.fullmatch(r"[0-9a-f]{8,16}", instance):
        return None
    return "%s.%s-*.%s" % (kind, head, param)
