"""The shipped JSON Schema of the scan report: it is the report models' own (the file cannot drift from the
code), real reports validate against it (a scan of this machine here; the ifca lab's scan, mesh and diagnosis
included, in tests/apply/test_lab_loop.py), and a report with a wrong type does not."""

from __future__ import annotations

import copy
import json

import jsonschema

from advisor.report.schema import SCHEMA_FILE, schema_text
from tests.report.conftest import diagnosed_report, local_scan


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
    report = json.loads(local_scan(tmp_path, ["storage", "worker"]).read_text())
    assert errors(report) == []
    bad = copy.deepcopy(report)
    bad["findings"][0]["status"] = "bogus"
    bad["hosts"][0]["reachable"] = "yes"
    assert len(errors(bad)) == 2, errors(bad)


def test_a_report_with_mesh_and_diagnosis_validates_and_a_bad_path_does_not():
    report = json.loads(diagnosed_report().model_dump_json())
    assert report["causes"] and errors(report) == []
    report["mesh"]["paths"][0]["measured_bps"] = "fast"
    report["mesh"]["paths"][1]["limited_by"] = "gremlins"
    assert [e.split(":")[0] for e in errors(report)] == ["mesh.paths.0.measured_bps", "mesh.paths.1.limited_by"]
