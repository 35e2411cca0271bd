"""The report files a command writes beside its console output: JSON, JUnit, HTML, Prometheus textfile.

One place for every command that ends with a scan report (``scan``, ``verify``, ``audit``, ``report``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.util.atomic_files import atomic_writer
from advisor.util.errors import StoradviseError
from advisor.report.model import ScanReport


@dataclass(frozen=True)
class ReportFiles:
    json: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    prometheus: Path | None = None


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Write a report file atomically (advisor.util.atomic_files); a failure is one line and leaves no
    temporary file."""
    write_parts(path, (text,), mode)


def write_parts(path: Path, parts: Iterable[str], mode: int = 0o644) -> None:
    """``write_text`` of text that arrives in parts (written as they come, never joined)."""
    try:
        with atomic_writer(path, mode) as fh:
            for part in parts:
                fh.write(part)
    except OSError as exc:
        raise StoradviseError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        raise StoradviseError(f"{path}: cannot write: text not encodable as UTF-8 at {exc.start}") from None


def load_cache_simulation(path: Path) -> dict[str, Any]:
    """A result written by ``storadvise cache simulate --output FILE`` (or printed with --json), checked."""
    import json

    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise StoradviseError(f"{path}: cache simulation result not found") from None
    except RecursionError:
        raise StoradviseError(f"{path}: not a 'storadvise cache simulate' result (nested too deep)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoradviseError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise StoradviseError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    configs = data.get("configurations") if isinstance(data, dict) else None
    if not isinstance(configs, list):
        raise StoradviseError(f"{path}: not a 'storadvise cache simulate' result (no 'configurations' list)")
    for i, c in enumerate(configs):
        ok = isinstance(c, dict) and isinstance(c.get("policy"), str) and all(
            _finite(c.get(k)) for k in ("capacity_bytes", "hit_efficiency", "transfer_efficiency"))
        if not ok:
            raise StoradviseError(f"{path}: configurations[{i}]: needs policy, capacity_bytes, hit_efficiency, "
                                  "transfer_efficiency (finite numbers)")
    curve = data.get("curve")
    if curve is not None:
        if not (isinstance(curve, dict) and isinstance(curve.get("capacities_bytes"), list)):
            raise StoradviseError(f"{path}: curve: needs a capacities_bytes list")
        n = len(curve["capacities_bytes"])
        for key in ("capacities_bytes", "hit_efficiency", "transfer_efficiency"):
            values = curve.get(key)
            if values is None and key != "capacities_bytes":
                continue
            if not isinstance(values, list) or len(values) != n:
                raise StoradviseError(f"{path}: curve: {key}: needs a list of {n} numbers")
            bad = next((j for j, v in enumerate(values) if not _finite(v)), None)
            if bad is not None:
                raise StoradviseError(f"{path}: curve: {key}[{bad}]: {values[bad]!r} is not a finite number")
    for key in ("requests", "distinct_files"):
        if data.get(key) is not None and not _finite(data[key]):
            raise StoradviseError(f"{path}: {key}: {data[key]!r} is not a finite number")
    return data


def _finite(v: Any) -> bool:
    import math

    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def write_report_files(report: ScanReport, files: ReportFiles, verify: dict[str, Any] | None = None,
                       junit_text: str | None = None, audit: list | None = None,
                       cache: dict[str, Any] | None = None) -> None:
    """Write each file asked for. ``verify``: the before -> after shown in the HTML; ``junit_text``: a
    JUnit document other than the scan's findings and ``audit`` the checklist (``audit`` writes both);
    ``cache``: a cache simulation result whose curves the HTML plots."""
    if files.json:  # streamed a host at a time: a 10,000-host report is hundreds of MB
        from advisor.report.json_stream import write_report_json

        try:
            with atomic_writer(files.json) as fh:
                write_report_json(report, fh)
        except OSError as exc:
            raise StoradviseError(f"{files.json}: cannot write: {exc.strerror or exc}") from None
        except UnicodeEncodeError as exc:
            raise StoradviseError(f"{files.json}: cannot write: text not encodable as UTF-8 at {exc.start}") from None
    if files.junit:
        from advisor.report.junit import junit_xml

        write_text(files.junit, junit_text if junit_text is not None else junit_xml(report))
    if files.html:
        from advisor.report.html import scan_html

        write_text(files.html, scan_html(report, verify=verify, audit=audit, cache=cache))
    if files.prometheus:
        from advisor.report.prometheus import write_prometheus

        write_prometheus(report, files.prometheus)
