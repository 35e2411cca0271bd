"""The ``eos:`` section of a lab scenario: an EOS instance whose MGM host carries the lab's ``eos`` console
emulator (advisor.lab.emulators.eos) at /opt/eos/bin, with file systems on the FST hosts and the default
space's variables as the scenario gives them. No EOS software runs."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

BIN_DIR = "/opt/eos/bin"

#: EOS default-space variables that fail a rule
EOS_SPACE_FAULTS = {"balancer": ("off", "EOS-SPACE-BALANCER"), "balancer.node.ntx": ("40", "EOS-SPACE-BALANCER-NTX")}


class EosEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: the MGM host (its name)
    mgm: str
    #: hosts with file systems (FSTs): selectors
    fsts: list[str] = Field(min_length=1)
    filesystems_per_fst: int = Field(default=2, ge=1, le=48)
    #: file system id -> fields that differ from a booted, online rw file system (``configstatus: ro``)
    filesystems: dict[int, dict[str, str]] = Field(default_factory=dict)
    #: default-space variables that differ from the defaults (``balancer: "off"``)
    space: dict[str, str] = Field(default_factory=dict)


class EosLab(LabEmulation):
    generated_fault = 'eos'
    generated_order = 3
    section = "eos"
    bind_dirs = (BIN_DIR,)
    model = EosEmulation

    def check(self, spec: EosEmulation, scenario: Any) -> None:
        from advisor.lab.emulators.eos import COLUMNS, SPACE_DEFAULTS

        if [h.name for h in scenario.select_all([spec.mgm])] != [spec.mgm]:
            raise ValueError(f"eos.mgm: {spec.mgm!r} is not a host of the scenario")
        for sel in spec.fsts:
            if not scenario.select(sel):
                raise ValueError(f"eos.fsts: selector {sel!r} matches no host, group or role")
        total = len(scenario.select_all(spec.fsts)) * spec.filesystems_per_fst
        fields = {c for c, _ in COLUMNS} - {"id", "host", "port", "path"}
        for fid, over in spec.filesystems.items():
            if not 1 <= fid <= total:
                raise ValueError(f"eos.filesystems: no file system {fid} (ids 1-{total})")
            for k, v in over.items():
                if k not in fields or not re.fullmatch(r"[A-Za-z0-9_.:/-]{1,16}", v):
                    raise ValueError(f"eos.filesystems.{fid}: {k} = {v!r} is not a field and a plain value")
        for k, v in spec.space.items():
            if k not in SPACE_DEFAULTS or not re.fullmatch(r"[A-Za-z0-9_. ]{1,16}", v):
                raise ValueError(f"eos.space: {k} = {v!r} is not a space variable and a plain value")

    def hosts(self, spec: EosEmulation, scenario: Any) -> list[str]:
        return [spec.mgm]

    def setup(self, state_dir: Path, spec: EosEmulation, scenario: Any) -> None:
        from advisor.lab.emulators import eos

        eos.setup_state(state_dir, [h.name for h in scenario.select_all(spec.fsts)], spec.filesystems_per_fst,
                        spec.filesystems, spec.space)

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import write_wrapper

        d = host_dir / "emu" / "eos" / "bin"
        write_wrapper(d / "eos", emulator_python(), package_root(), "advisor.lab.emulators.eos", "eos", state_dir,
                      "emulates the EOS console (fs ls/config/boot, space status/config) for the storadvise lab",
                      vendor="EOS (CERN)")
        return {BIN_DIR: d}


    def reboot(self, host_dir: Path, host: str) -> str | None:
        """The MGM keeps file system and space settings in its configuration: they survive its restart."""
        if not (host_dir / "emu" / "eos" / "bin" / "eos").exists():
            return None
        return "the EOS MGM restarts with its saved configuration (fs and space settings unchanged)"

    def generate_fault(self, rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str,
                       wg: str, expect: list[dict[str, Any]]) -> None:
        mgm = storage[0]["name"]
        per_fst = rng.randint(1, 3)
        fid = rng.randint(1, per_fst * len(storage))
        bad_fs = rng.choice([({"configstatus": "ro"}, "EOS-FS-CONFIGSTATUS"),
                             ({"boot": "opserror", "active": "offline"}, "EOS-FS-ONLINE")])
        keys = rng.sample(sorted(EOS_SPACE_FAULTS), rng.randint(0, len(EOS_SPACE_FAULTS)))
        data["eos"] = {"mgm": mgm, "fsts": [sg], "filesystems_per_fst": per_fst, "filesystems": {fid: bad_fs[0]},
                       "space": {k: EOS_SPACE_FAULTS[k][0] for k in keys}}
        expect.append({"rule": bad_fs[1], "host": mgm, "subject": str(fid), "fixable": False, "by_hand": True,
                       "fault": f"EOS file system {fid}: {bad_fs[0]}"})
        for k in keys:
            expect.append({"rule": EOS_SPACE_FAULTS[k][1], "host": mgm, "fixable": False, "by_hand": True,
                           "fault": f"EOS space default: {k} = {EOS_SPACE_FAULTS[k][0]}"})


EMULATION = EosLab()
