"""The active efficiency test: real processes, real TCP, real rusage.

* the job against a data server on 127.0.0.1: CPU-bound (efficiency >= 0.75);
* the same through two network namespaces joined by a veth pair (198.18.210.0/24) shaped with
  tbf at 200 Mbit/s: I/O-bound (efficiency clearly lower, most of the wall time blocked on reads);
  namespaces and server removed in teardown, even on failure;
* run_active through a real sshd (SshTransport; loopback is storage and worker);
* compare_efficiency, source/host resolution and the CLI's exit codes.

The machine's cores are shared: a CPU-bound run whose CPU share while computing shows
contention (< 0.9) is retried once before its efficiency is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.efficiency import active
from advisor.efficiency.active import (
    EfficiencyTestError,
    compare_efficiency,
    host_summary,
    job_script,
    parse_job_output,
    resolve_hosts,
    resolve_source,
    run_active,
)
from advisor.efficiency.active_plan import _config, build_active_plan
from advisor.site.model import Site

JOB = str(active.JOB_PATH)
#: 1 Gbit/s healthy path, compute = 1.5 x the healthy read time per MiB (the default)
CPU_PER_MB = 1.5 / active.healthy_mib_per_s(10**9)


def _alive(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in st


#: the one-time secret the test's data servers and jobs share
AUTH = active.new_auth_secret()


class Server:
    """The data server as a real process (optionally inside a namespace), killed by pid."""

    def __init__(self, tmp: Path, bind: str, netns: str | None = None):
        self.portfile = tmp / f"port-{bind}"
        (tmp / "auth").write_text(AUTH + "\n")
        cmd = [sys.executable, JOB, "serve", "--bind", bind, "--portfile", str(self.portfile), "--lifetime", "120",
               "--auth-file", str(tmp / "auth")]
        if netns:
            cmd = ["ip", "netns", "exec", netns] + cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not (self.portfile.exists() and self.portfile.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("data server did not start: " + (self.proc.stderr.read() or b"").decode()[-300:])
            time.sleep(0.02)
        port, pid = self.portfile.read_text().split()
        self.port, self.pid = int(port), int(pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def run_job(source: str, mb: float, netns: str | None = None, **kw) -> dict:
    args = ["job", "--source", source, "--mb", f"{mb:g}", "--cpu-per-mb", f"{CPU_PER_MB:.6g}"]
    for k, v in kw.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    cmd = ["sh", "-c", job_script(args, sys.executable, auth=AUTH)]
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = parse_job_output(p.stdout)
    assert out["ok"], (out, p.stderr)
    return out


def cpu_bound_run(source: str, mb: float, netns: str | None = None) -> dict:
    """A CPU-bound run not disturbed by other load on the shared cores (up to 4 tries)."""
    s = {}
    for i in range(4):
        s = host_summary(run_job(source, mb, netns), source)
        if s["cpu_share_computing"] >= 0.9:
            return s
        time.sleep(0.5 * (i + 1))
    pytest.skip(f"the cores are busy with other load (CPU share while computing "
                f"{s['cpu_share_computing']:.2f}, load {s['load_start']}): efficiency would measure contention")


# ------------------------------------------------------------------ loopback


@pytest.mark.quiet  # measures CPU efficiency: beside other work it reads contention
def test_job_cpu_bound_on_loopback(tmp_path):
    srv = Server(tmp_path, "127.0.0.1")
    try:
        s = cpu_bound_run(f"tcp:127.0.0.1:{srv.port}", 48)
    finally:
        srv.stop()
    assert s["mb_read"] == pytest.approx(48)
    assert s["events"] == 48 * 16  # 64 KiB events
    assert s["read_wait_share"] < 0.15, s
    assert s["efficiency"] >= 0.75, s
    assert s["calibration"]["cpu_s_per_mb"] == pytest.approx(CPU_PER_MB, rel=1e-3)
    assert not _alive(srv.pid)


def test_job_reads_a_path_and_several_clients(tmp_path):
    f = tmp_path / "data"
    f.write_bytes(os.urandom(6 << 20))
    out = run_job(f"path:{f}", 8, clients=2)  # the file holds 6 MiB: each client stops at EOF
    assert len(out["clients"]) == 2
    for c in out["clients"]:
        assert c["bytes"] == 6 << 20 and c["end_of_file"] is True
        assert c["cpu_seconds"] > 0 and c["wall_seconds"] >= c["compute_seconds"]


def test_job_reports_an_unreachable_server():
    out = subprocess.run(["sh", "-c", job_script(["job", "--source", "tcp:127.0.0.1:1", "--mb", "1",
                                                  "--calibrate-seconds", "0.05"], sys.executable, auth=AUTH)],
                         capture_output=True, text=True, timeout=60)
    res = parse_job_output(out.stdout)
    assert out.returncode == 2 and res["ok"] is False and "Connection refused" in res["error"]


# ------------------------------------------------------------------ namespaces + tbf

def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


def test_job_io_bound_through_a_shaped_veth(netns_pair, tmp_path):
    ns = netns_pair
    srv = Server(tmp_path, "198.18.210.1", netns=ns["server_ns"])
    try:
        src = f"tcp:198.18.210.1:{srv.port}"
        fast = cpu_bound_run(src, 32, ns["client_ns"])
        _sh("ip", "netns", "exec", ns["server_ns"], "tc", "qdisc", "replace", "dev", ns["server_dev"], "root",
            "tbf", "rate", "100mbit", "burst", "64kb", "latency", "10ms")
        slow = host_summary(run_job(src, 16, ns["client_ns"]), src)
    finally:
        srv.stop()
    print(f"\nunshaped veth: efficiency {fast['efficiency']:.3f} at {fast['read_mbps']:.0f} Mb/s; "
          f"tbf 100mbit: efficiency {slow['efficiency']:.3f} at {slow['read_mbps']:.0f} Mb/s, "
          f"read wait {slow['read_wait_share']:.2f}")
    assert fast["efficiency"] >= 0.75, fast
    assert slow["read_mbps"] < 105, slow
    # 1.5 x the 1 Gbit/s read time of compute against ~95 Mb/s of reads, and the sys CPU of the shaped
    # receive path: 0.20-0.22 here (at 200mbit 0.3-0.55 here and 0.66 on a CI machine)
    assert slow["efficiency"] < 0.65, slow
    assert slow["efficiency"] < fast["efficiency"] - 0.25
    assert slow["read_wait_share"] > 0.25, slow  # the job waited for data
    assert not _alive(srv.pid)


# ------------------------------------------------------------------ through a real sshd


@pytest.fixture
def ssh_site(tmp_path):
    from tests.support.sshd import running_sshd, sshd_available

    if not sshd_available():
        pytest.skip("needs /usr/sbin/sshd")
    with running_sshd() as s:
        st = s.host("st", roles=["storage"])
        wn = s.host("wn", roles=["worker"], link_rate="1gbit")
        yield Site(name="efft", hosts=[st, wn], extensions={"efficiency": {"mb": 16, "calibrate_seconds": 0.1}}), s


def _factory(site, tmp_path):
    from advisor.transport.factory import SshOptions, transport_for

    opts = SshOptions(known_hosts_path=tmp_path / "kh", system_known_hosts_path=None, ssh_config_path=None,
                      use_agent=False, look_for_keys=False, connect_timeout=5.0)
    return lambda h: transport_for(h, site, opts)


def run_efficiency_test(site, factory, progress=None, step_progress=None, **settings):
    """The scan's measure stage: the plan built from the site once, then run."""
    return run_active(build_active_plan(site, settings), factory, progress=progress, step_progress=step_progress)


def test_run_efficiency_test_over_ssh(ssh_site, tmp_path):
    site, _ = ssh_site
    msgs: list[str] = []
    steps: list[tuple[int, int, str]] = []
    r = run_efficiency_test(site, _factory(site, tmp_path), clients=[1, 2], progress=msgs.append,
                            step_progress=lambda done, total, what: steps.append((done, total, what)))
    # the progress bar's steps: the worker, then two scaling points; counted before and after each
    assert [(d, t) for d, t, _ in steps] == [(0, 3), (1, 3), (1, 3), (2, 3), (2, 3), (3, 3)]
    assert steps[0][2] == "wn: host" and steps[-1][2] == "wn: scaling done"
    h = r["hosts"]["wn"]
    assert r["failed"] == [] and h["efficiency"] is not None and 0 < h["efficiency"] <= 1.05
    assert r["mean"] == h["efficiency"]
    assert h["mb_read"] == pytest.approx(16) and h["clients"] == 1 and h["source"].startswith("st:")
    assert h["cpu_seconds"] > 0 and h["wall_seconds"] >= h["cpu_seconds"] * 0.95
    assert [p["clients"] for p in r["scaling"]] == [1, 2]
    assert all(p["runtime_per_client_s"] > 0 for p in r["scaling"])
    kinds = [(e["kind"], e["host"], e["clients"]) for e in r["schedule"]]
    assert kinds == [("server-start", "st", 0), ("host", "wn", 1), ("scaling", "wn", 1), ("scaling", "wn", 2),
                     ("server-stop", "st", 0)]
    assert all(e["ok"] for e in r["schedule"])
    # strictly one step at a time
    for e1, e2 in zip(r["schedule"], r["schedule"][1:]):
        assert e1["start"] + e1["seconds"] <= e2["start"] + 0.01
    cal = r["calibration"]["hosts"]["wn"]
    assert cal["healthy_rate_bps"] == 10**9 and cal["passes_per_mb"] > 0
    assert r["server"]["stopped"] and not _alive(r["server"]["pid"])
    json.dumps(r)  # the scan carries it as JSON


def test_run_efficiency_test_job_slots(ssh_site, tmp_path):
    """slots=2: the per-host test runs two concurrent jobs that together are calibrated to the
    healthy rate (each computes twice as long per MiB as a single job would) and read the host's
    MiB between them."""
    site, _ = ssh_site
    one = run_efficiency_test(site, _factory(site, tmp_path))
    two = run_efficiency_test(site, _factory(site, tmp_path), slots=2)
    h = two["hosts"]["wn"]
    assert two["failed"] == [] and h["clients"] == 2 and h["mb_read"] == pytest.approx(16)
    assert [(e["kind"], e["clients"]) for e in two["schedule"] if e["kind"] == "host"] == [("host", 2)]
    c1, c2 = one["calibration"]["hosts"]["wn"], two["calibration"]["hosts"]["wn"]
    assert c2["slots"] == 2 and two["calibration"]["slots"] == 2 and c1["slots"] == 1
    assert c2["cpu_s_per_mb"] == pytest.approx(2 * c1["cpu_s_per_mb"], rel=0.01)
    assert 0 < h["efficiency"] <= 1.05


def test_the_run_reads_the_plan_not_the_site(ssh_site, tmp_path):
    """Built once, the plan is all the run needs: with the site's hosts gone and its efficiency
    settings changed afterwards, the run still starts the server on the plan's source host, tests
    the plan's worker and uses the plan's settings."""
    site, _ = ssh_site
    factory = _factory(site.model_copy(), tmp_path)
    plan = build_active_plan(site, {"clients": [1, 2]})
    site.hosts.clear()
    site.extensions["efficiency"] = {"mb": 1, "hosts": ["nope"], "source": "path:/nonexistent"}
    r = run_active(plan, factory)
    assert [(e["kind"], e["host"], e["clients"]) for e in r["schedule"]] == [
        ("server-start", "st", 0), ("host", "wn", 1), ("scaling", "wn", 1), ("scaling", "wn", 2), ("server-stop", "st", 0)]
    assert r["failed"] == [] and r["mb_per_host"] == 16 and r["hosts"]["wn"]["mb_read"] == pytest.approx(16)
    assert r["source"]["host"] == "st" and r["server"]["stopped"] and not _alive(r["server"]["pid"])


def test_run_efficiency_test_failed_host_is_reported(ssh_site, tmp_path):
    site, _ = ssh_site
    r = run_efficiency_test(site, _factory(site, tmp_path), source="path:/nonexistent/data")
    assert r["failed"] == ["wn"] and r["mean"] is None
    assert "No such file" in r["hosts"]["wn"]["error"]
    assert r["schedule"][0]["kind"] == "host"  # no server for a path source


# ------------------------------------------------------------------ pure functions


def test_compare_efficiency():
    before = {"mean": 0.4, "hosts": {"wn01": {"efficiency": 0.35}, "wn02": {"efficiency": 0.45}}}
    after = {"mean": 0.84, "hosts": {"wn01": {"efficiency": 0.8}, "wn02": {"efficiency": 0.88}}}
    c = compare_efficiency(before, after)
    assert c["before"] == 0.4 and c["after"] == 0.84 and c["ratio"] == pytest.approx(2.1)
    assert c["hosts"]["wn01"]["ratio"] == pytest.approx(0.8 / 0.35)
    assert compare_efficiency(None, after) == {"before": None, "after": 0.84, "ratio": None,
                                                "hosts": {"wn01": {"before": None, "after": 0.8, "ratio": None},
                                                          "wn02": {"before": None, "after": 0.88, "ratio": None}}}
    # a mean missing: computed from the hosts; a failed host has no ratio
    c = compare_efficiency({"hosts": {"a": {"efficiency": 0.5}, "b": {"efficiency": None}}},
                           {"hosts": {"a": {"efficiency": 1.0}}})
    assert c["before"] == 0.5 and c["ratio"] == 2.0 and c["hosts"]["b"]["ratio"] is None


def _site(**ext):
    return Site(name="s", hosts=[
        {"name": "gpfs01", "address": "10.0.0.1", "roles": ["storage"], "link_rate": "10gbit"},
        {"name": "gpfs02", "roles": ["storage"]},
        {"name": "wn01", "roles": ["worker"], "groups": ["workers"]},
        {"name": "wn02", "roles": ["worker"], "groups": ["workers"]},
    ], extensions={"efficiency": ext} if ext else {})


def test_resolve_source_and_hosts():
    assert resolve_source(_site(), None) == {"kind": "tcp", "host": "gpfs01", "address": "10.0.0.1"}
    assert resolve_source(_site(source={"host": "gpfs02"}), {"host": "gpfs02"})["host"] == "gpfs02"
    assert resolve_source(_site(), {"path": "/gpfs/fs1/t"}) == {"kind": "path", "path": "/gpfs/fs1/t"}
    assert resolve_source(_site(), "path:/gpfs/x") == {"kind": "path", "path": "/gpfs/x"}
    assert resolve_source(_site(), "gpfs02")["address"] == "gpfs02"
    with pytest.raises(EfficiencyTestError, match="unknown host"):
        resolve_source(_site(), "nope")
    assert [h.name for h in resolve_hosts(_site(), None)] == ["wn01", "wn02"]
    assert [h.name for h in resolve_hosts(_site(), "wn02,gpfs01")] == ["gpfs01", "wn02"]  # the site's order, as --hosts
    with pytest.raises(EfficiencyTestError, match="no host, group or role"):
        resolve_hosts(_site(), ["cache"])
    # the site extension's source is used when no argument is given (through the config)
    cfg = _config(_site(source={"path": "/gpfs/fs1/testfile"}, mb=8), {})
    assert cfg["source"] == {"path": "/gpfs/fs1/testfile"} and cfg["mb"] == 8


def test_cli_exit_codes(tmp_path):
    from typer.testing import CliRunner

    from advisor.cli.root import app

    sf = tmp_path / "s.yml"
    sf.write_text("name: t\ntransport: local\nhosts:\n  - {name: wn, roles: [worker]}\n"
                  "extensions: {efficiency: {calibrate_seconds: 0.05}}\n")
    r = CliRunner().invoke(app, ["efficiency", "test", "--site", str(sf), "--source", "path:/nonexistent/x", "--json"])
    assert r.exit_code == 3, r.output
    assert json.loads(r.stdout)["failed"] == ["wn"]
    r = CliRunner().invoke(app, ["efficiency", "test", "--site", str(sf)])
    assert r.exit_code == 3 and "no host with role storage" in r.output
    r = CliRunner().invoke(app, ["efficiency", "test", "--site", str(sf), "--clients", "1,x"])
    assert r.exit_code == 1 and "--clients" in r.output
