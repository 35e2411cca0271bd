"""report --ndjson: one JSON document per line (scan, hosts, findings per host, paths, causes), each with the
scan's id, and one JSON type per key across all documents, so that a search engine maps each key once. Checked
on a real scan of this machine (its facts: sysctls, NICs, disks, mounts) and on a report with a diagnosis."""

from __future__ import annotations

import json
import uuid

from advisor.report.ndjson import documents, number_of, text_of
from tests.support.report_checks import key_types
from tests.support.reports import cli, diagnosed_report, local_scan, make_report


def test_a_real_scan_as_ndjson_has_one_type_per_key(tmp_path):
    local_scan(tmp_path, ["storage"])
    r = cli("report", "scan.json", "--ndjson", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    docs = [json.loads(line) for line in lines]
    assert all(line.startswith("{") and "\n" not in line for line in lines)
    report = json.loads((tmp_path / "scan.json").read_text())
    assert uuid.UUID(report["scan_id"]) and report["schema_version"] == "2.1"
    assert {d["scan_id"] for d in docs} == {report["scan_id"]}
    by_type = [d["doc_type"] for d in docs]
    assert by_type.count("scan") == 1 and by_type.count("host") == 1
    assert by_type.count("finding") == sum(len(f["hosts"]) for f in report["findings"])
    host = next(d for d in docs if d["doc_type"] == "host")
    names = {f["name"] for f in host["facts"]}
    assert any(n.startswith("network.sysctl.") for n in names), sorted(names)[:20]
    assert all(isinstance(f["value"], (str, type(None))) for f in host["facts"])
    mixed = {k: t for k, t in key_types(docs).items() if len(t) > 1}
    assert not mixed, mixed
    # every check rule's finding says its operator; a Python rule's says analytic
    ops = {d["rule_id"]: d["operator"] for d in docs if d["doc_type"] == "finding"}
    assert ops.get("NET-TCP-SACK") == "eq" and "analytic" in ops.values(), ops
    # to a file: the count on the console, the same documents
    w = cli("report", "scan.json", "--ndjson", "scan.ndjson", cwd=tmp_path)
    assert w.returncode == 0 and f"({len(docs)} documents)" in w.stdout, w.stdout + w.stderr
    assert (tmp_path / "scan.ndjson").read_text() == r.stdout


def test_causes_and_paths_keep_one_type_per_key_with_the_other_documents():
    rep = diagnosed_report()
    docs = list(documents(rep))
    causes = [x for x in docs if x["doc_type"] == "cause"]
    assert [c["rank"] for c in causes] == list(range(1, len(rep.causes) + 1)) and len(causes) == 4
    assert len([x for x in docs if x["doc_type"] == "path"]) == len(rep.mesh["paths"])
    mixed = {k: t for k, t in key_types(docs + list(documents(make_report()))).items() if len(t) > 1}
    assert not mixed, mixed
    # a report of before 1.2 gets an id derived from its site and start, the same at every read
    old = make_report().model_dump()
    old.pop("scan_id")
    again = type(rep).model_validate(old)
    assert again.scan_id == type(rep).model_validate(old).scan_id and uuid.UUID(again.scan_id)


def test_values_as_text_and_number():
    assert (text_of(None), text_of("fq"), text_of(0), text_of([4096, 87380, 6291456])) == \
        (None, "fq", "0", "[4096,87380,6291456]")
    assert (number_of("1"), number_of(" 0.5 "), number_of(True), number_of("512M"), number_of(float("nan")),
            number_of([1])) == (1.0, 0.5, 1.0, None, None, None)


def test_facts_truncated_only_when_facts_were_left_out():
    from advisor.report import ndjson

    def host_doc(n):
        rep = make_report()
        rep.hosts[0].facts = {"p": {f"k{i}": i for i in range(n)}}
        return next(d for d in documents(rep) if d["doc_type"] == "host")

    full = host_doc(ndjson.MAX_FACTS_PER_HOST)
    assert len(full["facts"]) == ndjson.MAX_FACTS_PER_HOST and full["facts_truncated"] is False
    cut = host_doc(ndjson.MAX_FACTS_PER_HOST + 1)
    assert len(cut["facts"]) == ndjson.MAX_FACTS_PER_HOST and cut["facts_truncated"] is True
