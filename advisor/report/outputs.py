"""The report files a command writes beside its console output: JSON, JUnit, HTML, Prometheus textfile.

One place for every command that ends with a scan report (``scan``, ``verify``, ``audit``, ``report``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import StoradviseError
from advisor.report.model import ScanReport


@dataclass(frozen=True)
class ReportFiles:
    json: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    prometheus: Path | None = None


def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise StoradviseError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_report_files(report: ScanReport, files: ReportFiles, verify: dict[str, Any] | None = None,
                       junit_text: str | None = None, audit: list | None = None) -> None:
    """Write each file asked for. ``verify``: the before -> after shown in the HTML; ``junit_text``: a
    JUnit document other than the scan's findings and ``audit`` the checklist (``audit`` writes both)."""
    if files.json:
        write_text(files.json, report.model_dump_json(indent=2) + "\n")
    if files.junit:
        from advisor.report.junit import junit_xml

        write_text(files.junit, junit_text if junit_text is not None else junit_xml(report))
    if files.html:
        from advisor.report.html import scan_html

        write_text(files.html, scan_html(report, verify=verify, audit=audit))
    if files.prometheus:
        from advisor.report.prometheus import write_prometheus

        write_prometheus(report, files.prometheus)
