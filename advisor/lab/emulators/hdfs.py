"""Emulated ``hdfs`` command (getconf, balancer, dfsadmin balancer bandwidth) for the storadvise lab.

storadvise lab emulator -- not Hadoop software. It reads the host's own /etc/hadoop/conf/hdfs-site.xml
(the lab binds a private directory there) over the defaults of Hadoop 3.3's hdfs-default.xml, as
Hadoop's Configuration does (the last ``<property>`` of a name wins), and prints:

* ``hdfs getconf -confKey KEY``: the value alone; an unknown key: ``Configuration KEY is missing.`` on
  stderr, exit 255 (GetConf's IOException);
* ``hdfs balancer``: the Balancer's start-up lines ``<time> INFO balancer.Balancer: KEY = VALUE
  (default=DEFAULT)`` in Balancer.java's order, then an idle run ("The cluster is balanced. Exiting...");
* ``hdfs dfsadmin -setBalancerBandwidth N`` / ``-getBalancerBandwidth DN``: the runtime bandwidth the
  DataNodes would get (kept in ``<state>/hdfs/<host>.json``), in DFSAdmin's sentences.
"""

from __future__ import annotations

import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from advisor.lab.emulators.common import locked, log_invocation, read_json, this_host, write_json

SITE_XML = "/etc/hadoop/conf/hdfs-site.xml"
#: Hadoop 3.3 hdfs-default.xml values of the keys the balancer logs, in the order Balancer.java logs them
DEFAULTS = {
    "dfs.namenode.get-blocks.max-qps": "20",
    "dfs.balancer.movedWinWidth": "5400000",
    "dfs.balancer.moverThreads": "1000",
    "dfs.balancer.dispatcherThreads": "200",
    "dfs.balancer.getBlocks.size": "2147483648",
    "dfs.balancer.getBlocks.min-block-size": "10485760",
    "dfs.datanode.balance.max.concurrent.moves": "100",
    "dfs.datanode.balance.bandwidthPerSec": "100m",
    "dfs.balancer.max-size-to-move": "10737418240",
    "dfs.blocksize": "134217728",
}


def site_properties(text: str) -> dict[str, str]:
    root = ET.fromstring(text)
    out: dict[str, str] = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name:
            out[name.strip()] = (value or "").strip()
    return out


def configuration(site_xml: str = SITE_XML) -> dict[str, str]:
    try:
        text = Path(site_xml).read_text()
    except FileNotFoundError:
        return dict(DEFAULTS)
    return {**DEFAULTS, **site_properties(text)}


def balancer_lines(conf: dict[str, str], now: float) -> list[str]:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    lines = [f"{stamp} INFO balancer.Balancer: {k} = {conf[k]} (default={d})" for k, d in DEFAULTS.items()]
    lines += [f"{stamp} INFO balancer.Balancer: 0 over-utilized: []", f"{stamp} INFO balancer.Balancer: 0 underutilized: []"]
    return lines


def main(tool: str, argv: list[str], state_dir: str) -> int:
    state, host = Path(state_dir), this_host()
    rc = 0
    with locked(state):
        try:
            conf = configuration()
        except ET.ParseError as exc:
            print(f"Exception in thread \"main\" java.lang.RuntimeException: {SITE_XML}: {exc}", file=sys.stderr)
            log_invocation(state, tool, [tool] + argv, 1)
            return 1
        if argv[:2] == ["getconf", "-confKey"] and len(argv) == 3:
            if argv[2] in conf:
                print(conf[argv[2]])
            else:
                print(f"Configuration {argv[2]} is missing.", file=sys.stderr)
                rc = 255
        elif argv[:1] == ["balancer"]:
            for line in balancer_lines(conf, time.time()):
                print(line, file=sys.stderr)
            print("Time Stamp               Iteration#  Bytes Already Moved  Bytes Left To Move  Bytes Being Moved")
            print("The cluster is balanced. Exiting...")
        elif argv[:2] == ["dfsadmin", "-setBalancerBandwidth"] and len(argv) == 3 and argv[2].isdigit():
            f = state / "hdfs" / f"{host}.json"
            write_json(f, {**(read_json(f) or {}), "bandwidth": int(argv[2])})
            print(f"Balancer bandwidth is set to {argv[2]}")
        elif argv[:2] == ["dfsadmin", "-getBalancerBandwidth"] and len(argv) == 3:
            bw = (read_json(state / "hdfs" / f"{host}.json") or {}).get("bandwidth")
            if bw is None:
                v = conf["dfs.datanode.balance.bandwidthPerSec"]
                bw = int(v[:-1]) * 1024 * 1024 if v.endswith("m") else int(v)
            print(f"Balancer bandwidth is {bw} bytes per second.")
        else:
            print(f"{tool}: storadvise lab emulator: only getconf -confKey, balancer and dfsadmin "
                  f"-setBalancerBandwidth/-getBalancerBandwidth are emulated", file=sys.stderr)
            rc = 1
        log_invocation(state, tool, [tool] + argv, rc)
    return rc
