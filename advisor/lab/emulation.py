"""The lab side of a storage kind: a scenario section that emulates the system's administration
CLIs in lab hosts (advisor.storage_kinds: a kind's ``lab_emulation`` module holds ``EMULATION``).

The lab knows no storage system by name: a scenario's top-level key that names a registered
emulation's ``section`` is validated by that emulation's model, and the emulation sets up its
state, installs its tools in the hosts that carry them, and says what the site file records about
those hosts (the storage kind's host settings)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel


class LabEmulation:
    #: the scenario's top-level key
    section: str = ""
    #: the pydantic model of that section
    model: type[BaseModel]
    #: the paths in a host that ``install`` binds (two emulations may not bind one on the same host)
    bind_dirs: tuple[str, ...] = ()
    #: its section is gathered from keys of the scenario's hosts (``nic:``, ``cpu:``), never a top-level key
    from_hosts: bool = False
    #: the fault kind ``lab generate`` draws for this system ("": it draws none; advisor/lab/generate.py)
    generated_fault: str = ""
    #: the shipped systems' place in the draw they share (kept, so that older seeds give the same
    #: sites); None: the system draws from a random generator of its own, seeded by its fault kind
    #: and the seed, so that adding it changes no other system's draws
    generated_order: int | None = None

    def check(self, spec: Any, scenario: Any) -> None:
        """Raise ValueError when the section does not fit the scenario (unknown hosts ...)."""

    def hosts(self, spec: Any, scenario: Any) -> list[str]:
        """The lab hosts that carry the emulated tools."""
        raise NotImplementedError

    def setup(self, state_dir: Path, spec: Any, scenario: Any) -> None:
        """Write the emulated system's initial state under the lab's emulator state directory."""
        raise NotImplementedError

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        """Write the tools' wrappers for one host; returns {path in the host: directory to bind there}."""
        raise NotImplementedError

    def reboot(self, host_dir: Path, host: str) -> str | None:
        """Rebuild the emulated system on ``host`` from its persisted state, as a reboot of the host
        would (``lab reboot``): runtime-only values go, what the files or the system's own persisted
        configuration hold comes back. Returns one sentence saying what the reboot did (also when the
        system's whole state is persisted and nothing changes: the emulation says so), or None when the
        host does not carry the emulation. Each emulation declares its own: the reboot core (advisor/lab/
        reboot.py) names no system. Raise RuntimeError when the rebuild fails."""
        return None

    def site_host_settings(self, spec: Any, scenario: Any, host: str) -> dict[str, Any]:
        """What the lab's site file records about ``host`` (the storage kind's host settings)."""
        return {}

    def start(self, rec: Any, spec: Any, scenario: Any) -> None:
        """Start the system's services once the hosts are up (pids recorded in ``rec``)."""

    def site_host_vars(self, rec: Any, spec: Any, scenario: Any, host: str) -> dict[str, Any]:
        """Variables the site file gives ``host`` (paths in the lab's state directory ...)."""
        return {}

    def generate_fault(self, rng: Any, data: dict[str, Any], storage: list, workers: list, sg: str, wg: str,
                       expect: list[dict[str, Any]]) -> None:
        """For ``lab generate`` (when ``generated_fault`` names one): add this system's section to the
        scenario ``data`` with a fault drawn from ``rng``, and the findings it must produce to
        ``expect``. ``storage``/``workers``: the scenario's hosts of those roles; ``sg``/``wg``: their groups."""
        raise NotImplementedError


#: emulations of a host's own hardware, not of a storage kind: any scenario may carry them
HOST_EMULATIONS = ("advisor.lab.emulators.disks_lab", "advisor.lab.emulators.nic_lab")


def lab_emulations() -> dict[str, LabEmulation]:
    """Section name -> emulation, for every registered storage kind that has one and the host ones."""
    from advisor.storage_kinds import storage_kinds

    out: dict[str, LabEmulation] = {}
    modules = [kind.lab_emulation for kind in storage_kinds().values() if kind.lab_emulation] + list(HOST_EMULATIONS)
    for module in modules:
        e = importlib.import_module(module).EMULATION
        out[e.section] = e
    return out


def generated_faults() -> list[tuple[str, LabEmulation, str]]:
    """(fault kind, emulation, storage kind) for every registered storage kind whose emulation draws a
    fault in ``lab generate``, in draw order."""
    from advisor.storage_kinds import storage_kinds

    found = []
    for kind in storage_kinds().values():
        if kind.lab_emulation:
            e = importlib.import_module(kind.lab_emulation).EMULATION
            if e.generated_fault:
                found.append((e.generated_order is None, e.generated_order or 0, e.generated_fault, e, kind.name))
    found.sort(key=lambda x: x[:3])
    return [(fault, e, kind) for _, _, fault, e, kind in found]


def emulator_python() -> str:
    return sys.executable


def package_root() -> str:
    import advisor

    return str(Path(advisor.__file__).resolve().parent.parent)
