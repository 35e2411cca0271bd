"""The ``gpfs:`` section of a lab scenario: an emulated GPFS cluster (advisor.lab.emulators.gpfs)
whose tools appear at /usr/lpp/mmfs/bin in the hosts that run GPFS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

BIN_DIR = "/usr/lpp/mmfs/bin"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GpfsScope(_Strict):
    nodes: list[str] = Field(min_length=1, description="node names and/or node classes, as in [a,b]")
    config: dict[str, Any]


class GpfsEmulation(_Strict):
    cluster_name: str
    cluster_id: str = "13882457537419371234"
    #: hosts running GPFS (selectors: group, role or host name)
    nodes: list[str] = Field(min_length=1)
    node_classes: dict[str, list[str]] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict, description="cluster-wide persisted attributes")
    scoped: list[GpfsScope] = Field(default_factory=list)
    filesystems: list[str] = Field(default_factory=lambda: ["/dev/fs1"])


class GpfsLab(LabEmulation):
    section = "gpfs"
    bind_dirs = (BIN_DIR,)
    model = GpfsEmulation

    def check(self, spec: GpfsEmulation, scenario: Any) -> None:
        for sel in spec.nodes:
            if not scenario.select(sel):
                raise ValueError(f"gpfs.nodes: selector {sel!r} matches no host, group or role")

    def hosts(self, spec: GpfsEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.nodes)]

    def setup(self, state_dir: Path, spec: GpfsEmulation, scenario: Any) -> None:
        from advisor.lab.emulators import gpfs

        gpfs.setup_state(state_dir, gpfs.initial_cluster(
            spec.cluster_name, spec.cluster_id, self.hosts(spec, scenario), spec.node_classes, spec.config,
            [(s.nodes, s.config) for s in spec.scoped], spec.filesystems))

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators import gpfs
        from advisor.lab.emulators.common import write_wrapper

        d = host_dir / "emu" / "gpfs"
        for tool in gpfs.TOOLS:
            write_wrapper(d / tool, emulator_python(), package_root(), "advisor.lab.emulators.gpfs", tool, state_dir,
                          f"emulates GPFS {tool} for the storadvise lab")
        return {BIN_DIR: d}

    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A rebooted node restarts GPFS: values persisted without -i become active."""
        import subprocess

        d = host_dir / "emu" / "gpfs"
        if not (d / "mmstartup").exists():
            return None
        for tool in ("mmshutdown", "mmstartup"):
            cp = subprocess.run(["env", f"STORADVISE_LAB_HOST={host}", str(d / tool), "-N", host],
                                capture_output=True, text=True, timeout=60)
            if cp.returncode != 0:
                raise RuntimeError(f"{tool} -N {host} failed: {(cp.stderr or cp.stdout).strip()[-300:]}")
        return f"mmshutdown -N {host}; mmstartup -N {host}: the node runs the cluster's persisted configuration"

    def site_host_settings(self, spec: GpfsEmulation, scenario: Any, host: str) -> dict[str, Any]:
        return {"gpfs_node": host} if host in self.hosts(spec, scenario) else {}


EMULATION = GpfsLab()
