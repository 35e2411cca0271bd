"""The JSON Schema of the scan report (docs/report-schema.md), shipped beside this module as
``scan-report.schema.json`` and generated from the report's own models, so that the two cannot drift
(``tests/report/test_report_schema.py`` holds the file to the models and real reports to the file).

    python -m advisor.report.schema > advisor/report/scan-report.schema.json   # after a model change
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.diagnosis.report_types import CAUSE_CHANGE_KEYS, SET_ASIDE_CHANGE_KEYS
from advisor.report.model import SCHEMA_VERSION, ScanReport

SCHEMA_FILE = Path(__file__).with_name("scan-report.schema.json")


def _typed(*types: str) -> dict[str, Any]:
    return {"type": list(types)} if len(types) > 1 else {"type": types[0]}


#: a measured path (advisor/mesh/results.py): its core keys typed; the mesh may add keys in a minor version
_PATH = {
    "type": "object",
    "required": ["src", "dst", "status"],
    "properties": {
        "src": _typed("string"), "dst": _typed("string"), "status": {"enum": ["ok", "failed"]},
        "error": _typed("string", "null"),
        "measured_bps": _typed("number", "null"), "expected_bps": _typed("number", "null"),
        "ratio": _typed("number", "null"), "retransmits": _typed("integer", "null"),
        "rtt_us": _typed("number", "null"), "min_rtt_us": _typed("number", "null"),
        "limited_by": {"enum": ["link", "receiver_window", "sender_buffer", "loss", "policer", "cpu", "contended",
                                "unknown", None]},
        "limited_evidence": _typed("string", "null"),
        "tcp_info": _typed("object", "null"), "host_cpu_busy": _typed("object", "null"),
        "cpu_wait_frac": _typed("object", "null"), "nic_other_bytes": _typed("object", "null"),
        "test_bytes": _typed("integer", "null"),
    },
}
# (object or null in one schema, not anyOf: a wrong path is then reported at the path itself)
_MESH = {"type": ["object", "null"], "required": ["paths"], "properties": {
    "rounds": _typed("integer"), "paths": {"type": "array", "items": _PATH}}}

#: a production-flow path (advisor/flows/paths.py FLOW_PATH_KEYS): the issue's keys typed
_FLOW_PATH = {
    "type": "object",
    "required": ["src", "dst", "connections", "bytes", "measured_bps", "rtt_ms", "min_rtt_ms", "retrans_ratio",
                 "limited_by", "evidence"],
    "properties": {
        "src": _typed("string"), "dst": _typed("string"), "connections": _typed("integer"), "bytes": _typed("integer"),
        "measured_bps": _typed("number", "null"), "rtt_ms": _typed("number", "null"),
        "min_rtt_ms": _typed("number", "null"), "retrans_ratio": _typed("number", "null"),
        "limited_by": {"enum": ["link", "receiver_window", "sender_buffer", "loss", "policer", "cpu", "contended",
                                "unknown", "application", None]},
        "evidence": _typed("string", "null"), "expected_bps": _typed("number", "null"),
        "mesh": _typed("object", "null"),
    },
}
_FLOWS = {"type": ["object", "null"], "required": ["window_s", "paths"], "properties": {
    "window_s": _typed("number", "null"), "hosts": _typed("integer"), "paths": {"type": "array", "items": _FLOW_PATH}}}


#: a value written as a string with its number and its type (advisor.report.wire)
_TYPE = {"enum": ["string", "number", "boolean", "array", "object", None]}
#: one leaf of a probe's facts
_LEAF = {
    "type": "object",
    "required": ["name", "value", "value_num", "type"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "description": "JSON Pointer (RFC 6901) into the probe's facts; '' the whole"},
        "value": _typed("string", "null"), "value_num": _typed("number", "null"), "type": _TYPE,
    },
}


def _schema_2(defs: dict[str, Any]) -> None:
    """The models' schema, where schema 2 writes other types than the model holds."""
    finding = defs["Finding"]["properties"]
    for k in ("observed", "expected"):
        finding[k] = {**_typed("string", "null"), "default": None, "title": k.title()}
        finding[f"{k}_value"] = {**_typed("number", "null"), "default": None, "title": f"{k.title()} Value"}
        finding[f"{k}_type"] = {**_TYPE, "default": None, "title": f"{k.title()} Type"}
    # a cause's changes are written as some keys of each Change (Cause's serializer), under the name
    # the schema has always given them; a set-aside change flat, with its rule and reason
    change = defs["Change"]
    defs["PlannedSetting"] = {"type": "object", "title": "PlannedSetting",
                              "properties": {k: change["properties"][k] for k in CAUSE_CHANGE_KEYS},
                              "required": [k for k in change["required"] if k in CAUSE_CHANGE_KEYS]}
    defs["Cause"]["properties"]["changes"]["items"] = {"$ref": "#/$defs/PlannedSetting"}
    set_aside = defs["SetAside"]
    own = {k: v for k, v in set_aside["properties"].items() if k != "change"}
    set_aside["properties"] = {**{k: change["properties"][k] for k in SET_ASIDE_CHANGE_KEYS}, **own}
    set_aside["required"] = [k for k in change["required"] if k in SET_ASIDE_CHANGE_KEYS] + [
        k for k in set_aside["required"] if k != "change"]
    defs["HostReport"]["properties"]["facts"] = {
        "type": "object", "title": "Facts", "description": "probe name -> its facts as leaves",
        "additionalProperties": {"type": "array", "items": _LEAF}}


def report_schema() -> dict[str, Any]:
    # the validation schema: the serialised one is schema 2's (a model serializer, opaque to pydantic)
    schema = ScanReport.model_json_schema(mode="validation")
    _schema_2(schema["$defs"])
    schema["properties"]["schema_version"]["pattern"] = r"^2\.[0-9]+$"
    schema["properties"]["mesh"] = {**_MESH, "default": None, "title": "Mesh"}
    schema["properties"]["flows"] = {**_FLOWS, "default": None, "title": "Flows"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://storadvise.invalid/schema/scan-report-{SCHEMA_VERSION}.json",
            "description": f"storadvise scan report, schema {SCHEMA_VERSION} (docs/report-schema.md)", **schema}


def schema_text() -> str:
    return json.dumps(report_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover - the regeneration command above
    print(schema_text(), end="")
