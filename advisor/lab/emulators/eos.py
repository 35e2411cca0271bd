"""Emulated ``eos`` console (fs ls, fs config, fs boot, space status, space config) for the storadvise lab.

storadvise lab emulator -- not EOS software. The MGM's state is one JSON file (``<state>/eos/mgm.json``:
the file systems and the default space's variables). ``eos [-b] fs ls`` prints the box-drawn table of
EOS 4/5 (``┌─┬─┐`` rule, ``│``-separated header, ``└─┴─┘`` rule, then one row per file system whose
fields sit under the header's columns); ``eos [-b] space status default`` the ``# Space Variables``
banner and ``name := value`` lines; ``fs config ID configstatus=X``, ``fs boot ID`` and ``space config
default space.NAME=VALUE`` change the state as the MGM would (a boot brings the FST online).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, write_json

#: columns of eos fs ls (EOS 4.8 layout, with drainstatus) and their widths; host is left-aligned
COLUMNS = (("host", 24), ("port", 4), ("id", 6), ("path", 32), ("schedgroup", 16), ("geotag", 16), ("boot", 12),
           ("configstatus", 14), ("drainstatus", 12), ("active", 8), ("health", 16))
#: the default space's variables (as the EOS drain documentation shows them)
SPACE_DEFAULTS = {"balancer": "on", "balancer.node.ntx": "10", "balancer.node.rate": "10", "balancer.threshold": "1",
                  "drainer.node.ntx": "10", "drainer.node.rate": "25", "drainperiod": "3600", "graceperiod": "86400",
                  "groupmod": "24", "groupsize": "20", "headroom": "0.00 B", "quota": "off", "scaninterval": "1"}
CONFIGSTATUS = ("rw", "wo", "ro", "drain", "draindead", "empty", "off")


def setup_state(state_dir: Path, fsts: list[str], per_fst: int, overrides: dict[int, dict[str, str]],
                space: dict[str, str]) -> None:
    fss = []
    for n, host in enumerate(fsts):
        for j in range(per_fst):
            fid = n * per_fst + j + 1
            fs = {"id": str(fid), "host": host, "port": "1095", "path": f"/data{j + 1:02d}",
                  "schedgroup": f"default.{j}", "geotag": "lab", "boot": "booted", "configstatus": "rw",
                  "drainstatus": "nodrain", "active": "online", "health": "N/A"}
            fs.update(overrides.get(fid, {}))
            fss.append(fs)
    write_json(Path(state_dir) / "eos" / "mgm.json", {"filesystems": fss, "space": {**SPACE_DEFAULTS, **space}})


def fs_ls(state: dict[str, Any]) -> str:
    cells = lambda vals: [v.ljust(w) if c == "host" else v.rjust(w) for (c, w), v in zip(COLUMNS, vals)]  # noqa: E731
    out = ["┌" + "┬".join("─" * w for _, w in COLUMNS) + "┐",
           "│" + "│".join(cells([c for c, _ in COLUMNS])) + "│",
           "└" + "┴".join("─" * w for _, w in COLUMNS) + "┘"]
    out += [" " + " ".join(cells([fs[c] for c, _ in COLUMNS])) + " " for fs in state["filesystems"]]
    return "\n".join(out) + "\n"


def space_status(state: dict[str, Any]) -> str:
    out = ["# " + "-" * 84, "# Space Variables", "# " + "." * 84]
    out += [f"{k:<32} := {v}" for k, v in sorted(state["space"].items())]
    return "\n".join(out) + "\n"


def _fs(state: dict[str, Any], fid: str) -> dict[str, str] | None:
    return next((fs for fs in state["filesystems"] if fs["id"] == fid), None)


def run(state: dict[str, Any], args: list[str]) -> tuple[int, str, str]:
    """(rc, stdout, stderr) of one console command; ``state`` is changed in place."""
    if args == ["fs", "ls"]:
        return 0, fs_ls(state), ""
    if args == ["space", "status", "default"]:
        return 0, space_status(state), ""
    if len(args) == 4 and args[:2] == ["fs", "config"]:
        fs, (key, _, value) = _fs(state, args[2]), args[3].partition("=")
        if fs is None:
            return 22, "", f"error: no such filesystem with id={args[2]}\n"
        if key != "configstatus" or value not in CONFIGSTATUS:
            return 22, "", f"error: not an allowed parameter <{args[3]}>\n"
        fs["configstatus"] = value
        return 0, "", ""
    if len(args) == 3 and args[:2] == ["fs", "boot"]:
        fs = _fs(state, args[2])
        if fs is None:
            return 22, "", f"error: no such filesystem with id={args[2]}\n"
        fs.update(boot="booted", active="online")
        return 0, f"success: boot message send to {fs['host']}:{fs['path']}\n", ""
    if len(args) == 4 and args[:3] == ["space", "config", "default"] and args[3].startswith("space."):
        key, eq, value = args[3][len("space."):].partition("=")
        if not eq or key not in state["space"]:
            return 22, "", f"error: the specified key is not known - consult the usage information of the command\n"
        state["space"][key] = value
        return 0, f"success: setting {key}={value}\n", ""
    return 22, "", ("storadvise lab emulator: only fs ls, fs config ID configstatus=X, fs boot ID, space status "
                    "default and space config default space.NAME=VALUE are emulated\n")


def main(tool: str, argv: list[str], state_dir: str) -> int:
    state = Path(state_dir)
    args = [a for a in argv if a != "-b"]
    with locked(state):
        data = read_json(state / "eos" / "mgm.json")
        if data is None:
            print("error: no MGM on this host (storadvise lab emulator)", file=sys.stderr)
            log_invocation(state, tool, [tool] + argv, 1)
            return 1
        rc, out, err = run(data, args)
        if rc == 0:
            write_json(state / "eos" / "mgm.json", data)
        sys.stdout.write(out)
        sys.stderr.write(err)
        log_invocation(state, tool, [tool] + argv, rc)
    return rc
