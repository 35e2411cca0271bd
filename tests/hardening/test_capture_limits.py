"""A capture is read like live output (issue 25, cases 3 and 4): regular files only at any depth
below the capture root (a symlink, FIFO or device is "not a captured output"), at most 8 MiB per
stream with the truncation said in the finding, and ``scan --from`` stays killable by SIGTERM."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from advisor.transport.base import MAX_OUTPUT_BYTES
from advisor.transport.capture_files import CaptureFileRefused, read_captured
from advisor.transport.capture_objects import CaptureObjects
from tests.support.cli import storadvise


def _capture(tmp: Path, hosts=("node1",)) -> Path:
    cap = tmp / "cap"
    for h in hosts:
        (cap / "hosts" / h).mkdir(parents=True)
        (cap / "hosts" / h / "network.sysctl.out").write_text("net.ipv4.tcp_sack = 1\n")
    (cap / "manifest.json").write_text(json.dumps(
        {"capture_format": 2, "site": {"name": "t", "hosts": [{"name": h, "address": h} for h in hosts]}}))
    return cap


def _probe(report: dict, host: str, probe: str) -> tuple[str, str]:
    h = next(x for x in report["hosts"] if x["name"] == host)
    return h["probes"][probe], h.get("probe_messages", {}).get(probe, "")


def test_symlinks_out_of_the_capture_are_refused(tmp_path):
    secret = tmp_path / "outside.txt"
    secret.write_text("root:x:0:0:OUTSIDE-THE-CAPTURE:/root:/bin/bash\n")
    cap = _capture(tmp_path, hosts=("node1", "node2", "node3"))
    # a file, a host directory, and the objects directory of a format-2 capture, each a symlink
    os.symlink(secret, cap / "hosts" / "node1" / "firewall.out")
    os.symlink("/dev/zero", cap / "hosts" / "node1" / "mounts.out")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(secret, elsewhere / "firewall.out")
    os.symlink(elsewhere, cap / "hosts" / "node2" / "sub")
    (cap / "hosts" / "node2" / "firewall.out").unlink(missing_ok=True)
    shutil.rmtree(cap / "hosts" / "node3")
    os.symlink(elsewhere, cap / "hosts" / "node3")
    # the root itself may be a symlink the user gave
    os.symlink(cap, tmp_path / "cap-link")
    r = storadvise("scan", "--from", "cap-link", "--json", "--no-history", "-o", "scan.json",
             "--html", "scan.html", "--junit", "junit.xml", cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for out in (r.stdout, *(p.read_text() for p in (tmp_path / "scan.json", tmp_path / "scan.html",
                                                     tmp_path / "junit.xml"))):
        assert "OUTSIDE-THE-CAPTURE" not in out
    d = json.loads(r.stdout)
    status, msg = _probe(d, "node1", "firewall")
    assert status == "error" and "not a captured output (a symlink)" in msg, msg
    status, msg = _probe(d, "node1", "mounts")
    assert status == "error" and "not a captured output (a symlink)" in msg, msg
    n3 = next(x for x in d["hosts"] if x["name"] == "node3")
    assert "not a captured output (a symlink)" in json.dumps(n3)
    assert "not a captured output" not in _probe(d, "node1", "network.sysctl")[1]


def test_read_captured_refuses_every_non_regular_component(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    os.mkfifo(tmp_path / "d" / "fifo")
    os.symlink("d", tmp_path / "dlink")
    assert read_captured(tmp_path, ("d", "f")).data == b"x"
    assert read_captured(tmp_path, ("d", "absent")) is None
    for parts, kind in ((("d", "fifo"), "a FIFO"), (("dlink", "f"), "a symlink"), (("d",), "a directory"),
                        (("..", "x"), "component '..'")):
        with pytest.raises(CaptureFileRefused, match=f"not a captured output \\({kind}"):
            read_captured(tmp_path, parts)
    # a read past its time limit is abandoned (a 0 s limit: the first chunk is already too late)
    (tmp_path / "d" / "big").write_bytes(b"y" * (3 << 20))
    with pytest.raises(CaptureFileRefused, match="read took longer than"):
        read_captured(tmp_path, ("d", "big"), timeout=-1)


def test_a_fifo_neither_hangs_the_scan_nor_outlives_sigterm(tmp_path):
    cap = _capture(tmp_path)
    os.mkfifo(cap / "hosts" / "node1" / "firewall.out")
    proc = subprocess.Popen([sys.executable, "-m", "advisor.cli.root", "scan", "--from", "cap", "--json", "--no-history"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            t0 = time.monotonic()
            out, err = proc.communicate(timeout=20)
            pytest.fail(f"a FIFO in the capture hung the scan (SIGTERM ended it after {time.monotonic() - t0:.1f} s)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err
    status, msg = _probe(json.loads(out), "node1", "firewall")
    assert status == "error" and "not a captured output (a FIFO)" in msg


def test_sigterm_ends_scan_from_within_5_s(tmp_path):
    r = storadvise("collect", "--out", "one", "--sample-seconds", "0.2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    one = tmp_path / "one"
    (only,) = [p.name for p in (one / "hosts").iterdir()]
    manifest = json.loads((one / "manifest.json").read_text())
    names = [f"n{i:05d}" for i in range(6000)]  # far longer to scan than the signal takes to come
    h0 = manifest["site"]["hosts"][0]
    manifest["site"]["hosts"] = [{**h0, "name": n, "address": n} for n in names]
    manifest["hosts"] = {n: {"reachable": True, "errors": []} for n in names}
    (one / "manifest.json").write_text(json.dumps(manifest))
    index = (one / "hosts" / only / "outputs.json").read_bytes()
    for n in names:
        (one / "hosts" / n).mkdir()
        (one / "hosts" / n / "outputs.json").write_bytes(index)
    proc = subprocess.Popen([sys.executable, "-m", "advisor.cli.root", "scan", "--from", "one", "--json", "--no-history"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # until it is past its imports and the manifest, reading hosts (in its main thread: a capture
        # is read, not waited for)
        end = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < end and psutil.Process(proc.pid).cpu_times().user < 1.5:
            time.sleep(0.05)
        assert proc.poll() is None, "the scan ended before the signal: the test needs a longer scan"
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _out, err = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143 and "terminated" in err, (proc.returncode, err)
    assert took < 5.0, took


def test_an_output_past_8_mib_is_cut_and_said_in_the_finding(tmp_path):
    cap = _capture(tmp_path)
    line = b"net.ipv4.tcp_sack = " + b"9" * (MAX_OUTPUT_BYTES + 4096) + b"\n"  # one line past the cap
    (cap / "hosts" / "node1" / "mounts.out").write_bytes(line)
    r = storadvise("scan", "--from", "cap", "--json", "--no-history", cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    status, msg = _probe(json.loads(r.stdout), "node1", "mounts")
    assert status == "error" and "truncated" in msg, msg
    assert len(r.stdout) < 3 * MAX_OUTPUT_BYTES


def test_a_capture_object_past_8_mib_is_cut_but_still_verified(tmp_path):
    objects = CaptureObjects(tmp_path)
    text = "a" * (MAX_OUTPUT_BYTES + 10)
    oid = objects.put(text)
    got, cut = CaptureObjects(tmp_path).read(oid)
    assert cut and len(got) == MAX_OUTPUT_BYTES
    assert oid == hashlib.sha256(text.encode()).hexdigest()
    path = tmp_path / "objects" / oid[:2] / oid[2:]
    path.write_bytes(text.encode() + b"b")  # edited past the part that is kept: still found out
    with pytest.raises(Exception, match="does not match its name"):
        CaptureObjects(tmp_path).read(oid)
