"""The ``beegfs:`` section of a lab scenario: BeeGFS clients whose /etc/beegfs/beegfs-client.conf is
the lab's (a private directory bound at /etc/beegfs in each client host's mount namespace). No BeeGFS
software runs: the file is what the beegfs.client_conf probe reads and the beegfs_client role edits.
It is written in the layout ThinkParQ ships (``key<padding>= value`` lines, ``#`` comments) with the
shipped defaults of the settings the rule pack reads, overridden by the scenario's ``settings``."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation

#: shipped defaults (ThinkParQ beegfs-client.conf, Section 1.2) of the settings written in the lab's file
DEFAULTS = {"connMaxInternodeNum": "12", "connUseRDMA": "true", "connTCPRcvBufSize": "0",
            "tuneFileCacheType": "buffered", "tuneRemoteFSync": "true", "sysSyncOnClose": "false"}

#: beegfs-client.conf settings a BeeGFS fault turns the wrong way
BEEGFS_FAULTS = {"tuneFileCacheType": ("none", "BEEGFS-FILE-CACHE"),
                 "connMaxInternodeNum": ("4", "BEEGFS-CONN-MAX-INTERNODE")}


class BeegfsEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: hosts with the BeeGFS client (selectors: group, role or host name)
    clients: list[str] = Field(min_length=1)
    #: the management host named in sysMgmtdHost
    mgmtd: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$")
    #: settings that differ from the shipped defaults (``tuneFileCacheType: none``)
    settings: dict[str, str] = Field(default_factory=dict)


def client_conf(spec: BeegfsEmulation) -> str:
    values = {"sysMgmtdHost": spec.mgmtd, **DEFAULTS, **spec.settings}
    lines = ["# This is a config file for BeeGFS clients.",
             "# storadvise lab: written by the lab (no BeeGFS software runs here), in the shipped file's layout.",
             "", "#", "# --- Section 1.1: [Basic Settings] ---", "#", ""]
    lines += [f"{k:<30}= {v}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


class BeegfsLab(LabEmulation):
    generated_fault = 'beegfs'
    generated_order = 1
    section = "beegfs"
    bind_dirs = ("/etc/beegfs",)
    model = BeegfsEmulation

    def check(self, spec: BeegfsEmulation, scenario: Any) -> None:
        for sel in spec.clients:
            if not scenario.select(sel):
                raise ValueError(f"beegfs.clients: selector {sel!r} matches no host, group or role")
        for k, v in spec.settings.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", k) or not re.fullmatch(r"[A-Za-z0-9_./:-]*", v):
                raise ValueError(f"beegfs.settings: {k} = {v!r} is not a setting name and a plain value")

    def hosts(self, spec: BeegfsEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.clients)]

    def setup(self, state_dir: Path, spec: BeegfsEmulation, scenario: Any) -> None:
        d = Path(state_dir) / "beegfs"
        d.mkdir(parents=True, exist_ok=True)
        (d / "beegfs-client.conf").write_text(client_conf(spec))

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        etc = host_dir / "emu" / "beegfs" / "etc"
        etc.mkdir(parents=True, exist_ok=True)
        conf = etc / "beegfs-client.conf"
        conf.write_text((Path(state_dir) / "beegfs" / "beegfs-client.conf").read_text())
        conf.chmod(0o644)
        return {"/etc/beegfs": etc}


    def reboot(self, host_dir: Path, host: str) -> str | None:
        """The client module reads beegfs-client.conf at mount: the file is the client's whole state."""
        if not (host_dir / "emu" / "beegfs" / "etc" / "beegfs-client.conf").is_file():
            return None
        return "the BeeGFS client mounts again with its beegfs-client.conf (no runtime-only state)"

    def generate_fault(self, rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str,
                       wg: str, expect: list[dict[str, Any]]) -> None:
        keys = rng.sample(sorted(BEEGFS_FAULTS), rng.randint(1, len(BEEGFS_FAULTS)))
        data["beegfs"] = {"clients": [wg], "mgmtd": storage[0]["name"], "settings": {k: BEEGFS_FAULTS[k][0] for k in keys}}
        for h in workers:
            for k in keys:
                expect.append({"rule": BEEGFS_FAULTS[k][1], "host": h["name"],
                               "fault": f"{k} = {BEEGFS_FAULTS[k][0]} in beegfs-client.conf"})


EMULATION = BeegfsLab()
