"""CMSSW framework job reports (XML; CMSSW FWCore/MessageLogger JobReport, PerformanceReport).

From the ``Timing`` summary: ``TotalJobCPU``, ``TotalJobTime``, ``NumberOfThreads``; from
``ProcessingSummary``: ``NumberEvents``. Efficiency = TotalJobCPU / (TotalJobTime x
NumberOfThreads) (our derivation; 155.483 / (153.001 x 2) = 0.508 for the WMCore sample).

Storage statistics follow WMCore's ``XMLParser`` derivation: the read layer is the first
``Timing-<4 letters>-read(v)-numOperations`` metric, in document order, with a non-zero value;
``read_total_mb`` = read + readv totalMegabytes of that layer, ``read_msecs`` the same for
totalMsecs, ``read_mb_per_sec`` = read_total_mb / read_msecs x 1000. The per-site
``XrdSiteStatistics`` modules give the remote reads (numOperations of read and readv), which the
latency what-if uses as synchronous round trips.

The storage a job read: the ``XrdSiteStatistics`` site it read most MB from; else the server or
redirector of its first input file's PFN (``root://cmsxrootd.fnal.gov//store/...`` ->
``cmsxrootd.fnal.gov``), or ``local`` for a PFN that is a path or ``file:`` URL. Events: the
``ProcessingSummary`` ``NumberEvents``, else the sum of the primary input files' ``EventsRead``
(``InputType`` ``primaryFiles``; parent files read alongside are not counted again).

A report carries no exit status in the performance section; a ``FrameworkError`` element (the
element WMCore's parser dispatches on) with an ``ExitStatus`` attribute marks the job failed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from advisor.efficiency.records import JobRecord, RowError

_READ_OPS = re.compile(r"^Timing-([a-z]{4})-read(v?)-numOperations$")


@dataclass
class StorageProfile:
    read_method: str | None = None
    read_total_mb: float = 0.0
    read_msecs: float = 0.0
    read_ops: int = 0
    read_mb_per_sec: float | None = None
    read_average_kb: float | None = None
    #: per remote site (XrdSiteStatistics): MB, ms and operations (read + readv)
    sites: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def remote_read_ops(self) -> int:
        return int(sum(s["ops"] for s in self.sites.values()))

    @property
    def top_site(self) -> str | None:
        """The remote site the job read most MB from (XrdSiteStatistics), the storage it read."""
        best = max(self.sites.items(), key=lambda kv: (kv[1]["mb"], kv[0]), default=None)
        return best[0] if best and best[1]["mb"] > 0 else None

    @property
    def remote_read_mb(self) -> float:
        return sum(s["mb"] for s in self.sites.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "read_method": self.read_method,
            "read_total_mb": self.read_total_mb,
            "read_msecs": self.read_msecs,
            "read_ops": self.read_ops,
            "read_mb_per_sec": self.read_mb_per_sec,
            "read_average_kb": self.read_average_kb,
            "remote_read_ops": self.remote_read_ops,
            "remote_read_mb": self.remote_read_mb,
            "sites": self.sites,
        }


@dataclass
class FrameworkJobReport:
    timing: dict[str, float]
    processing: dict[str, float]
    storage: dict[str, float]
    profile: StorageProfile
    errors: list[tuple[int | None, str]]
    #: the input files' PFNs, in document order, and the events read from them
    input_pfns: list[str] = field(default_factory=list)
    input_events: int | None = None

    @property
    def input_storage(self) -> str | None:
        """The server or redirector of the first input PFN (``local`` for a path)."""
        return pfn_storage(self.input_pfns[0]) if self.input_pfns else None

    @property
    def cpu_seconds(self) -> float | None:
        return self.timing.get("TotalJobCPU")

    @property
    def wall_seconds(self) -> float | None:
        return self.timing.get("TotalJobTime")

    @property
    def threads(self) -> float | None:
        return self.timing.get("NumberOfThreads")

    @property
    def events(self) -> int | None:
        v = self.processing.get("NumberEvents")
        return self.input_events if v is None else int(v)


_URL = re.compile(r"^([a-z][a-z0-9+.-]*)://([^/:?#]*)", re.I)
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}")


def pfn_storage(pfn: str) -> str | None:
    """``root://host:1094//store/x`` -> ``host``; a path or ``file:`` URL -> ``local``; junk -> None."""
    pfn = pfn.strip()
    m = _URL.match(pfn)
    if m is None:
        return "local" if pfn.startswith("/") or pfn.lower().startswith("file:") else None
    if m.group(1).lower() == "file":
        return "local"
    host = m.group(2).lower()
    return host if _HOST.fullmatch(host) else None


def _float(v: str | None) -> float | None:
    if v is None:
        return None
    try:
        f = float(v.strip())
    except ValueError:
        return None
    return f if f == f and abs(f) != float("inf") else None


def parse_fjr(f: IO[bytes], source: str) -> FrameworkJobReport:
    """Parse one report, streaming (``iterparse``); raises RowError on malformed XML."""
    timing: dict[str, float] = {}
    processing: dict[str, float] = {}
    storage: dict[str, float] = {}
    storage_order: list[str] = []
    sites: dict[str, dict[str, float]] = {}
    errors: list[tuple[int | None, str]] = []
    pfns: list[str] = []
    events_read: list[int] = []
    in_input = False
    input_type: str | None = None
    input_events: int | None = None
    summary: str | None = None
    module: tuple[str, str] | None = None
    seen_root = False
    try:
        for event, el in ET.iterparse(f, events=("start", "end")):
            seen_root = True
            tag = el.tag
            if event == "start":
                if tag == "PerformanceSummary":
                    summary = el.get("Metric")
                elif tag == "PerformanceModule":
                    module = (el.get("Module") or "", el.get("Metric") or "")
                elif tag == "InputFile":
                    in_input, input_type, input_events = True, None, None
                continue
            if tag == "InputFile":
                # the events a job processed are those of its primary inputs (parents are read alongside)
                if input_events is not None and input_type in (None, "primaryFiles"):
                    events_read.append(input_events)
                in_input = False
            elif in_input and tag == "PFN" and el.text and el.text.strip():
                pfns.append(el.text.strip())
            elif in_input and tag == "InputType" and el.text:
                input_type = el.text.strip()
            elif in_input and tag == "EventsRead" and el.text and el.text.strip().isdigit():
                input_events = int(el.text.strip())
            if tag == "Metric":
                name, value = el.get("Name"), _float(el.get("Value"))
                if name is not None and value is not None:
                    if module is not None and module[0] == "XrdSiteStatistics":
                        s = sites.setdefault(module[1], {"mb": 0.0, "ms": 0.0, "ops": 0.0})
                        if name in ("read-totalMegabytes", "readv-totalMegabytes"):
                            s["mb"] += value
                        elif name in ("read-totalMsecs", "readv-totalMsecs"):
                            s["ms"] += value
                        elif name in ("read-numOperations", "readv-numOperations"):
                            s["ops"] += value
                    elif summary == "Timing":
                        timing[name] = value
                    elif summary == "ProcessingSummary":
                        processing[name] = value
                    elif summary == "StorageStatistics":
                        storage[name] = value
                        storage_order.append(name)
            elif tag == "PerformanceSummary":
                summary = None
            elif tag == "PerformanceModule":
                module = None
            elif tag == "FrameworkError":
                st = el.get("ExitStatus")
                code = int(st) if st and st.strip().lstrip("-").isdigit() else None
                errors.append((code, el.get("Type") or ""))
            el.clear()
    except ET.ParseError as e:
        line = e.position[0] if getattr(e, "position", None) else 0
        raise RowError(f"malformed XML at line {line}: {e}") from None
    except (ValueError, RecursionError) as e:
        raise RowError(f"malformed XML: {e}") from None
    if not seen_root:
        raise RowError("empty XML document")

    prof = StorageProfile()
    for name in storage_order:
        if _READ_OPS.match(name) and storage[name] != 0.0:
            prof.read_method = name.split("-")[1]
            break
    if prof.read_method:
        rm = prof.read_method
        g = storage.get
        prof.read_total_mb = g(f"Timing-{rm}-read-totalMegabytes", 0.0) + g(f"Timing-{rm}-readv-totalMegabytes", 0.0)
        prof.read_msecs = g(f"Timing-{rm}-read-totalMsecs", 0.0) + g(f"Timing-{rm}-readv-totalMsecs", 0.0)
        prof.read_ops = int(g(f"Timing-{rm}-read-numOperations", 0.0) + g(f"Timing-{rm}-readv-numOperations", 0.0))
        prof.read_mb_per_sec = prof.read_total_mb / prof.read_msecs * 1000 if prof.read_msecs > 0 else 0.0
        prof.read_average_kb = 1024 * prof.read_total_mb / prof.read_ops if prof.read_ops > 0 else 0.0
    prof.sites = sites
    return FrameworkJobReport(timing, processing, storage, prof, errors, pfns, sum(events_read) if events_read else None)


def record_from_fjr(report: FrameworkJobReport, source: str) -> JobRecord:
    if report.cpu_seconds is None or report.wall_seconds is None:
        raise RowError("no Timing summary with TotalJobCPU and TotalJobTime (not a framework job report?)")
    status, code = "completed", 0
    if report.errors:
        status = "failed"
        code = report.errors[0][0]
    prof = report.profile
    remote_ops = prof.remote_read_ops if prof.sites else None
    return JobRecord(
        job_id=Path(source).stem,
        host=None,
        cores=report.threads or 1.0,
        cpu_seconds=report.cpu_seconds,
        wall_seconds=report.wall_seconds,
        status=status,
        exit_code=code,
        events=report.events,
        source=source,
        line=1,
        read_mb=prof.read_total_mb if prof.read_method else None,
        read_ops=remote_ops if remote_ops is not None else (prof.read_ops if prof.read_method else None),
        read_seconds=prof.read_msecs / 1000 if prof.read_method else None,
        storage=prof.top_site or report.input_storage,
        extra={"read_mb_per_sec": prof.read_mb_per_sec} if prof.read_method else None,
    )
