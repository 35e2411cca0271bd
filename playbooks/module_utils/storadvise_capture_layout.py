# -*- coding: utf-8 -*-
# storadvise: the capture directory's layout, written (Apache-2.0).
"""The capture directory ``storadvise scan --from`` reads, written: one implementation, dependency
free (the Python standard library only). ``storadvise collect`` writes through it, and so does the
collect playbook's ``storadvise_capture`` module, in an execution environment without storadvise::

    DIR/manifest.json                  {"capture_format": 2, "site", "collected_at", "hosts": {name: {"reachable", "errors"}}}
    DIR/hosts/<host>/host.json         {"reachable", "errors"}
    DIR/hosts/<host>/outputs.json      {"capture_format": 2, "outputs": {KEY: {"rc", "duration_s", "timed_out",
                                        "truncated", "sudo", "script", "stdout", "stderr"}}}
    DIR/objects/<2 hex>/<62 hex>       every distinct text once, named by the SHA-256 of its UTF-8 bytes

Every file is written atomically (a temporary file, fsynced, renamed) and readable by its owner only.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import json
import os
import re
import tempfile
import threading

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported, but the import must not fail
    from urllib import quote

__metaclass__ = type

CAPTURE_FORMAT = 2
MANIFEST = "manifest.json"
INDEX = "outputs.json"
OBJECTS = "objects"

_SAFE_KEY = re.compile(r"[A-Za-z0-9_+@:-][A-Za-z0-9._+@:-]*")
_COMPONENT = re.compile(r"[A-Za-z0-9_@:+-][A-Za-z0-9._@:+-]{0,254}")


class CaptureLayoutError(ValueError):
    """A name from data that cannot name a file, or a batch output that cannot be read (one line)."""


def host_component(name, what="host name"):
    """``name`` if it is one safe path component (no ``/``, no ``..``, no leading dot, no control
    character, at most 255 characters); else CaptureLayoutError naming ``what``."""
    if isinstance(name, str) and _COMPONENT.fullmatch(name):
        return name
    shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "..."
    raise CaptureLayoutError("%s %s: not usable as a file name (letters, digits and . _ - @ : + only, "
                             "not starting with '.', at most 255)" % (what, shown))


def key_filename(key):
    """The file-name stem for a command key (safe keys unchanged, others percent-encoded)."""
    if _SAFE_KEY.fullmatch(key) and len(key) <= 200:
        return key
    stem = quote(key, safe="")
    if stem.startswith("."):
        stem = "%2E" + stem[1:]
    return stem or "%00empty"


def write_atomic(path, data, mode=0o600):
    """Write ``data`` (text as UTF-8, lone surrogates as the bytes they stand for) to ``path``."""
    if not isinstance(data, bytes):
        data = data.encode("utf-8", "surrogateescape")
    directory, name = os.path.split(str(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % name, suffix=".tmp", dir=directory or ".")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fd = -1
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, str(path))
    except BaseException:
        if fd != -1:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def object_id(data):
    return hashlib.sha256(data).hexdigest()


def put_object(directory, text):
    """Store ``text`` under ``DIR/objects/`` (once: an object that exists is never rewritten) and
    return its id. Safe from several threads and processes at once."""
    data = text.encode("utf-8", "surrogateescape")
    oid = object_id(data)
    path = os.path.join(str(directory), OBJECTS, oid[:2], oid[2:])
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.%d.%d.tmp" % (path, os.getpid(), threading.get_ident())
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    return oid


def host_dir(directory, host_name):
    return os.path.join(str(directory), "hosts", key_filename(host_component(host_name)))


def write_host_outputs(directory, host_name, commands, results, put=None):
    """Write ``DIR/hosts/<host>/outputs.json``: each result (a dict: ``key``, ``rc``,
    ``duration_s``, ``timed_out``, ``truncated``, ``stdout``, ``stderr``) with its command's script
    and sudo flag (``commands``: dicts with ``key``, ``script``, ``sudo``), texts as objects.
    ``put``: how a text is stored (default: ``put_object`` in ``directory``)."""
    put = put or (lambda text: put_object(directory, text))
    d = host_dir(directory, host_name)
    os.makedirs(d, exist_ok=True)
    scripts = dict((c["key"], c) for c in commands)
    outputs = {}
    for r in results:
        cmd = scripts.get(r["key"])
        outputs[r["key"]] = {
            "rc": r["rc"],
            "duration_s": r["duration_s"],
            "timed_out": r["timed_out"],
            "truncated": r["truncated"],
            "sudo": bool(cmd["sudo"]) if cmd else False,
            "script": put(cmd["script"] if cmd else ""),
            "stdout": put(r["stdout"]),
            "stderr": put(r["stderr"]),
        }
    text = json.dumps({"capture_format": CAPTURE_FORMAT, "outputs": outputs}, indent=1, sort_keys=True) + "\n"
    write_atomic(os.path.join(d, INDEX), text)
    return d


def write_manifest(directory, site, collected_at, hosts):
    """``DIR/manifest.json`` and each ``DIR/hosts/<host>/host.json``; ``site``: the site as plain
    data (secrets already redacted); ``hosts``: name -> {"reachable", "errors"}."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    manifest = {"capture_format": CAPTURE_FORMAT, "site": site, "collected_at": collected_at,
                "hosts": dict((name, {"reachable": h["reachable"], "errors": h["errors"]}) for name, h in hosts.items())}
    write_atomic(os.path.join(directory, MANIFEST), json.dumps(manifest, indent=2) + "\n")
    for name, h in hosts.items():
        hd = os.path.join(directory, "hosts", host_component(name))
        os.makedirs(hd, exist_ok=True)
        write_atomic(os.path.join(hd, "host.json"),
                     json.dumps({"reachable": h["reachable"], "errors": h["errors"]}, indent=2) + "\n")


def write_batch_capture(directory, collect, decoded, collected_at):
    """The whole capture from the collect playbook's run: ``collect`` is the ``storadvise_collect``
    variable (``site``, ``batches``, ``hosts``: name -> {"batch": N}); ``decoded``: name ->
    (results, error) as storadvise_batch_frames.decode_saved gives them. Returns name ->
    {"reachable", "errors"}."""
    hosts = {}
    for name, spec in collect["hosts"].items():
        host_component(name, "host name in the collect vars")
        results, error = decoded.get(name) or (None, "%s: not decoded" % name)
        if error:
            hosts[name] = {"reachable": False, "errors": [error]}
            continue
        write_host_outputs(directory, name, collect["batches"][spec["batch"]]["commands"], results)
        hosts[name] = {"reachable": True, "errors": []}
    write_manifest(directory, collect["site"], collected_at, hosts)
    return hosts
