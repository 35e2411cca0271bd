"""The scan report as it is written (schema 2) and the reading of every schema this storadvise reads.

In memory (advisor.report.model) a finding's ``observed`` and ``expected`` keep their types, and a
host's ``facts`` are each probe's nested data. Written, schema 2 gives every key one JSON type in
every report, so that a search engine maps it once (docs/report-schema.md):

* a finding's ``observed`` and ``expected`` are strings (strings as they are, anything else as
  compact JSON) with ``observed_value``/``expected_value`` (a number where the value is numeric)
  and ``observed_type``/``expected_type`` (``string``, ``number``, ``boolean``, ``array``,
  ``object``; null for a null value), which makes the reading back exact;
* a host's ``facts`` are, per probe, a list of leaves {``name`` (a JSON Pointer, RFC 6901, into
  the probe's facts: ``/sysctls/net.ipv4.tcp_sack/runtime``), ``value`` (string or null),
  ``value_num`` (number or null), ``type``}: sysctl, device and interface names are values, never
  keys. Objects are walked to their leaves; an array is one leaf (its compact JSON).

``upgrade`` turns a report read from a file, of schema 1.x or 2.x, into what the model reads; it
is used wherever a saved report is read (``load_report``, ``plan --scan``, the history).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from advisor.util.errors import StoradviseError
from advisor.report.saved_json import MAX_DEPTH, JsonLimitError, load_json

#: the schema written
SCHEMA_VERSION = "2.2"
#: the major versions read (1.x: typed observed/expected, facts as nested objects)
READ_MAJORS = ("1", "2")

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_TYPES = ("string", "number", "boolean", "array", "object")


def text_of(v: Any) -> str | None:
    """A value as a string: strings as they are, anything else as compact JSON; None stays None."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)


def number_of(v: Any) -> float | None:
    """A value as a number where it is one (booleans 0/1, numeric strings such as sysctl values)."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str) and len(v) < 40 and _NUMBER.fullmatch(v.strip()):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


def type_of(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    return "array"


def value_from(text: Any, type_: Any, where: str) -> Any:
    """The value a (text, type) pair was written from."""
    if type_ is None:
        if text is not None:
            raise StoradviseError(f"{where}: a value without its type")
        return None
    if type_ not in _TYPES or not isinstance(text, str):
        raise StoradviseError(f"{where}: type {type_!r} of value {text!r} is not one schema 2 writes")
    if type_ == "string":
        return text
    try:
        v = load_json(text, where)  # the value's own JSON: nesting and digits bounded too
    except JsonLimitError:
        raise
    except StoradviseError:
        raise StoradviseError(f"{where}: {type_} value is not JSON: {text[:60]!r}") from None
    if type_of(v) != type_:
        raise StoradviseError(f"{where}: value {text[:60]!r} is not of its type {type_}")
    return v


# ------------------------------------------------------------------ findings

def finding_out(d: dict[str, Any]) -> dict[str, Any]:
    """A finding's JSON data (model_dump(mode="json")) as schema 2 writes it."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k in ("observed", "expected"):
            out[k] = text_of(v)
            out[f"{k}_value"] = number_of(v)
            out[f"{k}_type"] = type_of(v)
        else:
            out[k] = v
    return out


def _finding_in(d: Any, where: str) -> Any:
    if not isinstance(d, dict):
        return d  # the model refuses it, naming where
    for k in ("observed", "expected"):
        d[k] = value_from(d.get(k), d.pop(f"{k}_type", None), f"{where}.{k}")
        d.pop(f"{k}_value", None)
    return d


# ------------------------------------------------------------------ facts

def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def fact_leaves(facts: Any) -> list[dict[str, Any]]:
    """One probe's facts as schema 2's list of leaves."""
    out: list[dict[str, Any]] = []

    def walk(name: str, v: Any) -> None:
        if isinstance(v, dict) and v:
            for k, x in v.items():
                walk(f"{name}/{_escape(str(k))}", x)
            return
        t = type_of(v)
        out.append({"name": name, "value": text_of(v),
                    "value_num": number_of(v) if t in ("number", "string", "boolean") else None, "type": t})

    walk("", facts)
    return out


def facts_from_leaves(leaves: Any, where: str) -> Any:
    """One probe's facts back from its leaves (``fact_leaves``'s inverse)."""
    if not isinstance(leaves, list):
        raise StoradviseError(f"{where}: facts are a list of leaves in schema 2")
    root: dict[str, Any] = {}
    for i, leaf in enumerate(leaves):
        at = f"{where}[{i}]"
        if not isinstance(leaf, dict) or not isinstance(leaf.get("name"), str):
            raise StoradviseError(f"{at}: a fact leaf is an object with a string name")
        name = leaf["name"]
        value = value_from(leaf.get("value"), leaf.get("type"), at)
        if name == "":
            if len(leaves) != 1:
                raise StoradviseError(f"{at}: the whole facts given as one leaf, beside others")
            return value
        if not name.startswith("/"):
            raise StoradviseError(f"{at}: name {name[:60]!r} is not a JSON Pointer")
        parts = [_unescape(p) for p in name[1:].split("/")]
        if len(parts) > MAX_DEPTH:
            raise StoradviseError(f"{at}: {name[:60]!r} is nested more than {MAX_DEPTH} deep")
        node = root
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise StoradviseError(f"{at}: {name[:60]!r} goes inside a value")
        if parts[-1] in node:
            raise StoradviseError(f"{at}: {name[:60]!r} given twice")
        node[parts[-1]] = value
    return root


def report_out(d: dict[str, Any]) -> dict[str, Any]:
    """A report's JSON data (the model's own dump) as schema 2 writes it."""
    d["schema_version"] = SCHEMA_VERSION
    d["findings"] = [finding_out(f) for f in d.get("findings") or []]
    for h in d.get("hosts") or []:
        h["facts"] = {probe: fact_leaves(facts) for probe, facts in (h.get("facts") or {}).items()}
    return d


def _host_in(h: Any, where: str) -> Any:
    if isinstance(h, dict) and isinstance(h.get("facts"), dict):
        h["facts"] = {probe: facts_from_leaves(leaves, f"{where}.facts.{probe}")
                      for probe, leaves in h["facts"].items()}
    return h


# ------------------------------------------------------------------ reading

def major_of(path: Any, data: Any) -> str:
    """The report's major schema version; a one-line error for what is not a report this reads."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise StoradviseError(f"{path}: not a storadvise scan report (no schema_version)")
    major = str(data["schema_version"]).split(".")[0]
    if major not in READ_MAJORS:
        raise StoradviseError(f"{path}: scan report schema {data['schema_version']} is not supported "
                              f"(this storadvise reads {', '.join(m + '.x' for m in READ_MAJORS)})")
    return major


def upgrade(path: Any, data: Any) -> dict[str, Any]:
    """A report read from ``path`` (any schema this reads) as the model reads it, converted in place."""
    if major_of(path, data) == "1":
        return data
    findings, hosts = data.get("findings"), data.get("hosts")
    for i, f in enumerate(findings if isinstance(findings, list) else []):
        _finding_in(f, f"{path}: findings[{i}]")
    for i, h in enumerate(hosts if isinstance(hosts, list) else []):
        _host_in(h, f"{path}: hosts[{i}]")
    return data
