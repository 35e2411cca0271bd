"""Emulated SMcli (IBM DS4000 / SANtricity storage manager CLI) for the lab's SAN management host.

storadvise lab emulator — not IBM software. No verbatim SMcli output was found in public sources, so this prints
the field labels known from real parsers (one ``Logical Drive name:`` / ``Volume name:`` line
starting each block, then ``Label: Value`` lines), ending with ``SMcli completed successfully.``;
the surrounding lines and error texts are the emulator's own. State: ``san/array.json``.

Accepted: ``SMcli CTRL [CTRL] [-n ARRAY] -c "CMD; [CMD;...]"`` with the commands
``show allLogicalDrives``, ``show allVolumes``, ``show logicalDrive ["N"]``, ``show volume ["N"]``,
``set logicalDrive ["N"] k=v ...``, ``set logicalDrives ["A" "B"] k=v ...``,
``set allLogicalDrives k=v ...``, ``set volume ["N"] ...``, ``set allVolumes ...``; keys
readCacheEnabled, cacheReadPrefetch, writeCacheEnabled, mirrorCacheEnabled,
cacheWithoutBatteryEnabled (TRUE|FALSE), modificationPriority (lowest|low|medium|high|highest).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from advisor.lab.emulators.common import locked, log_invocation, read_json, write_json

PRIORITIES = ["lowest", "low", "medium", "high", "highest"]
BOOL_KEYS = {
    "readCacheEnabled": "read_cache",
    "cacheReadPrefetch": "prefetch",
    "writeCacheEnabled": "write_cache",
    "mirrorCacheEnabled": "write_cache_mirroring",
    "cacheWithoutBatteryEnabled": "write_cache_without_batteries",
}


class SmcliError(Exception):
    pass


def setup_state(state_dir: Path, array_name: str, controllers: list[str], drives: list[str], settings: dict) -> None:
    write_json(Path(state_dir) / "san" / "array.json", {
        "array_name": array_name,
        "controllers": list(controllers),
        "drives": {d: dict(settings) for d in drives},
    })


def _onoff(b: bool) -> str:
    return "Enabled" if b else "Disabled"


def show(arr: dict, names: list[str], noun: str) -> list[str]:
    label = "Logical Drive" if noun == "logicalDrive" else "Volume"
    out = []
    for n in names:
        d = arr["drives"][n]
        out += [
            f"   {label} name: {n}",
            f"   {label} status: {d['status']}",
            f"   Capacity: {d['capacity']}",
            f"   RAID level: {d['raid_level']}",
            f"   Read cache: {_onoff(d['read_cache'])}",
            f"   Write cache: {_onoff(d['write_cache'])}",
            f"   Write cache with mirroring: {_onoff(d['write_cache_mirroring'])}",
            f"   Write cache without batteries: {_onoff(d['write_cache_without_batteries'])}",
            f"   Flush write cache after (in seconds): {float(d['flush_after']):.2f}",
            f"   Dynamic cache read prefetch: {_onoff(d['prefetch'])}",
            f"   Modification priority: {d['modification_priority'].capitalize()}",
            "",
        ]
    return out


_NAMES_RE = re.compile(r'^\[\s*((?:"[^"]*"\s*)+)\]$')


def _names(arr: dict, token: str) -> list[str]:
    m = _NAMES_RE.match(token.strip())
    if not m:
        raise SmcliError(f'expected a name list like ["NAME"], got {token}')
    names = re.findall(r'"([^"]*)"', m.group(1))
    for n in names:
        if n not in arr["drives"]:
            raise SmcliError(f"The logical drive {n} does not exist.")
    return names


def _split_cmd(cmd: str) -> tuple[str, str, str, list[str]]:
    """('set'|'show', noun, bracket-list or '', [k=v ...])."""
    m = re.match(r"^\s*(\w+)\s+(\w+)\s*(\[[^\]]*\])?\s*(.*)$", cmd, re.S)
    if not m:
        raise SmcliError(f"unrecognised command: {cmd.strip()}")
    return m.group(1), m.group(2), m.group(3) or "", m.group(4).split()


def execute(arr: dict, cmd: str) -> list[str]:
    verb, noun, bracket, rest = _split_cmd(cmd)
    if verb == "show":
        if rest:
            raise SmcliError(f"unexpected parameters: {' '.join(rest)}")
        if noun in ("allLogicalDrives", "allVolumes") and not bracket:
            return show(arr, list(arr["drives"]), "logicalDrive" if noun == "allLogicalDrives" else "volume")
        if noun in ("logicalDrive", "logicalDrives", "volume", "volumes") and bracket:
            return show(arr, _names(arr, bracket), "volume" if noun.startswith("volume") else "logicalDrive")
        raise SmcliError(f"unrecognised command: show {noun}")
    if verb == "set":
        if noun in ("allLogicalDrives", "allVolumes") and not bracket:
            names = list(arr["drives"])
        elif noun in ("logicalDrive", "logicalDrives", "volume", "volumes") and bracket:
            names = _names(arr, bracket)
        else:
            raise SmcliError(f"unrecognised command: set {noun}")
        if not rest:
            raise SmcliError("set needs at least one parameter=value")
        updates = {}
        for kv in rest:
            if "=" not in kv:
                raise SmcliError(f"bad parameter {kv}")
            k, v = kv.split("=", 1)
            if k in BOOL_KEYS:
                if v.upper() not in ("TRUE", "FALSE"):
                    raise SmcliError(f"Valid values for the {k} parameter are TRUE or FALSE")
                updates[BOOL_KEYS[k]] = v.upper() == "TRUE"
            elif k == "modificationPriority":
                if v.lower() not in PRIORITIES:
                    raise SmcliError(f"Valid values for modificationPriority are {', '.join(PRIORITIES)}")
                updates["modification_priority"] = v.lower()
            else:
                raise SmcliError(f"unknown parameter {k}")
        for n in names:
            arr["drives"][n].update(updates)
        return []
    raise SmcliError(f"unrecognised command: {cmd.strip()}")


def split_script(script: str) -> list[str]:
    cmds, cur, quote = [], [], False
    for ch in script:
        if ch == '"':
            quote = not quote
        if ch == ";" and not quote:
            if "".join(cur).strip():
                cmds.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        raise SmcliError(f"missing ';' after: {''.join(cur).strip()}")
    return cmds


def run(state_dir: Path, argv: list[str]) -> tuple[int, str]:
    sdir = Path(state_dir) / "san"
    with locked(sdir):
        arr = read_json(sdir / "array.json")
        if arr is None:
            return 1, "SMcli: no storage array is managed from this host.\n\nSMcli failed.\n"
        ctrls: list[str] = []
        script = None
        name = None
        i = 0
        while i < len(argv):
            a = argv[i]
            if a in ("-c", "-n") and i + 1 < len(argv):
                if a == "-c":
                    script = argv[i + 1]
                else:
                    name = argv[i + 1]
                i += 2
                continue
            if a.startswith("-"):
                return 1, f"SMcli: option {a} is not supported by the storadvise lab emulator.\n\nSMcli failed.\n"
            ctrls.append(a)
            i += 1
        if not ctrls and name is None:
            return 1, "SMcli: no storage array given (controller host names or -n NAME).\n\nSMcli failed.\n"
        unknown = [c for c in ctrls if c not in arr["controllers"]]
        if unknown or (name is not None and name != arr["array_name"]):
            what = ", ".join(unknown) if unknown else name
            return 1, f"SMcli: cannot connect to storage array {what}.\n\nSMcli failed.\n"
        if script is None:
            return 1, "SMcli: missing -c \"command;\".\n\nSMcli failed.\n"
        out = ["Executing script...", ""]
        try:
            for cmd in split_script(script):
                out += execute(arr, cmd)
        except SmcliError as e:
            return 1, "\n".join(out + [f"Error - the script command is not valid: {e}", "", "SMcli failed.", ""])
        write_json(sdir / "array.json", arr)
        out += ["Script execution complete.", "", "SMcli completed successfully.", ""]
        return 0, "\n".join(out)


def main(tool: str, argv: list[str], state_dir: str) -> int:
    rc, text = run(Path(state_dir), argv)
    sys.stdout.write(text)  # SMcli reports errors on stdout too
    log_invocation(Path(state_dir), tool, [tool, *argv], rc)
    return rc


def quote_argv(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
