"""The shipped JSON Schema of the scan report: it is the report models' own (the file cannot drift from the
code), real reports validate against it (a scan of this machine here; the ifca lab's scan, mesh and diagnosis
included, in tests/apply/test_lab_loop.py), and a report with a wrong type does not."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from advisor.report.schema import SCHEMA_FILE, schema_text
from tests.support.report_checks import errors
from tests.support.reports import diagnosed_report, local_scan


def test_the_shipped_schema_is_the_models():
    assert SCHEMA_FILE.read_text() == schema_text(), \
        "regenerate: python -m advisor.report.schema > advisor/report/scan-report.schema.json"


@pytest.fixture(scope="module")
def scan_file(tmp_path_factory) -> Path:
    """One real scan of this machine for the tests below (a scan takes seconds)."""
    return local_scan(tmp_path_factory.mktemp("scan"), ["storage", "worker"])


def test_a_real_scan_validates_and_wrong_types_do_not(scan_file):
    report = json.loads(scan_file.read_text())
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


def test_schema_2_gives_observed_and_facts_one_type_and_reads_back_exactly(scan_file):
    """Schema 2 on a real scan of this machine: a finding's observed/expected are strings with their number
    and type, facts are leaves named by JSON Pointers (sysctl, device and interface names are values), every
    one of those keys has one JSON type, and reading the file back gives the very same report."""
    from advisor.report.model import load_report
    from tests.support.report_checks import key_types

    path = scan_file
    report = json.loads(path.read_text())
    assert report["schema_version"].startswith("2.")
    sack = next(f for f in report["findings"] if f["rule_id"] == "NET-TCP-SACK")
    assert isinstance(sack["observed"], str) and sack["observed_value"] in (0.0, 1.0), sack
    leaves = [leaf for h in report["hosts"] for leaf in h["facts"]["network.sysctl"]]
    assert any(leaf["name"] == "/sysctls/net.ipv4.tcp_sack/runtime" for leaf in leaves), leaves[:5]
    parts = {"findings": [{k: f[k] for k in f if k.startswith(("observed", "expected"))} for f in report["findings"]],
             "hosts": [{"facts": h["facts"]} for h in report["hosts"]]}
    assert {k: t for k, t in key_types([parts]).items() if len(t) > 1} == {}
    assert json.loads(load_report(path).model_dump_json()) == report


def test_a_version_1_report_is_read_and_written_as_version_2(scan_file, tmp_path):
    """A 1.x report (typed observed, facts as objects) is read wherever reports are read, and 'report -o'
    writes it as schema 2, which validates."""
    from advisor.report.model import load_report
    from tests.support.reports import cli

    v2 = json.loads(scan_file.read_text())
    v1 = copy.deepcopy(v2)
    v1["schema_version"] = "1.2"
    for f in v1["findings"]:
        for k in ("observed", "expected"):
            t = f.pop(f"{k}_type")
            f.pop(f"{k}_value")
            f[k] = f[k] if t in ("string", None) else json.loads(f[k])
    for h in v1["hosts"]:
        h["facts"] = {probe: _nested(leaves) for probe, leaves in h["facts"].items()}
    old = tmp_path / "v1.json"
    old.write_text(json.dumps(v1))
    assert json.loads(load_report(old).model_dump_json()) == v2
    r = cli("report", str(old), "-o", "v2.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "v2.json").read_text()) == v2 and errors(v2) == []


def _nested(leaves: list[dict]) -> object:
    """The probe's facts from leaves, written here apart from the product's reader."""
    root: dict = {}
    for leaf in leaves:
        v = leaf["value"] if leaf["type"] in ("string", None) else json.loads(leaf["value"])
        if leaf["name"] == "":
            return v
        keys = [p.replace("~1", "/").replace("~0", "~") for p in leaf["name"][1:].split("/")]
        node = root
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = v
    return root


def test_hostile_schema_2_values_are_one_line_errors(scan_file, tmp_path):
    from advisor.util.errors import StoradviseError
    from advisor.report.model import load_report

    good = json.loads(scan_file.read_text())
    cases = {
        "a number that is not one": lambda r: r["findings"][0].update(observed="x", observed_type="number"),
        "an unknown type": lambda r: r["findings"][0].update(observed_type="pointer"),
        "a leaf inside a value": lambda r: r["hosts"][0]["facts"]["network.sysctl"].append(
            {"name": "/sysctls/net.ipv4.tcp_sack/runtime/deeper", "value": "1", "value_num": 1, "type": "string"}),
        "facts not leaves": lambda r: r["hosts"][0]["facts"].update({"network.sysctl": {"sysctls": {}}}),
        "schema 3": lambda r: r.update(schema_version="3.0"),
    }
    for what, spoil in cases.items():
        bad = copy.deepcopy(good)
        spoil(bad)
        p = tmp_path / "bad.json"
        p.write_text(json.dumps(bad))
        try:
            load_report(p)
        except StoradviseError as exc:
            assert str(exc).startswith(str(p)) and "\n" not in str(exc), (what, exc)
        else:
            raise AssertionError(f"{what}: read without an error")
