"""Emulated ``ceph`` administration CLI (health, health detail, osd perf) for the storadvise lab.

storadvise lab emulator -- not Ceph software. It keeps the cluster's state in one JSON file
(``<state>/ceph/cluster.json``: each OSD's commit and apply latency, the OSDs with slow ops) and
prints it in Ceph's formats: ``ceph osd perf`` as src/mon/PGMap.cc print_osd_perf_stats does (header
``osd commit_latency(ms) apply_latency(ms)``, one space between right-aligned columns, OSDs newest first), ``ceph health
[detail]`` as the Nautilus-and-later health checks do (``HEALTH_WARN <summary>``, then ``[WRN] CODE:
summary`` per check). Any other command exits 22 with Ceph's "no valid command found" message.

``mount_fuse`` (run inside a lab host's mount namespace) puts a ``ceph-fuse`` entry in the host's mount
table: a real FUSE mount of type ``fuse.ceph-fuse`` whose daemon side is closed at once, so the mount
point answers "Transport endpoint is not connected" like a ceph-fuse that lost its daemon.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, write_json

#: latency of a healthy BlueStore OSD as ``ceph osd perf`` shows it (ms)
HEALTHY_MS = (0, 1)


def setup_state(state_dir: Path, osds: int, slow: dict[int, int], slow_ops: list[int]) -> None:
    lat = {str(i): [slow.get(i, HEALTHY_MS[i % 2])] * 2 for i in range(osds)}
    write_json(Path(state_dir) / "ceph" / "cluster.json", {"osds": lat, "slow_ops": sorted(slow_ops)})


def osd_perf(state: dict[str, Any]) -> str:
    rows = [("osd", "commit_latency(ms)", "apply_latency(ms)")]
    rows += [(i, str(c), str(a)) for i, (c, a) in sorted(state["osds"].items(), key=lambda kv: -int(kv[0]))]
    w = [max(len(r[k]) for r in rows) for k in range(3)]
    head = f"{rows[0][0]:<{w[0]}} {rows[0][1]:>{w[1]}} {rows[0][2]:>{w[2]}}"
    return "\n".join([head] + [f"{r[0]:>{w[0]}} {r[1]:>{w[1]}} {r[2]:>{w[2]}}" for r in rows[1:]]) + "\n"


def _slow_ops_summary(osds: list[int]) -> str:
    names = [f"osd.{i}" for i in osds]
    who = f"{names[0]} has slow ops" if len(names) == 1 else f"daemons [{','.join(names)}] have slow ops."
    return f"{12 * len(names) + 5} slow ops, oldest one blocked for 62 sec, {who}"


def health(state: dict[str, Any], detail: bool) -> str:
    slow = state.get("slow_ops") or []
    if not slow:
        return "HEALTH_OK\n"
    summary = _slow_ops_summary(slow)
    lines = [f"HEALTH_WARN {summary}"]
    if detail:
        lines.append(f"[WRN] SLOW_OPS: {summary}")
    return "\n".join(lines) + "\n"


def mount_fuse(mountpoint: str) -> None:
    """A ``fuse.ceph-fuse`` mount at ``mountpoint`` (needs /dev/fuse and CAP_SYS_ADMIN in the mount namespace)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    try:
        opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
        # MS_NOSUID | MS_NODEV, as ceph-fuse mounts
        if libc.mount(b"ceph-fuse", mountpoint.encode(), b"fuse.ceph-fuse", ctypes.c_ulong(6), opts) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"mount fuse.ceph-fuse on {mountpoint}: {os.strerror(err)}")
    finally:
        os.close(fd)


def main(tool: str, argv: list[str], state_dir: str) -> int:
    state = Path(state_dir)
    if tool == "storadvise-lab-ceph-fuse-mount":
        try:
            mount_fuse(argv[0])
        except (OSError, IndexError) as exc:
            print(f"{tool}: {exc}", file=sys.stderr)
            return 1
        return 0
    words = [a for a in argv if not a.startswith("-")]
    with locked(state):
        data = read_json(state / "ceph" / "cluster.json")
        if data is None:
            print("Error initializing cluster client: ObjectNotFound('RADOS object not found (error calling conf_read_file)')",
                  file=sys.stderr)
            rc = 1
        elif words == ["osd", "perf"]:
            sys.stdout.write(osd_perf(data))
            rc = 0
        elif words in (["health"], ["health", "detail"]):
            sys.stdout.write(health(data, detail=len(words) == 2))
            rc = 0
        else:
            print(f"no valid command found (storadvise lab emulator: only 'health [detail]' and 'osd perf'): "
                  f"{' '.join(argv)}", file=sys.stderr)
            rc = 22
        log_invocation(state, tool, [tool] + argv, rc)
    return rc
