"""Emulated Lustre client ``lctl`` (get_param / set_param) for the storadvise lab.

storadvise lab emulator -- not Lustre software. It keeps one JSON file of parameters per client host
(``<state>/lustre/<host>.json``) and prints them in lctl's format, ``TYPE.DEVICE.PARAM=VALUE`` per
line (``-n``: the value only). Patterns are matched with shell globs per dotted component, as lctl
does; a pattern that matches nothing prints ``error: get_param: param_path '...': No such file or
directory`` on stderr and the command exits non-zero after printing the rest. ``set_param`` prints
each ``NAME=VALUE`` it set. Values set here are runtime values: ``setup_state`` writes the boot ones.

The MGS host (``<state>/lustre/MGS.json``) keeps the ``params`` log of permanent parameters:
``lctl set_param -P NAME=VALUE`` appends a record (indexes step by 2, as lctl-llog_print(8)'s
example) and sets NAME on every mounted client at once, as the MGS's config lock does;
``lctl set_param -P -d NAME`` removes NAME's records; ``lctl llog_print params`` (also with
``--device MGS``) prints them. A client that mounts again (the lab's reboot) starts from its boot
values and applies the records in index order. Off the MGS, ``-P`` and ``llog_print`` fail as lctl
does without an MGS device (ENODEV).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, this_host, write_json
from advisor.util.shipped_code import module_utils

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


MGS_FILE = "MGS.json"


def setup_state(state_dir: Path, hosts: list[str], fsname: str, osts: int, mdts: int, settings: dict[str, Any],
                mgs: str | None = None) -> None:
    for host in hosts:
        params = client_params(host, fsname, osts, mdts, settings)
        write_json(Path(state_dir) / "lustre" / f"{host}.json", {"params": params, "boot": dict(params)})
    if mgs:
        write_json(Path(state_dir) / "lustre" / MGS_FILE, {"host": mgs, "records": [], "next_index": 2})


def _llog():
    return module_utils("storadvise_lustre_params")


def _clients(state: Path) -> list[Path]:
    return sorted(f for f in (state / "lustre").glob("*.json") if f.name != MGS_FILE)


def _mounted(data: dict, records: list[dict]) -> dict:
    """A client's parameters at mount: its boot values, then the MGS's records in index order."""
    params = dict(data["boot"])
    for r in records:
        for n in params:
            if _llog().matches(r["parameter"], n):
                params[n] = r["value"]
    return params


REMOUNT_TOOL = "storadvise-lab-lustre-remount"


def remount(state_dir: Path, host: str) -> bool:
    """The client mounts again after a reboot: its boot values, then the MGS's permanent parameters."""
    f = Path(state_dir) / "lustre" / f"{host}.json"
    with locked(Path(state_dir)):
        data = read_json(f)
        if data is None:
            return False
        mgs = read_json(Path(state_dir) / "lustre" / MGS_FILE) or {}
        data["params"] = _mounted(data, mgs.get("records") or [])
        write_json(f, data)
    return True


def _mgs_main(state: Path, host: str, argv: list[str]) -> int:
    """``set_param -P`` and ``llog_print params`` on the MGS (the caller holds the state lock)."""
    f = state / "lustre" / MGS_FILE
    mgs = read_json(f)
    if mgs is None or mgs.get("host") != host:
        what = "llog_print" if "llog_print" in argv else "set_param"
        print(f"error: {what}: no MGS device on this node: No such device (lab emulator)", file=sys.stderr)
        return 19
    if "llog_print" in argv:
        if argv[-1] != "params":
            print(f"error: llog_print: {argv[-1]}: only the params log is emulated", file=sys.stderr)
            return 2
        for r in mgs["records"]:
            print(f"- {{ index: {r['index']}, event: set_param, device: general, parameter: {r['parameter']}, "
                  f"value: {r['value']} }}")
        return 0
    delete = "-d" in argv
    rc = 0
    for arg in [a for a in argv[1:] if not a.startswith("-")]:
        pat, eq, value = arg.partition("=")
        if delete:
            mgs["records"] = [r for r in mgs["records"] if r["parameter"] != pat]
            continue
        if not eq or not value.strip().isdigit():
            print(f"error: set_param: setting {arg}: Invalid argument", file=sys.stderr)
            rc = 22
            continue
        mgs["records"].append({"index": mgs["next_index"], "parameter": pat, "value": value.strip()})
        mgs["next_index"] += 2
        for cf in _clients(state):  # every mounted client takes the new value at once
            data = read_json(cf)
            if data is not None:
                data["params"].update({n: value.strip() for n in data["params"] if _llog().matches(pat, n)})
                write_json(cf, data)
    write_json(f, mgs)
    return rc


def _path(pattern: str) -> str:
    return pattern.replace(".", "/")


def main(tool: str, argv: list[str], state_dir: str) -> int:
    state = Path(state_dir)
    host = this_host()
    if tool == REMOUNT_TOOL:
        ok = remount(state, host)
        if not ok and (read_json(state / "lustre" / MGS_FILE) or {}).get("host") == host:
            print("the MGS: no client mount; its params log is kept")
            ok = True
        log_invocation(state, tool, [tool] + argv, 0 if ok else 1)
        return 0 if ok else 1
    if "-P" in argv or "llog_print" in argv:
        with locked(state):
            rc = _mgs_main(state, host, argv)
            log_invocation(state, tool, [tool] + argv, rc)
        return rc
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
                hits = [n for n in params if _llog().matches(pat, n)]
                if not hits:
                    print(f"error: get_param: param_path '{_path(pat)}': No such file or directory", file=sys.stderr)
                    rc = 2
                for n in hits:
                    print(params[n] if only_value else f"{n}={params[n]}")
        else:
            for arg in [a for a in argv[1:] if not a.startswith("-")]:
                pat, eq, value = arg.partition("=")
                hits = [n for n in params if _llog().matches(pat, n)]
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
