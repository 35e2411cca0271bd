"""The command line end to end: local scan, JSON schema, exit codes, collect/replay, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import storadvise

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "fixtures" / "samples"


@pytest.fixture(scope="module")
def local_scan():
    r = storadvise("scan", "--json", "--sample-seconds", "0.3", "--fail-on", "critical")
    assert r.returncode in (0, 3), r.stderr
    return json.loads(r.stdout)


def test_local_scan_json_schema(local_scan):
    d = local_scan
    for key in ("schema_version", "site", "started_at", "hosts", "findings", "summary"):
        assert key in d
    assert d["site"] == "local"
    (h,) = d["hosts"]
    assert set(h) >= {"name", "roles", "reachable", "errors"} and h["reachable"] is True
    assert h["probes"]["network.sysctl"] == "ok" and h["probes"]["host"] == "ok"
    memory = next(leaf for leaf in h["facts"]["host"] if leaf["name"] == "/memory_bytes")
    assert memory["type"] == "number" and memory["value_num"] > 0
    ids = {f["rule_id"] for f in d["findings"]}
    assert "NET-TCP-SACK" in ids
    for f in d["findings"]:
        assert set(f) >= {"rule_id", "hosts", "status", "severity", "observed", "expected", "evidence",
                          "rationale", "references", "remediation"}
        assert f["status"] in ("fail", "pass", "waived", "error", "not_applicable")
    sack = next(f for f in d["findings"] if f["rule_id"] == "NET-TCP-SACK")
    runtime = Path("/proc/sys/net/ipv4/tcp_sack").read_text().strip()
    assert sack["status"] == ("pass" if runtime == "1" else "fail")  # agrees with the real kernel value


def test_exit_code_follows_fail_on(local_scan):
    failed = [f for f in local_scan["findings"] if f["status"] == "fail"]
    assert failed, "this machine has at least an info-level failure (e.g. qdisc) to test the threshold"
    r = storadvise("scan", "--json", "--sample-seconds", "0.2", "--fail-on", "info")
    assert r.returncode == 2


def test_collect_then_scan_from_capture(tmp_path):
    out = tmp_path / "cap"
    r = storadvise("collect", "--out", str(out), "--sample-seconds", "0.2", "--json")
    assert r.returncode == 0, r.stderr
    assert (out / "manifest.json").is_file()
    host_dirs = list((out / "hosts").iterdir())
    assert len(host_dirs) == 1 and "network.sysctl" in json.loads((host_dirs[0] / "outputs.json").read_text())["outputs"]
    assert json.loads((out / "manifest.json").read_text())["capture_format"] == 2
    r2 = storadvise("scan", "--from", str(out), "--json", "--fail-on", "critical")
    assert r2.returncode == 0, r2.stderr
    d = json.loads(r2.stdout)
    assert d["hosts"][0]["probes"]["network.sysctl"] == "ok"
    # the host record and the 'host' probe's output no longer share a file (format 1 wrote both to host.json)
    assert d["hosts"][0]["probes"]["host"] == "ok"
    # a capture of a format this version does not know is refused in one line
    m = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**m, "capture_format": 9}))
    r4 = storadvise("scan", "--from", str(out))
    assert r4.returncode == 1 and "capture_format 9" in r4.stderr and "Traceback" not in r4.stderr
    (out / "manifest.json").write_text(json.dumps(m))
    # collect refuses to overwrite
    r3 = storadvise("collect", "--out", str(out))
    assert r3.returncode == 1 and "not empty" in r3.stderr and "Traceback" not in r3.stderr


def test_probe_list_and_parse():
    r = storadvise("probe", "list", "--json")
    names = {p["name"] for p in json.loads(r.stdout)}
    assert {"host", "network.sysctl", "network.nic", "firewall", "block.queue", "block.diskstats"} <= names
    r = storadvise("probe", "parse", "block.diskstats", str(SAMPLES / "proc-diskstats-sysstat-tests-root6.txt"))
    # a single snapshot is not a sample pair: a clear one-line error, exit 1
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = storadvise("probe", "parse", "nope", "x")
    assert r.returncode == 1 and "unknown probe 'nope'" in r.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (("scan", "--site", "/nonexistent/site.yml"), "site file not found"),
        (("scan", "--site", "no-such-site"), "no site named 'no-such-site'"),
        (("scan", "--fail-on", "bogus"), "--fail-on must be one of"),
        (("scan", "--from", "/nonexistent-dir"), "not a directory written by 'storadvise collect'"),
    ],
)
def test_bad_input_is_one_line(args, needle):
    r = storadvise(*args)
    assert r.returncode == 1
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_usage_error_exit_1():
    r = storadvise("scan", "--no-such-option")
    assert r.returncode == 1 and "No such option" in r.stderr


def test_rules_lint_and_list():
    r = storadvise("rules", "lint")
    assert r.returncode == 0, r.stderr
    r = storadvise("rules", "list", "--json")
    assert any(x["id"] == "FW-STORAGE-NETWORK" and x["roles"] == ["storage"] for x in json.loads(r.stdout))


def test_unreachable_host_is_incomplete(tmp_path):
    # a port on loopback where nothing listens: the host is unreachable, the scan goes on, exit 3
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    site = tmp_path / "dead.yml"
    site.write_text(f"name: dead\nhosts:\n  - {{name: ghost, address: 127.0.0.1, port: {port}, user: root}}\n")
    r = storadvise("scan", "--site", str(site), "--json", "--connect-timeout", "2")
    assert r.returncode == 3, r.stderr
    d = json.loads(r.stdout)
    assert d["hosts"][0]["reachable"] is False and d["hosts"][0]["errors"]
    assert d["summary"]["incomplete"] is True
    assert any(f["status"] == "error" and f["hosts"] == ["ghost"] for f in d["findings"])


def test_python_m_advisor_cli_is_the_command_with_its_exit_status(tmp_path):
    """``python -m advisor.cli`` (the package's __main__) runs the command line and exits as it does:
    without sys.exit its status was lost (0 for an error)."""
    import subprocess
    import sys

    cp = subprocess.run([sys.executable, "-m", "advisor.cli", "report", str(tmp_path / "missing.json")],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 1 and "scan report not found" in cp.stderr, (cp.returncode, cp.stderr)
