"""The JSON scan report (schema 2, advisor.report.wire) written a host and a finding at a time.

A 10,000-host report is hundreds of megabytes of JSON (every host's facts); building it as one
string doubles the scan's peak memory. ``write_report_json`` holds one host's or one finding's text
at a time. The rest of the report is ``model_dump_json(indent=2)``'s text; a fact leaf is one line.
Workers with the same facts share their text: each probe's facts are turned into leaves once per
distinct value (hosts whose outputs were the same share one facts object, advisor.model.output_store).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

import msgspec

from advisor.model.findings import Finding
from advisor.report.model import HostReport, ScanReport
from advisor.report.wire import fact_leaves, finding_out

#: the report's top-level lists, streamed item by item
_STREAMED = ("hosts", "findings")
_FACTS = '\n  "facts": {}'


class _LeafTexts:
    """Each probe's facts as the text of their leaves, once per facts object (hosts whose outputs were
    the same share one, advisor.model.output_store) and once per distinct value."""

    def __init__(self) -> None:
        self._by_object: dict[int, tuple[Any, str]] = {}  # the object is held: its id stays its own
        self._by_value: dict[bytes, str] = {}

    def __call__(self, facts: Any) -> str:
        seen = self._by_object.get(id(facts))
        if seen is not None and seen[0] is facts:
            return seen[1]
        try:
            key: bytes | None = msgspec.json.encode(facts)
        except (TypeError, UnicodeEncodeError, msgspec.EncodeError):  # a lone surrogate, an odd type
            key = None
        text = self._by_value.get(key) if key is not None else None
        if text is None:
            text = "[\n" + ",\n".join("      " + _compact(leaf) for leaf in fact_leaves(facts)) + "\n    ]"
            if key is not None:
                self._by_value[key] = text
        self._by_object[id(facts)] = (facts, text)
        return text


def _host_text(h: HostReport, leaves: _LeafTexts) -> str:
    shell = h.model_copy(update={"facts": {}}).model_dump_json(indent=2)
    if not h.facts:
        return shell
    head, found, tail = shell.partition(_FACTS)
    if not found:  # the schema lost the field: never write a host without it
        raise RuntimeError("host schema has no 'facts'")
    probes = ",\n".join(f"    {json.dumps(probe)}: {leaves(facts)}" for probe, facts in h.facts.items())
    return f'{head}\n  "facts": {{\n{probes}\n  }}{tail}'


def _compact(data: Any) -> str:
    """One line of JSON (C speed); text a host gave with a lone surrogate is escaped instead."""
    try:
        return msgspec.json.encode(data).decode()
    except (UnicodeEncodeError, TypeError):
        return json.dumps(data, default=str, separators=(",", ":"))


def _finding_text(f: Finding) -> str:
    # json's indenting encoder is pure Python: a finding merged over 10,000 hosts took 30 ms
    data = finding_out(f.model_dump(mode="json"))
    try:
        return msgspec.json.format(msgspec.json.encode(data), indent=2).decode()
    except (UnicodeEncodeError, TypeError):
        return json.dumps(data, indent=2, default=str)


def _items(name: str, items: Iterable[Any]) -> Iterable[str]:
    """Each item as it appears inside a top-level list of an indent=2 dump."""
    leaves = _LeafTexts()
    for item in items:
        text = _host_text(item, leaves) if name == "hosts" else _finding_text(item)
        yield "    " + text.replace("\n", "\n    ")


def write_report_json(report: ScanReport, out: TextIO) -> None:
    """Write ``report`` as schema 2 JSON, then a newline."""
    shell = report.model_copy(update={name: [] for name in _STREAMED})
    rest = shell.model_dump_json(indent=2)
    for name in _STREAMED:
        marker = f'\n  "{name}": []'
        head, found, rest = rest.partition(marker)
        if not found:  # the schema lost the field: never write a report without it
            raise RuntimeError(f"report schema has no top-level list {name!r}")
        out.write(head)
        items = getattr(report, name)
        if not items:
            out.write(marker)
            continue
        out.write(f'\n  "{name}": [\n')
        first = True
        for text in _items(name, items):
            if not first:
                out.write(",\n")
            out.write(text)
            first = False
        out.write("\n  ]")
    out.write(rest)
    out.write("\n")

