"""``ScanOptions``: everything that decides how a site is scanned, in one typed object.

Kept apart from the pipeline (advisor/scan/pipeline.py) so that the command line can build its flags from
it (advisor/scan/flags.py) without importing the collector, the rule engine and the reports.
A field with ``metadata=flag(...)`` is a flag of every command that scans; see advisor/scan/pipeline.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the disk-utilisation sampling interval of every command that scans (one default everywhere)
DEFAULT_SAMPLE_SECONDS = 5.0


def flag(*decls: str, help: str, min: float | None = None, max: float | None = None) -> dict[str, Any]:  # noqa: A002
    """Field metadata that makes a ``ScanOptions`` field a command-line flag (see the module doc)."""
    return {"cli": {"decls": decls, "help": help, "min": min, "max": max}}


@dataclass(frozen=True)
class ScanOptions:
    """Everything that decides how a site is scanned (not how the result is shown)."""

    hosts: str | None = field(default=None, metadata=flag(
        "--hosts", help="Only these hosts: a host pattern (names, globs, groups, roles, comma lists, !exclusion)."))
    profiles: tuple[str, ...] = field(default=(), metadata=flag(
        "--profile", "-p", help="Profile(s) to apply (default: the site's, else generic)."))
    roles: tuple[str, ...] = field(default=(), metadata=flag(
        "--role", help="Role(s) of the local host (no --site, or --site local): storage, worker, door, cache, san-controller."))
    parallel: int = field(default=16, metadata=flag("--parallel", help="Hosts probed at once.", min=1, max=512))
    sample_seconds: float = field(default=DEFAULT_SAMPLE_SECONDS, metadata=flag(
        "--sample-seconds", help="Disk utilisation sampling interval, seconds.", min=0.1, max=600))
    mesh: bool = field(default=True, metadata=flag(
        "--mesh/--no-mesh", help="Run the iperf3 throughput mesh when the site defines one."))
    efficiency: bool = field(default=True, metadata=flag(
        "--efficiency/--no-efficiency", help="Run the active CPU-efficiency test when the site configures one."))
    from_capture: Path | None = field(default=None, metadata=flag(
        "--from", help="Analyse outputs saved by 'storadvise collect' instead of probing."))
    trust_new_hosts: bool = field(default=False, metadata=flag(
        "--trust-new-hosts", help="Record unknown SSH host keys in known_hosts (never accepts a changed key)."))
    connect_timeout: float = field(default=10.0, metadata=flag(
        "--connect-timeout", help="SSH connect timeout, seconds.", min=0.5))
    rules_dirs: tuple[Path, ...] = field(default=(), metadata=flag(
        "--rules", help="A site-local rules directory (data rule packs, profiles/), loaded like the shipped packs; "
                        "repeatable, added to the site's rules_dirs."))
    probes: str | None = field(default=None, metadata=flag(
        "--probes", help="Only these probes: names or globs, comma-separated (network.*,block.*); "
                         "see 'storadvise probe list'."))
    skip_probes: str | None = field(default=None, metadata=flag(
        "--skip-probes", help="Not these probes (names or globs, comma-separated); their rules are "
                              "not_applicable, saying so."))
    #: parameters of the active efficiency test over the site's ``efficiency:`` section (hosts,
    #: source, clients, mb, cpu_factor, readahead, slots); set by ``efficiency test``
    efficiency_settings: dict[str, Any] = field(default_factory=dict)

    def changed(self) -> list[str]:
        """The flags (first spelling) whose value differs from the default."""
        out = []
        for f in dataclasses.fields(self):
            cli = f.metadata.get("cli")
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if cli and getattr(self, f.name) != default:
                out.append(cli["decls"][0].split("/")[0 if getattr(self, f.name) else -1])
        return out
