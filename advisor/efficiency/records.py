"""The per-job record every parser produces, and the typed input error.

A record is a plain slotted object, not a pydantic model: ingest builds millions of them and
the hot path must stay lean. ``to_dict()`` gives the JSON form whose first keys are the
documented contract: ``job_id, host, cores, cpu_seconds, wall_seconds, efficiency, status``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.util.errors import StoradviseError

#: statuses a record may carry (lower case, one word)
STATUSES = (
    "completed", "failed", "removed", "cancelled", "timeout", "out_of_memory", "node_fail",
    "preempted", "held", "running", "idle", "pending", "suspended", "requeued",
    "transferring_output", "unknown",
)
#: jobs that ended without producing a result: their whole core-wall time is wasted
FAILED_STATUSES = frozenset(
    {"failed", "removed", "cancelled", "timeout", "out_of_memory", "node_fail", "preempted", "held"}
)


class EfficiencyInputError(StoradviseError):
    """An accounting file that cannot be read at all (one line: file, line, what)."""

    def __init__(self, path: str, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class RowError(ValueError):
    """One row (or ad, or report) that cannot be turned into a record; counted, never dropped."""


@dataclass(slots=True)
class ParseIssue:
    file: str
    line: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass(slots=True)
class JobRecord:
    job_id: str
    host: str | None
    cores: float | None
    cpu_seconds: float | None
    wall_seconds: float | None
    status: str
    exit_code: int | None = None
    events: int | None = None
    #: where it came from
    source: str | None = None
    line: int | None = None
    #: MB read by the job where the export says (HTCondor CMSSW chirp, FJR storage statistics)
    read_mb: float | None = None
    #: synchronous remote read operations (FJR), for the latency what-if; CMS Chirp read + readv ops
    read_ops: int | None = None
    #: seconds the job spent reading (CMS Chirp ChirpCMSSWReadTimeMsecs, FJR read totalMsecs)
    read_seconds: float | None = None
    #: the storage the job read from (a CMS site or XRootD site name; cms_chirp, fjr)
    storage: str | None = None
    #: free-form extra facts from the source format (kept small)
    extra: dict[str, Any] | None = None

    @property
    def efficiency(self) -> float | None:
        return efficiency(self.cpu_seconds, self.wall_seconds, self.cores)

    @property
    def read_mb_per_s(self) -> float | None:
        """The job's mean read rate over its wall time (MB/s), where the accounting carries its volume."""
        if self.read_mb is None or not self.wall_seconds or self.wall_seconds <= 0:
            return None
        return self.read_mb / self.wall_seconds

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    def to_dict(self) -> dict[str, Any]:
        eff = self.efficiency
        d: dict[str, Any] = {
            "job_id": self.job_id,
            "host": self.host,
            "cores": self.cores,
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
            "efficiency": None if eff is None else round(eff, 6),
            "status": self.status,
            "exit_code": self.exit_code,
            "events": self.events,
        }
        if self.read_mb is not None:
            d["read_mb"] = self.read_mb
        if self.read_ops is not None:
            d["read_ops"] = self.read_ops
        if self.read_seconds is not None:
            d["read_seconds"] = self.read_seconds
        rate = self.read_mb_per_s
        if rate is not None:
            d["read_mb_per_s"] = round(rate, 6)
        if self.storage is not None:
            d["storage"] = self.storage
        if self.source is not None:
            d["source"] = self.source
            d["line"] = self.line
        if self.extra:
            d.update({k: v for k, v in self.extra.items() if k not in d})
        return d


def efficiency(cpu: float | None, wall: float | None, cores: float | None) -> float | None:
    """CPU / (wall x cores); None where any part is unknown or the denominator is zero."""
    if cpu is None or wall is None or cores is None or wall <= 0 or cores <= 0:
        return None
    return cpu / (wall * cores)


def machine_name(remote_host: str | None) -> str | None:
    """HTCondor ``slot1_6@glidein_99879_43933758@notch009.int.chpc.utah.edu`` -> the machine.

    Slot and glidein prefixes are ``...@`` segments; the machine is the part after the last
    ``@``. A sinful string (``<10.0.0.1:9618?...>``) has no name and yields None.
    """
    if not remote_host or not isinstance(remote_host, str):
        return None
    name = remote_host.rsplit("@", 1)[-1].strip()
    if not name or name.startswith("<"):
        return None
    return name


def short_host(name: str) -> str:
    """First DNS label: ``wn042.example.org`` -> ``wn042`` (site files use short names)."""
    return name.split(".", 1)[0]


_DASH_NUM_TAIL = re.compile(r"(?:[-_]\d+)+$")
_NUM_TAIL = re.compile(r"[-_]?\d+$")


def host_prefix(name: str) -> str:
    """The node-group guess without a site file, from the short name: a tail of dash-separated
    numbers is removed (``CRUSH-OSG-C7-10-5-219-52`` -> ``CRUSH-OSG-C7``), else trailing digits
    (``wn042`` -> ``wn``, ``notch009`` -> ``notch``)."""
    s = short_host(name)
    out = _DASH_NUM_TAIL.sub("", s)
    if out == s:
        out = _NUM_TAIL.sub("", s)
    return out or s
