"""The shipped JSON Schema of the scan report: it is the report models' own (the file cannot drift from the
code), real reports validate against it (a scan of this machine here; the ifca lab's scan, mesh and diagnosis
included, in tests/apply/test_lab_loop.py), and a report with a wrong type does not."""

from __future__ import annotations

import copy
import json

import jsonschema

from advisor.diagnosis import DiagnosisInput, diagnose
from advisor.report.schema import SCHEMA_FILE, schema_text
from tests.diagnosis.test_causes import ADDR, TAGS, findings, mesh, site_facts
from tests.report.conftest import make_report
from tests.report.test_ndjson import _cli


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(report: dict) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(report)]


def test_the_shipped_schema_is_the_models():
    assert SCHEMA_FILE.read_text() == schema_text(), \
        "regenerate: python -m advisor.report.schema > advisor/report/scan-report.schema.json"


def test_a_real_scan_validates_and_wrong_types_do_not(tmp_path):
    (tmp_path / "site.yml").write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, "
                                       "roles: [storage, worker]}\n")
    r = _cli("scan", "--site", "site.yml", "--no-history", "--no-mesh", "--no-efficiency", "--skip-probes",
             "disk.smart", "-o", "scan.json", cwd=tmp_path)
    assert r.returncode in (0, 2, 3), r.stderr[-2000:]
    report = json.loads((tmp_path / "scan.json").read_text())
    assert errors(report) == []
    bad = copy.deepcopy(report)
    bad["findings"][0]["status"] = "bogus"
    bad["hosts"][0]["reachable"] = "yes"
    assert len(errors(bad)) == 2, errors(bad)


def test_a_report_with_mesh_and_diagnosis_validates_and_a_bad_path_does_not():
    m = mesh()
    d = diagnose(DiagnosisInput(findings=findings(m), mesh=m, efficiency=None, facts=site_facts(), tags=TAGS,
                                addresses=ADDR))
    report = json.loads(make_report().model_copy(update={"mesh": m, "findings": findings(m)})
                        .with_diagnosis(d).model_dump_json())
    assert report["causes"] and errors(report) == []
    report["mesh"]["paths"][0]["measured_bps"] = "fast"
    report["mesh"]["paths"][1]["limited_by"] = "gremlins"
    assert [e.split(":")[0] for e in errors(report)] == ["mesh.paths.0.measured_bps", "mesh.paths.1.limited_by"]
