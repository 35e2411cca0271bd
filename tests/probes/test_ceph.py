"""ceph.osd_perf: the script over a stand-in ceph on PATH, the parser on real captures, CEPH-OSD-SLOW."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from probes import get_probe
from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext, ProbeParseError

PROBE = get_probe("ceph.osd_perf")
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "ceph.osd_perf"


def _script_output(tmp_path: Path, body: str) -> str:
    tool = tmp_path / "ceph"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(0o755)
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="mon1"))], capture_output=True, text=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    return out.stdout


def test_without_ceph_not_applicable():
    if Path("/usr/bin/ceph").exists():
        pytest.skip("this machine has a ceph command in /usr/bin")
    out = subprocess.run(["/bin/sh", "-c", PROBE.script(ProbeContext(host="x"))], capture_output=True, text=True,
                         env={"PATH": "/nonexistent"})
    assert out.stdout.startswith(NOT_APPLICABLE_MARKER)


def test_script_runs_osd_perf_and_refuses_a_failed_command(tmp_path):
    (tmp_path / "args").write_text("")
    text = _script_output(tmp_path, f'echo "$@" > {tmp_path / "args"}\ncat {REAL / "ops-notes-osd0-109ms.txt"}\n')
    assert (tmp_path / "args").read_text().split() == ["osd", "perf"]
    assert PROBE.parse(text).osds["0"].worst_ms == 109
    text = _script_output(tmp_path, "echo '[errno 13] RADOS permission denied (error connecting to the cluster)' >&2\nexit 13\n")
    with pytest.raises(ProbeParseError, match="exited with status 13: .*permission denied"):
        PROBE.parse(text)


def _findings(text: str):
    facts = PROBE.parse(text)
    h = HostFacts(name="mon1", roles=["storage"], probes={
        "ceph.osd_perf": ProbeResult(probe="ceph.osd_perf", status=ProbeStatus.ok, facts=facts.model_dump())})
    return [f for f in evaluate(FactSet(site="t", hosts={"mon1": h}), profiles=["generic"]).findings
            if f.rule_id == "CEPH-OSD-SLOW"]


def test_the_slow_osd_of_a_real_capture_is_named_with_its_line():
    found = _findings((REAL / "ops-notes-osd0-109ms.txt").read_text())
    failed = [f for f in found if f.status == FindingStatus.fail]
    assert [f.subject for f in failed] == ["0"]
    assert failed[0].observed == 109 and "0                109               109" in str(failed[0].evidence)
    assert {f.status for f in found if f.subject != "0"} == {FindingStatus.passed}


def test_idle_cluster_passes():
    assert {f.status for f in _findings((REAL / "ceph-01-lab-notes-three-idle-osds.txt").read_text())} == {FindingStatus.passed}


@pytest.mark.parametrize("text,where", [
    ("", "empty output"),
    ("ID CLASS WEIGHT  REWEIGHT SIZE\n 0   hdd 0.09769  1.00000 100 GiB\n", "line 1 is not"),
    ("osd commit_latency(ms) apply_latency(ms)\n  1 2 3\n  1 4 5\n", "osd 1 listed twice"),
    ("osd commit_latency(ms) apply_latency(ms)\n  1 2\n", "line 2 is not"),
])
def test_other_formats_are_refused(text, where):
    with pytest.raises(ProbeParseError, match=where):
        PROBE.parse(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["osd commit_latency(ms) apply_latency(ms)", "osd fs_commit_latency(ms) fs_apply_latency(ms)",
                                 "  0 1 2", " 17  109 109", "1 " + "9" * 40 + " 1", "", "x", "0 0"]), max_size=10) | st.text())
def test_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass


HEALTH = get_probe("ceph.health")
REAL_HEALTH = REAL.parent / "ceph.health"


def _health_findings(text: str):
    facts = HEALTH.parse(text)
    h = HostFacts(name="mon1", roles=["storage"], probes={
        "ceph.health": ProbeResult(probe="ceph.health", status=ProbeStatus.ok, facts=facts.model_dump())})
    return {f.rule_id: f for f in evaluate(FactSet(site="t", hosts={"mon1": h}), profiles=["generic"]).findings
            if f.rule_id in ("CEPH-SLOW-OPS", "CEPH-HEALTH")}


def test_slow_ops_of_a_real_capture_fail_with_the_check_line():
    found = _health_findings((REAL_HEALTH / "ceph-quest-notes-slow-ops-two-osds.txt").read_text())
    assert found["CEPH-SLOW-OPS"].status == FindingStatus.fail
    assert "daemons [osd.4,osd.7] have slow ops" in str(found["CEPH-SLOW-OPS"].evidence)
    assert found["CEPH-HEALTH"].status == FindingStatus.fail and found["CEPH-HEALTH"].observed == "HEALTH_WARN"


def test_healthy_cluster_and_indented_details():
    found = _health_findings("HEALTH_OK\n")
    assert found["CEPH-SLOW-OPS"].status == FindingStatus.passed and found["CEPH-HEALTH"].status == FindingStatus.passed
    facts = HEALTH.parse("HEALTH_WARN 1 osds down\n[WRN] OSD_DOWN: 1 osds down\n    osd.3 (root=default,host=n2) is down\n")
    assert facts.checks["OSD_DOWN"].details == ["osd.3 (root=default,host=n2) is down"] and facts.slow_ops_daemons == []


@pytest.mark.parametrize("text,where", [
    ("", "empty output"),
    ("  cluster:\n    id: a1b2\n    health: HEALTH_WARN\n", "line 1 is not HEALTH_OK"),
    ("HEALTH_WARN x\n    orphan detail\n", "line 2 is neither"),
])
def test_health_refuses_other_formats(text, where):
    with pytest.raises(ProbeParseError, match=where):
        HEALTH.parse(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["HEALTH_OK", "HEALTH_WARN 2 slow ops", "[WRN] SLOW_OPS: daemons [osd.1,] have slow ops",
                                 "[ERR] X: y", "    detail", "", "x", "[WRN]"]), max_size=10) | st.text())
def test_health_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        HEALTH.parse(text)
    except ProbeParseError:
        pass
