"""dcache.layout: the layout parser on real layouts (corpus), scoping and ${host.name}, DCACHE-POOL-DIRECT-MEMORY."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from probes import get_probe
from probes.probe import ProbeParseError

PROBE = get_probe("dcache.layout")

CONF = "dcache.layout = ${host.name}\ndcache.java.memory.direct = 1g\n"
LAYOUT = """# pools of this node
dcache.java.memory.heap = 2g

[${host.name}_poolsDomain]
dcache.java.memory.direct = 4096m
[${host.name}_poolsDomain/pool]
pool.name = ${host.name}_1
pool.path = /data/pool1

[${host.name}_smallpoolsDomain]
[${host.name}_smallpoolsDomain/pool]
pool.name = ${host.name}_2

[doorsDomain]
[doorsDomain/xrootd]
[doorsDomain/webdav]
"""


def sectioned(conf: str, layout: str, host: str = "dc01") -> str:
    return (f"@@section hostname\n{host}\n@@section layout_name\n{host}\n@@section conf\n{conf}\n"
            f"@@section layout\n{layout}\n")


def test_properties_are_scoped_and_host_name_substituted():
    f = PROBE.parse(sectioned(CONF, LAYOUT))
    assert f.layout_name == "dc01" and set(f.domains) == {"dc01_poolsDomain", "dc01_smallpoolsDomain", "doorsDomain"}
    pools, small, doors = f.domains["dc01_poolsDomain"], f.domains["dc01_smallpoolsDomain"], f.domains["doorsDomain"]
    assert pools.direct_bytes == 4 * 2**30 and pools.heap_bytes == 2 * 2**30          # domain < layout top
    assert small.direct_bytes == 2**30 and small.lines["dcache.java.memory.direct"] == "dcache.java.memory.direct = 1g"
    assert pools.has_pool and not pools.has_door and doors.has_door and not doors.has_pool
    assert pools.services[0].properties["pool.name"] == "${host.name}_1"


def _findings(text: str):
    facts = PROBE.parse(text)
    h = HostFacts(name="dc01", roles=["storage"], probes={
        "dcache.layout": ProbeResult(probe="dcache.layout", status=ProbeStatus.ok, facts=facts.model_dump())})
    return [f for f in evaluate(FactSet(site="t", hosts={"dc01": h}), profiles=["generic"]).findings
            if f.rule_id == "DCACHE-POOL-DIRECT-MEMORY"]


def test_pool_domain_short_of_direct_memory_fails_doors_not_judged():
    found = {f.subject: f for f in _findings(sectioned(CONF, LAYOUT))}
    assert set(found) == {"dc01_poolsDomain", "dc01_smallpoolsDomain"}
    assert found["dc01_poolsDomain"].status == FindingStatus.passed
    assert found["dc01_smallpoolsDomain"].status == FindingStatus.fail
    assert "dcache.java.memory.direct = 1g" in str(found["dc01_smallpoolsDomain"].evidence)
    # without any setting the dCache default (512m) is judged, and the evidence says it is the default
    bare = {f.subject: f for f in _findings("[p]\n[p/pool]\n")}
    assert bare["p"].observed == 512 * 2**20 and "unset (dCache default 512m)" in str(bare["p"].evidence)


@pytest.mark.parametrize("text,where", [
    ("pool.name = a\n", r"no \[domain\] header"),
    ("[d]\n<Directory /x>\n", "line 2: neither"),
    (sectioned("[d]\n", "[d]\n"), r"dcache.conf: has a \[domain\] header"),
])
def test_other_formats_are_refused(text, where):
    with pytest.raises(ProbeParseError, match=where):
        PROBE.parse(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["[d]", "[d/pool]", "[d/xrootd]", "a = b", "dcache.java.memory.direct = 99999999999999999g",
                                 "dcache.java.memory.heap=x", "# c", "", "[", "=", "[a/b/c]"]), max_size=12) | st.text())
def test_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass


def test_script_on_a_host_without_dcache_is_not_applicable():
    import subprocess
    from pathlib import Path

    from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext

    if Path("/etc/dcache/dcache.conf").exists():
        pytest.skip("this machine has a dCache configuration")
    out = subprocess.run(["/bin/sh", "-c", PROBE.script(ProbeContext(host="x"))], capture_output=True, text=True)
    assert out.stdout.startswith(NOT_APPLICABLE_MARKER)


POOL_LAYOUT = """[${host.name}_poolsDomain]
[${host.name}_poolsDomain/pool]
pool.name = ${host.name}_1
pool.path = /data/${host.name}_1
[${host.name}_poolsDomain/pool]
pool.name = ${host.name}_2
pool.path = /data/${host.name}_2
[doorsDomain]
srm.limits.transfer-tcp-buffer.size = 8388608
[doorsDomain/srm]
srm.limits.transfer-tcp-buffer.size = 1048576
"""


def with_setups(layout: str, setups: dict[str, str]) -> str:
    return sectioned(CONF, layout) + "".join(f"@@section setup:{p}\n{t}\n" for p, t in setups.items())


def test_pool_setup_files_give_the_mover_limits():
    f = PROBE.parse(with_setups(POOL_LAYOUT, {"/data/dc01_1": "mover set max active 20\nmover set max active -queue=p2p 5\n",
                                              "/data/dc01_2": "storadvise: no readable setup file"}))
    one, two = f.pools["dc01_1"], f.pools["dc01_2"]
    assert one.domain == "dc01_poolsDomain" and one.setup_file == "/data/dc01_1/setup"
    assert one.mover_max_active == {"regular": 20, "p2p": 5} and one.regular_max_active == 20
    assert one.lines["mover_max_active"] == "mover set max active 20"
    # an unreadable setup file is not a limit: nothing is invented
    assert not two.setup_read and two.regular_max_active is None and "not read" in two.lines["mover_max_active"]
    # the srm service's own value wins over its domain's
    doors = f.domains["doorsDomain"]
    assert doors.has_srm and doors.srm_tcp_buffer_bytes == 1048576
    assert "under [doorsDomain/srm]" in doors.lines["srm.limits.transfer-tcp-buffer.size"]


@pytest.mark.parametrize("setup,where", [
    ("mover set max active many\n", "takes a number"),
    ("mover set max active -queue=p2p\n", "without a number"),
    ("<html>\n", "not a pool admin command"),
])
def test_a_setup_file_not_of_its_format_is_refused(setup, where):
    with pytest.raises(ProbeParseError, match=where):
        PROBE.parse(with_setups(POOL_LAYOUT, {"/data/dc01_1": setup}))


def _all_findings(text: str, rule: str):
    facts = PROBE.parse(text)
    h = HostFacts(name="dc01", roles=["storage", "door"], probes={
        "dcache.layout": ProbeResult(probe="dcache.layout", status=ProbeStatus.ok, facts=facts.model_dump())})
    return [f for f in evaluate(FactSet(site="t", hosts={"dc01": h}), profiles=["dcache-site"]).findings
            if f.rule_id == rule]


def test_mover_and_srm_buffer_rules_fail_with_evidence_and_name_the_change():
    text = with_setups(POOL_LAYOUT, {"/data/dc01_1": "mover set max active -queue=regular 20\n",
                                     "/data/dc01_2": "mover set max active 400\n"})
    movers = {f.subject: f for f in _all_findings(text, "DCACHE-POOL-MOVER-MAX-ACTIVE")}
    assert movers["dc01_1"].status == FindingStatus.fail and movers["dc01_2"].status == FindingStatus.passed
    assert "mover set max active -queue=regular 20" in str(movers["dc01_1"].evidence)
    assert [(c.adapter, c.key, c.target) for c in movers["dc01_1"].changes] == [("dcache", "setup:dc01_1:regular", "100")]
    srm = _all_findings(text, "DCACHE-SRM-TCP-BUFFER")
    assert [f.subject for f in srm] == ["doorsDomain"] and srm[0].status == FindingStatus.fail
    assert [c.key for c in srm[0].changes] == ["layout:doorsDomain/srm:srm.limits.transfer-tcp-buffer.size"]


def test_dcache_status_rows_and_refusals():
    from probes.dcache_status import parse_status

    out = ("DOMAIN             STATUS                  PID   USER   LOG\n"
           "pool01_poolsDomain running (for 3 minutes) 20000 dcache /var/log/dcache/pool01_poolsDomain.log\n"
           "doorsDomain        stopped                       dcache /var/log/dcache/doorsDomain.log\n")
    f = parse_status(out)
    assert f.domains["pool01_poolsDomain"].running and f.domains["pool01_poolsDomain"].pid == 20000
    assert not f.domains["doorsDomain"].running and f.domains["doorsDomain"].pid is None
    assert f.domains["doorsDomain"].status == "stopped"
    with pytest.raises(ProbeParseError, match="no 'DOMAIN STATUS PID USER LOG' header"):
        parse_status("Usage: dcache [-q] COMMAND\n")
    with pytest.raises(ProbeParseError, match="line 2: not a domain row"):
        parse_status("DOMAIN  STATUS  PID   USER LOG\nd       running x1y2z dcache /l\n")
