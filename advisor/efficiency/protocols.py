"""What the test job's clients read through: one source per protocol.

* ``tcp``: our own data server on a storage host (``active_job.py serve``; ``--source HOST``);
* ``posix``: a file on a local or mounted path (``--source path:PATH`` or ``efficiency: {posix: {path: P}}``;
  by default the ``xrootd_local_file`` var of a storage host: the lab's origin records a file of its export);
* ``xrootd``: a real XRootD data server (the origin): ``efficiency: {xrootd: {host, port, path}}``;
  by default the first host with role storage, the port of its ``xrootd_port`` var or 1094, the
  directory of its ``xrootd_export`` var or ``/store``;
* ``xcache``: a real XCache (xrootd with the proxy file cache) in front of the origin:
  ``efficiency: {xcache: {host, port, path}}``; by default the first host with role cache, the
  port of its ``xrootd_port`` var or 1094, the origin's directory.

The clients of both XRootD protocols list the directory with ``xrdfs ls`` and read its files
with ``xrdcp`` (Debian's xrootd-client on the workers). The sources are resolved against the
site once, by advisor/efficiency/active_plan.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from advisor.util.errors import StoradviseError

PROTOCOLS = ("tcp", "posix", "xrootd", "xcache")


class EfficiencyTestError(StoradviseError):
    """The test could not run at all (no source, no worker, server did not start)."""

    exit_code = 3


def parse_protocols(text: str | list[str] | None) -> list[str] | None:
    """``"xrootd,xcache"`` -> ``["xrootd", "xcache"]`` (each once, in order); None stays None."""
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else [str(x) for x in text]
    out: list[str] = []
    for x in (i.strip().lower() for i in items):
        if not x:
            continue
        if x not in PROTOCOLS:
            raise EfficiencyTestError(f"protocol {x!r}: give one or more of {', '.join(PROTOCOLS)}")
        if x not in out:
            out.append(x)
    if not out:
        raise EfficiencyTestError(f"no protocol given: one or more of {', '.join(PROTOCOLS)}")
    return out


def job_spec(src: Mapping[str, Any], server_port: int | None = None) -> str:
    """The job's ``--source`` for a resolved source (tcp: the data server's port once started)."""
    if src["kind"] == "path":
        return "path:" + src["path"]
    if src["kind"] == "tcp":
        addr = src["address"]
        return f"tcp:[{addr}]:{server_port}" if ":" in addr else f"tcp:{addr}:{server_port}"
    return "xrd:" + src["url"]
