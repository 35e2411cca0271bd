"""The ``hdfs:`` section of a lab scenario: HDFS hosts with the lab's ``hdfs`` command emulator
(advisor.lab.emulators.hdfs) at /opt/hadoop/bin and their own /etc/hadoop/conf/hdfs-site.xml (a private
directory bound there), holding the scenario's ``properties``. No Hadoop software runs."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

BIN_DIR = "/opt/hadoop/bin"

#: hdfs-site.xml properties above the rule pack's limits
HDFS_FAULTS = {"dfs.datanode.balance.max.concurrent.moves": ("200", "HDFS-BALANCER-CONCURRENT-MOVES"),
               "dfs.balancer.dispatcherThreads": ("400", "HDFS-BALANCER-DISPATCHER-THREADS")}


class HdfsEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: hosts with the hdfs command and hdfs-site.xml (NameNode, DataNodes, the balancer's host): selectors
    hosts: list[str] = Field(min_length=1)
    #: hdfs-site.xml properties (``dfs.datanode.balance.max.concurrent.moves: "200"``)
    properties: dict[str, str] = Field(default_factory=dict)


def site_xml(properties: dict[str, str]) -> str:
    body = "".join(f"  <property>\n    <name>{escape(k)}</name>\n    <value>{escape(v)}</value>\n  </property>\n"
                   for k, v in properties.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>\n'
            "<!-- storadvise lab: hdfs-site.xml of an emulated HDFS host (no Hadoop software runs here) -->\n"
            f"<configuration>\n{body}</configuration>\n")


class HdfsLab(LabEmulation):
    generated_fault = 'hdfs'
    generated_order = 2
    section = "hdfs"
    bind_dirs = (BIN_DIR, "/etc/hadoop/conf")
    model = HdfsEmulation

    def check(self, spec: HdfsEmulation, scenario: Any) -> None:
        for sel in spec.hosts:
            if not scenario.select(sel):
                raise ValueError(f"hdfs.hosts: selector {sel!r} matches no host, group or role")
        for k, v in spec.properties.items():
            if not re.fullmatch(r"[a-z][A-Za-z0-9_.-]*", k) or not re.fullmatch(r"[A-Za-z0-9_.:/-]+", v):
                raise ValueError(f"hdfs.properties: {k} = {v!r} is not a property name and a plain value")

    def hosts(self, spec: HdfsEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.hosts)]

    def setup(self, state_dir: Path, spec: HdfsEmulation, scenario: Any) -> None:
        d = Path(state_dir) / "hdfs"
        d.mkdir(parents=True, exist_ok=True)
        (d / "hdfs-site.xml").write_text(site_xml(spec.properties))

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import write_wrapper

        d = host_dir / "emu" / "hdfs"
        write_wrapper(d / "bin" / "hdfs", emulator_python(), package_root(), "advisor.lab.emulators.hdfs", "hdfs",
                      state_dir, "emulates the hdfs command (getconf, balancer, dfsadmin) for the storadvise lab",
                      vendor="Apache Hadoop")
        (d / "conf").mkdir(parents=True, exist_ok=True)
        conf = d / "conf" / "hdfs-site.xml"
        conf.write_text((Path(state_dir) / "hdfs" / "hdfs-site.xml").read_text())
        conf.chmod(0o644)
        return {BIN_DIR: d / "bin", "/etc/hadoop/conf": d / "conf"}


    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A rebooted host restarts its DataNode: a bandwidth set with ``dfsadmin -setBalancerBandwidth``
        (runtime only, kept in ``<state>/hdfs/<host>.json``) is gone; hdfs-site.xml (persisted) rules again."""
        from advisor.lab.emulators.common import locked, read_json, write_json

        if not (host_dir / "emu" / "hdfs" / "bin" / "hdfs").exists():
            return None
        state = host_dir.parent.parent / "emu"
        with locked(state):
            f = state / "hdfs" / f"{host}.json"
            data = read_json(f) or {}
            if "bandwidth" in data:
                del data["bandwidth"]
                write_json(f, data)
        return "the DataNode restarted: a dfsadmin -setBalancerBandwidth value is gone, hdfs-site.xml rules"

    def generate_fault(self, rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str,
                       wg: str, expect: list[dict[str, Any]]) -> None:
        keys = rng.sample(sorted(HDFS_FAULTS), rng.randint(1, len(HDFS_FAULTS)))
        data["hdfs"] = {"hosts": [sg], "properties": {k: HDFS_FAULTS[k][0] for k in keys}}
        for h in storage:
            for k in keys:
                expect.append({"rule": HDFS_FAULTS[k][1], "host": h["name"],
                               "fault": f"{k} = {HDFS_FAULTS[k][0]} in hdfs-site.xml"})


EMULATION = HdfsLab()
