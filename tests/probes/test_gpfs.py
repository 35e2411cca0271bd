"""gpfs.mmlsconfig / gpfs.mmdiag: real samples, edge fixtures, scope resolution, drift, scripts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.rules.analytic.storage import gpfs_drift, DEFAULT_DRIFT_ATTRIBUTES
from probes import get_probe
from probes.gpfs_format import parse_mmlsnodeclass
from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext, ProbeParseError

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLES = FIX / "samples"
GPFS = FIX / "gpfs"
MMLS = get_probe("gpfs.mmlsconfig")
MMDIAG = get_probe("gpfs.mmdiag")


def sample(name: str) -> str:
    """A sample without its provenance header (the leading '# source/WARNING' comment lines)."""
    lines = (SAMPLES / name).read_text().splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines) + "\n"


def strip_annotations(text: str) -> str:
    """The ANNOTATED sample: drop whole comment lines and ' #'/' ##' author notes after values."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        out.append(re.sub(r"\s+#.*$", "", line))
    return "\n".join(out) + "\n"


def sectioned(body: str, node: str | None = None, nodeclasses: str | None = None, rc: int = 0) -> str:
    text = f"@@section mmlsconfig\n{body}\n@@section rc\n{rc}\n"
    if node:
        text += f"@@section node\n{node}\n"
    if nodeclasses is not None:
        text += f"@@section nodeclasses\n{nodeclasses}\n"
    return text


# ---------------------------------------------------------------- real samples


def test_ibm_sample_full_config():
    f = MMLS.parse(sample("mmlsconfig-IBM-ibm-spectrum-scale-ibm-cloud-schematics.txt"))
    assert f.cluster_name == "storage-scale.storage"
    assert f.filesystems == ["/dev/fs1"]
    assert f.complete
    assert not f.unparsed
    by = {(e.attribute, tuple(e.scope or ())): e for e in f.entries}
    assert by[("pagepool", ("storagenodegrp",))].value == "2G"
    assert by[("tscCmdPortRange", ())].scope is None  # after [common]
    assert by[("cesCidrPool", ())].value == (
        "<IP=10.241.17.5><ATTRIBUTE=><GROUP=><PREFIX=>+<IP=10.241.17.4><ATTRIBUTE=><GROUP=><PREFIX=>"
    )
    eff = f.effective
    # only set for [storagenodegrp] and the node's classes are unknown: unknown, never dropped or defaulted
    assert eff["pagepool"].value is None and eff["pagepool"].bytes is None
    assert "[storagenodegrp]" in eff["pagepool"].unknown and eff["pagepool"].line == "pagepool 2G"
    assert eff["maxFilesToCache"].value == "128K" and eff["maxFilesToCache"].count is None
    assert eff["maxblocksize"].bytes == 16 * 2**20
    assert eff["workerThreads"].count == 1024
    assert eff["maxMBpS"].count == 1000
    assert eff["ignorePrefetchLUNCount"].enabled is True
    assert f.named == ["workerThreads", "maxMBpS", "maxFilesToCache", "maxStatCache", "ignorePrefetchLUNCount"]
    # a storage node in the class gets the scoped pagepool
    g = MMLS.parse(sectioned(sample("mmlsconfig-IBM-ibm-spectrum-scale-ibm-cloud-schematics.txt"), node="stor1",
                             nodeclasses="mmlsnodeclass:nodeClasses:HEADER:version:reserved:reserved:nodeclassName:type:memberClasses:allMembers:\n"
                                         "mmlsnodeclass:nodeClasses:0:1:::storagenodegrp:user::stor1,stor2:"))
    assert g.node_classes == ["storagenodegrp"]
    assert g.effective["pagepool"].bytes == 2 * 2**30
    assert g.effective["pagepool"].scope == ["storagenodegrp"]


def test_annotated_sample_scopes():
    f = MMLS.parse(strip_annotations(sample("mmlsconfig-allancarlosvr-gpfsTrainning-Day1-ANNOTATED.txt")))
    assert f.cluster_name == "GPFS.ESI-Group"
    assert not f.complete and f.filesystems == []  # trailer truncated by the author
    pagepools = [(e.value, e.scope) for e in f.entries if e.attribute == "pagepool"]
    assert pagepools == [("32G", ["nsdNodes"]), ("2G", ["service"]), ("4G", ["compute"])]
    verbs = [e for e in f.entries if e.attribute == "verbsPorts"]
    assert verbs[0].value == "mlx5_0/1/0  hfi1_0/1/1" and verbs[0].scope == ["nsdNodes"]
    assert [e.scope for e in f.entries if e.attribute == "tracedevTimeFormat"] == [["gpfs01", "gpfs02", "cesNodes"]]
    tb = next(e for e in f.entries if e.attribute == "tiebreakerDisks")
    assert tb.value == "GPFS_MD_LUN01;GPFS_MD_LUN03;GPFS_MD_LUN04" and tb.scope is None
    assert next(e for e in f.entries if e.attribute == "trace" and e.scope == ["cesNodes"]).value == "trace all 9 iolite 0".split(" ", 1)[1]
    # gpfs01 is named in scopes directly: its trace is the [gpfs01,gpfs02] one, the later
    # [gpfs01,gpfs02,cesNodes] tracedevTimeFormat applies too
    g = MMLS.parse(sectioned(strip_annotations(sample("mmlsconfig-allancarlosvr-gpfsTrainning-Day1-ANNOTATED.txt")),
                             node="gpfs01", nodeclasses="mmlsnodeclass:nodeClasses:HEADER:version:reserved:reserved:nodeclassName:allMembers:\n"
                                                        "mmlsnodeclass:nodeClasses:0:1:::nsdNodes:gpfs01,gpfs02:"))
    assert g.effective["pagepool"].value == "32G" and g.effective["pagepool"].bytes == 32 * 2**30
    assert g.effective["trace"].value == "all 9"
    assert g.effective["maxFilesToCache"].count == 256000
    assert g.effective["verbsPorts"].value == "mlx5_0/1/0  hfi1_0/1/1"
    c = MMLS.parse(sectioned(strip_annotations(sample("mmlsconfig-allancarlosvr-gpfsTrainning-Day1-ANNOTATED.txt")),
                             node="cn001", nodeclasses="mmlsnodeclass:nodeClasses:HEADER:version:reserved:reserved:nodeclassName:allMembers:\n"
                                                       "mmlsnodeclass:nodeClasses:0:1:::compute:cn001,cn002:"))
    assert c.effective["pagepool"].value == "4G"
    assert "maxFilesToCache" not in c.effective


def test_annotated_sample_unstripped_keeps_notes_in_values():
    """Documented: the parser does not strip ' ## note' tails (they can't be told from values)."""
    f = MMLS.parse(sample("mmlsconfig-allancarlosvr-gpfsTrainning-Day1-ANNOTATED.txt"))
    assert f.effective["maxMBpS"].value.startswith("12000 ##")
    assert f.effective["maxMBpS"].count is None


def test_pagepool_doc_transcript():
    text = sample("mmlsconfig-pagepool-ibm-linuxonibm-doc.txt")
    f = MMLS.parse(text)
    assert [e.value for e in f.entries] == ["1G", "8G"]
    assert f.effective["pagepool"].bytes == 8 * 2**30  # the later line wins
    first = MMLS.parse(text.split("# mmchconfig")[0])
    assert first.effective["pagepool"].bytes == 2**30
    assert first.cluster_name is None


def test_mmdiag_sample():
    f = MMDIAG.parse(sample("mmdiag-config-Y-treydock-gpfs_exporter.txt"))
    assert f.active["pagepool"].value == "4294967296"
    assert f.active["pagepool"].bytes == 4 * 2**30
    assert f.active["pagepool"].changed == "static"
    assert f.active["pagepoolMaxPhysMemPct"].value == "75"
    assert f.active["parallelMetadataWrite"].changed is None
    assert f.active["opensslLibName"].value == (
        "/usr/lib64/libssl.so.10:/usr/lib64/libssl.so.6:/usr/lib64/libssl.so.0.9.8:/lib64/libssl.so.6:"
        "libssl.so:libssl.so.0:libssl.so.4:/lib64/libssl.so.1.0.0"
    )


# ---------------------------------------------------------------- edge fixtures


def test_edge_scopes_resolution():
    text = (GPFS / "mmlsconfig-edge-scopes.txt").read_text()
    f = MMLS.parse(text)
    assert f.filesystems == ["/dev/gpfs1", "/dev/gpfs2"]
    # [nsdNodes] and [wn01,wn02] may name this (unknown) node's classes: unknown, not the cluster-wide 768M
    assert f.effective["pagepool"].value is None and f.effective["pagepool"].scope == ["wn01", "wn02"]
    assert "pagepool" not in f.named
    assert f.effective["someFutureKnob"].value == "value with   spaces ; and; semicolons"
    assert f.effective["seqDiscardThreshhold"].bytes == 999 * 2**30
    assert f.effective["nsdInlineWriteMax"].bytes == 8 * 2**10
    assert f.effective["maxFilesToCache"].value is None  # [nsdNodes] 256000 may apply
    assert f.effective["prefetchThreads"].count == 50
    wn = MMLS.parse(sectioned(text, node="wn01.ifca.es"))
    assert wn.node == "wn01.ifca.es"
    assert wn.effective["pagepool"].value == "1G" and wn.effective["pagepool"].scope == ["wn01", "wn02"]
    # named directly after the [nsdNodes] line: known; maxFilesToCache only has an [nsdNodes] line: unknown
    assert wn.effective["maxFilesToCache"].value is None and wn.effective["prefetchThreads"].count == 50
    nc = (GPFS / "mmlsnodeclass-Y-CONSTRUCTED-from-community-column-names.txt").read_text()
    srv = MMLS.parse(sectioned(text, node="gpfs01", nodeclasses=nc))
    assert srv.node_classes == ["GUI_MGMT_SERVERS", "nsdNodes"]
    assert srv.node_classes_known
    assert srv.effective["pagepool"].bytes == 4 * 2**30  # [nsdNodes]: a scope match beats cluster-wide
    assert srv.effective["maxFilesToCache"].count == 256000
    assert srv.effective["workerThreads"].count == 1024  # repeated [nsdNodes] header
    assert srv.effective["trace"].value == "all 9 iolite 0"
    other = MMLS.parse(sectioned(text, node="wn03", nodeclasses=nc))
    assert other.node_classes == ["workers"] and other.effective["pagepool"].value == "768M"


def test_single_attribute_form_with_scope_suffix():
    f = MMLS.parse((GPFS / "mmlsconfig-single-attr-scoped-community.txt").read_text())
    assert [(e.value, e.scope) for e in f.entries] == [("64k", None), ("128k", ["nsdserver"])]
    g = MMLS.parse(sectioned((GPFS / "mmlsconfig-single-attr-scoped-community.txt").read_text(), node="node01",
                             nodeclasses=(GPFS / "mmlsnodeclass-human-community.txt").read_text()))
    assert g.node_classes == ["nsdserver"]
    assert g.effective["maxFilesToCache"].value == "128k"


def test_nodeclass_formats():
    y = parse_mmlsnodeclass((GPFS / "mmlsnodeclass-Y-CONSTRUCTED-from-community-column-names.txt").read_text())
    assert y["workers"] == ["wn01.ifca.es", "wn02.ifca.es", "wn03.ifca.es"]
    h = parse_mmlsnodeclass((GPFS / "mmlsnodeclass-human-community.txt").read_text())
    assert h == {"nsdserver": ["node01.gpfs.mgt"], "workers": ["wn01.gpfs.mgt", "wn02.gpfs.mgt"]}


def test_daemon_down_is_parse_error():
    with pytest.raises(ProbeParseError, match="daemon is not running"):
        MMLS.parse((GPFS / "mmlsconfig-daemon-down-CONSTRUCTED.txt").read_text())
    with pytest.raises(ProbeParseError, match="status 1.*daemon is not running"):
        MMLS.parse(sectioned((GPFS / "mmlsconfig-daemon-down-CONSTRUCTED.txt").read_text(), rc=1))
    with pytest.raises(ProbeParseError, match="Permission denied"):
        MMLS.parse(sectioned("sh: /usr/lpp/mmfs/bin/mmlsconfig: Permission denied", rc=126))
    with pytest.raises(ProbeParseError):
        MMLS.parse("")
    with pytest.raises(ProbeParseError, match="no HEADER"):
        MMDIAG.parse("mmdiag: The GPFS daemon is not running.\n")
    with pytest.raises(ProbeParseError, match="status 1"):
        MMDIAG.parse("@@section mmdiag\nmmdiag: Permission denied\n@@section rc\n1\n")


def test_drift_pagepool():
    nc = (GPFS / "mmlsnodeclass-Y-CONSTRUCTED-from-community-column-names.txt").read_text()
    persisted = MMLS.parse(sectioned((GPFS / "mmlsconfig-edge-scopes.txt").read_text().replace("pagepool 768M", "pagepool 1G"),
                                     node="wn03", nodeclasses=nc)).model_dump()
    active = MMDIAG.parse((GPFS / "mmdiag-config-Y-drift-CONSTRUCTED.txt").read_text()).model_dump()
    drift = gpfs_drift(persisted, active, DEFAULT_DRIFT_ATTRIBUTES)
    assert [d["attribute"] for d in drift] == ["pagepool"]
    assert drift[0]["persisted"] == "1G" and drift[0]["active"] == "536870912"
    assert drift[0]["line"] == "pagepool 1G"
    # equal values, yes == 1, and an unverified count suffix (4M vs 4000000) are not drift
    persisted["effective"]["pagepool"]["bytes"] = 536870912
    assert gpfs_drift(persisted, active, DEFAULT_DRIFT_ATTRIBUTES) == []


# ---------------------------------------------------------------- scripts


@pytest.mark.parametrize("probe", [MMLS, MMDIAG])
def test_script_without_tool_is_not_applicable(probe):
    out = subprocess.run(["sh", "-c", probe.script(ProbeContext(host="x"))], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0
    assert out.stdout.startswith(NOT_APPLICABLE_MARKER)


def test_script_with_fake_tool(tmp_path):
    """The script runs the tool found on PATH and frames its output for parse."""
    sample_text = sample("mmlsconfig-IBM-ibm-spectrum-scale-ibm-cloud-schematics.txt")
    (tmp_path / "data").write_text(sample_text)
    tool = tmp_path / "mmlsconfig"
    tool.write_text(f"#!/bin/sh\ncat {tmp_path / 'data'}\n")
    tool.chmod(0o755)
    out = subprocess.run(["sh", "-c", MMLS.script(ProbeContext(host="x", vars={"gpfs_node": "stor1"}))], capture_output=True,
                         text=True, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    f = MMLS.parse(out.stdout)
    assert f.node == "stor1" and f.cluster_name == "storage-scale.storage"
    tool.write_text("#!/bin/sh\necho 'mmlsconfig: The GPFS daemon is not running.' >&2\nexit 1\n")
    out = subprocess.run(["sh", "-c", MMLS.script(ProbeContext(host="x"))], capture_output=True, text=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    with pytest.raises(ProbeParseError, match="daemon is not running"):
        MMLS.parse(out.stdout)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parsers_raise_only_parse_error(text):
    for probe in (MMLS, MMDIAG):
        try:
            probe.parse(text)
        except ProbeParseError:
            pass


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["[a,b]", "[common]", "pagepool 1G", "x y z", "Configuration data for cluster c:",
                                 "File systems in cluster c:", "/dev/fs", "----", "mmdiag:config:HEADER:name:value:",
                                 "mmdiag:config:0:p:1:", "mmlsconfig: failed", "", "[", "]"]), max_size=20))
def test_parsers_structured_noise(lines):
    text = "\n".join(lines)
    for probe in (MMLS, MMDIAG):
        try:
            probe.parse(text)
        except ProbeParseError:
            pass


def test_unknown_node_class_value_is_not_judged_as_unset():
    """IBM's sample sets pagepool only for [storagenodegrp]; without mmlsnodeclass the pagepool rules say
    the value is unknown (not applicable), they never judge a default or the cluster-wide value."""
    from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
    from advisor.model.findings import FindingStatus
    from advisor.rules.engine import evaluate

    facts = MMLS.parse(sectioned(sample("mmlsconfig-IBM-ibm-spectrum-scale-ibm-cloud-schematics.txt"), node="stor1"))
    assert facts.effective["pagepool"].value is None
    h = HostFacts(name="stor1", roles=["storage"], probes={
        "gpfs.mmlsconfig": ProbeResult(probe="gpfs.mmlsconfig", status=ProbeStatus.ok, facts=facts.model_dump())})
    found = [f for f in evaluate(FactSet(site="t", hosts={"stor1": h}), profiles=["gpfs-site"]).findings
             if f.rule_id.startswith("GPFS-PAGEPOOL")]
    assert found and all(f.status == FindingStatus.not_applicable for f in found)
