import io

import pytest

from advisor.efficiency.htcondor import machine_name, record_from_ad
from advisor.efficiency.htcondor_json import iter_json_stream
from advisor.efficiency.ingest import detect_format, iter_file
from advisor.efficiency.records import JobRecord, ParseIssue, RowError, host_prefix


def split(items):
    return ({r.job_id: r for r in items if isinstance(r, JobRecord)},
            [i for i in items if isinstance(i, ParseIssue)])


def test_json_array(fix):
    recs, issues = split(list(iter_file(fix("condor_history-json-CONSTRUCTED.json"))))
    assert issues == []
    a = recs["4100.0"]  # evicted once: Cumulative CPU over RemoteWallClockTime
    assert (a.cpu_seconds, a.wall_seconds, a.cores, a.status, a.host) == (7000.0, 4000.0, 4, "completed", "wn001.example.org")
    assert a.efficiency == pytest.approx(7000 / 16000)
    assert a.line == 2
    b = recs["4100.1"]  # single start, no Cumulative*: Remote CPU with RemoteWallClockTime
    assert b.efficiency == pytest.approx(0.5) and b.status == "removed" and b.host == "wn002.example.org"
    c = recs["4101.0"]  # killed by signal 9, RequestCpus an expression
    assert c.status == "failed" and c.exit_code == -9 and c.cores == 1 and c.efficiency == pytest.approx(0.25)


def test_jsonl_counts_bad_lines(fix):
    path = fix("condor_history-jsonl-CONSTRUCTED.jsonl")
    with open(path, "rb") as f:
        assert detect_format(path, f) == "htcondor-jsonl"
    recs, issues = split(list(iter_file(path)))
    assert set(recs) == {"7.0", "7.1", "7.3"}
    assert recs["7.0"].efficiency == pytest.approx(0.9)
    assert recs["7.1"].wall_seconds == 500 and recs["7.1"].status == "failed" and recs["7.1"].exit_code == 1
    assert recs["7.3"].status == "running" and recs["7.3"].wall_seconds == 1000
    assert [i.line for i in issues] == [3, 5]


def test_af_jh(fix):
    recs, issues = split(list(iter_file(fix("condor_history-af-jh-CONSTRUCTED.txt"))))
    assert recs["12.0"].efficiency == pytest.approx(0.9) and recs["12.0"].host == "wn020.example.org"
    assert recs["12.1"].efficiency == pytest.approx(0.11) and recs["12.1"].exit_code == 2
    assert recs["12.2"].status == "removed" and recs["12.2"].efficiency is None and recs["12.2"].cores == 8
    assert [(i.line, "fields" in i.message) for i in issues] == [(5, True)]


def test_af_tabs_committed_time(fix):
    recs, issues = split(list(iter_file(fix("condor_history-af-th-CONSTRUCTED.txt"), "htcondor")))
    assert issues == []
    assert recs["30.0"].efficiency == pytest.approx(0.8)
    assert recs["30.1"].efficiency == pytest.approx(0.5)


def test_af_comma_separator(tmp_path):
    p = tmp_path / "af.txt"
    p.write_text("ClusterId, ProcId, JobStatus, RequestCpus, RemoteUserCpu, RemoteSysCpu, CommittedTime\n"
                 "5, 0, 4, 1, 90, 10, 200\n")
    (r,) = [x for x in iter_file(str(p))]
    assert r.job_id == "5.0" and r.efficiency == pytest.approx(0.5)


def test_af_without_header_is_reported(tmp_path):
    p = tmp_path / "af.txt"
    p.write_text("5 0 4 1 90 10 200\n")
    (i,) = list(iter_file(str(p), "htcondor"))
    assert isinstance(i, ParseIssue) and i.line == 1 and "-af:h" in i.message


def test_stream_resyncs_after_broken_ad():
    text = b'[\n{\n  "ClusterId": 1,\n  "ProcId": 0,\n  "JobStatus": 4, oops\n}\n,\n{\n  "ClusterId": 2,\n  "ProcId": 0\n}\n]\n'
    recs, issues = split(list(iter_json_stream(io.BytesIO(text), "x")))
    assert list(recs) == ["2.0"] and recs["2.0"].line == 8
    assert issues[0].line == 2


def test_stream_truncated_array():
    text = b'[\n{"ClusterId": 1, "ProcId": 0}\n,\n{"ClusterId": 2,'
    recs, issues = split(list(iter_json_stream(io.BytesIO(text), "x")))
    assert list(recs) == ["1.0"] and len(issues) >= 1


def test_stream_small_chunks(monkeypatch, fix):
    import advisor.efficiency.htcondor_json as h

    monkeypatch.setattr(h, "_CHUNK", 7)
    with open(fix("condor_history-json-CONSTRUCTED.json"), "rb") as f:
        recs, issues = split(list(iter_json_stream(f, "x")))
    assert issues == [] and set(recs) == {"4100.0", "4100.1", "4101.0"}
    assert recs["4101.0"].line == 38 and recs["4100.1"].line == 22


def test_ad_without_id():
    with pytest.raises(RowError):
        record_from_ad({"JobStatus": 4})


@pytest.mark.parametrize("raw,want", [
    ("slot1_6@glidein_99879_43933758@notch009.int.chpc.utah.edu", "notch009.int.chpc.utah.edu"),
    ("glidein_11052_156649344@CRUSH-OSG-C7-10-5-219-52", "CRUSH-OSG-C7-10-5-219-52"),
    ("wn01.example.org", "wn01.example.org"),
    ("<10.0.0.1:9618?addrs=...>", None),
    ("", None),
])
def test_machine_name(raw, want):
    assert machine_name(raw) == want


def test_host_prefix():
    assert host_prefix("wn042.example.org") == "wn"
    assert host_prefix("notch009.int.chpc.utah.edu") == "notch"
    assert host_prefix("CRUSH-OSG-C7-10-5-219-52") == "CRUSH-OSG-C7"
