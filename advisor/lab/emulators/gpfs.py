"""Emulated GPFS administration commands for lab hosts: mmlsconfig, mmdiag, mmchconfig,
mmshutdown, mmstartup.

storadvise lab emulator — not IBM software. It prints the formats of IBM Storage Scale's mmlsconfig/mmdiag (from real
samples) and keeps state in the lab's state directory:

- ``gpfs/cluster.json``: the persisted cluster configuration shared by all GPFS nodes
  (cluster name and id, nodes, node classes, file systems, ``entries`` = [{attr, value, scope}]
  where scope is null for cluster-wide or a list of node names / node classes);
- ``gpfs/active/<node>.json``: each node's daemon state and active values.

Semantics follow IBM's documentation (mmchconfig, Command and Programming Reference): mmlsconfig shows persisted values;
``mmchconfig`` persists and takes effect at the next mmstartup; ``-i`` persists and applies
immediately; ``-I`` applies immediately without persisting. Only attributes IBM lists as
changeable in the running daemon take effect with -i/-I; others wait for a restart.
Defaults below are the emulator's, not IBM's authoritative values.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from advisor.lab.emulators.common import locked, log_invocation, read_json, this_host, write_json

#: emulator defaults (active value when nothing is configured)
DEFAULTS: dict[str, str] = {
    "pagepool": "1G",
    "pagepoolMaxPhysMemPct": "75",
    "maxMBpS": "2048",
    "maxFilesToCache": "4000",
    "maxStatCache": "1000",
    "maxblocksize": "1M",
    "prefetchThreads": "72",
    "worker1Threads": "48",
    "workerThreads": "48",
    "nsdMaxWorkerThreads": "512",
    "ignorePrefetchLUNCount": "no",
    "readReplicaPolicy": "default",
}
#: attributes whose active values are reported in bytes by mmdiag --config -Y
SIZE_ATTRS = {"pagepool", "maxblocksize", "nsdInlineWriteMax", "tokenMemLimit", "seqDiscardThreshold", "writebehindThreshold"}
#: attributes IBM lists as changeable in the running daemon (-i / -I)
IMMEDIATE = {
    "ignorePrefetchLUNCount", "maxMBpS", "nfsPrefetchStrategy", "nsdBufSpace", "nsdInlineWriteMax",
    "nsdMultiQueue", "pagepool", "pitWorkerThreadsPerNode", "readReplicaPolicy", "seqDiscardThreshold",
    "syncbuffsperiteration", "systemLogLevel", "unmountOnDiskFail", "verbsRdmasPerConnection",
    "verbsRdmasPerNode", "verbsSendBufferMemoryMB", "worker1Threads", "writebehindThreshold",
}
_HEAD = ["clusterName", "clusterId"]
_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class EmuError(Exception):
    def __init__(self, msg: str, rc: int = 1):
        super().__init__(msg)
        self.rc = rc


def size_bytes(v: str) -> str:
    s = str(v).strip()
    if s and s[-1].upper() in _SUFFIX and s[:-1].replace(".", "", 1).isdigit():
        return str(int(float(s[:-1]) * _SUFFIX[s[-1].upper()]))
    return s


# -- state ----------------------------------------------------------------------------------


def initial_cluster(cluster_name: str, cluster_id: str, nodes: list[str], node_classes: dict[str, list[str]],
                    config: dict[str, Any], scoped: list[tuple[list[str], dict[str, Any]]],
                    filesystems: list[str]) -> dict:
    entries: list[dict] = [
        {"attr": "clusterName", "value": cluster_name, "scope": None},
        {"attr": "clusterId", "value": cluster_id, "scope": None},
        {"attr": "autoload", "value": "yes", "scope": None},
        {"attr": "dmapiFileHandleSize", "value": "32", "scope": None},
        {"attr": "minReleaseLevel", "value": "5.1.9.0", "scope": None},
        {"attr": "ccrEnabled", "value": "yes", "scope": None},
        {"attr": "cipherList", "value": "AUTHONLY", "scope": None},
    ]
    for k, v in config.items():
        entries.append({"attr": k, "value": _fmt(v), "scope": None})
    for scope, cfg in scoped:
        for k, v in cfg.items():
            entries.append({"attr": k, "value": _fmt(v), "scope": list(scope)})
    return {
        "cluster_name": cluster_name,
        "cluster_id": cluster_id,
        "nodes": list(nodes),
        "node_classes": {k: list(v) for k, v in node_classes.items()},
        "filesystems": list(filesystems),
        "entries": entries,
        "common": [{"attr": "adminMode", "value": "central"}],
    }


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def setup_state(state_dir: Path, cluster: dict) -> None:
    """Write the cluster config and start every node with its persisted values active."""
    gdir = Path(state_dir) / "gpfs"
    write_json(gdir / "cluster.json", cluster)
    for n in cluster["nodes"]:
        _startup(gdir, cluster, n)


def _expand(cluster: dict, names: list[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        if n in ("all", "a"):
            members = cluster["nodes"]
        elif n in cluster["node_classes"]:
            members = cluster["node_classes"][n]
        elif n in cluster["nodes"]:
            members = [n]
        else:
            raise EmuError(f"mmchconfig: Unknown node or node class: {n}")
        out.extend(m for m in members if m not in out)
    return out


def effective(cluster: dict, node: str) -> dict[str, tuple[str, list[str] | None]]:
    """Persisted value of every configured attribute for one node (node scopes override)."""
    cluster_wide: dict[str, tuple[str, list[str] | None]] = {}
    scoped: dict[str, tuple[str, list[str] | None]] = {}
    for e in cluster["entries"]:
        if e["scope"] is None:
            cluster_wide[e["attr"]] = (e["value"], None)
            continue
        members: list[str] = []
        for s in e["scope"]:
            members += cluster["node_classes"].get(s, [s])
        if node in members:
            scoped[e["attr"]] = (e["value"], e["scope"])
    out = dict(cluster_wide)
    out.update(scoped)
    return out


def _startup(gdir: Path, cluster: dict, node: str) -> None:
    values = {k: {"value": v, "changed": "static"} for k, (v, _) in effective(cluster, node).items() if k not in _HEAD}
    write_json(gdir / "active" / f"{node}.json", {"state": "active", "values": values})


# -- commands -------------------------------------------------------------------------------


def mmlsconfig(cluster: dict, args: list[str]) -> str:
    attrs = [a for a in args if not a.startswith("-")]
    if any(a.startswith("-") for a in args):
        raise EmuError("mmlsconfig: this option is not supported by the storadvise lab emulator")
    if attrs:
        lines = []
        for a in attrs:
            found = False
            for e in cluster["entries"] + [dict(c, scope=None) for c in cluster.get("common", [])]:
                if e["attr"] == a:
                    found = True
                    lines.append(f"{a} {e['value']}" + (f" [{','.join(e['scope'])}]" if e["scope"] else ""))
            if not found:
                if a in DEFAULTS:
                    lines.append(f"{a} {DEFAULTS[a]}")
                else:
                    raise EmuError(f"mmlsconfig: No value for attribute {a}.")
        return "\n".join(lines) + "\n"
    name = cluster["cluster_name"]
    head = f"Configuration data for cluster {name}:"
    out = [head, "-" * (len(head) + 1)]
    for e in cluster["entries"]:
        if e["scope"] is None:
            out.append(f"{e['attr']} {e['value']}")
    scopes: list[tuple[str, ...]] = []
    for e in cluster["entries"]:
        if e["scope"] is not None and tuple(e["scope"]) not in scopes:
            scopes.append(tuple(e["scope"]))
    for sc in scopes:
        out.append(f"[{','.join(sc)}]")
        for e in cluster["entries"]:
            if e["scope"] is not None and tuple(e["scope"]) == sc:
                out.append(f"{e['attr']} {e['value']}")
    out.append("[common]")
    for c in cluster.get("common", []):
        out.append(f"{c['attr']} {c['value']}")
    trail = f"File systems in cluster {name}:"
    out += ["", trail, "-" * (len(trail) + 4)]
    out += cluster["filesystems"]
    return "\n".join(out) + "\n"


def mmdiag(gdir: Path, node: str, args: list[str]) -> str:
    if "--config" not in args:
        raise EmuError("mmdiag: only --config is supported by the storadvise lab emulator")
    st = read_json(gdir / "active" / f"{node}.json", {"state": "down", "values": {}})
    if st.get("state") != "active":
        raise EmuError("mmdiag: GPFS is not running on this node.")
    rows: dict[str, tuple[str, str]] = {k: (v, "") for k, v in DEFAULTS.items()}
    for k, d in st["values"].items():
        rows[k] = (d["value"], "" if DEFAULTS.get(k) == d["value"] else d.get("changed", "static"))
    names = sorted(rows, key=str.lower)
    if "-Y" in args:
        out = ["mmdiag:config:HEADER:version:reserved:reserved:name:value:changed:"]
        for k in names:
            v, ch = rows[k]
            v = size_bytes(v) if k in SIZE_ATTRS else v
            out.append(f"mmdiag:config:0:1:::{k}:{v.replace(':', '%3A')}:{ch}:")
        return "\n".join(out) + "\n"
    out = ["=== mmdiag: config ==="]
    for k in names:
        v, ch = rows[k]
        v = size_bytes(v) if k in SIZE_ATTRS else v
        out.append(f" {'!' if ch else ' '} {k} {v}")
    return "\n".join(out) + "\n"


def mmchconfig(gdir: Path, cluster: dict, args: list[str], err: list[str]) -> str:
    immediate = persist = None
    nodes: list[str] | None = None
    spec: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-i":
            immediate, persist = True, True
        elif a == "-I":
            immediate, persist = True, False
        elif a == "-N":
            if i + 1 >= len(args):
                raise EmuError("mmchconfig: Missing argument after -N")
            nodes = [n for n in args[i + 1].split(",") if n]
            i += 1
        elif a.startswith("-"):
            raise EmuError(f"mmchconfig: Invalid option: {a}")
        elif spec is None:
            spec = a
        else:
            raise EmuError(f"mmchconfig: Extra argument: {a}")
        i += 1
    if not spec:
        raise EmuError("Usage: mmchconfig Attribute=value[,Attribute=value...] [-i | -I] [-N {Node[,Node...] | NodeFile | NodeClass}]")
    if persist is None:
        persist, immediate = True, False
    changes: list[tuple[str, str]] = []
    for part in spec.split(","):
        if "=" not in part or not part.split("=", 1)[0]:
            raise EmuError(f"mmchconfig: Incorrect attribute specification: {part}")
        k, v = part.split("=", 1)
        if k in _HEAD:
            raise EmuError(f"mmchconfig: {k} cannot be changed with mmchconfig")
        changes.append((k, v))
    affected = _expand(cluster, nodes) if nodes else list(cluster["nodes"])
    if persist:
        for k, v in changes:
            if nodes:
                cluster["entries"] = [e for e in cluster["entries"]
                                      if not (e["attr"] == k and e["scope"] is not None and set(e["scope"]) == set(nodes))]
                if v != "DEFAULT":
                    cluster["entries"].append({"attr": k, "value": v, "scope": list(nodes)})
            else:
                cluster["entries"] = [e for e in cluster["entries"] if e["attr"] != k]
                if v != "DEFAULT":
                    cluster["entries"].append({"attr": k, "value": v, "scope": None})
        write_json(gdir / "cluster.json", cluster)
    if immediate:
        for n in affected:
            p = gdir / "active" / f"{n}.json"
            st = read_json(p, {"state": "down", "values": {}})
            if st.get("state") != "active":
                continue
            for k, v in changes:
                if k not in IMMEDIATE:
                    continue
                if v == "DEFAULT":
                    st["values"].pop(k, None)
                else:
                    st["values"][k] = {"value": v, "changed": "dynamic"}
            write_json(p, st)
        slow = [k for k, _ in changes if k not in IMMEDIATE]
        if slow:
            err.append(
                f"mmchconfig: [W] {', '.join(slow)} cannot be changed in the running daemon; the new value "
                "takes effect after mmshutdown/mmstartup on the affected nodes (storadvise lab emulator)"
            )
    out = "mmchconfig: Command successfully completed\n"
    if persist:
        out += "mmchconfig: Propagating the cluster configuration data to all\n  affected nodes.  This is an asynchronous process.\n"
    return out


def mmlsnodeclass(cluster: dict, args: list[str]) -> str:
    """The human table (``Node Class Name  Members``); -Y is answered with the same table:
    the real -Y column layout was not available in public sources."""
    classes = cluster["node_classes"]
    width = max([len("Node Class Name")] + [len(c) for c in classes]) + 3
    out = [f"{'Node Class Name':<{width}}Members", f"{'-' * (width - 1)} {'-' * 40}"]
    for c, members in classes.items():
        out.append(f"{c:<{width}}{','.join(members)}")
    return "\n".join(out) + "\n"


def _daemon(gdir: Path, cluster: dict, tool: str, args: list[str]) -> str:
    if "-a" in args:
        nodes = list(cluster["nodes"])
    elif "-N" in args:
        idx = args.index("-N")
        if idx + 1 >= len(args):
            raise EmuError(f"{tool}: Missing argument after -N")
        nodes = _expand(cluster, args[idx + 1].split(","))
    else:
        nodes = [this_host()]
    stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y")
    out = []
    for n in nodes:
        if tool == "mmstartup":
            _startup(gdir, cluster, n)
        else:
            write_json(gdir / "active" / f"{n}.json", {"state": "down", "values": {}})
    verb = "Starting GPFS ..." if tool == "mmstartup" else "Shutting down GPFS daemons"
    out.append(f"{stamp}: {tool}: {verb}")
    return "\n".join(out) + "\n"


def main(tool: str, argv: list[str], state_dir: str) -> int:
    sd = Path(state_dir)
    gdir = sd / "gpfs"
    node = this_host()
    rc = 0
    err: list[str] = []
    out = ""
    try:
        with locked(gdir):
            cluster = read_json(gdir / "cluster.json")
            if cluster is None:
                raise EmuError(f"{tool}: This node does not belong to a GPFS cluster.")
            if node not in cluster["nodes"]:
                raise EmuError(f"{tool}: This node ({node}) does not belong to a GPFS cluster.")
            if tool == "mmlsconfig":
                out = mmlsconfig(cluster, argv)
            elif tool == "mmdiag":
                out = mmdiag(gdir, node, argv)
            elif tool == "mmchconfig":
                out = mmchconfig(gdir, cluster, argv, err)
            elif tool == "mmlsnodeclass":
                out = mmlsnodeclass(cluster, argv)
            elif tool in ("mmshutdown", "mmstartup"):
                out = _daemon(gdir, cluster, tool, argv)
            else:
                raise EmuError(f"{tool}: not emulated")
    except EmuError as e:
        err.append(str(e))
        rc = e.rc
    sys.stdout.write(out)
    for line in err:
        sys.stderr.write(line + "\n")
    log_invocation(sd, tool, [tool, *argv], rc)
    return rc


TOOLS = ["mmlsconfig", "mmdiag", "mmchconfig", "mmlsnodeclass", "mmshutdown", "mmstartup"]
