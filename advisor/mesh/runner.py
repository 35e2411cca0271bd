"""Running the mesh: one-shot iperf3 servers, clients over each host's transport, rounds in parallel.

``run_mesh(site, transports)`` expands the site's mesh requests, schedules them
(advisor.mesh.schedule), and runs every round's tests at the same time, one thread per host
pair. A host takes part in one test per round, so each host's transport is used by one thread
at a time (a per-host lock makes that explicit); transports may be given as a mapping or as a
factory called once per host.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from advisor.util.errors import StoradviseError
from advisor.mesh import iperf
from advisor.mesh.iperf_auth import AUTH_PROBE, IperfAuth, supports_auth
from advisor.mesh.limits import INCONCLUSIVE, classify_path
from advisor.mesh.results import judge_paths, path_record
from advisor.mesh.sampling import EndSample
from advisor.mesh.schedule import PathRequest, expand_pairs, mesh_schedule
from advisor.site.model import Host, MeshSpec, Site
from advisor.transport.base import Transport, TransportError

TransportSource = Mapping[str, Transport] | Callable[[Host], Transport]


@dataclass
class MeshProgress:
    """What ``progress`` is called with: after each finished test and at each round's start/end."""

    event: str  # "round-start" | "test-done" | "round-done" | "retest-start" (slow paths alone, round = rounds + 1)
    round: int  # 1-based
    rounds: int
    tests_done: int  # in this round
    tests_in_round: int
    message: str = ""


@dataclass
class RunOptions:
    duration: float = 5.0
    omit: float = 1.0
    streams: int = 1
    congestion: str | None = None
    port_base: int = 5301
    timeout_margin: float = 15.0
    #: one --bidir test for a pair measured both ways (where both ends have iperf3 >= 3.7)
    bidir: bool = True
    #: at most this many tests at once (None: a whole round at once)
    parallel: int | None = None
    #: attempts for a busy / refused test (backoff doubles from ``backoff_s``)
    attempts: int = 3
    backoff_s: float = 0.5
    #: --connect-timeout (iperf3 >= 3.8): a dropping firewall fails fast instead of hanging
    connect_timeout_ms: int = 3000
    #: tries on other ports when a port is in use
    port_tries: int = 8
    #: re-measure alone every path below this ratio to expected after the rounds (None: never)
    retest_below: float | None = None
    #: re-measure alone every path whose measurement was inconclusive (limited_by cpu / contended)
    retest_inconclusive: bool = True

    @classmethod
    def from_spec(cls, spec: MeshSpec, **overrides: Any) -> "RunOptions":
        opts = cls(
            duration=spec.duration, omit=spec.omit, streams=spec.streams, congestion=spec.congestion,
            port_base=spec.port_base, timeout_margin=spec.timeout_margin, retest_below=spec.retest_below,
        )
        for k, v in overrides.items():
            if v is not None:
                setattr(opts, k, v)
        return opts

    @property
    def test_seconds(self) -> int:
        """What one test runs for (iperf3 takes whole seconds for -t and -O)."""
        return iperf.whole_seconds(self.duration, 1) + iperf.whole_seconds(self.omit, 0)

    @property
    def test_timeout(self) -> float:
        return self.test_seconds + self.timeout_margin


def mesh_address(host: Host) -> str:
    """Where senders reach a host: ``vars.mesh_address`` (e.g. a storage-network address),
    else its connect address."""
    return str(host.vars.get("mesh_address") or host.connect_address)


class _Hosts:
    """Transports and per-host state, shared by the round threads."""

    def __init__(self, site: Site, transports: TransportSource):
        self.site = site
        self._source = transports
        self._opened: dict[str, Transport] = {}
        self._made: set[str] = set()
        self.locks: dict[str, threading.Lock] = {h.name: threading.Lock() for h in site.hosts}
        self.version: dict[str, tuple[int, int, int] | None] = {}
        self.version_text: dict[str, str | None] = {}
        #: whether the host's iperf3 can authenticate (--rsa-public-key-path, --authorized-users-path)
        self.auth: dict[str, bool] = {}
        self.error: dict[str, str] = {}
        self._open_lock = threading.Lock()

    def transport(self, name: str) -> Transport:
        with self._open_lock:
            if name in self._opened:
                return self._opened[name]
            if isinstance(self._source, Mapping):
                t = self._source.get(name)
                if t is None:
                    raise TransportError(f"{name}: no transport given for this host")
            else:
                t = self._source(self.site.host(name))
                self._made.add(name)
            self._opened[name] = t
            return t

    def run(self, name: str, script: str, timeout: float):
        with self.locks[name]:
            return self.transport(name).run(script, timeout=timeout)

    def close(self) -> None:
        for name in self._made:
            try:
                self._opened[name].close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    def detect(self, name: str) -> None:
        try:
            r = self.run(name, f"{iperf.VERSION_SCRIPT}; {AUTH_PROBE}", timeout=20)
        except TransportError as e:
            self.error[name] = str(e)
            self.version[name] = None
            self.version_text[name] = None
            return
        self.auth[name] = supports_auth(r.stdout)
        if iperf.version_missing(r.stdout):
            self.error[name] = f"{name}: iperf3 is not installed"
        v = iperf.parse_version(r.stdout)
        self.version[name] = v
        self.version_text[name] = (f"{v[0]}.{v[1]}" + (f".{v[2]}" if v[2] else "")) if v else None
        if v is None and name not in self.error:
            self.error[name] = f"{name}: cannot tell the iperf3 version ({(r.stdout or r.stderr).strip()[:80] or 'no output'})"

    def supports(self, name: str, minimum: tuple[int, int]) -> bool:
        v = self.version.get(name)
        return v is not None and v[:2] >= minimum


@dataclass
class _Outcome:
    result: iperf.IperfResult | None
    error: str | None
    attempts: int
    duration_s: float | None
    #: what the server end sampled during the test
    server_sample: EndSample | None = None


def _records(o: _Outcome, reqs: list[PathRequest], round_no: int, mode: str) -> list[dict]:
    """The path records of a successful test: ``reqs`` is [forward] or [forward, reverse] (--bidir).

    The forward direction's sender is the client (its samples, iperf3's host_total), the
    reverse direction's the server (remote_total)."""
    res = o.result
    assert res is not None and res.forward is not None
    dirs = [res.forward] + ([res.reverse] if len(reqs) == 2 and res.reverse is not None else [])
    test_bytes = sum(d.sent_bytes or 0 for d in dirs) or None
    ends = [(res.client_sample, o.server_sample, res.cpu_host_pct, res.cpu_remote_pct),
            (o.server_sample, res.client_sample, res.cpu_remote_pct, res.cpu_host_pct)]
    out = []
    for req, d, (snd, rcv, cpu_s, cpu_r) in zip(reqs, dirs, ends):
        out.append(path_record(
            req.src, req.dst, expected_bps=req.expected_bps, expected_source=req.expected_source,
            round_no=round_no, mode=mode, attempts=o.attempts, duration_s=o.duration_s,
            result=res, direction=d, sender_sample=snd, receiver_sample=rcv,
            cpu_sender_pct=cpu_s, cpu_receiver_pct=cpu_r, test_bytes=test_bytes,
        ))
    return out


def classify_paths(paths: list[dict]) -> None:
    """Fill ``limited_by`` / ``limited_evidence`` (advisor.mesh.limits) of every path."""
    for p in paths:
        p["limited_by"], p["limited_evidence"] = classify_path(p)


class MeshRunner:
    def __init__(self, site: Site, transports: TransportSource, options: RunOptions,
                 progress: Callable[[MeshProgress], None] | None = None, nic_speeds: dict[str, int] | None = None):
        self.site = site
        self.opts = options
        #: host -> its physical NIC's speed (bits/s; advisor.scan.measurements.nic_speeds): each path records its ends'
        self.nic_speeds = nic_speeds or {}
        self.hosts = _Hosts(site, transports)
        self.progress = progress
        self._progress_lock = threading.Lock()
        self._auth: IperfAuth | None = None

    # one test ------------------------------------------------------------------------------

    def _auth_for(self, src: str, dst: str) -> IperfAuth | None:
        """The run's credentials when both ends' iperf3 can authenticate (made once per run)."""
        if not (self.hosts.auth.get(src) and self.hosts.auth.get(dst)):
            return None
        with self._progress_lock:
            if self._auth is None:
                self._auth = IperfAuth.new()
        return self._auth

    def _start_server(self, dst: str, port: int, stride: int,
                      auth: IperfAuth | None = None) -> tuple[iperf.ServerStart, int]:
        life = self.opts.test_timeout + iperf.SERVER_READY_WAIT + 5
        start = iperf.ServerStart(False, message="no port tried")
        for k in range(self.opts.port_tries):
            p = port + k * stride
            if p > 65535:
                break
            r = self.hosts.run(dst, iperf.server_start_script(p, life, bind=mesh_address(self.site.host(dst)), auth=auth,
                                                              sample=True),
                               timeout=iperf.SERVER_READY_WAIT + 15)
            if r.timed_out:
                return iperf.ServerStart(False, message=f"{dst}: starting the iperf3 server timed out"), p
            start = iperf.parse_server_start(r.stdout)
            if start.ready or not start.in_use:
                return start, p
        return iperf.ServerStart(False, message=f"{dst}: ports {port}.. are all in use"), port

    def _stop_server(self, dst: str, start: iperf.ServerStart) -> EndSample | None:
        """Stop the server; what its end sampled (None: nothing)."""
        if start.pid is None:
            return None
        try:
            r = self.hosts.run(dst, iperf.server_stop_script(start.pid, start.workdir or "/nonexistent"), timeout=15)
        except TransportError:
            return None  # the server's own `timeout` bound ends it
        return iperf.parse_server_stop(r.stdout)

    def run_test(self, src: str, dst: str, port: int, stride: int, bidir: bool) -> _Outcome:
        for name in (src, dst):
            if name in self.hosts.error:
                return _Outcome(None, self.hosts.error[name], 0, None)
        dst_host = self.site.host(dst)
        connect_ms = self.opts.connect_timeout_ms if self.hosts.supports(src, iperf.CONNECT_TIMEOUT_MIN) else None
        attempt = 0
        last_error = "not run"
        while attempt < self.opts.attempts:
            attempt += 1
            try:
                auth = self._auth_for(src, dst)
                start, used_port = self._start_server(dst, port, stride, auth)
            except TransportError as e:
                return _Outcome(None, str(e), attempt, None)
            if not start.ready:
                return _Outcome(None, f"{dst}: {start.message}" if not start.message.startswith(dst) else start.message,
                                attempt, None)
            t0 = time.monotonic()
            server_sample = None
            try:
                cmd = iperf.client_command(
                    mesh_address(dst_host), used_port, self.opts.duration, self.opts.omit, self.opts.streams,
                    self.opts.congestion, bidir=bidir, connect_timeout_ms=connect_ms,
                    hard_limit_s=self.opts.test_timeout - 1, idle_rtt=True, auth=auth, sample=True,
                )
                r = self.hosts.run(src, cmd, timeout=self.opts.test_timeout)
            except TransportError as e:
                return _Outcome(None, str(e), attempt, time.monotonic() - t0)
            finally:
                server_sample = self._stop_server(dst, start)
            elapsed = time.monotonic() - t0
            if r.timed_out:
                return _Outcome(None, f"timed out after {self.opts.test_timeout:g}s", attempt, elapsed)
            res = iperf.parse_client_json(r.stdout, r.rc, r.stderr)
            if res.ok:
                return _Outcome(res, None, attempt, elapsed, server_sample)
            last_error = res.error or "failed"
            if not iperf.retryable(last_error):
                return _Outcome(res, last_error, attempt, elapsed)
            if attempt < self.opts.attempts:
                time.sleep(self.opts.backoff_s * (2 ** (attempt - 1)))
        return _Outcome(None, f"{last_error} (after {attempt} attempts)", attempt, None)

    # one slot (a host pair in a round) -----------------------------------------------------

    def run_slot(self, directions: list[PathRequest], round_no: int, port: int, stride: int) -> list[dict]:
        out: list[dict] = []
        use_bidir = (
            self.opts.bidir and len(directions) == 2
            and self.hosts.supports(directions[0].src, iperf.BIDIR_MIN)
            and self.hosts.supports(directions[0].dst, iperf.BIDIR_MIN)
        )
        if use_bidir:
            fwd, rev = directions
            o = self.run_test(fwd.src, fwd.dst, port, stride, bidir=True)
            if o.error is None and o.result is not None and o.result.reverse is not None:
                return _records(o, [fwd, rev], round_no, "bidir")
            if not iperf.connect_failure(o.error):
                for req in directions:
                    out.append(path_record(
                        req.src, req.dst, expected_bps=req.expected_bps, expected_source=req.expected_source,
                        round_no=round_no, mode="bidir", attempts=o.attempts, duration_s=o.duration_s,
                        error=o.error or "bidir test gave no reverse result",
                    ))
                return out
            # could not connect one way: test each direction alone to tell which one is cut
        for req in directions:
            o = self.run_test(req.src, req.dst, port, stride, bidir=False)
            if o.error is None and o.result is not None:
                out.extend(_records(o, [req], round_no, "single"))
                continue
            out.append(path_record(
                req.src, req.dst, expected_bps=req.expected_bps, expected_source=req.expected_source,
                round_no=round_no, mode="single", attempts=o.attempts, duration_s=o.duration_s,
                result=o.result, direction=o.result.forward if (o.result and o.error is None) else None,
                error=o.error,
            ))
        return out

    # slow paths again, alone ---------------------------------------------------------------

    def retest_slow(self, paths: list[dict], by_key: dict, n_rounds: int) -> None:
        """Measure every path below ``retest_below`` of its expected rate again, and every path whose
        measurement was inconclusive (``limited_by`` cpu / contended, unless ``retest_inconclusive``
        is off), one test at a time (nothing else running), and keep that measurement (the round's
        under ``retest``, with the round's ``limited_by``)."""
        limit = self.opts.retest_below

        def wanted(p: dict) -> bool:
            if p.get("status") != "ok":
                return False
            if self.opts.retest_inconclusive and p.get("limited_by") in INCONCLUSIVE:
                return True
            return bool(limit) and p.get("ratio_basis") == "expected" and p.get("ratio") is not None \
                and p["ratio"] < limit

        slow = [k for k, p in enumerate(paths) if wanted(p)]
        if slow:
            self._report(MeshProgress("retest-start", n_rounds + 1, n_rounds, 0, len(slow)))
        for n, k in enumerate(slow, start=1):
            old = paths[k]
            req = by_key[(old["src"], old["dst"])]
            o = self.run_test(req.src, req.dst, self.opts.port_base, 1, bidir=False)
            note = {"concurrent_bps": old["measured_bps"], "concurrent_ratio": old["ratio"], "round": old["round"],
                    "mode": old["mode"], "error": None, "limited_by": old.get("limited_by")}
            if o.error is None and o.result is not None:
                rec = _records(o, [req], old["round"], "alone")[0]
                rec["retest"] = note
                paths[k] = rec
            else:
                note["error"] = o.error or "no result"
                old["retest"] = note
            self._report(MeshProgress("test-done", n_rounds + 1, n_rounds, n, len(slow),
                                      f"{req.src}->{req.dst} alone"))

    # the whole mesh ------------------------------------------------------------------------

    def _report(self, ev: MeshProgress) -> None:
        if self.progress is not None:
            with self._progress_lock:
                self.progress(ev)

    def run(self, requests: list[PathRequest]) -> dict[str, Any]:
        t0 = time.monotonic()
        by_key = {(r.src, r.dst): r for r in requests}
        rounds = mesh_schedule(requests)
        names = sorted({n for r in requests for n in (r.src, r.dst)})
        try:
            with ThreadPoolExecutor(max_workers=min(32, max(1, len(names)))) as pool:
                list(pool.map(self.hosts.detect, names))
            paths: list[dict] = []
            for i, rnd in enumerate(rounds, start=1):
                slots: list[list[PathRequest]] = []
                index: dict[frozenset, int] = {}
                for src, dst in rnd:
                    e = frozenset((src, dst))
                    if e not in index:
                        index[e] = len(slots)
                        slots.append([])
                    slots[index[e]].append(by_key[(src, dst)])
                self._report(MeshProgress("round-start", i, len(rounds), 0, len(slots)))
                done = 0
                workers = max(1, min(len(slots), self.opts.parallel or len(slots)))
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"mesh-r{i}") as pool:
                    futs = [pool.submit(self.run_slot, s, i, self.opts.port_base + k, len(slots))
                            for k, s in enumerate(slots)]
                    for f in futs:
                        recs = f.result()
                        paths.extend(recs)
                        done += 1
                        msg = ", ".join(f"{r['src']}->{r['dst']}" for r in recs)
                        self._report(MeshProgress("test-done", i, len(rounds), done, len(slots), msg))
                self._report(MeshProgress("round-done", i, len(rounds), done, len(slots)))
            judge_paths(paths)
            classify_paths(paths)
            self.retest_slow(paths, by_key, len(rounds))
        finally:
            self.hosts.close()
        order = {(r.src, r.dst): k for k, r in enumerate(requests)}
        paths.sort(key=lambda p: order[(p["src"], p["dst"])])
        for p in paths:
            if self.nic_speeds.get(p["src"]) or self.nic_speeds.get(p["dst"]):
                p["nic_speed_bps"] = {"src": self.nic_speeds.get(p["src"]), "dst": self.nic_speeds.get(p["dst"])}
        judge_paths(paths)
        classify_paths(paths)
        return {
            "rounds": len(rounds),
            "retested": sum(1 for p in paths if p.get("retest")),
            "schedule": [[[s, d] for s, d in rnd] for rnd in rounds],
            "paths": paths,
            "wall_seconds": round(time.monotonic() - t0, 3),
            "parameters": {
                "duration": self.opts.duration, "omit": self.opts.omit, "streams": self.opts.streams,
                "congestion": self.opts.congestion, "bidir": self.opts.bidir, "parallel": self.opts.parallel,
                "retest_below": self.opts.retest_below, "retest_inconclusive": self.opts.retest_inconclusive,
            },
            "hosts": {n: {"iperf3": self.hosts.version_text.get(n), "error": self.hosts.error.get(n),
                          "auth": bool(self.hosts.auth.get(n))} for n in names},
        }


def run_mesh(
    site: Site,
    transports: TransportSource,
    progress: Callable[[MeshProgress], None] | None = None,
    *,
    bidir: bool | None = None,
    parallel: int | None = None,
    nic_speeds: dict[str, int] | None = None,
    requests: list[PathRequest] | None = None,
    quiet: bool = False,
    console: Any = None,
    **option_overrides: Any,
) -> dict[str, Any]:
    """Measure the site's mesh and return the result dict (see advisor.mesh.results).

    ``transports``: host name -> Transport, or a factory ``f(host) -> Transport`` (called once per
    host; those transports are closed at the end). ``requests`` replaces the site's pairs
    (used by the benchmark). ``progress`` gets a MeshProgress per round start, finished test and
    round end; without it, a rich ``console`` (unless ``quiet``) shows a progress bar per round.
    ``option_overrides``: any RunOptions field (duration, omit, streams, attempts, ...).
    Raises StoradviseError when the site asks for no mesh.
    """
    if site.mesh is None and requests is None:
        raise StoradviseError(f"site {site.name!r} has no 'mesh' section: nothing to measure")
    spec = site.mesh or MeshSpec()
    if parallel is not None and parallel < 1:
        raise StoradviseError(f"--parallel must be at least 1, got {parallel}")
    if bidir is None:  # the site's choice (MeshSpec.bidir, default true)
        bidir = spec.bidir
    if parallel is None:
        parallel = spec.parallel
    opts = RunOptions.from_spec(spec, bidir=bidir, parallel=parallel, **option_overrides)
    reqs = requests if requests is not None else expand_pairs(site, nic_speeds)
    if not reqs:
        raise StoradviseError(f"site {site.name!r}: the mesh pairs select no host pairs")
    if progress is None and console is not None and not quiet:
        from advisor.mesh.render import RoundProgress

        with RoundProgress(console) as bar:
            return MeshRunner(site, transports, opts, bar, nic_speeds).run(reqs)
    return MeshRunner(site, transports, opts, progress, nic_speeds).run(reqs)
