"""The collector: for every host, the probes that apply to its roles, batched through one
transport session per host, hosts in parallel; raw outputs parsed into facts."""

from __future__ import annotations

import datetime
import gc
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.flows.ports import site_flow_ports
from advisor.util.gc_paused import gc_paused
from advisor.model.output_store import OutputStore
from advisor.collect.forked_parse import parse_on_every_core
from advisor.collect.probe_helper import HostCommands
from advisor.collect.probe_plan import probe_plan, root_probes
from advisor.collect.probe_selection import SKIPPED, skipped_message
from advisor.adapters.firewall_canonical import CONTROLLER_STEPS
from advisor.util.path_component import path_component
from advisor.site.secret_vars import redact_vars
from advisor.util.shipped_code import module_utils
from advisor.site.model import Host, Site
from advisor.util.trusted_models import trusted
from advisor.transport.base import MAX_OUTPUT_BYTES, Command, CommandResult, Transport, TransportError
from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, not_applicable_reason

TransportFactory = Callable[[Host], Transport]
#: called as (host name, finished: bool, message)
ProgressCallback = Callable[[str, bool, str], None]


def probe_context(site: Site, host: Host, is_local: bool, sample_seconds: float,
                  requested: dict[str, list[str]] | None = None) -> ProbeContext:
    """``requested``: probe name -> the keys the loaded rules ask it to read (advisor.rules.probe_requests)."""
    return ProbeContext(
        host=host.name,
        roles=host.role_names,
        is_local=is_local,
        sample_seconds=sample_seconds,
        storage_prefixes=list(site.storage_network.prefixes),
        storage_interfaces=list(site.storage_network.interfaces),
        vars={**site.vars, **host.vars},
        requested=requested or {},
        flow_ports=site_flow_ports(site),
    )


def interpret(probe: Probe, result: CommandResult, store: OutputStore | None = None) -> ProbeResult:
    """Turn a command's outcome into a probe result: ok with facts, not_applicable, or error.

    With a ``store``, an output already seen (same probe, same text, same exit) is not parsed
    again: its stored outcome and text are reused (advisor.model.output_store)."""
    duration = round(result.duration_s, 3)
    base = dict(probe=probe.name, raw=result.stdout, duration_s=duration)
    if result.timed_out:
        said = next((ln.strip() for ln in result.stderr.splitlines() if ln.startswith("storadvise: ")), "")
        return ProbeResult(status=ProbeStatus.error,
                           message=said[len("storadvise: "):] if said else f"timed out after {result.duration_s:.0f} s",
                           **base)
    if result.truncated:
        return ProbeResult(status=ProbeStatus.error,
                           message=f"output longer than {MAX_OUTPUT_BYTES} bytes: cut, not parsed (truncated)", **base)
    stderr_line = next((ln.strip() for ln in result.stderr.splitlines() if ln.strip()), "")
    if store is None:
        status, facts, message = _outcome(probe, result, stderr_line)
        raw = result.stdout
    else:
        raw = store.text(result.stdout)
        key = (probe.name, result.rc, raw, stderr_line)
        status, facts, message = store.outcome(key, lambda: _outcome(probe, result, stderr_line))
    # built without re-validation: the outcome's facts are plain data, possibly shared with other hosts
    return trusted(ProbeResult, {"probe": probe.name, "status": ProbeStatus(status), "facts": facts, "raw": raw,
                                 "message": message, "duration_s": duration})


def _outcome(probe: Probe, result: CommandResult, stderr_line: str) -> tuple[str, dict, str | None]:
    """(status, facts, message) of a finished command's output: all it depends on is the probe,
    the stdout, the exit status and the first line of stderr."""
    reason = not_applicable_reason(result.stdout)
    if reason:
        return ProbeStatus.not_applicable.value, {}, reason
    if result.rc is None and not result.stdout.strip():
        return ProbeStatus.error.value, {}, stderr_line or "no output (not run)"
    if result.rc not in (0, None) and not result.stdout.strip():
        return ProbeStatus.error.value, {}, stderr_line or f"exited with status {result.rc} and no output"
    try:
        facts = probe.parse(result.stdout)
    except ProbeParseError as exc:
        msg = str(exc) or "unparseable output"
        if result.rc not in (0, None) and stderr_line:
            msg = f"{msg} (exit {result.rc}: {stderr_line})"
        return ProbeStatus.error.value, {}, msg
    except Exception as exc:  # a parser bug must not stop the scan of the other hosts
        return ProbeStatus.error.value, {}, f"parser failed: {type(exc).__name__}: {exc}".splitlines()[0]
    data = facts.model_dump(mode="json")
    step = CONTROLLER_STEPS.get(probe.name)
    if step is not None:
        data = step(data)  # on the controller, from the parsed facts (advisor.adapters.firewall_canonical)
    return ProbeStatus.ok.value, data, None


def collect_host(site: Site, host: Host, transport_factory: TransportFactory, sample_seconds: float,
                 selected: list[str] | None = None,
                 sink: Callable[[Host, list[Command], list[CommandResult]], None] | None = None,
                 store: OutputStore | None = None, requested: dict[str, list[str]] | None = None) -> HostFacts:
    """One host's facts. Whatever goes wrong with this host (a forged frame, undecodable bytes, a
    MemoryError) is this host's error, never an exception that stops the other hosts."""
    try:
        return _collect_host(site, host, transport_factory, sample_seconds, selected, sink, store, requested)
    except Exception as exc:  # noqa: BLE001 (the boundary between hosts)
        hf = HostFacts(name=host.name, roles=host.role_names, groups=list(host.groups), address=host.connect_address)
        hf.reachable = False
        hf.errors.append(f"{host.name}: collection failed: {type(exc).__name__}: {exc}".splitlines()[0][:300])
        return hf


def _collect_host(site: Site, host: Host, transport_factory: TransportFactory, sample_seconds: float,
                  selected: list[str] | None = None,
                  sink: Callable[[Host, list[Command], list[CommandResult]], None] | None = None,
                  store: OutputStore | None = None, requested: dict[str, list[str]] | None = None) -> HostFacts:
    hf = HostFacts(name=host.name, roles=host.role_names, groups=list(host.groups), address=host.connect_address)
    plan = probe_plan(site, host, selected)  # what runs where: the one answer (advisor.collect.probe_plan)
    probes = [pp.probe for pp in plan if pp.selected]
    try:
        transport = transport_factory(host)
    except TransportError as exc:
        hf.reachable = False
        hf.errors.append(str(exc))
        return hf
    try:
        ctx = probe_context(site, host, transport.is_local, sample_seconds, requested)
        host_commands = HostCommands(ctx, root_probes(site, host, plan))
        commands: list[Command] = []
        local_results: dict[str, CommandResult] = {}
        for p in probes:
            text = p.local_text(ctx) if transport.is_local else None
            if text is not None:
                local_results[p.name] = CommandResult(key=p.name, rc=0, stdout=text)
            elif transport.replays_outputs:  # looked up by key: no script to write
                commands.append(Command(key=p.name, script="", sudo=p.needs_root))
            else:
                commands.append(host_commands.command(p))
        results = transport.run_batch(commands) if commands else []
    except TransportError as exc:
        hf.reachable = False
        hf.errors.append(str(exc))
        return hf
    finally:
        transport.close()
    # left out by --probes/--skip-probes: never run; not_applicable saying so (a capture keeps the reason)
    skipped = {pp.name: CommandResult(key=pp.name, rc=0, stdout=f"{NOT_APPLICABLE_MARKER} {skipped_message(pp.name)}\n")
               for pp in plan if not pp.selected}
    by_key = {r.key: r for r in results}
    by_key.update(local_results)
    if sink is not None:
        sink(host, commands + [Command(key=k, script="# collected in-process") for k in local_results]
             + [Command(key=k, script=f"# {SKIPPED}") for k in skipped],
             [by_key[c.key] for c in commands] + list(local_results.values()) + list(skipped.values()))
    by_key.update(skipped)
    for p in probes + [pp.probe for pp in plan if not pp.selected]:
        r = by_key.get(p.name)
        if r is None:
            hf.probes[p.name] = ProbeResult(probe=p.name, status=ProbeStatus.error, message="no result returned")
            continue
        hf.probes[p.name] = interpret(p, r, store)
    return hf


def collect_site_facts(site: Site, transport_factory: TransportFactory, *, parallel: int = 16,
                       sample_seconds: float = 5.0, probes: list[str] | None = None,
                       hosts: list[Host] | None = None, progress: ProgressCallback | None = None,
                       sink: Callable[[Host, list[Command], list[CommandResult]], None] | None = None,
                       requested: dict[str, list[str]] | None = None, captured: bool = False) -> FactSet:
    """Probe every host of the site (or ``hosts``) in parallel with a bounded pool; ``requested``:
    the keys the loaded rules ask the probes to read (advisor.rules.probe_requests); ``captured``:
    the transports replay a capture (parsed on every core when it is large: advisor.collect.forked_parse)."""
    targets = hosts if hosts is not None else site.hosts
    factset = FactSet(site=site.name, context=site_context(site))
    if not targets:
        return factset
    # the hosts' facts hold no reference cycles: the cyclic collector's passes over the growing
    # heap wait until they are all in, then they are frozen
    with gc_paused():
        _collect_into(factset, site, targets, transport_factory, parallel, sample_seconds, probes, progress, sink,
                      requested, captured)
    factset.hosts = {h.name: factset.hosts[h.name] for h in targets}
    # the facts live as long as the scan and hold no reference cycles to reclaim: leave them out
    # of the cyclic collector's full passes (over 10,000 hosts those passes cost more than the rules)
    gc.freeze()
    return factset


def _collect_into(factset: FactSet, site: Site, targets: list[Host], transport_factory: TransportFactory,
                  parallel: int, sample_seconds: float, probes: list[str] | None, progress: ProgressCallback | None,
                  sink: Callable[[Host, list[Command], list[CommandResult]], None] | None,
                  requested: dict[str, list[str]] | None, captured: bool = False) -> None:
    store = OutputStore()
    workers = max(1, min(parallel, len(targets)))
    if workers == 1:  # one at a time (a capture): no thread; a large capture is parsed on every core
        parse = lambda hosts: [collect_host(site, h, transport_factory, sample_seconds, probes, sink, store,  # noqa: E731
                                            requested) for h in hosts]
        for hf in parse_on_every_core(targets, parse, forked=captured and sink is None):
            factset.hosts[hf.name] = hf
            if progress:
                progress(hf.name, True, _progress_status(hf))
        return
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = {
            pool.submit(collect_host, site, h, transport_factory, sample_seconds, probes, sink, store, requested): h
            for h in targets
        }
        for fut in as_completed(futures):
            h = futures[fut]
            hf = fut.result()
            factset.hosts[h.name] = hf
            if progress:
                progress(h.name, True, _progress_status(hf))
    except BaseException:
        # interrupted (SIGTERM, Ctrl-C) or failed: start no other host, and do not wait here for
        # the hosts under way (the command line bounds how long it waits for them)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _progress_status(hf: HostFacts) -> str:
    if not hf.reachable:
        return "unreachable: " + hf.errors[0]
    return f"{sum(1 for r in hf.probes.values() if r.status == ProbeStatus.ok)} probes ok"


def site_context(site: Site) -> dict:
    return {
        "storage_kind": site.storage_kind,
        "storage_systems": list(site.storage_systems),
        "storage_network": site.storage_network.model_dump(),
        "link_rates": {h.name: h.link_rate for h in site.hosts if h.link_rate},
        #: every site host's address, scanned or not (a peer of a production flow is mapped to its host)
        "addresses": {h.name: h.connect_address for h in site.hosts if h.connect_address},
    }


# --------------------------------------------------------------------------- captured outputs


_layout = module_utils("storadvise_capture_layout")
MANIFEST = _layout.MANIFEST
#: 2: texts content-addressed under objects/, one index per host (advisor.transport.captured);
#: 1 (per-host .out/.err/.json files) is still read
CAPTURE_FORMAT = _layout.CAPTURE_FORMAT
READABLE_CAPTURE_FORMATS = (1, 2)


def write_manifest(directory: Path, site: Site, started_at: str, hosts: dict[str, HostFacts]) -> None:
    """The manifest and each host's host.json, through the shipped layout (the collect playbook's
    module writes the same files): the site's variables (secrets redacted) and host names, for the
    owner only."""
    for name in hosts:
        path_component(name, "host name")
    _layout.write_manifest(directory, redact_vars(json.loads(site.model_dump_json())), started_at,
                           {name: {"reachable": h.reachable, "errors": h.errors} for name, h in hosts.items()})


def now_iso() -> str:
    """Local time, ISO 8601 extended form with the offset's colon: 2026-11-23T18:50:00+01:00."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")
