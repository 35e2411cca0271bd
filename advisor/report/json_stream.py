"""The JSON scan report (schema 2, advisor.report.wire) written a host and a finding at a time.

A 10,000-host report is hundreds of megabytes of JSON (every host's facts); building it as one
string doubles the scan's peak memory. ``write_report_json`` holds one host's or one finding's text
at a time. The rest of the report is ``model_dump_json(indent=2)``'s text; a fact leaf is one line.
Workers with the same facts share their text: each probe's facts are turned into leaves once per
distinct value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

import msgspec

from advisor.findings import Finding
from advisor.report.model import HostReport, ScanReport
from advisor.report.wire import fact_leaves, finding_out

#: the report's top-level lists, streamed item by item
_STREAMED = ("hosts", "findings")
_FACTS = '\n  "facts": {}'


class _LeafTexts:
    """Each probe's facts as the text of their leaves, once per distinct facts."""

    def __init__(self) -> None:
        self._seen: dict[bytes, str] = {}

    def __call__(self, facts: Any) -> str:
        try:
            key: bytes | None = msgspec.json.encode(facts)
        except (TypeError, UnicodeEncodeError, msgspec.EncodeError):  # a lone surrogate, an odd type
            key = None
        if key is not None and key in self._seen:
            return self._seen[key]
        text = "[\n" + ",\n".join("      " + json.dumps(leaf, default=str) for leaf in fact_leaves(facts)) + "\n    ]"
        if key is not None:
            self._seen[key] = text
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


def _finding_text(f: Finding) -> str:
    return json.dumps(finding_out(f.model_dump(mode="json")), indent=2, default=str)


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


def report_json_text(report: ScanReport) -> str:
    """The whole schema 2 text of a (small) report."""
    import io

    buf = io.StringIO()
    write_report_json(report, buf)
    return buf.getvalue()
