"""What CMS jobs report about themselves through HTCondor Chirp, read from a job ad.

CMSSW's ``CondorStatusService`` (FWCore/Services) and the CRAB/WMAgent wrappers write these
attributes into the job ad while the job runs (``condor_chirp set_job_attr``); ``condor_history``
then carries them (names as in dmwm/cms-htcondor-es ``JobMonitoring.json``):

* ``ChirpCMSSWEvents``: events processed (all cmsRun steps; -1 or absent: not known). This is the
  job length for the efficiency-by-events table.
* ``ChirpCMSSWReadBytes``, ``ChirpCMSSWReadTimeMsecs``: bytes read and time spent reading.
* ``ChirpCMSSWReadOps`` + ``ChirpCMSSWReadVOps``: read and vector-read operations.
* ``ChirpCMSSW_SiteIO``: a list of ``{SiteName, ReadBytes, ReadTimeMS}`` per site read from
  (XRootD site statistics); the storage a job read most from is the site with most bytes.
* ``ChirpCMSSWDone``, ``ChirpCMSSWLastUpdate``, ``ChirpCMSSWTotalFiles``/``ChirpCMSSWFiles``:
  kept as facts of the record (``cmssw_done``, ``cmssw_last_update``, ``cmssw_files``), not used in the arithmetic.

Without ``ChirpCMSSW_SiteIO`` the storage is the CMS site the job ran at
(``MATCH_GLIDEIN_CMSSite``, ``MATCH_EXP_JOB_GLIDEIN_CMSSite``, ``GLIDEIN_CMSSite``, ``JOB_CMSSite``,
``CMSSite``), i.e. the site's own storage element, but only when the ad says the job read data
(``ChirpCMSSWReadBytes`` > 0). When the ad lists where its input data is
(``DESIRED_CMSDataLocations``, comma-separated sites) and the run site is not among them, the job
read its data from elsewhere through the federation (cms-htcondor-es calls it ``InputData:
Offsite``): the storage is then ``offsite:<run site>``. ``storage_from`` says which (``site_io``,
``run_site`` or ``run_site_offsite``).
"""

from __future__ import annotations

from typing import Any, Callable

#: the attributes the CMS facts are read from (``condor_history -attributes``)
CHIRP_ATTRIBUTES = (
    "ChirpCMSSWEvents", "ChirpCMSSWReadBytes", "ChirpCMSSWReadTimeMsecs", "ChirpCMSSWReadOps",
    "ChirpCMSSWReadVOps", "ChirpCMSSW_SiteIO", "ChirpCMSSWDone", "ChirpCMSSWFiles", "ChirpCMSSWTotalFiles",
    "ChirpCMSSWLastUpdate",
)
#: where the job ran, most specific first (CMS glideinWMS ads)
RUN_SITE_ATTRIBUTES = ("MATCH_GLIDEIN_CMSSite", "MATCH_EXP_JOB_GLIDEIN_CMSSite", "GLIDEIN_CMSSite", "JOB_CMSSite", "CMSSite",
                       "DESIRED_CMSDataLocations")
#: a site name as CMS writes them (T2_US_UCSD, UCSDXCACHE, T1_ES_PIC_Disk); anything else is not a name
_MAX_NAME = 64


class CmsIo:
    """The CMS facts of one job ad (None where the ad does not say)."""

    __slots__ = ("events", "read_bytes", "read_seconds", "read_ops", "storage", "storage_from", "done", "files",
                 "last_update")

    def __init__(self) -> None:
        self.events: int | None = None
        self.read_bytes: float | None = None
        self.read_seconds: float | None = None
        self.read_ops: int | None = None
        self.storage: str | None = None
        self.storage_from: str | None = None
        self.done: bool | None = None
        self.files: int | None = None
        self.last_update: int | None = None

    @property
    def empty(self) -> bool:
        return self.events is None and self.read_bytes is None and self.storage is None


def _site_name(v: Any) -> str | None:
    if not isinstance(v, str):
        return None
    v = v.strip()
    if not v or len(v) > _MAX_NAME or v.startswith("/Expr(") or not all(c.isalnum() or c in "_-." for c in v):
        return None
    return v


def _top_site(site_io: Any, num: Callable[[Any], float | None]) -> str | None:
    """The site with most bytes read in ``ChirpCMSSW_SiteIO`` (a list of objects)."""
    if not isinstance(site_io, list):
        return None
    best: tuple[float, str] | None = None
    for entry in site_io:
        if not isinstance(entry, dict):
            continue
        name = _site_name(entry.get("SiteName"))
        mb = num(entry.get("ReadBytes"))
        if name is None or mb is None or mb < 0:
            continue
        if best is None or mb > best[0]:
            best = (mb, name)
    return best[1] if best else None


def cms_io(get: Callable[[str], Any], num: Callable[[Any], float | None]) -> CmsIo:
    """The CMS facts from an ad's attribute getter; ``num`` coerces ClassAd numbers (None: unknown)."""
    out = CmsIo()
    ev = num(get("ChirpCMSSWEvents"))
    if ev is not None and ev >= 0:
        out.events = int(ev)
    rb = num(get("ChirpCMSSWReadBytes"))
    if rb is not None and rb >= 0:
        out.read_bytes = rb
    ms = num(get("ChirpCMSSWReadTimeMsecs"))
    if ms is not None and ms >= 0:
        out.read_seconds = ms / 1000.0
    ops = [num(get(k)) for k in ("ChirpCMSSWReadOps", "ChirpCMSSWReadVOps")]
    if any(o is not None and o >= 0 for o in ops):
        out.read_ops = int(sum(o for o in ops if o is not None and o >= 0))
    done = get("ChirpCMSSWDone")
    if isinstance(done, bool):
        out.done = done
    elif num(done) is not None:
        out.done = bool(num(done))
    files = num(get("ChirpCMSSWFiles"))
    if files is None:
        files = num(get("ChirpCMSSWTotalFiles"))
    if files is not None and files >= 0:
        out.files = int(files)
    last = num(get("ChirpCMSSWLastUpdate"))
    if last is not None and last > 0:
        out.last_update = int(last)
    site = _top_site(get("ChirpCMSSW_SiteIO"), num)
    if site:
        out.storage, out.storage_from = site, "site_io"
    elif out.read_bytes:
        for attr in RUN_SITE_ATTRIBUTES[:-1]:
            site = _site_name(get(attr))
            if site:
                out.storage, out.storage_from = site, "run_site"
                locations = _locations(get("DESIRED_CMSDataLocations"))
                if locations and site not in locations:
                    out.storage, out.storage_from = f"offsite:{site}", "run_site_offsite"
                break
    return out


def _locations(v: Any) -> set[str]:
    """``DESIRED_CMSDataLocations``: a comma-separated string of sites (or a list of them)."""
    items = v.split(",") if isinstance(v, str) else (v if isinstance(v, list) else [])
    return {n for n in (_site_name(x) for x in items) if n}
