"""Network namespaces, veths, bridges, shaping and loss: building and removing a lab's network.

Only iproute2 (``ip``, ``tc``), ``nft`` and ``ethtool`` are used, always with an explicit target
namespace. In the root namespace a lab creates exactly one interface (its controller veth,
named ``salab<index>``, alias ``salab-<lab>~ctl``) with an address in the lab /24; the kernel adds
the connected route for that /24 only. Nothing else in the root namespace is touched.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from advisor.util.errors import StoradviseError


class LabCommandError(StoradviseError):
    pass


def _die_with_parent() -> None:
    """A helper command dies with `up` (kill -9 of `up` must not leave an `ip -batch` running
    on after `down`). Host processes (sshd, iperf3) are not started this way: they must live."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run(cmd: list[str], input: str | None = None, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                            preexec_fn=_die_with_parent)
    except FileNotFoundError:
        raise LabCommandError(f"{cmd[0]} not found: install it (iproute2, nftables, ethtool, openssh-server, iperf3)") from None
    except subprocess.TimeoutExpired:
        raise LabCommandError(f"{' '.join(cmd[:6])} timed out after {timeout:.0f}s") from None
    if check and cp.returncode != 0:
        raise LabCommandError(f"{' '.join(cmd[:8])} failed: {_error_line(cp)}")
    return cp


def _error_line(cp: subprocess.CompletedProcess) -> str:
    lines = [l.strip() for l in (cp.stderr or cp.stdout or "").strip().splitlines() if l.strip()]
    for l in lines:
        if "Error" in l or "error" in l:
            return l
    return lines[-1] if lines else f"exit {cp.returncode}"


def ip_batch(lines: list[str], netns: str | None = None) -> None:
    if not lines:
        return
    cmd = ["ip"] + (["-n", netns] if netns else []) + ["-batch", "-"]
    run(cmd, input="\n".join(lines) + "\n")


def tc_batch(lines: list[str], netns: str) -> None:
    if lines:
        run(["tc", "-n", netns, "-batch", "-"], input="\n".join(lines) + "\n")


def in_ns(netns: str, cmd: list[str], input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return run(["ip", "netns", "exec", netns, *cmd], input=input, check=check)


def list_netns() -> list[str]:
    cp = run(["ip", "-j", "netns", "list"], check=False)
    try:
        return [e["name"] for e in json.loads(cp.stdout or "[]")]
    except ValueError:
        return []


def netns_pids(netns: str) -> list[int]:
    cp = run(["ip", "netns", "pids", netns], check=False)
    return [int(x) for x in cp.stdout.split() if x.isdigit()]


def root_links() -> list[dict]:
    cp = run(["ip", "-j", "-d", "link", "show"], check=False)
    try:
        return json.loads(cp.stdout or "[]")
    except ValueError:
        return []


def root_routes_v4() -> set[ipaddress.IPv4Network]:
    cp = run(["ip", "-j", "-4", "route", "show", "table", "all"], check=False)
    out = set()
    for r in json.loads(cp.stdout or "[]"):
        dst = r.get("dst")
        if not dst or dst == "default":
            continue
        try:
            net = ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
        except ValueError:
            continue
        if net.prefixlen > 0:
            out.add(net)
    return out


def tbf_line(dev: str, rate_bps: int, queue_ms: float = 10.0) -> str:
    """A tbf shaper; ``queue_ms``: how long a packet may wait in its queue (tbf latency), i.e. the queue's depth."""
    return f"qdisc replace dev {dev} root tbf rate {rate_bps}bit burst 128kb latency {queue_ms:g}ms"


# -- processes ---------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
        return st.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):  # gone meanwhile: reading a dying process's stat gives ESRCH
        return False


def pid_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return ""


def netns_inode_of_pid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except (FileNotFoundError, PermissionError, ProcessLookupError):
        return None


def netns_inode(name: str) -> int | None:
    try:
        return os.stat(f"/run/netns/{name}").st_ino
    except FileNotFoundError:
        return None


def kill_pids(pids: set[int], grace: float = 2.0) -> None:
    """SIGTERM, wait, then SIGKILL: by pid only."""
    live = {p for p in pids if p > 1 and p != os.getpid() and pid_alive(p)}
    for p in live:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        live = {p for p in live if pid_alive(p)}
        if live:
            time.sleep(0.05)
    for p in live:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    while live and time.monotonic() < deadline:
        live = {p for p in live if pid_alive(p)}
        if live:
            time.sleep(0.02)


@dataclass
class Capabilities:
    tbf: bool
    bridge: bool
    nft_bridge_numgen: bool
    netem: bool
    ethtool: bool
    iptables: bool
    errors: dict[str, str]
    #: the NFQUEUE delay forwarder works (iptables NFQUEUE target in a bridge's namespace, netlink bind)
    nfqueue: bool = False


def probe_capabilities(want_iptables: bool, want_delay: bool = False) -> Capabilities:
    """Try what a lab needs in a scratch namespace (removed again)."""
    scratch = f"salab_probe~{os.getpid()}"
    errors: dict[str, str] = {}

    def attempt(key: str, cmd: list[str], input: str | None = None) -> bool:
        cp = run(cmd, input=input, check=False)
        if cp.returncode != 0:
            errors[key] = _error_line(cp)
            return False
        return True

    run(["ip", "netns", "add", scratch])
    try:
        ok_veth = attempt("veth", ["ip", "-n", scratch, "link", "add", "pa", "type", "veth", "peer", "name", "pb"])
        bridge = attempt("bridge", ["ip", "-n", scratch, "link", "add", "br0", "type", "bridge"])
        tbf = ok_veth and attempt("tbf", ["tc", "-n", scratch, *tbf_line("pa", 10**9).split()])
        netem = ok_veth and attempt(
            "netem", ["tc", "-n", scratch, "qdisc", "replace", "dev", "pb", "root", "netem", "delay", "1ms"]
        )
        nft = attempt(
            "nft bridge",
            ["ip", "netns", "exec", scratch, "nft", "-f", "-"],
            input="table bridge probe {\n chain forward {\n  type filter hook forward priority 0; policy accept;\n"
            "  ip saddr 198.18.0.1 ip daddr { 198.18.0.2, 198.18.0.3 } numgen random mod 1000000 < 10 counter drop\n }\n}\n",
        )
        eth = ok_veth and attempt("ethtool", ["ip", "netns", "exec", scratch, "ethtool", "-K", "pa", "tso", "off", "gso", "off"])
        ipt = True
        if want_iptables or want_delay:
            ipt = attempt("iptables", ["ip", "netns", "exec", scratch, "iptables", "-S"])
        nfq = False
        if want_delay:
            nfq = (ipt and attempt("nfqueue", ["ip", "netns", "exec", scratch, "iptables", "-A", "FORWARD", "-s", "198.18.0.1",
                                               "-j", "NFQUEUE", "--queue-num", "65000", "--queue-bypass"])
                   and attempt("nfqueue", ["ip", "netns", "exec", scratch, sys.executable, "-m", "advisor.lab.delayq", "--probe"]))
            # bridged frames reach iptables through br_netfilter (per namespace; the lab turns
            # bridge-nf-call-iptables on in its own switch namespaces)
            if nfq and not attempt("nfqueue", ["ip", "netns", "exec", scratch, "sysctl", "-q", "-w",
                                               "net.bridge.bridge-nf-call-iptables=1"]):
                errors["nfqueue"] = "no br_netfilter: bridged frames cannot reach iptables (" + errors.get("nfqueue", "") + ")"
                nfq = False
    finally:
        run(["ip", "netns", "del", scratch], check=False)
    return Capabilities(tbf, bridge, nft, netem, eth, ipt, errors, nfq)
