"""One run of a command, measured as the benches report it: wall time, the controller's CPU (user +
sys of the command and its descendants), the rest of the machine's busy CPU meanwhile (on a lab,
the lab hosts': their sshd, shells and probes run on the same cores; read from /proc/stat, so the
machine must be otherwise quiet), and the peak summed resident memory of the command's process
tree (sampled every 50 ms)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
        except (OSError, ValueError):
            pass
    return out


def _rss(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total


def _busy_s() -> float:
    """The whole machine's busy CPU time so far (/proc/stat: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def measure(argv: list[str], env: dict | None = None, ok: tuple[int, ...] = (0, 3)) -> dict:
    """Run argv; wall time, CPU of it and its descendants, the rest of the machine's CPU meanwhile
    (the lab hosts'), peak summed RSS of its tree."""
    before = os.times()
    busy0 = _busy_s()
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss(_tree(proc.pid)))
            time.sleep(0.05)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = proc.communicate()
    done.set()
    th.join()
    wall = time.monotonic() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    hosts_cpu = max(_busy_s() - busy0 - cpu, 0.0)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv[:3])} exited {proc.returncode}: {err.strip()[-800:]}")
    return {"wall_s": wall, "cpu_s": cpu, "hosts_cpu_s": hosts_cpu, "peak_rss_mib": peak[0] / 2**20,
            "stdout": out}
