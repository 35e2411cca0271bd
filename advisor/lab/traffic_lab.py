"""Starting a scenario's production traffic at ``lab up`` (advisor/lab/scenario_traffic.py): one
server process per host and port, then one reader per entry and host, each in its host's network
namespace (``ip netns exec``: sockets live in the network namespace, where the host's ``ss`` sees
them). Every pid is recorded as ``traffic`` before the next starts, so ``lab down`` kills them by pid
(advisor/lab/teardown.py: recorded pids inside the lab's namespaces)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

from advisor.util.errors import StoradviseError
from advisor.lab.records import LabRecord
from advisor.lab.scenario import Scenario
from advisor.lab.scenario_traffic import traffic_readers, traffic_servers

#: seconds a server has to listen
SERVER_READY_S = 15.0


def _spawn(rec: LabRecord, host: str, args: list[str], log_name: str) -> subprocess.Popen:
    cmd = ["ip", "netns", "exec", rec.hosts[host]["ns"], sys.executable, "-m", "advisor.lab.traffic", *args]
    with open(rec.dir / "hosts" / host / log_name, "ab") as out:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, cwd="/")
    rec.add_pid(p.pid, "traffic", host)
    return p


def _listening(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def start_traffic(rec: LabRecord, sc: Scenario) -> int:
    """Start every server, wait for each to listen, then every reader; the number of processes."""
    started = 0
    for (host, port), cc in sorted(traffic_servers(sc).items()):
        address = rec.hosts[host]["address"]
        p = _spawn(rec, host, ["serve", "--bind", address, "--port", str(port)] + (["--cc", cc] if cc else []),
                   f"traffic-serve-{port}.log")
        started += 1
        deadline = time.monotonic() + SERVER_READY_S
        while not _listening(address, port):
            if p.poll() is not None:
                log = (rec.dir / "hosts" / host / f"traffic-serve-{port}.log").read_text(errors="replace").strip()
                raise StoradviseError(f"{host}: the traffic server on port {port} did not start: "
                                      f"{log.splitlines()[-1] if log else p.returncode}")
            if time.monotonic() > deadline:
                raise StoradviseError(f"{host}: the traffic server on port {port} is not listening after "
                                      f"{SERVER_READY_S:.0f} s")
            time.sleep(0.05)
    for i, (host, servers, t) in enumerate(traffic_readers(sc)):
        args = ["read", "--port", str(t.port), "--chunk", str(t.chunk)]
        for s in servers:
            args += ["--server", rec.hosts[s]["address"]]
        if t.rate:
            args += ["--rate", str(t.rate)]
        _spawn(rec, host, args, f"traffic-read-{i}.log")
        started += 1
    return started
