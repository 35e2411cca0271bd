"""``scan --dry-run``: what a scan would run on each host, decided exactly as the scan decides it,
without contacting any host.

Per host: how it is reached (SSH user@address:port, or the local host), the batch wrapper's private
temporary directory, and per probe its privilege (advisor.collect.probe_plan: as the login user, as root, through
``sudo -n`` or through the probe helper; sudo is shown only where the scan uses it), its timeout and its
exact POSIX sh script (the files it reads are named in it). Then the iperf3 mesh (the paths, the rounds,
the commands on the receiving and the sending host) and the active efficiency test (workers,
sources, clients), when the scan would run them. Nothing here opens a connection: the transports
are never built, the probe scripts are only rendered (``Probe.script`` is pure).
"""

from __future__ import annotations

from typing import Any

from advisor.collect.collector import probe_context
from advisor.util.host_tmp import MKTEMP
from advisor.collect.probe_helper import HostCommands
from advisor.collect.probe_plan import Privilege, login_is_root, probe_plan, root_probes
from advisor.scan.options import ScanOptions
from advisor.site.model import Host, Site
from probes.probe import Probe

#: where the batch wrapper (advisor/transport/batch_framing.py) keeps each probe's script and output
BATCH_TEMP_DIR = f"{MKTEMP} (0700, removed when the batch ends)"


def _reached_by(host: Host, site: Site) -> str:
    if site.transport == "local":
        return "the local host (no SSH)"
    user = f"{host.user}@" if getattr(host, "user", None) else ""
    port = f":{host.port}" if getattr(host, "port", None) else ""
    return f"ssh {user}{host.connect_address}{port}"


def host_plan(site: Site, host: Host, options: ScanOptions, selected: frozenset[str] | None) -> dict[str, Any]:
    """What the collect stage would run on one host."""
    local = site.transport == "local"
    ctx = probe_context(site, host, local, options.sample_seconds)
    plan = probe_plan(site, host, selected)  # what runs where: the collector's own answer
    host_commands = HostCommands(ctx, root_probes(site, host, plan))
    root_login = login_is_root(site, host)
    probes = []
    for pp in plan:
        p = pp.probe
        if not pp.selected:
            probes.append({"probe": p.name, "skipped": True})
            continue
        # a probe that can read the local host in-process (psutil) may do so instead of its script;
        # it is not called here (that would read the host)
        in_process = local and type(p).local_text is not Probe.local_text
        cmd = host_commands.command(p)
        probes.append({
            "probe": p.name, "skipped": False, "needs_root": p.needs_root, "privilege": pp.privilege.value,
            # sudo where the scan uses it: never for a root login; null where only the login can tell
            "sudo": (pp.privilege in (Privilege.sudo, Privilege.helper)
                     and (None if root_login is None else not root_login)),
            "helper": host_commands.helper if pp.privilege == Privilege.helper else None,
            "timeout_s": cmd.timeout, "in_process": in_process, "script": cmd.script,
        })
    return {"host": host.name, "roles": host.role_names, "reached_by": _reached_by(host, site),
            "temp_dir": None if local else BATCH_TEMP_DIR, "probes": probes}


def mesh_plan(site: Site, hosts: list[Host]) -> dict[str, Any] | None:
    """The mesh the scan would measure among ``hosts`` (link rates from the site file only: the
    NIC speeds a scan reads are not known without contacting the hosts)."""
    if not (site.mesh and site.mesh.pairs):
        return None
    from advisor.mesh import iperf
    from advisor.mesh.runner import RunOptions, mesh_address
    from advisor.mesh.schedule import expand_pairs, mesh_schedule

    scoped = site.model_copy(update={"hosts": list(hosts)}) if len(hosts) < len(site.hosts) else site
    requests = expand_pairs(scoped)
    opts = RunOptions.from_spec(site.mesh, bidir=site.mesh.bidir, parallel=site.mesh.parallel)
    rounds = []
    for rnd in mesh_schedule(requests):
        slots: list[frozenset] = []  # a host pair is one slot (one port), as advisor/mesh/runner.py runs it
        tests = []
        for src, dst in rnd:
            pair = frozenset((src, dst))
            if pair not in slots:
                slots.append(pair)
            both = (dst, src) in rnd
            if both and opts.bidir and pair in [frozenset((t["src"], t["dst"])) for t in tests]:
                continue  # measured with --bidir by the pair's first direction
            port = opts.port_base + slots.index(pair)
            address = mesh_address(site.host(dst))
            tests.append({
                "src": src, "dst": dst, "bidir": both and opts.bidir, "port": port,
                "on_dst": f"iperf3 -s -1 -p {port} -B {address} --forceflush  (in {MKTEMP}, "
                          "stopped and removed after the test)",
                "on_src": iperf.client_command(address, port, opts.duration, opts.omit, opts.streams,
                                               congestion=opts.congestion, bidir=both and opts.bidir,
                                               connect_timeout_ms=opts.connect_timeout_ms,
                                               hard_limit_s=opts.test_timeout - 1, idle_rtt=True),
            })
        rounds.append(tests)
    return {"paths": [{"src": r.src, "dst": r.dst, "expected_bps": r.expected_bps} for r in requests],
            "rounds": rounds, "duration_s": opts.duration, "streams": opts.streams,
            "retest_below": opts.retest_below,
            "notes": ["--connect-timeout only where the sender runs iperf3 >= 3.8 (asked first: iperf3 --version)",
                      "where both ends' iperf3 can authenticate (asked first), the test is authenticated: "
                      "its key options are added to both commands"]}


def efficiency_plan(site: Site, settings: dict[str, Any] | None) -> dict[str, Any] | None:
    """The active test the scan would run (None: it would not run)."""
    if settings is None or not (site.extensions.get("efficiency") or settings):
        return None
    from advisor.efficiency.active_plan import EfficiencyTestError, build_active_plan

    try:
        plan = build_active_plan(site, settings)  # what the scan would resolve, validated the same way
    except EfficiencyTestError as exc:
        return {"error": str(exc)}
    python = plan.python
    return {
        "workers": [h.name for h in plan.workers], "one_worker_at_a_time": True,
        "protocols": list(plan.protocols),
        "sources": {p: {k: v for k, v in s.fields.items() if isinstance(v, (str, int, float))}
                    for p, s in plan.sources.items()},
        "clients": list(plan.clients), "mb_per_host": plan.config.get("mb"),
        "on_source": f"{python} job.py serve (the job's own data server, in {MKTEMP}, "
                     "stopped and removed after the test)",
        "on_worker": f"{python} - job ...  (the job read from stdin: nothing installed)",
    }


def scan_dry_run(target: Any, options: ScanOptions, efficiency_settings: dict[str, Any] | None) -> dict[str, Any]:
    """Everything ``scan`` would run, per host, then the mesh and the active test (a ScanTarget in)."""
    site = target.site
    measured = not target.from_capture
    return {
        "site": site.name, "dry_run": True,
        "from_capture": str(options.from_capture) if options.from_capture else None,
        "hosts": [host_plan(site, h, options, target.probes) for h in target.hosts] if measured else [],
        "mesh": mesh_plan(site, target.hosts) if measured and options.mesh else None,
        "efficiency": efficiency_plan(site, efficiency_settings) if measured and options.efficiency else None,
    }
