"""Checks a scan report must pass wherever it comes from: the shipped JSON Schema, and one JSON type per key
across the NDJSON documents (so a search engine maps each key once)."""

from __future__ import annotations

import json

import jsonschema

from advisor.report.schema import SCHEMA_FILE


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(report: dict) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(report)]


def _kind(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(v)]


def key_types(docs: list[dict]) -> dict[str, set[str]]:
    """Every key path (objects inside arrays as ``key[]``) with the JSON types it has (null left out)."""
    seen: dict[str, set[str]] = {}

    def walk(prefix: str, v) -> None:
        k = _kind(v)
        if k is not None:
            seen.setdefault(prefix, set()).add(k)
        if isinstance(v, dict):
            for name, x in v.items():
                walk(f"{prefix}.{name}" if prefix else name, x)
        elif isinstance(v, list):
            for x in v:
                walk(prefix + "[]", x)

    for d in docs:
        walk("", d)
    return seen
