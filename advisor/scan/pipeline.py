"""THE scan pipeline, once: ``ScanOptions`` -> open -> collect -> measure -> evaluate -> report.

Every command that scans calls :func:`run_scan`: ``scan`` (all stages), ``collect`` (collect only;
a sink saves the raw outputs), ``plan`` when it scans and ``verify`` (all stages; the report is
planned from or compared), ``efficiency test`` (measure only: the active test). Nothing else
assembles a scan.

The stages and the files that hold them:

==========  ==========================================================================================
open        :func:`open_scan` (here): the site (site file, inventory, capture manifest or the local
            host), the transports (SSH/local, or the captured outputs of ``--from``), the hosts
            ``--hosts`` selects, the probes ``--probes``/``--skip-probes`` leave in and the profiles
            resolved. Everything a user can get wrong is refused here, before any host is probed: an
            unknown profile, a selection that matches nothing.
collect     ``advisor/collect/collector.py`` ``collect_site_facts``: the probes of each host, hosts in parallel.
measure     ``advisor/scan/measurements.py`` ``run_site_measurements``: the iperf3 mesh and the active
            CPU-efficiency test (never from a capture: they need live hosts). Then the hosts'
            production flows are joined into paths (``advisor/flows/paths.py``, from a capture too)
            and set beside the mesh's (``advisor/flows/compare.py``).
evaluate    ``advisor/rules/engine.py`` ``evaluate``: every rule under the resolved profiles and waivers.
diagnose    ``advisor/diagnosis/`` ``diagnose``: the failed findings and each path's limit folded into
            causes ranked by predicted gain, hygiene and unexplained symptoms (part of evaluate).
report      ``advisor/report/model.py`` ``build_report``: the JSON report. Rendering (console, JUnit,
            ...) stays in ``advisor/report/``; the CLI only writes what the report holds.
==========  ==========================================================================================

Adding a scan option is a one-place change: add a field to ``ScanOptions`` (advisor/scan/options.py) with
``metadata=flag("--name", help=...)`` and read ``options.name`` in the stage that needs it. Every
command built with ``advisor.scan.flags.scan_options`` (``scan``, ``collect``, ``plan``, ``verify``)
gains the flag with the same name, default and help; the default lives in the field, once. A field
without ``flag`` metadata is an option of the pipeline that no command exposes as a flag.
Output options (``--json``, ``--output``, ``--junit``, ``--fail-on``, ...) are not scan options:
they belong to the command that renders the report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.report.diagnosed import diagnose_report
from advisor.collect.collector import MANIFEST, READABLE_CAPTURE_FORMATS, TransportFactory, collect_site_facts, now_iso
from advisor.util.errors import StoradviseError, UsageError
from advisor.model.facts import FactSet
from advisor.flows.compare import compare_with_mesh
from advisor.flows.paths import flow_paths
from advisor.scan.measurements import run_site_measurements
from advisor.rules.probe_requests import requested_keys
from advisor.collect.probe_selection import selected_probes
from advisor.report.model import ScanReport, build_report
from advisor.rules.engine import evaluate
from advisor.rules.specs import RuleCatalog, load_catalog, resolve_profiles
from advisor.scan.options import ScanOptions
from advisor.site.model import Host, Site, give_local_roles
from advisor.site.file import resolve_site
from advisor.transport.base import Command, CommandResult, HostUnreachable
from advisor.transport.capture_files import read_captured
from advisor.transport.capture_objects import CaptureObjects
from advisor.transport.captured import CapturedTransport
from advisor.transport.factory import SshOptions, transport_for
from probes import all_probes

STAGES = ("collect", "measure", "evaluate")
#: a manifest names every host of the site once; larger than this it is not one
MAX_MANIFEST_BYTES = 256 << 20


@dataclass
class ScanTarget:
    """What ``open_scan`` decided: the site, how to reach its hosts, which hosts, which profiles."""

    site: Site
    transports: TransportFactory
    hosts: list[Host]
    profiles: list[str]
    catalog: RuleCatalog
    #: the scan reads a capture (no live host: the mesh and the active test cannot run)
    from_capture: bool = False
    #: probe name -> the keys the loaded rules ask it to read (advisor.rules.probe_requests)
    requested: dict[str, list[str]] = field(default_factory=dict)
    #: the probes ``--probes``/``--skip-probes`` leave in (None: all)
    probes: frozenset[str] | None = None


@dataclass
class ScanRun:
    site: Site
    factset: FactSet
    #: None when the pipeline stopped before ``evaluate``
    report: ScanReport | None = None


# --------------------------------------------------------------------------- open


def select_hosts(site: Site, pattern: str | None) -> list[Host]:
    """The hosts ``--hosts`` names: a host pattern (advisor.site.host_patterns.HostPattern: names, globs, groups,
    roles, comma lists, ``!exclusion``); all without one."""
    if not pattern:
        return list(site.hosts)
    try:
        chosen = site.select(pattern)
    except ValueError as exc:
        raise UsageError(f"--hosts: {exc}") from None
    if not chosen:
        raise UsageError(f"--hosts {pattern!r} matches no host of site {site.name}")
    return chosen


def load_capture(directory: Path) -> tuple[Site, dict[str, Any]]:
    """The site and manifest of a directory written by ``storadvise collect``."""
    mpath = directory / MANIFEST
    try:
        got = read_captured(directory, (MANIFEST,), limit=MAX_MANIFEST_BYTES)
        if got is None:
            raise FileNotFoundError(mpath)
        if got.truncated:
            raise StoradviseError(f"{mpath}: larger than {MAX_MANIFEST_BYTES >> 20} MiB; not a capture manifest")
        manifest = json.loads(got.data)
    except FileNotFoundError:
        raise StoradviseError(f"{directory}: no {MANIFEST}; not a directory written by 'storadvise collect'") from None
    except NotADirectoryError:
        raise StoradviseError(f"{directory}: not a directory written by 'storadvise collect'") from None
    except json.JSONDecodeError as exc:
        raise StoradviseError(f"{mpath}:{exc.lineno}: not JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoradviseError(f"{mpath}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    fmt = manifest.get("capture_format", 1) if isinstance(manifest, dict) else None
    if fmt not in READABLE_CAPTURE_FORMATS:
        raise StoradviseError(f"{mpath}: capture_format {fmt!r} is not one this storadvise reads "
                              f"({', '.join(map(str, READABLE_CAPTURE_FORMATS))})")
    try:
        site = Site.model_validate(manifest["site"])
    except Exception as exc:  # pydantic error, missing key or not a mapping
        raise StoradviseError(f"{mpath}: invalid site in manifest: {str(exc).splitlines()[0]}") from None
    site.source = str(mpath)
    return site, manifest


def captured_transports(directory: Path, manifest: dict[str, Any]) -> TransportFactory:
    objects = CaptureObjects(directory)  # one for all hosts: a text named by many is read once

    def factory(host: Host) -> CapturedTransport:
        recorded = (manifest.get("hosts") or {}).get(host.name) or {}
        if recorded and not recorded.get("reachable", True):
            raise HostUnreachable("; ".join(recorded.get("errors") or []) or f"{host.name}: unreachable at collection")
        return CapturedTransport(directory, host.name, objects)

    return factory


def live_transports(site: Site, options: ScanOptions) -> TransportFactory:
    ssh = SshOptions(trust_new_hosts=options.trust_new_hosts, connect_timeout=options.connect_timeout)
    return lambda host: transport_for(host, site, ssh)


def open_scan(options: ScanOptions, site: Site | str | None = None, inventory: Path | None = None,
              role_map: list[str] | tuple[str, ...] = ()) -> ScanTarget:
    """Decide everything before any host is probed; refuse what cannot work with a one-line error.

    ``site``: a loaded site, a site name/path, or None (the local host, or the capture's site).
    With ``options.from_capture`` a loaded ``site`` must be the capture's site.
    """
    if options.from_capture is not None:
        if isinstance(site, str) or inventory is not None or role_map:
            raise UsageError("--from analyses a capture; it does not take --site or --inventory")
        the_site, manifest = load_capture(options.from_capture)
        if isinstance(site, Site) and site.name != the_site.name:
            raise UsageError(f"--from {options.from_capture}: the capture is of site {the_site.name!r}, "
                             f"not {site.name!r}")
        transports = captured_transports(options.from_capture, manifest)
    else:
        the_site = site if isinstance(site, Site) else resolve_site(site, inventory, role_map)
        give_local_roles(the_site, options.roles)
        transports = live_transports(the_site, options)
    # the site's rule directories, then --rules: loaded like the shipped packs (a bad pack is refused here)
    # storage_systems decide which storage packs load; the profiles then select among them
    catalog = load_catalog(site_dirs=[*the_site.rules_dirs, *options.rules_dirs], storage_systems=the_site.storage_systems)
    names = list(options.profiles) or list(the_site.profiles) or ["generic"]
    resolved = resolve_profiles(names, catalog, overrides=the_site.vars)  # unknown profile: refused here
    probes = selected_probes(options.probes, options.skip_probes, all_probes())  # a typo: refused here
    return ScanTarget(site=the_site, transports=transports, hosts=select_hosts(the_site, options.hosts),
                      profiles=resolved.names, catalog=catalog, from_capture=options.from_capture is not None,
                      requested=requested_keys(catalog), probes=probes)


# --------------------------------------------------------------------------- the pipeline


def efficiency_settings(target: ScanTarget, options: ScanOptions) -> dict[str, Any] | None:
    """The active test's settings; with ``--hosts``, only the selected hosts among its workers
    (None: none of them is selected, the test does not run)."""
    settings = dict(options.efficiency_settings)
    if options.hosts and "hosts" not in settings and target.site.extensions.get("efficiency"):
        from advisor.efficiency.active import EfficiencyTestError, resolve_hosts

        configured = (target.site.extensions.get("efficiency") or {}).get("hosts")
        try:
            workers = resolve_hosts(target.site, configured)
        except EfficiencyTestError:
            return settings  # the test itself reports the configuration error
        selected = {h.name for h in target.hosts}
        chosen = [h.name for h in workers if h.name in selected]
        if not chosen:
            return None
        settings["hosts"] = chosen
    return settings


def run_scan(target: ScanTarget, options: ScanOptions, *, stages: tuple[str, ...] = STAGES,
             progress: Callable[[str, bool, str], None] | None = None,
             sink: Callable[[Host, list[Command], list[CommandResult]], None] | None = None,
             quiet: bool = True, console: Any = None,
             mesh_wanted: Callable[[ScanTarget], bool] | None = None) -> ScanRun:
    """Run the stages in order: collect -> measure -> evaluate (+ report).

    ``mesh_wanted``: a further condition on the mesh (``verify`` re-runs it only when the plan
    touched the network or the scan before had one). The measure stage never runs from a capture.
    """
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown scan stage(s): {sorted(unknown)}")
    started, t0 = now_iso(), time.monotonic()
    site = target.site
    if "collect" in stages:
        # a capture is read, not waited for: threads would only take turns at the interpreter
        # (a 10,000-host capture: 6.2 s with 16 threads, 2.2 s in the main thread alone)
        factset = collect_site_facts(site, target.transports, parallel=1 if target.from_capture else options.parallel,
                                     sample_seconds=options.sample_seconds, hosts=target.hosts,
                                     probes=None if target.probes is None else sorted(target.probes),
                                     progress=progress, sink=sink, requested=target.requested,
                                     captured=target.from_capture)
    else:
        from advisor.collect.collector import site_context

        factset = FactSet(site=site.name, context=site_context(site))
    if "measure" in stages and not target.from_capture:
        with_mesh = options.mesh and (mesh_wanted is None or mesh_wanted(target))
        settings = efficiency_settings(target, options) if options.efficiency else None
        run_site_measurements(site, target.transports, factset, with_mesh=with_mesh,
                              with_efficiency=settings is not None, efficiency_settings=settings or {},
                              quiet=quiet, console=console, hosts=target.hosts)
    if "collect" in stages:
        factset.flows = flow_paths(factset)  # what every host's production flows say, joined by address
        compare_with_mesh(factset.flows, factset.mesh)
    run = ScanRun(site=site, factset=factset)
    if "evaluate" in stages:
        evaluation = evaluate(factset, site, profiles=target.profiles, catalog=target.catalog)
        report = build_report(factset, evaluation.findings, profiles=evaluation.profile.names,
                              started_at=started, finished_at=now_iso(), duration_s=time.monotonic() - t0,
                              site_file=site.source)
        run.report = report.with_diagnosis(diagnose_report(report, target.catalog))
    return run
