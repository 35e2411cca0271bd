"""CMS accounting: Chirp attributes of a real job document, the long form of a real condor_q -l
capture, and jobs grouped by the storage they read with efficiency against read rate."""

import io
import json
import subprocess
import sys

import pytest

from advisor.efficiency import htcondor_text
from advisor.efficiency.analysis import Summary
from advisor.efficiency.aggregate_findings import storage_io_finding
from advisor.efficiency.htcondor import record_from_ad
from advisor.efficiency.htcondor_jsonl import iter_jsonl, iter_jsonl_json
from advisor.efficiency.ingest import IssueLog, detect_format, ingest_into, iter_file
from advisor.efficiency.records import JobRecord, ParseIssue

JOBMON = "cms-htcondor-es-JobMonitoring.json"
OWL = "condor_q-l-owl-blackboard.txt"


def _split(items):
    items = list(items)
    return [i for i in items if isinstance(i, JobRecord)], [i for i in items if isinstance(i, ParseIssue)]


def test_jobmonitoring_document_gives_events_read_volume_and_storage(fix):
    """dmwm/cms-htcondor-es JobMonitoring.json, read as a `-json` ad: ChirpCMSSWEvents is the
    job's length, ChirpCMSSWReadBytes/ReadTimeMsecs/ReadOps+ReadVOps its reads, and
    ChirpCMSSW_SiteIO names the storage it read (UCSDXCACHE)."""
    recs, issues = _split(iter_file(fix(JOBMON)))
    assert issues == []
    (r,) = recs
    assert r.job_id == "31860877.0"
    assert r.events == 10976
    assert r.read_mb == pytest.approx(682.977179)
    assert r.read_seconds == pytest.approx(60.184)
    assert r.read_ops == 13070 + 40
    assert r.storage == "UCSDXCACHE"
    assert r.efficiency == pytest.approx((4312.1 + 98.1) / 4617)
    d = r.to_dict()
    assert d["storage"] == "UCSDXCACHE" and d["storage_from"] == "site_io"
    assert d["read_mb_per_s"] == pytest.approx(682.977179 / 4617, rel=1e-5)
    assert d["cmssw_done"] is True and d["cmssw_files"] == 1 and d["cmssw_last_update"] == 1547546964


def test_jobmonitoring_ad_in_jsonl_fast_and_json_paths_agree(fix):
    ad = json.loads(open(fix(JOBMON)).read().split("\n", 1)[1])
    line = json.dumps(ad).encode() + b"\n"
    fast = list(iter_jsonl(io.BytesIO(line), "f"))
    ref = list(iter_jsonl_json(io.BytesIO(line), "f"))
    assert fast == ref and fast[0].events == 10976 and fast[0].storage == "UCSDXCACHE"


def test_ingest_summary_hot_path_uses_chirp_events(fix, tmp_path):
    """The summary-only -jsonl path gives the same by_length (events) and by_storage as the record path."""
    ad = json.loads(open(fix(JOBMON)).read().split("\n", 1)[1])
    p = tmp_path / "h.jsonl"
    p.write_text(json.dumps(ad) + "\n" + json.dumps({**ad, "ProcId": 1, "ChirpCMSSWEvents": 50}) + "\n")
    fast, slow = Summary(), Summary()
    ingest_into([str(p)], "auto", fast, IssueLog())
    ingest_into([str(p)], "auto", slow, IssueLog(), on_record=lambda r: None)
    assert fast.to_dict() == slow.to_dict()
    d = fast.to_dict()
    assert d["length_kind"] == "events"
    assert [b["bin"] for b in d["by_length"]] == ["<=100", "10001-100000"]
    assert d["by_storage"]["UCSDXCACHE"]["count"] == 2


def test_run_site_is_the_storage_only_when_the_job_read(fix):
    ad = json.loads(open(fix(JOBMON)).read().split("\n", 1)[1])
    del ad["ChirpCMSSW_SiteIO"]
    del ad["DESIRED_CMSDataLocations"]  # the document's placeholder "s"
    ad["MATCH_GLIDEIN_CMSSite"] = "T2_US_UCSD"
    r = record_from_ad(ad)
    assert r.storage == "T2_US_UCSD" and r.to_dict()["storage_from"] == "run_site"
    ad["ChirpCMSSWReadBytes"] = 0
    assert record_from_ad(ad).storage is None
    ad["ChirpCMSSWEvents"] = -1  # a step that has not reported: unknown, not -1 events
    assert record_from_ad(ad).events is None


def test_long_form_of_a_real_condor_q_capture(fix):
    """fpierfed/owl's `condor_q -l` (HTCondor 7.4.2): detected, read; the '*GlobalJobId' line of the
    original is reported with its line number and the ad is read without it."""
    path = fix(OWL)
    with open(path, "rb") as f:
        assert detect_format(path, io.BufferedReader(f)) == "htcondor-long"
    recs, issues = _split(iter_file(path))
    (r,) = recs
    assert r.job_id == "19.0" and r.status == "running" and r.host == "fedora13vm0.localdomain"
    assert r.cores == 1
    assert [(i.line, i.message[:30]) for i in issues] == [(4, "not an 'Attr = value' line: '*")]


def test_classad_values():
    v = htcondor_text.classad_value
    assert v('"a \\"b\\" c"') == 'a "b" c'
    assert v("FALSE") is False and v("undefined") is None and v("1.5e3") == 1500.0 and v("-3") == -3
    assert v('{ "T2_US_UCSD","T2_CH_CERN" }') == ["T2_US_UCSD", "T2_CH_CERN"]
    assert v('{ [ SiteName = "UCSDXCACHE"; ReadBytes = 676405305 ] }') == [{"SiteName": "UCSDXCACHE", "ReadBytes": 676405305}]
    assert v("ceiling(ImageSize / 1024.000000)") == "/Expr(ceiling(ImageSize / 1024.000000))/"
    assert v("DiskUsage") == "/Expr(DiskUsage)/"
    assert v("{" * 100) .startswith("/Expr(")


def test_long_form_with_chirp_and_site_io_list():
    text = (b"ClusterId = 7\nProcId = 2\nJobStatus = 4\nExitCode = 0\nRequestCpus = 4\n"
            b"CumulativeRemoteUserCpu = 4000.0\nCumulativeRemoteSysCpu = 0.0\nRemoteWallClockTime = 2000.0\n"
            b"ChirpCMSSWEvents = 5000\nChirpCMSSWReadBytes = 4000000000\nChirpCMSSWReadTimeMsecs = 900000\n"
            b'ChirpCMSSW_SiteIO = { [ SiteName = "T1_ES_PIC"; ReadBytes = 100 ], [ SiteName = "T2_ES_IFCA"; ReadBytes = 300 ] }\n'
            b"\nClusterId = 7\nProcId = 3\nJobStatus = 4\n")
    recs, issues = _split(htcondor_text.iter_long(io.BytesIO(text), "x"))
    assert issues == []
    a, b = recs
    assert (a.events, a.storage, a.read_mb, a.read_seconds, a.efficiency) == (5000, "T2_ES_IFCA", 4000.0, 900.0, 0.5)
    assert b.job_id == "7.3" and b.line == 14


def _cms_ads(storage, n, falls):
    """Jobs of one storage over read rates 0.02 .. 4 MB per core-second: efficiency falls with
    the rate when ``falls`` (0.9 -> ~0.45), else stays at 0.85."""
    out = []
    for i in range(n):
        rate = 0.02 * (200 ** (i / (n - 1)))
        eff = 0.9 - 0.1 * (i * 5 // n) if falls else 0.85
        wall = 3600.0
        out.append({"ClusterId": 100, "ProcId": len(out), "JobStatus": 4, "ExitCode": 0, "RequestCpus": 1,
                    "LastRemoteHost": f"slot1@wn{i % 7}.example.org", "CumulativeRemoteUserCpu": eff * wall,
                    "CumulativeRemoteSysCpu": 0.0, "RemoteWallClockTime": wall, "ChirpCMSSWEvents": 2000,
                    "ChirpCMSSWReadBytes": rate * wall * 1e6, "ChirpCMSSWReadTimeMsecs": (1 - eff) * wall * 1000,
                    "MATCH_GLIDEIN_CMSSite": storage})
    return out


def test_storage_groups_show_the_io_bound_signature_per_storage():
    s = Summary()
    for ad in _cms_ads("T2_XX_SLOW", 60, True) + _cms_ads("T2_YY_FINE", 60, False):
        s.add(record_from_ad(ad))
    d = s.to_dict()["by_storage"]
    assert set(d) == {"T2_XX_SLOW", "T2_YY_FINE"}
    slow, fine = d["T2_XX_SLOW"], d["T2_YY_FINE"]
    assert slow["io_bound"] is True and slow["efficiency_drop"] >= 0.4
    assert fine["io_bound"] is False and fine["efficiency_drop"] == 0
    assert [b["bin"] for b in slow["by_read_rate"]][0] == "<0.05" and slow["by_read_rate"][-1]["bin"] == "2-5"
    assert slow["read_wait_share"] == pytest.approx(sum(0.1 + 0.1 * (i * 5 // 60) for i in range(60)) / 60, rel=1e-3)
    f = storage_io_finding(s)
    assert f.status.value == "fail" and f.subject == "T2_XX_SLOW"
    assert set(f.observed) == {"T2_XX_SLOW", "T2_YY_FINE"}


def test_storage_finding_not_applicable_without_read_volume(fix):
    s = Summary()
    recs, _ = _split(iter_file(fix("condor_history-json-CONSTRUCTED.json")))
    for r in recs:
        s.add(r)
    assert s.to_dict()["by_storage"] == {}
    assert storage_io_finding(s).status.value == "not_applicable"


def test_cli_ingest_json_and_report_show_storage_groups(tmp_path):
    p = tmp_path / "history.jsonl"
    p.write_text("\n".join(json.dumps(a) for a in _cms_ads("T2_XX_SLOW", 40, True)) + "\n")
    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "efficiency", "ingest", str(p), "--json", "--limit", "1"],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["records"][0]["storage"] == "T2_XX_SLOW" and doc["records"][0]["events"] == 2000
    assert doc["summary"]["by_storage"]["T2_XX_SLOW"]["io_bound"] is True
    assert doc["summary"]["length_kind"] == "events"
    (f,) = [f for f in doc["findings"] if f["rule_id"] == "EFF-IO-BOUND-STORAGE"]
    assert f["status"] == "fail"
    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "efficiency", "ingest", str(p), "--by", "storage"],
                        capture_output=True, text=True, timeout=120, env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    assert cp.returncode == 0, cp.stderr
    assert "T2_XX_SLOW" in cp.stdout and "yes (-" in cp.stdout and "EFF-IO-BOUND-STORAGE" in cp.stdout


def test_fjr_storage_is_the_xrootd_site_read_most(sample):
    """WMCore's FJR sample: XrdSiteStatistics of roma1.infn.it 18.3 MB, T2_IT_BARI 7.5 MB,
    recas.ba.infn.it 73.3 MB, cern.ch 0.25 MB -> the job read recas.ba.infn.it."""
    (r,) = list(iter_file(sample("cmssw-fjr-performance-WMCore-XrdSiteStatistics.xml")))
    assert r.storage == "recas.ba.infn.it"
    assert r.read_seconds == pytest.approx(0.0618403)
    assert r.to_dict()["storage"] == "recas.ba.infn.it"


def test_autoformat_export_with_chirp_columns(tmp_path):
    """`condor_history -af:jh ... ChirpCMSSWEvents ChirpCMSSWReadBytes MATCH_GLIDEIN_CMSSite`: the same facts."""
    p = tmp_path / "h.txt"
    p.write_text("ID JobStatus RequestCpus CumulativeRemoteUserCpu RemoteWallClockTime ChirpCMSSWEvents "
                 "ChirpCMSSWReadBytes ChirpCMSSWReadTimeMsecs MATCH_GLIDEIN_CMSSite\n"
                 "5.0 4 1 3000 4000 12000 2000000000 600000 T2_DE_DESY\n"
                 "5.1 4 1 3000 4000 undefined undefined undefined T2_DE_DESY\n")
    (a, b), issues = _split(iter_file(str(p)))
    assert issues == []
    assert (a.events, a.read_mb, a.read_seconds, a.storage) == (12000, 2000.0, 600.0, "T2_DE_DESY")
    assert (b.events, b.read_mb, b.storage) == (None, None, None)  # no read volume: no storage guessed


def test_fjr_without_site_statistics_reads_the_redirector_of_its_input_pfn(fix):
    """WMCore's CMSSWTwoFileRemote report: inputs opened through root://cmsxrootd.fnal.gov (AAA) ->
    that is the storage; its events are the primary input's EventsRead (the parent file's not again)."""
    (r,) = list(iter_file(fix("cmssw-fjr-WMCore-CMSSWTwoFileRemote.xml")))
    assert r.storage == "cmsxrootd.fnal.gov"
    assert r.events == 10
    assert (r.cpu_seconds, r.wall_seconds) == (6.42402, 53.9831)
    assert r.read_mb == pytest.approx(15.59268)


def test_pfn_storage():
    from advisor.efficiency.fjr import pfn_storage

    assert pfn_storage("root://xrootd-cms.infn.it:1094//store/mc/x.root") == "xrootd-cms.infn.it"
    assert pfn_storage("davs://eoscms.cern.ch:443/eos/cms/x") == "eoscms.cern.ch"
    assert pfn_storage("/mnt/hadoop/store/x.root") == "local" and pfn_storage("file:/x.root") == "local"
    assert pfn_storage("SKIMStreamCosmicSP.root") is None and pfn_storage("root://bad host//x") is None


def test_run_site_outside_the_data_locations_is_offsite(fix):
    ad = json.loads(open(fix(JOBMON)).read().split("\n", 1)[1])
    del ad["ChirpCMSSW_SiteIO"]
    ad["MATCH_GLIDEIN_CMSSite"] = "T2_US_UCSD"
    ad["DESIRED_CMSDataLocations"] = "T1_US_FNAL,T2_US_Wisconsin"
    r = record_from_ad(ad)
    assert r.storage == "offsite:T2_US_UCSD" and r.to_dict()["storage_from"] == "run_site_offsite"
    line = json.dumps(ad).encode() + b"\n"
    assert list(iter_jsonl(io.BytesIO(line), "f")) == list(iter_jsonl_json(io.BytesIO(line), "f"))
    ad["DESIRED_CMSDataLocations"] = "T1_US_FNAL,T2_US_UCSD"
    assert record_from_ad(ad).storage == "T2_US_UCSD"
