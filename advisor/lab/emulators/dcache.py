"""Emulated dCache node for the storadvise lab: its configuration files and the ``dcache`` command.

storadvise lab emulator -- not dCache software. No Java domain runs: ``setup_host`` writes the files a
dCache node has (``/etc/dcache/dcache.conf``, the layout ``/etc/dcache/layouts/<host>.conf``, each pool's
``setup`` file under ``/var/lib/dcache/pools/<pool>/``) in dCache's formats, and ``dcache`` answers
``status`` (dCache's table: DOMAIN, STATUS ``running (for N minutes)``, PID, USER, LOG), ``start``,
``stop`` and ``restart [DOMAIN...]`` (``Stopping D 0 1 done`` / ``Starting D done``), and ``services``.
A domain that starts records the content of the files it read (``loaded``), so a test can tell a
changed file from a configuration the domain runs. State: ``<state>/dcache/<host>/`` (``etc/``,
``lib/`` bound at /etc/dcache and /var/lib/dcache in the host, ``domains.json``).
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, this_host, write_json

_HEADER = re.compile(r"^\s*\[([^\]/\s]+)(?:/([^\]\s]+))?\]\s*$")
_PROP = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*=\s*(.*?)\s*$")
RESTART_TOOL = "storadvise-lab-dcache-boot"


def host_root(state_dir: Path, host: str) -> Path:
    return Path(state_dir) / "dcache" / host


def layout_of(text: str, host: str) -> list[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """[(domain, [(service, its properties)])] in file order, ``${host.name}`` replaced."""
    out: list[tuple[str, list[tuple[str, dict[str, str]]]]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            dom = m.group(1).replace("${host.name}", host)
            if not out or out[-1][0] != dom:
                out.append((dom, []))
            current = None
            if m.group(2):
                current = {}
                out[-1][1].append((m.group(2), current))
            continue
        p = _PROP.match(line)
        if p and current is not None:
            current[p.group(1)] = p.group(2).replace("${host.name}", host)
    return out


def pool_setup_text(pool: str, mover_max_active: int | None) -> str:
    lines = ["#", f"# Created by {pool}(Pool) at Mon Nov 23 09:00:00 UTC 2026", "#",
             "csm set checksumtype ADLER32", "csm set policy -scrub=off",
             "csm set policy -onread=off -onwrite=on -onflush=off -onrestore=off -ontransfer=on -enforcecrc=on -getcrcfromhsm=off",
             "#", "# MigrationModule", "#", "set heartbeat 30", "set breakeven 0.7", "set gap 4g"]
    if mover_max_active is not None:
        lines.append(f"mover set max active -queue=regular {mover_max_active}")
    lines += ["mover set max active -queue=p2p 10", "#", "#  Pool to Pool (P2P)", "#", "pp set max active 10",
              "set max diskspace 100g", "rh set timeout 14400", "st set timeout 14400", "rm set timeout 14400"]
    return "\n".join(lines) + "\n"


def setup_host(state_dir: Path, host: str, *, pools: int, doors: bool, pool_direct_memory: str | None,
               pool_heap: str | None, mover_max_active: int | None, srm_tcp_buffer: int | None) -> None:
    root = host_root(state_dir, host)
    (root / "etc" / "layouts").mkdir(parents=True, exist_ok=True)
    (root / "lib" / "pools").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "dcache.conf").write_text(
        "# dCache configuration (storadvise lab emulator -- not dCache software)\n"
        "dcache.layout = ${host.name}\n"
        "dcache.broker.scheme = core\n"
        "dcache.enable.space-reservation = false\n")
    layout = ["# layout of " + host + " (storadvise lab emulator)", "dcache.java.memory.heap = 1g", ""]
    if pools:
        layout.append("[${host.name}_poolsDomain]")
        if pool_direct_memory:
            layout.append(f"dcache.java.memory.direct = {pool_direct_memory}")
        if pool_heap:
            layout.append(f"dcache.java.memory.heap = {pool_heap}")
        for i in range(1, pools + 1):
            name = f"{host}_{i}"
            path = f"/var/lib/dcache/pools/{name}"
            layout += ["[${host.name}_poolsDomain/pool]", f"pool.name = ${{host.name}}_{i}", f"pool.path = {path}",
                       "pool.tags = hostname=${host.name}", "pool.wait-for-files = ${pool.path}/data", ""]
            d = root / "lib" / "pools" / name
            (d / "data").mkdir(parents=True, exist_ok=True)
            (d / "setup").write_text(pool_setup_text(name, mover_max_active))
    if doors:
        layout += ["[doorsDomain]", "[doorsDomain/srm]"]
        if srm_tcp_buffer is not None:
            layout.append(f"srm.limits.transfer-tcp-buffer.size = {srm_tcp_buffer}")
        layout += ["[doorsDomain/xrootd]", "xrootd.net.port = 1094", "[doorsDomain/webdav]", "webdav.net.port = 2880", ""]
    (root / "etc" / "layouts" / f"{host}.conf").write_text("\n".join(layout) + "\n")
    _start(state_dir, host, None)


def _files_digest(root: Path, host: str, domain: str, services: list[tuple[str, dict[str, str]]]) -> dict[str, str]:
    """What a domain reads at start: dcache.conf, the layout, its pools' setup files (sha256 each)."""
    out = {}
    files = [root / "etc" / "dcache.conf", root / "etc" / "layouts" / f"{host}.conf"]
    for svc, props in services:
        if svc == "pool" and props.get("pool.path", "").startswith("/var/lib/dcache/"):
            files.append(root / "lib" / props["pool.path"][len("/var/lib/dcache/"):] / "setup")
    for f in files:
        try:
            out[str(f.relative_to(root))] = hashlib.sha256(f.read_bytes()).hexdigest()
        except FileNotFoundError:
            out[str(f.relative_to(root))] = "missing"
    return out


def _domains(root: Path, host: str) -> list[tuple[str, list[tuple[str, dict[str, str]]]]]:
    try:
        return layout_of((root / "etc" / "layouts" / f"{host}.conf").read_text(), host)
    except FileNotFoundError:
        return []


def _start(state_dir: Path, host: str, names: list[str] | None) -> list[str]:
    """Start (or restart) domains: each records the files it read. Returns the names started."""
    root = host_root(state_dir, host)
    state = read_json(root / "domains.json", {"domains": {}, "restarts": []})
    started = []
    for i, (dom, services) in enumerate(_domains(root, host)):
        if names is not None and dom not in names:
            continue
        state["domains"][dom] = {"pid": 20000 + i * 37 + len(state["restarts"]) % 1000, "started_at": time.time(),
                                 "loaded": _files_digest(root, host, dom, services), "running": True}
        state["restarts"].append({"domain": dom, "time": time.time()})
        started.append(dom)
    write_json(root / "domains.json", state)
    return started


def domain_state(state_dir: Path, host: str) -> dict[str, Any]:
    return read_json(host_root(state_dir, host) / "domains.json", {"domains": {}, "restarts": []})


def runs_current_files(state_dir: Path, host: str, domain: str) -> bool:
    """The domain's configuration at its last start is what its files say now."""
    root = host_root(state_dir, host)
    for dom, services in _domains(root, host):
        if dom == domain:
            d = domain_state(state_dir, host)["domains"].get(domain) or {}
            return d.get("loaded") == _files_digest(root, host, dom, services)
    return False


def _status(root: Path, host: str, state: dict[str, Any]) -> str:
    rows = [("DOMAIN", "STATUS", "PID", "USER", "LOG")]
    for dom, _services in _domains(root, host):
        d = state["domains"].get(dom) or {}
        if d.get("running"):
            minutes = max(0, int((time.time() - d["started_at"]) // 60))
            rows.append((dom, f"running (for {minutes} minutes)", str(d["pid"]), "dcache", f"/var/log/dcache/{dom}.log"))
        else:
            rows.append((dom, "stopped", "", "dcache", f"/var/log/dcache/{dom}.log"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join(" ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def main(tool: str, argv: list[str], state_dir: str) -> int:
    state_path = Path(state_dir)
    host = this_host()
    root = host_root(state_path, host)
    rc = 0
    with locked(state_path):
        if tool == RESTART_TOOL:
            _start(state_path, host, None)
            log_invocation(state_path, tool, [tool] + argv, 0)
            return 0
        state = domain_state(state_path, host)
        known = [d for d, _ in _domains(root, host)]
        cmd, args = (argv[0], argv[1:]) if argv else ("", [])
        if not known:
            print("No domains are configured for this host (storadvise lab emulator: no layout)", file=sys.stderr)
            rc = 1
        elif cmd == "status":
            print(_status(root, host, state))
        elif cmd == "services":
            print("DOMAIN SERVICE CELL")
            for dom, services in _domains(root, host):
                for svc, props in services:
                    print(f"{dom} {svc} {props.get('pool.name', svc)}")
        elif cmd in ("start", "stop", "restart"):
            bad = [a for a in args if a not in known]
            if bad:
                print(f"No such domain: {bad[0]}", file=sys.stderr)
                rc = 1
            else:
                names = args or known
                if cmd in ("stop", "restart"):
                    for d in names:
                        print(f"Stopping {d} 0 1 done")
                        state["domains"].setdefault(d, {})["running"] = False
                    write_json(root / "domains.json", state)
                if cmd in ("start", "restart"):
                    for d in _start(state_path, host, names):
                        print(f"Starting {d} done")
        else:
            print(f"{tool}: only status, services, start, stop and restart are emulated", file=sys.stderr)
            rc = 1
        log_invocation(state_path, tool, [tool] + argv, rc)
    return rc
