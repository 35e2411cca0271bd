"""The ``lustre:`` section of a lab scenario: Lustre client mounts emulated by an ``lctl`` emulator
(advisor.lab.emulators.lustre) that appears at /usr/local/sbin (on root's PATH) in the client hosts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from advisor.lab.emulation import LabEmulation, emulator_python, package_root

BIN_DIR = "/usr/local/sbin"


class LustreEmulation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: hosts with the file system mounted (selectors: group, role or host name)
    clients: list[str] = Field(min_length=1)
    fsname: str = Field(default="lustre", pattern=r"^[a-z0-9_]{1,8}$")
    osts: int = Field(default=4, ge=1, le=64)
    mdts: int = Field(default=1, ge=1, le=16)
    #: boot values, ``TYPE.PARAM: value`` (``osc.max_rpcs_in_flight: 8``); unnamed ones keep Lustre's defaults
    settings: dict[str, int] = Field(default_factory=dict)
    #: the host that is the file system's MGS (a selector matching one host; not a client): it keeps
    #: the permanent parameters (``lctl set_param -P``) every client applies when it mounts
    mgs: str | None = None


class LustreLab(LabEmulation):
    section = "lustre"
    bind_dirs = (BIN_DIR,)
    model = LustreEmulation

    def check(self, spec: LustreEmulation, scenario: Any) -> None:
        from advisor.lab.emulators.lustre import LLITE_DEFAULTS, MDC_DEFAULTS, OSC_DEFAULTS

        for sel in spec.clients:
            if not scenario.select(sel):
                raise ValueError(f"lustre.clients: selector {sel!r} matches no host, group or role")
        known = {f"{k}.{p}" for k, d in (("osc", OSC_DEFAULTS), ("mdc", MDC_DEFAULTS), ("llite", LLITE_DEFAULTS)) for p in d}
        for key in spec.settings:
            if key not in known:
                raise ValueError(f"lustre.settings: unknown parameter {key!r} (known: {', '.join(sorted(known))})")
        if spec.mgs is not None:
            mgs = [h.name for h in scenario.select(spec.mgs)]
            if len(mgs) != 1:
                raise ValueError(f"lustre.mgs: selector {spec.mgs!r} must match one host, matches {len(mgs)}")
            if mgs[0] in self._clients(spec, scenario):
                raise ValueError(f"lustre.mgs: {mgs[0]} is also a client; the lab's MGS is a server of its own")

    def _clients(self, spec: LustreEmulation, scenario: Any) -> list[str]:
        return [h.name for h in scenario.select_all(spec.clients)]

    def _mgs(self, spec: LustreEmulation, scenario: Any) -> str | None:
        return scenario.select(spec.mgs)[0].name if spec.mgs is not None else None

    def hosts(self, spec: LustreEmulation, scenario: Any) -> list[str]:
        mgs = self._mgs(spec, scenario)
        return self._clients(spec, scenario) + ([mgs] if mgs else [])

    def setup(self, state_dir: Path, spec: LustreEmulation, scenario: Any) -> None:
        from advisor.lab.emulators import lustre

        lustre.setup_state(state_dir, self._clients(spec, scenario), spec.fsname, spec.osts, spec.mdts, spec.settings,
                           mgs=self._mgs(spec, scenario))

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        from advisor.lab.emulators.common import write_wrapper
        from advisor.lab.emulators.lustre import REMOUNT_TOOL

        d = host_dir / "emu" / "lustre"
        write_wrapper(d / "lctl", emulator_python(), package_root(), "advisor.lab.emulators.lustre", "lctl", state_dir,
                      "emulates the Lustre client's lctl get_param/set_param for the storadvise lab")
        write_wrapper(d / REMOUNT_TOOL, emulator_python(), package_root(), "advisor.lab.emulators.lustre", REMOUNT_TOOL,
                      state_dir, "the lab's reboot: the emulated Lustre client mounts again at its boot values")
        return {BIN_DIR: d}

    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A rebooted client mounts again: values set with lctl set_param are gone, the MGS's
        permanent parameters (set_param -P) are applied again. The MGS keeps its log."""
        import subprocess

        from advisor.lab.emulators.lustre import REMOUNT_TOOL

        tool = host_dir / "emu" / "lustre" / REMOUNT_TOOL
        if not tool.exists():
            return None
        cp = subprocess.run(["env", f"STORADVISE_LAB_HOST={host}", str(tool)], capture_output=True, text=True, timeout=60)
        if cp.returncode != 0:
            raise RuntimeError(f"{REMOUNT_TOOL} on {host} failed: {(cp.stderr or cp.stdout).strip()[-300:]}")
        if cp.stdout.startswith("the MGS"):
            return "the Lustre MGS started again: its params log (lctl set_param -P) is kept"
        return ("the Lustre client mounted again: lctl set_param values are gone, the MGS's permanent "
                "parameters (set_param -P) are applied again")


EMULATION = LustreLab()
