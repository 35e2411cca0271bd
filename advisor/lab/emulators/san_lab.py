"""The ``san:`` section of a lab scenario: an emulated DS4000/SANtricity array
(advisor.lab.emulators.san) whose SMcli appears at /opt/SMgr/client on the management host."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

CLIENT_DIR = "/opt/SMgr/client"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LogicalDriveSettings(_Strict):
    read_cache: bool = True
    prefetch: bool = True
    write_cache: bool = False
    write_cache_mirroring: bool = False
    write_cache_without_batteries: bool = False
    flush_after: float = 10.0
    modification_priority: Literal["lowest", "low", "medium", "high", "highest"] = "low"
    raid_level: int = 5
    capacity: str = "2,000.000 GB"
    status: str = "Optimal"


class SanEmulation(_Strict):
    host: str = Field(description="the SAN management host (carries SMcli)")
    array_name: str = "DS4700"
    controllers: list[str] = Field(min_length=1)
    logical_drives: list[str] = Field(min_length=1, description="names; ranges like data[01:04] allowed")
    settings: LogicalDriveSettings = Field(default_factory=LogicalDriveSettings)


class SanLab(LabEmulation):
    section = "san"
    bind_dirs = (CLIENT_DIR,)
    model = SanEmulation

    def check(self, spec: SanEmulation, scenario: Any) -> None:
        from advisor.lab.scenario import expand_host_pattern

        if spec.host not in {h.name for h in scenario.hosts}:
            raise ValueError(f"san.host: unknown host {spec.host!r}")
        spec.logical_drives = [d for pat in spec.logical_drives for d in expand_host_pattern(pat)]

    def hosts(self, spec: SanEmulation, scenario: Any) -> list[str]:
        return [spec.host]

    def setup(self, state_dir: Path, spec: SanEmulation, scenario: Any) -> None:
        from advisor.lab.emulators import san

        san.setup_state(state_dir, spec.array_name, spec.controllers, spec.logical_drives, spec.settings.model_dump())

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import write_wrapper

        d = host_dir / "emu" / "smcli"
        write_wrapper(d / "SMcli", emulator_python(), package_root(), "advisor.lab.emulators.san", "SMcli", state_dir,
                      "emulates the DS4000/SANtricity SMcli for the storadvise lab")
        return {CLIENT_DIR: d}

    def site_host_settings(self, spec: SanEmulation, scenario: Any, host: str) -> dict[str, Any]:
        return {"san_controllers": list(spec.controllers)} if host == spec.host else {}


    def reboot(self, host_dir: Path, host: str) -> str | None:
        """The array keeps its logical drives' settings in its controllers: a management host's reboot
        changes nothing there."""
        if not (host_dir / "emu" / "smcli" / "SMcli").exists():
            return None
        return "the SAN array does not reboot with its management host: its settings are unchanged"


EMULATION = SanLab()
