"""The ``dcache:`` section of a lab scenario: dCache pool and door nodes emulated by their configuration
files and a ``dcache`` command (advisor.lab.emulators.dcache): /etc/dcache and /var/lib/dcache are the
host's own directories in the lab's state, the command is at /opt/d-cache/bin/dcache
(dCache's old install prefix; the dcache_tuning role looks there too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

#: dCache's old install prefix (/opt/d-cache/bin/dcache): a directory no other emulator binds
BIN_DIR = "/opt/d-cache/bin"


class DcacheEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: hosts running a pool domain (selectors: group, role or host name)
    pools: list[str] = Field(default_factory=list)
    #: hosts running the doors domain (srm, xrootd, webdav)
    doors: list[str] = Field(default_factory=list)
    pools_per_host: int = Field(default=2, ge=1, le=8)
    #: the pool domain's dcache.java.memory.direct / .heap (unset: dCache's default, 512m)
    pool_direct_memory: str | None = Field(default=None, pattern=r"^\d{1,6}[kmgKMG]?$")
    pool_heap: str | None = Field(default=None, pattern=r"^\d{1,6}[kmgKMG]?$")
    #: ``mover set max active -queue=regular N`` in every pool's setup file (unset: no such line)
    mover_max_active: int | None = Field(default=100, ge=1, le=100000)
    #: srm.limits.transfer-tcp-buffer.size under [doorsDomain/srm] (unset: dCache's default, 1048576)
    srm_tcp_buffer: int | None = Field(default=None, ge=1024, le=2**30)
    #: the site lets the dcache_tuning role restart the domains it changed (host setting dcache_restart_domains)
    restart_domains: bool = False


class DcacheLab(LabEmulation):
    section = "dcache"
    bind_dirs = (BIN_DIR, "/etc/dcache", "/var/lib/dcache")
    model = DcacheEmulation

    def check(self, spec: DcacheEmulation, scenario: Any) -> None:
        if not spec.pools and not spec.doors:
            raise ValueError("dcache: names no pools and no doors")
        for what, sels in (("pools", spec.pools), ("doors", spec.doors)):
            for sel in sels:
                if not scenario.select(sel):
                    raise ValueError(f"dcache.{what}: selector {sel!r} matches no host, group or role")

    def _pool_hosts(self, spec: DcacheEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.pools)] if spec.pools else []

    def _door_hosts(self, spec: DcacheEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.doors)] if spec.doors else []

    def hosts(self, spec: DcacheEmulation, scenario: Any) -> list[str]:
        return list(dict.fromkeys(self._pool_hosts(spec, scenario) + self._door_hosts(spec, scenario)))

    def setup(self, state_dir: Path, spec: DcacheEmulation, scenario: Any) -> None:
        from advisor.lab.emulators.dcache import setup_host

        pools, doors = set(self._pool_hosts(spec, scenario)), set(self._door_hosts(spec, scenario))
        for host in self.hosts(spec, scenario):
            setup_host(state_dir, host, pools=spec.pools_per_host if host in pools else 0, doors=host in doors,
                       pool_direct_memory=spec.pool_direct_memory, pool_heap=spec.pool_heap,
                       mover_max_active=spec.mover_max_active, srm_tcp_buffer=spec.srm_tcp_buffer)

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import write_wrapper
        from advisor.lab.emulators.dcache import RESTART_TOOL, host_root

        d = host_dir / "emu" / "dcache"
        write_wrapper(d / "dcache", emulator_python(), package_root(), "advisor.lab.emulators.dcache", "dcache", state_dir,
                      "emulates dCache's dcache command (status/start/stop/restart) for the storadvise lab")
        write_wrapper(d / RESTART_TOOL, emulator_python(), package_root(), "advisor.lab.emulators.dcache", RESTART_TOOL,
                      state_dir, "the lab's reboot: every dCache domain starts again and reads its files")
        root = host_root(state_dir, host_dir.name)
        return {BIN_DIR: d, "/etc/dcache": root / "etc", "/var/lib/dcache": root / "lib"}

    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A rebooted node starts its domains: they read the files as they are now."""
        import subprocess

        from advisor.lab.emulators.dcache import RESTART_TOOL

        tool = host_dir / "emu" / "dcache" / RESTART_TOOL
        if not tool.exists():
            return None
        cp = subprocess.run(["env", f"STORADVISE_LAB_HOST={host}", str(tool)], capture_output=True, text=True, timeout=60)
        if cp.returncode != 0:
            raise RuntimeError(f"{RESTART_TOOL} on {host} failed: {(cp.stderr or cp.stdout).strip()[-300:]}")
        return "every dCache domain of the node started again, reading its layout and pool setup files"

    def site_host_settings(self, spec: DcacheEmulation, scenario: Any, host: str) -> dict[str, Any]:
        return {"dcache_restart_domains": "true"} if spec.restart_domains and host in self.hosts(spec, scenario) else {}


EMULATION = DcacheLab()
