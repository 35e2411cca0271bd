"""Emulated Lustre client ``lctl`` (get_param / set_param) for the storadvise lab.

storadvise lab emulator -- not Lustre software. It keeps one JSON file of parameters per client host
(``<state>/lustre/<host>.json``) and prints them in lctl's format, ``TYPE.DEVICE.PARAM=VALUE`` per
line (``-n``: the value only). Patterns are matched with shell globs per dotted component, as lctl
does; a pattern that matches nothing prints ``error: get_param: param_path '...': No such file or
directory`` on stderr and the command exits non-zero after printing the rest. ``set_param`` prints
each ``NAME=VALUE`` it set. Values set here are runtime values: ``setup_state`` writes the boot ones.
"""

from __future__ import annotations

import fnmatch
import hashlib
import sys
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, this_host, write_json

#: parameter defaults of a client mount (values a stock Lustre 2.15 client shows)
OSC_DEFAULTS = {"max_rpcs_in_flight": 8, "max_dirty_mb": 32, "max_pages_per_rpc": 256, "checksums": 1}
MDC_DEFAULTS = {"max_rpcs_in_flight": 8, "max_mod_rpcs_in_flight": 7}
LLITE_DEFAULTS = {"max_read_ahead_mb": 64, "max_read_ahead_per_file_mb": 64, "max_cached_mb": 4096}


def instance_of(host: str) -> str:
    """The superblock-address-like instance of a host's mount (stable per host name)."""
    return "ffff" + hashlib.sha256(host.encode()).hexdigest()[:12]


def client_params(host: str, fsname: str, osts: int, mdts: int, settings: dict[str, Any]) -> dict[str, str]:
    """Every parameter of one client mount; ``settings`` overrides the defaults (``osc.max_rpcs_in_flight: 8``)."""
    inst = instance_of(host)
    out: dict[str, str] = {}
    for kind, defaults, devices in (
        ("osc", OSC_DEFAULTS, [f"{fsname}-OST{i:04x}-osc-{inst}" for i in range(osts)]),
        ("mdc", MDC_DEFAULTS, [f"{fsname}-MDT{i:04x}-mdc-{inst}" for i in range(mdts)]),
        ("llite", LLITE_DEFAULTS, [f"{fsname}-{inst}"]),
    ):
        for dev in devices:
            for param, value in defaults.items():
                out[f"{kind}.{dev}.{param}"] = str(settings.get(f"{kind}.{param}", value))
    return out


def setup_state(state_dir: Path, hosts: list[str], fsname: str, osts: int, mdts: int, settings: dict[str, Any]) -> None:
    for host in hosts:
        params = client_params(host, fsname, osts, mdts, settings)
        write_json(Path(state_dir) / "lustre" / f"{host}.json", {"params": params, "boot": dict(params)})


REMOUNT_TOOL = "storadvise-lab-lustre-remount"


def remount(state_dir: Path, host: str) -> bool:
    """The client mounts again after a reboot: every parameter is back at its boot value."""
    f = Path(state_dir) / "lustre" / f"{host}.json"
    with locked(Path(state_dir)):
        data = read_json(f)
        if data is None:
            return False
        data["params"] = dict(data["boot"])
        write_json(f, data)
    return True


def _matches(pattern: str, name: str) -> bool:
    # lctl accepts '/' or '.' between components; a glob never crosses a component
    p, n = pattern.replace("/", ".").split("."), name.split(".")
    if len(p) != len(n):
        # device names have no dots; a pattern with fewer components cannot match
        return False
    return all(fnmatch.fnmatchcase(b, a) for a, b in zip(p, n))


def _path(pattern: str) -> str:
    return pattern.replace(".", "/")


def main(tool: str, argv: list[str], state_dir: str) -> int:
    state = Path(state_dir)
    host = this_host()
    if tool == REMOUNT_TOOL:
        ok = remount(state, host)
        log_invocation(state, tool, [tool] + argv, 0 if ok else 1)
        return 0 if ok else 1
    f = state / "lustre" / f"{host}.json"
    rc = 0
    with locked(state):
        data = read_json(f)
        if data is None:
            print("error: get_param: no Lustre file system mounted on this host (lab emulator)", file=sys.stderr)
            log_invocation(state, tool, [tool] + argv, 19)
            return 19
        params: dict[str, str] = data["params"]
        if not argv or argv[0] not in ("get_param", "set_param"):
            print(f"{tool}: only get_param and set_param are emulated", file=sys.stderr)
            rc = 22
        elif argv[0] == "get_param":
            args = argv[1:]
            only_value = "-n" in args
            for pat in [a for a in args if not a.startswith("-")]:
                hits = [n for n in params if _matches(pat, n)]
                if not hits:
                    print(f"error: get_param: param_path '{_path(pat)}': No such file or directory", file=sys.stderr)
                    rc = 2
                for n in hits:
                    print(params[n] if only_value else f"{n}={params[n]}")
        else:
            for arg in [a for a in argv[1:] if not a.startswith("-")]:
                pat, eq, value = arg.partition("=")
                hits = [n for n in params if _matches(pat, n)]
                if not eq or not hits:
                    print(f"error: set_param: param_path '{_path(pat)}': No such file or directory", file=sys.stderr)
                    rc = 2
                    continue
                if not value.strip().isdigit():
                    print(f"error: set_param: setting {hits[0]}={value}: Invalid argument", file=sys.stderr)
                    rc = 22
                    continue
                for n in hits:
                    params[n] = value.strip()
                    print(f"{n}={params[n]}")
            write_json(f, data)
        log_invocation(state, tool, [tool] + argv, rc)
    return rc
