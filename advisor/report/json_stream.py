"""The JSON scan report written a host and a finding at a time.

A 10,000-host report is hundreds of megabytes of JSON (every host's facts); building it as one
string doubles the scan's peak memory. ``write_report_json`` writes the very text of
``report.model_dump_json(indent=2)`` (the same bytes), holding one host or one finding's text
at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

from pydantic import BaseModel

from advisor.report.model import ScanReport

#: the report's top-level lists, streamed item by item
_STREAMED = ("hosts", "findings")


def _items(items: Iterable[BaseModel]) -> Iterable[str]:
    """Each item as it appears inside a top-level list of an indent=2 dump."""
    for item in items:
        yield "    " + item.model_dump_json(indent=2).replace("\n", "\n    ")


def write_report_json(report: ScanReport, out: TextIO) -> None:
    """Write ``report`` as ``report.model_dump_json(indent=2)`` would, then a newline."""
    shell = report.model_copy(update={name: [] for name in _STREAMED}).model_dump_json(indent=2)
    rest = shell
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
        for text in _items(items):
            if not first:
                out.write(",\n")
            out.write(text)
            first = False
        out.write("\n  ]")
    out.write(rest)
    out.write("\n")
