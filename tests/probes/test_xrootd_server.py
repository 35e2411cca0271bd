"""xrootd.server and xrootd.process: xrd.sched against xrootd's defaults, exports, open files against the
limit; refusals of other formats; the xrootd rules and the xrootd adapter's role variables."""

from __future__ import annotations

import pytest

from advisor.adapters.xrootd import ADAPTER
from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import Change, FindingStatus
from advisor.rules.engine import evaluate
from probes import get_probe
from probes.probe import ProbeParseError

SERVER, PROCESS = get_probe("xrootd.server"), get_probe("xrootd.process")
CFG = ("@@section instance /etc/xrootd/xrootd-data.cfg\n@@section file /etc/xrootd/xrootd-data.cfg\n"
       "all.export /store\nxrd.sched mint 4 maxt 64\nxrd.port 1094\n")
LIMITS = ("Limit                     Soft Limit           Hard Limit           Units\n"
          "Max open files            1024                 4096                 files\n")
PROC = (f"@@section cmdline 77\n/usr/bin/xrootd -c /etc/xrootd/xrootd-data.cfg -n data\n@@section limits 77\n{LIMITS}"
        "@@section fds 77\n900\n")


def test_sched_keeps_xrootd_defaults_for_what_the_file_leaves_out():
    srv = SERVER.parse(CFG).servers["data"]
    assert srv.sched == {"mint": 4, "maxt": 64, "avlt": 512, "idle": 780} and srv.sched_maxt == 64
    assert srv.lines["xrd.sched"] == "xrd.sched mint 4 maxt 64" and srv.files["xrd.sched"] == "/etc/xrootd/xrootd-data.cfg"
    bare = SERVER.parse("all.export /data\n").servers["<input>"]
    assert bare.sched_maxt == 2048 and "unset (xrootd default" in bare.lines["xrd.sched"]
    assert not SERVER.parse("xrd.port 1094\n").servers["<input>"].has_export


def test_processes_give_open_files_against_the_limit():
    p = PROCESS.parse(PROC).processes["xrootd:data"]
    assert (p.pid, p.nofile_soft, p.nofile_hard, p.open_fds, p.fd_use) == (77, 1024, 4096, 900, 0.8789)
    assert p.config_file == "/etc/xrootd/xrootd-data.cfg" and "Max open files" in p.lines["nofile"]


@pytest.mark.parametrize("probe,text,where", [
    (SERVER, "xrd.sched mint 4 maxt lots\n", "maxt takes a number"),
    (SERVER, "xrd.sched speed 4\n", "unknown option"),
    (PROCESS, "hello\n", "output before any section"),
    (PROCESS, "@@section cmdline 5\n/usr/sbin/sshd -D\n", "not xrootd or cmsd"),
    (PROCESS, "@@section cmdline 5\n/usr/bin/cmsd -n a\n@@section limits 5\nMax open files 10 10 files\n", "no .Limit Soft Limit"),
    (PROCESS, f"@@section cmdline 5\n/usr/bin/xrootd -n a\n@@section limits 5\n{LIMITS}Max open files   lots   10   files\n",
     "not a number or 'unlimited'"),
])
def test_other_formats_are_refused(probe, text, where):
    with pytest.raises(ProbeParseError, match=where):
        probe.parse(text)


def _findings(rule: str):
    h = HostFacts(name="xrd1", roles=["storage"], probes={
        "xrootd.server": ProbeResult(probe="xrootd.server", status=ProbeStatus.ok, facts=SERVER.parse(CFG).model_dump()),
        "xrootd.process": ProbeResult(probe="xrootd.process", status=ProbeStatus.ok, facts=PROCESS.parse(PROC).model_dump())})
    return [f for f in evaluate(FactSet(site="t", hosts={"xrd1": h}), profiles=["generic"]).findings if f.rule_id == rule]


def test_rules_fail_with_evidence_and_the_sched_change_keeps_the_other_options():
    [maxt] = _findings("XROOTD-SCHED-MAXT")
    assert maxt.status == FindingStatus.fail and maxt.observed == 64 and "xrd.sched mint 4 maxt 64" in str(maxt.evidence)
    assert [(c.adapter, c.key, c.target) for c in maxt.changes] == [("xrootd", "data:xrd.sched:maxt", "2048")]
    [nofile] = _findings("XROOTD-OPEN-FILES-LIMIT")
    assert nofile.status == FindingStatus.fail and nofile.subject == "xrootd:data" and not nofile.changes
    [use] = _findings("XROOTD-OPEN-FILES-USE")
    assert use.status == FindingStatus.fail
    assert _findings("XROOTD-EXPORT-SET")[0].status == FindingStatus.passed
    facts = {"xrootd.server": SERVER.parse(CFG).model_dump()}
    assert ADAPTER.current(facts, "data:xrd.sched:maxt") == ("64", "64")
    change = Change(host="xrd1", adapter="xrootd", key="data:xrd.sched:maxt", target="2048")
    assert ADAPTER.cannot_change(facts, change, {}) is None
    assert "no option" in ADAPTER.cannot_change(facts, Change(host="xrd1", adapter="xrootd", key="data:xrd.sched:core",
                                                              target="1"), {})
    v = ADAPTER.role_vars([change], facts, {"xrootd_restart_command": "/bin/sh /x/restart.sh"})
    assert v == {"xrootd_instances": [{"name": "data", "config_file": "/etc/xrootd/xrootd-data.cfg",
                                       "directives": {"xrd.sched": "mint 4 maxt 2048 avlt 512 idle 780"},
                                       "directive_files": {"xrd.sched": "/etc/xrootd/xrootd-data.cfg"},
                                       "service": "", "restart_command": "/bin/sh /x/restart.sh"}]}
    assert ADAPTER.role_vars([change], facts, {})["xrootd_instances"][0]["service"] == "xrootd@data"
