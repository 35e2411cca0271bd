import json

from typer.testing import CliRunner

from advisor.efficiency.cli import app

KEYS = ["job_id", "host", "cores", "cpu_seconds", "wall_seconds", "efficiency", "status"]


def run(*args):
    return CliRunner().invoke(app, list(args))


def test_ingest_json_contract(fix, sample):
    r = run("ingest", "--json", fix("condor_history-jsonl-CONSTRUCTED.jsonl"), fix("sacct-P-steps-CONSTRUCTED.txt"),
            sample("cmssw-fjr-performance-WMCore-XrdSiteStatistics.xml"))
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert set(d) >= {"records", "summary", "errors", "findings"}
    assert len(d["records"]) == 3 + 5 + 1
    for rec in d["records"]:
        assert list(rec)[:7] == KEYS
    assert d["summary"]["records"] == 9 and d["summary"]["errors"] == 2
    assert [(e["line"], e["file"].endswith(".jsonl")) for e in d["errors"]] == [(3, True), (5, True)]
    assert {f["rule_id"] for f in d["findings"]} == {"EFF-IO-BOUND", "EFF-IO-BOUND-STORAGE", "EFF-FAILED-WALL"}


def test_ingest_limit_and_by(fix):
    r = run("ingest", "--json", "--limit", "1", "--by", "length", fix("condor_history-json-CONSTRUCTED.json"))
    d = json.loads(r.output)
    assert len(d["records"]) == 1 and d["summary"]["records"] == 3 and d["summary"]["records_listed"] == 1
    assert "by_host" not in d["summary"] and "by_length" in d["summary"]


def test_ingest_target_and_baseline(fix):
    d = json.loads(run("ingest", "--json", "--target", "0.75", fix("sacct-P-steps-CONSTRUCTED.txt")).output)
    (b,) = [f for f in d["findings"] if f["rule_id"] == "EFF-BELOW-BASELINE"]
    assert b["status"] == "fail" and b["expected"]["target"] == 0.75
    d = json.loads(run("ingest", "--json", "--baseline", fix("sacct-p-trailing-CONSTRUCTED.txt"),
                       fix("sacct-P-steps-CONSTRUCTED.txt")).output)
    assert d["baseline"]["records"] == 2


def test_human_output(fix):
    r = run("ingest", fix("sacct-P-steps-CONSTRUCTED.txt"), "--scan", fix("scan-CONSTRUCTED.json"))
    assert r.exit_code == 0 and "EFF-FAILED-WALL" in r.output and "efficiency by" in r.output


def test_errors_are_one_line(tmp_path, fix):
    for args in (["ingest", str(tmp_path / "missing.jsonl")],
                 ["ingest", str(tmp_path)],
                 ["ingest", "--format", "xml", fix("sacct-p-trailing-CONSTRUCTED.txt")],
                 ["ingest", "--by", "site", fix("sacct-p-trailing-CONSTRUCTED.txt")],
                 ["ingest", "--format", "htcondor", fix("sacct-p-trailing-CONSTRUCTED.txt")],
                 ["ingest", "--scan", str(tmp_path / "nope.json"), fix("sacct-p-trailing-CONSTRUCTED.txt")]):
        r = run(*args)
        assert r.exit_code == 1, (args, r.output)
        assert r.output.startswith("storadvise: error: ") and r.output.count("\n") == 1, r.output
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = run("ingest", str(empty))
    assert r.exit_code == 1 and "empty.txt" in r.output


def test_limit_zero_uses_summary_path_same_summary(fix):
    a = json.loads(run("ingest", "--json", "--limit", "0", fix("condor_history-jsonl-CONSTRUCTED.jsonl")).output)
    b = json.loads(run("ingest", "--json", fix("condor_history-jsonl-CONSTRUCTED.jsonl")).output)
    assert a["records"] == [] and len(b["records"]) == 3
    a["summary"].pop("records_listed"), b["summary"].pop("records_listed")
    assert a["summary"] == b["summary"] and a["errors"] == b["errors"]
