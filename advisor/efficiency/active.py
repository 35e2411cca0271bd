"""The active efficiency test: a controlled analysis-like job on worker nodes over SSH.

The controller starts a TCP data server on the storage host (``active_job.py serve``, by pid,
killed by pid afterwards) or uses a path on a mounted filesystem, then runs the job
(``python3 - job ...`` fed ``active_job.py`` on stdin; stdlib only, nothing installed) on each
worker host, one host at a time. The job calibrates its CPU work on the host so that at the
healthy rate of the path (the link rate, 94% TCP goodput) computing a MiB takes
``cpu_factor`` (default 1.5) times as long as reading it: CPU-bound on a healthy path,
I/O-bound on a slow one. Efficiency = the job's own rusage (user + sys) / its wall time.

With several clients (``clients=[1, 5, 15]``) the scaling host runs C concurrent jobs per point
(Goethe's runtime-per-client curve), with the same per-client work at every point and total
work bounded (``scaling_budget_mb``). Everything runs strictly one step at a time and the
schedule, load averages, time blocked on reads and CPU share while computing are recorded, so
CPU contention between lab hosts (which share this machine's cores) shows as contention, not
as I/O wait. See docs/efficiency-active.md.

``run_active`` takes an ``ActiveTestPlan`` (advisor/efficiency/active_plan.py: the site's hosts,
sources and settings resolved and validated once, before anything runs), never the site.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import time
from pathlib import Path
from typing import Any, Callable

from advisor.efficiency.active_plan import ActiveTestPlan, EfficiencyTestError
from advisor.efficiency.active_plan import build_active_plan, python_command, resolve_hosts, resolve_source  # noqa: F401 (re-exported)
from advisor.efficiency.protocols import job_spec
from advisor.efficiency.scaling_curve import find_knee
from advisor.efficiency.scaling_run import run_points
from advisor.util import host_tmp
from advisor.util.host_tmp import MKTEMP
from advisor.site.model import Host
from advisor.transport.base import Transport, TransportError

JOB_PATH = Path(__file__).with_name("active_job.py")
#: TCP goodput / line rate used for the healthy read rate
GOODPUT = 0.94
DEFAULT_RATE_BPS = 10**9
MIB = 1 << 20


def job_source() -> str:
    return JOB_PATH.read_text()


# ------------------------------------------------------------------ scripts


def _heredoc(text: str) -> tuple[str, str]:
    delim = "SA_EFF_" + secrets.token_hex(8)
    return delim, text if text.endswith("\n") else text + "\n"


def new_auth_secret() -> str:
    """A run's one-time secret: the data server answers only connections that send it first."""
    return secrets.token_hex(16)


def _auth(secret: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{32}", secret or ""):
        raise ValueError("the data server's secret must be 32 hex characters (new_auth_secret())")
    return secret


def job_script(args: list[str], python: str = "python3", auth: str | None = None) -> str:
    """The sh script that runs the job with ``args`` (``job`` ...) from stdin: nothing installed.
    ``auth``: the data server's one-time secret (in the job's environment, not its command line)."""
    delim, src = _heredoc(job_source())
    env = f"SA_EFF_AUTH={_auth(auth)} " if auth is not None else ""
    return f"{env}exec {shlex.quote(python)} - {' '.join(shlex.quote(a) for a in args)} <<'{delim}'\n{src}{delim}\n"


def server_start_script(token: str, lifetime: float, bind: str = "0.0.0.0", python: str = "python3",
                        auth: str | None = None) -> str:
    """Start the data server detached (own session); print ``port PORT``, ``pid PID``, ``dir D``.
    ``token`` marks the process (the stop script checks it); ``auth`` is the one-time secret
    clients must send first (a fresh one, known to nobody, when not given), kept in a 0600 file of
    the server's 0700 directory."""
    delim, src = _heredoc(job_source())
    secret = _auth(auth if auth is not None else new_auth_secret())
    return (
        f'D=$({MKTEMP}) || exit 90\n'
        f"cat >\"$D/job.py\" <<'{delim}'\n{src}{delim}\n"
        f'(umask 077; echo {secret} >"$D/auth")\n'
        f'if command -v setsid >/dev/null 2>&1; then S=setsid; else S=; fi\n'
        f'$S {shlex.quote(python)} "$D/job.py" serve --bind {shlex.quote(bind)} --portfile "$D/port" '
        f'--auth-file "$D/auth" --lifetime {lifetime:g} --token {token} </dev/null >"$D/log" 2>&1 &\n'
        'i=0; while [ ! -s "$D/port" ] && [ $i -lt 100 ] && kill -0 $! 2>/dev/null; do sleep 0.1; i=$((i+1)); done\n'
        'if [ ! -s "$D/port" ]; then echo "server did not start: $(tail -c 300 "$D/log" | tr "\\n" " ")" >&2; '
        'kill $! 2>/dev/null; rm -rf "$D"; exit 91; fi\n'
        'read PORT PID <"$D/port"; echo "port $PORT"; echo "pid $PID"; echo "dir $D"\n'
    )


def server_stop_script(pid: int, token: str, tmpdir: str) -> str:
    """Kill the server by pid, only if that pid still carries our token; remove its dir."""
    return (
        f"P={int(pid)}\n"
        f'if [ -r /proc/$P/cmdline ] && tr "\\0" " " </proc/$P/cmdline | grep -q -- {token}; then\n'
        "  kill $P 2>/dev/null; i=0\n"
        "  while kill -0 $P 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' /proc/$P/status 2>/dev/null && [ $i -lt 30 ]; do\n"
        "    sleep 0.1; i=$((i+1)); done\n"
        "  kill -9 $P 2>/dev/null; echo killed\n"
        "else echo gone; fi\n"
        + host_tmp.remove(tmpdir)
    )


def parse_job_output(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("the job printed no JSON")


# ------------------------------------------------------------------ configuration


def healthy_mib_per_s(rate_bps: int | None) -> float:
    return (rate_bps or DEFAULT_RATE_BPS) * GOODPUT / 8 / MIB


def _rate_of(h: Host | None) -> int | None:
    return h.link_rate if h is not None else None


# ------------------------------------------------------------------ summaries


def host_summary(job: dict[str, Any], source_label: str) -> dict[str, Any]:
    """The per-host (or per-point) figures from one job output (all its clients)."""
    cl = [c for c in job.get("clients", []) if "error" not in c]
    n = len(cl)
    cpu = sum(c["cpu_seconds"] for c in cl)
    wall = sum(c["wall_seconds"] for c in cl)
    wait = sum(c["read_wait_seconds"] for c in cl)
    comp = sum(c["compute_seconds"] for c in cl)
    mb = sum(c["bytes"] for c in cl) / MIB
    span = max((c["wall_seconds"] for c in cl), default=0.0)
    effs = [c["cpu_seconds"] / c["wall_seconds"] for c in cl if c["wall_seconds"] > 0]
    return {
        "efficiency": (sum(effs) / len(effs)) if effs else None,
        "cpu_seconds": cpu / n if n else None,
        "wall_seconds": wall / n if n else None,
        "mb_read": mb,
        "read_mbps": (mb * MIB * 8 / 1e6 / span) if span > 0 else None,
        "source": source_label,
        "clients": len(job.get("clients", [])),
        # where the wall time went: blocked on reads vs computing (and the CPU share while
        # computing: below 1 means the CPU was contended, not that the job waited for data)
        "read_wait_share": (wait / wall) if wall > 0 else None,
        "cpu_share_computing": (cpu / comp) if comp > 0 else None,
        "events": sum(c["events"] for c in cl),
        "load_start": (job.get("loadavg_start") or [None])[0],
        "load_end": (job.get("loadavg_end") or [None])[0],
        "calibration": job.get("calibration"),
    }


def _mean(vals: list[float | None]) -> float | None:
    v = [x for x in vals if x is not None]
    return sum(v) / len(v) if v else None


# ------------------------------------------------------------------ the test


def run_active(
    plan: ActiveTestPlan,
    transport_factory: Callable[[Host], Transport],
    progress: Callable[[str], None] | None = None,
    step_progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Run the active test ``plan`` describes (``build_active_plan``); returns the ``efficiency``
    dict of a scan (see the docs).

    The plan's protocols are what the clients read through (tcp, posix, xrootd, xcache; the first
    one also serves the per-host test); its nodes, the workers the scaling points spread their
    clients over. ``step_progress(done, total, what)``: called before each job step and after the
    last, for a progress bar (the steps are the workers, one at a time, then the scaling points)."""
    say = progress or (lambda _m: None)
    protos = list(plan.protocols)
    explicit_protocols = plan.explicit_protocols
    sources = {p: dict(s.fields) for p, s in plan.sources.items()}  # the tcp one gets its server's label
    src = sources[protos[0]]
    n_nodes = plan.nodes
    workers = list(plan.workers)
    counts = list(plan.clients)
    python = plan.python
    mb_host = plan.mb_per_host
    factor = plan.cpu_factor
    ra = plan.readahead
    tcp_src = sources.get("tcp")
    src_host = plan.server_host

    schedule: list[dict[str, Any]] = []
    transports: dict[str, Transport] = {}

    def transport(h: Host) -> Transport:
        if h.name not in transports:
            transports[h.name] = transport_factory(h)
        return transports[h.name]

    n_steps = len(workers) + len(protos) * (len(counts) if counts != [1] or explicit_protocols else 0)
    steps_done = [0]

    def step(kind: str, host: str, clients_n: int, fn: Callable[[], Any]) -> Any:
        counted = kind in ("host", "scaling")  # the data server's start and stop are not job steps
        if step_progress is not None and counted:
            step_progress(steps_done[0], n_steps, f"{host}: {kind}" + (f", {clients_n} client(s)" if clients_n > 1 else ""))
        entry: dict[str, Any] = {"step": len(schedule) + 1, "kind": kind, "host": host, "clients": clients_n,
                                 "start": time.time()}
        schedule.append(entry)
        t0 = time.monotonic()
        try:
            out = fn()
            entry["ok"] = True
            return out
        except Exception as e:
            entry["ok"] = False
            entry["error"] = _one_line(e)
            raise
        finally:
            entry["seconds"] = round(time.monotonic() - t0, 3)
            if counted:
                steps_done[0] += 1
                if step_progress is not None:
                    step_progress(steps_done[0], n_steps, f"{host}: {kind} done")

    # the healthy rate: the site's setting, else the slower of the two ends' link rates
    def healthy_for(h: Host) -> tuple[float, int]:
        if plan.healthy_rate_bps:
            bps = plan.healthy_rate_bps
        else:
            rates = [r for r in (_rate_of(h), _rate_of(src_host)) if r]
            bps = min(rates) if rates else DEFAULT_RATE_BPS
        return healthy_mib_per_s(bps), bps

    def run_job(h: Host, n_clients: int, mb_each: float, source_spec: str, share: int = 1,
                extra: list[str] | None = None) -> dict[str, Any]:
        # share > 1: the clients are job slots that together should consume the healthy rate
        mibs, _ = healthy_for(h)
        cpu_per_mb = factor * share / mibs
        args = ["job", "--source", source_spec, "--mb", f"{mb_each:g}", "--cpu-per-mb", f"{cpu_per_mb:.6g}",
                "--readahead", str(ra), "--block-kb", str(plan.block_kb), "--clients", str(n_clients),
                "--calibrate-seconds", f"{plan.calibrate_seconds:g}", *(extra or [])]
        timeout = plan.timeout or (60.0 + mb_each * n_clients * (4 * cpu_per_mb + 1.0))
        res = transport(h).run(job_script(args, python, auth=auth if source_spec.startswith("tcp:") else None),
                               timeout=float(timeout))
        if res.timed_out:
            raise RuntimeError(f"the job did not finish within {float(timeout):.0f} s")
        try:
            out = parse_job_output(res.stdout)
        except ValueError:
            why = (res.stderr or res.stdout).strip().splitlines()
            raise RuntimeError(f"job exited {res.rc}: {why[-1] if why else 'no output'}") from None
        if not out.get("ok"):
            raise RuntimeError(out.get("error") or f"job exited {res.rc}")
        return out

    server: dict[str, Any] | None = None
    token = "sa-eff-" + secrets.token_hex(6)
    auth = new_auth_secret()
    result: dict[str, Any] = {"mean": None, "hosts": {}, "scaling": [], "schedule": schedule}
    try:
        if tcp_src:
            assert src_host is not None
            say(f"starting the data server on {src_host.name}")

            def start() -> dict[str, Any]:
                r = transport(src_host).run(server_start_script(token, plan.server_lifetime, bind=tcp_src["address"],
                                                                python=python, auth=auth),
                                            timeout=30)
                kv = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
                if r.rc != 0 or "port" not in kv or "pid" not in kv:
                    why = (r.stderr or r.stdout).strip().splitlines()
                    raise RuntimeError(f"data server did not start (rc {r.rc}): {why[-1] if why else 'no output'}")
                return {"host": src_host.name, "port": int(kv["port"]), "pid": int(kv["pid"]), "dir": kv.get("dir", "")}

            try:
                server = step("server-start", src_host.name, 0, start)
            except TransportError as e:
                raise EfficiencyTestError(f"source {src_host.name}: {_one_line(e)}") from None
            except RuntimeError as e:
                raise EfficiencyTestError(f"source {src_host.name}: {e}") from None
            tcp_src["label"] = f"{src_host.name}:{server['port']}"
        specs = {p: job_spec(s, server["port"] if server and p == "tcp" else None) for p, s in sources.items()}
        labels = {p: s.get("label") or s.get("path") for p, s in sources.items()}
        spec, label = specs[protos[0]], labels[protos[0]]

        calibration: dict[str, Any] = {}
        slots = plan.slots
        for h in workers:
            say(f"{h.name}: {mb_host:g} MiB from {label}" + (f" in {slots} concurrent job slots" if slots > 1 else ""))
            try:
                out = step("host", h.name, slots, lambda h=h: run_job(h, slots, mb_host / slots, spec, share=slots))
            except Exception as e:
                result["hosts"][h.name] = {"efficiency": None, "error": f"{h.name}: {_one_line(e)}",
                                           "source": label, "clients": slots}
                continue
            s = host_summary(out, label)
            mibs, bps = healthy_for(h)
            cal = dict(s.pop("calibration") or {})
            cal.update({"healthy_rate_bps": bps, "healthy_mib_per_s": round(mibs, 3), "cpu_factor": factor,
                        "readahead": ra, "block_kb": plan.block_kb, "slots": slots})
            s["calibration"] = cal
            calibration[h.name] = cal
            result["hosts"][h.name] = s

        ok_hosts = [n for n, s in result["hosts"].items() if s.get("efficiency") is not None]
        # scaling: C concurrent clients over the nodes, the same work per client at every point
        if (counts != [1] or explicit_protocols) and ok_hosts:
            passed = [h for h in workers if h.name in ok_hosts]
            first = plan.scaling_host or passed[0]
            scaling_nodes = ([first] + [h for h in passed if h.name != first.name])[:n_nodes]
            if len(scaling_nodes) < n_nodes:
                result["nodes_note"] = (f"{n_nodes} node(s) asked, {len(scaling_nodes)} passed the per-host test: "
                                        "the scaling points use those")
            mb_each = max(1.0, min(mb_host, plan.scaling_budget_mb / max(counts)))
            for p in protos:
                result["scaling"] += run_points(scaling_nodes, counts, mb_each, specs[p], p, run_job, step, say,
                                                plan.calibrate_seconds)
        elif ok_hosts:
            for n in ok_hosts[:1]:
                s = result["hosts"][n]
                mbps = s["read_mbps"]
                result["scaling"].append({"clients": 1, "nodes": 1, "protocol": protos[0], "host": n, "hosts": [n],
                                          "mb_per_client": mb_host,
                                          "runtime_per_client_s": s["wall_seconds"], "efficiency": s["efficiency"],
                                          "rate_per_client_bps": mbps * 1e6 if mbps is not None else None,
                                          "cpu_seconds_per_client": s["cpu_seconds"],
                                          "aggregate_read_mbps": mbps,
                                          "read_wait_share": s["read_wait_share"],
                                          "cpu_share_computing": s["cpu_share_computing"]})
        result["protocols"] = [
            {"protocol": p, "source": labels[p],
             "knee": find_knee([x for x in result["scaling"] if x.get("protocol") == p], plan.knee_rate_drop,
                              plan.knee_min_efficiency)}
            for p in protos]
        result["knee"] = result["protocols"][0]["knee"]
        result["calibration"] = {
            "cpu_factor": factor, "readahead": ra, "block_kb": plan.block_kb, "goodput": GOODPUT,
            "slots": slots,
            "model": "compute per MiB = cpu_factor x slots x (1 / healthy MiB/s): the slots together consume "
                     "the healthy rate / cpu_factor; read-then-compute per block with "
                     f"{ra} block(s) requested ahead",
            "hosts": calibration,
        }
    finally:
        if server is not None:
            try:
                r = step("server-stop", server["host"], 0,
                         lambda: transport(src_host).run(
                             server_stop_script(server["pid"], token, server["dir"]), timeout=15))
                server["stopped"] = r.stdout.strip() in ("killed", "gone")
            except Exception:
                server["stopped"] = False
        for t in transports.values():
            try:
                t.close()
            except Exception:
                pass
    result["mean"] = _mean([s.get("efficiency") for s in result["hosts"].values()])
    result["failed"] = [n for n, s in result["hosts"].items() if s.get("efficiency") is None]
    result["source"] = {"kind": src["kind"], "protocol": protos[0], "label": label,
                        **({"host": src["host"]} if "host" in src else {})}
    result["mb_per_host"] = mb_host
    if server is not None:
        result["server"] = {"host": server["host"], "port": server["port"], "pid": server["pid"],
                            "stopped": server.get("stopped", False)}
    return result


def _one_line(e: BaseException | str) -> str:
    s = " ".join(str(e).split())
    return s or type(e).__name__


# ------------------------------------------------------------------ before / after


def compare_efficiency(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """``{"before": mean, "after": mean, "ratio": after/before, "hosts": {h: {before, after, ratio}}}``."""

    def mean(d: dict[str, Any] | None) -> float | None:
        if not d:
            return None
        m = d.get("mean")
        if m is None:
            m = _mean([(s or {}).get("efficiency") for s in (d.get("hosts") or {}).values()])
        return m

    def ratio(a: float | None, b: float | None) -> float | None:
        return (b / a) if (a is not None and b is not None and a > 0) else None

    hb = (before or {}).get("hosts") or {}
    ha = (after or {}).get("hosts") or {}
    hosts = {}
    for n in sorted(set(hb) | set(ha)):
        eb = (hb.get(n) or {}).get("efficiency")
        ea = (ha.get(n) or {}).get("efficiency")
        hosts[n] = {"before": eb, "after": ea, "ratio": ratio(eb, ea)}
    mb, ma = mean(before), mean(after)
    return {"before": mb, "after": ma, "ratio": ratio(mb, ma), "hosts": hosts}
