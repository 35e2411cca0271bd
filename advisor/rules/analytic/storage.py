"""Storage-system analytic rules: GPFS persisted-vs-active drift, SAN logical-drive cache
settings, XCache watermarks and occupancy, Ceph FUSE mounts.

The core logic of each rule is a plain function over facts dicts (tested directly in
tests/probes/test_*.py); the registered functions only walk the hosts and build findings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from advisor.model.findings import Finding, FindingStatus
from advisor.rules.context import RuleContext, analytic_rule
from advisor.util.shipped_code import canonical
from advisor.util.units import parse_size_bytes

MMLSCONFIG = "gpfs.mmlsconfig"
MMDIAG = "gpfs.mmdiag"
SAN = "san.logical_drives"
XCONF = "xcache.config"
XLOG = "xcache.log"
XUSAGE = "xcache.usage"
MOUNTS = "mounts"
CEPH_CONF = "ceph.client_conf"

#: default attributes compared persisted vs active (profile var ``gpfs_drift_attributes``)
DEFAULT_DRIFT_ATTRIBUTES = [
    "pagepool", "maxblocksize", "prefetchThreads", "worker1Threads", "workerThreads", "maxMBpS",
    "maxFilesToCache", "maxStatCache", "nsdMaxWorkerThreads", "nsdMinWorkerThreads",
    "ignorePrefetchLUNCount", "nsdbufspace", "maxReceiverThreads",
]


# ------------------------------------------------------------------------------------------
# GPFS: persisted (mmlsconfig) vs active (mmdiag --config -Y)
# ------------------------------------------------------------------------------------------


def _same_value(persisted: dict[str, Any], active: dict[str, Any]) -> bool | None:
    """True/False when comparable, None when the unit can't be decided (suffixed counts)."""
    pv, av = str(persisted.get("value", "")).strip(), str(active.get("value", "")).strip()
    if persisted.get("bytes") is not None:
        ab = active.get("bytes")
        if ab is None:
            try:
                ab = parse_size_bytes(av)
            except ValueError:
                return None
        return int(persisted["bytes"]) == int(ab)
    bp, ba = canonical.bool_value(pv), canonical.bool_value(av)
    if (bp is not None and not pv.isdigit()) or (ba is not None and not av.isdigit()):
        # a boolean word on either side (yes, TRUE, Enabled ...): compared as booleans (storadvise_canonical)
        return bp == ba if bp is not None and ba is not None else pv.lower() == av.lower()
    if pv.isdigit() and av.isdigit():
        return int(pv) == int(av)
    if pv[:-1].isdigit() and pv[-1:].upper() in ("K", "M", "G") and av.isdigit():
        mult = {"K": 1, "M": 2, "G": 3}[pv[-1].upper()]
        n = int(pv[:-1])
        if int(av) in (n * 1000**mult, n * 1024**mult):
            return True
        return None  # K/M on counts not verified (FORMATS §1.1 rule 4): don't claim drift
    return pv.lower() == av.lower()


def gpfs_drift(persisted: dict[str, Any], active: dict[str, Any], attributes: list[str]) -> list[dict[str, Any]]:
    """Attributes whose effective persisted value differs from the active daemon value."""
    eff = persisted.get("effective") or {}
    act = active.get("active") or {}
    out = []
    for attr in attributes:
        p, a = eff.get(attr), act.get(attr)
        if p is None or a is None or p.get("value") is None:  # unknown persisted value: no drift claimed
            continue
        if _same_value(p, a) is False:
            out.append({"attribute": attr, "persisted": p.get("value"), "persisted_bytes": p.get("bytes"),
                        "active": a.get("value"), "line": p.get("line"), "scope": p.get("scope")})
    return out


@analytic_rule("GPFS-RESTART-PENDING")
def gpfs_restart_pending(ctx: RuleContext) -> Iterator[Finding]:
    attributes = list(ctx.vars.get("gpfs_drift_attributes") or DEFAULT_DRIFT_ATTRIBUTES)
    for host in ctx.hosts():
        persisted, active = ctx.facts(host, MMLSCONFIG), ctx.facts(host, MMDIAG)
        if persisted is None or active is None:
            yield from ctx.missing(host, MMLSCONFIG if persisted is None else MMDIAG)
            continue
        drift = gpfs_drift(persisted, active, attributes)
        if not drift:
            yield ctx.finding(host.name, FindingStatus.passed, observed="persisted == active",
                              expected="persisted == active")
            continue
        for d in drift:
            yield ctx.finding(
                host.name, FindingStatus.fail, subject=d["attribute"],
                observed={"persisted": d["persisted"], "active": d["active"]},
                expected=f"active {d['attribute']} = persisted {d['persisted']}",
                evidence=[f"{host.name}: mmlsconfig: {d['line']}",
                          f"{host.name}: mmdiag --config: {d['attribute']} {d['active']}"],
                values={"persisted": d["persisted"]},
            )


# ------------------------------------------------------------------------------------------
# SAN logical drives
# ------------------------------------------------------------------------------------------

#: rule id -> (facts field, profile variable, default expected value, SMcli set keyword, label)
SAN_SETTINGS: dict[str, tuple[str, str, Any, str, str]] = {
    "SAN-READ-CACHE": ("read_cache", "san_read_cache", True, "readCacheEnabled", "read cache"),
    "SAN-READ-PREFETCH": ("read_prefetch", "san_read_prefetch", True, "cacheReadPrefetch", "dynamic cache read prefetch"),
    "SAN-WRITE-CACHE": ("write_cache", "san_write_cache", True, "writeCacheEnabled", "write cache"),
    "SAN-WRITE-CACHE-NO-BATTERY": ("write_cache_without_batteries", "san_write_cache_without_batteries", False,
                                   "cacheWithoutBatteryEnabled", "write cache without batteries"),
    "SAN-MODIFICATION-PRIORITY": ("modification_priority", "san_modification_priority", "low",
                                  "modificationPriority", "modification priority"),
}
_LABEL_KEYS = {
    "read_cache": ("read cache",),
    "read_prefetch": ("dynamic cache read prefetch", "cache read prefetch", "read ahead multiplier", "cache read ahead multiplier"),
    "write_cache": ("write cache",),
    "write_cache_without_batteries": ("write cache without batteries", "cache without battery"),
    "modification_priority": ("modification priority",),
}


def _as_bool(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "on", "off"):
        return v.strip().lower() in ("true", "yes", "on")
    return v


def _smcli_value(v: Any) -> str:
    return ("TRUE" if v else "FALSE") if isinstance(v, bool) else str(v)


def san_check(drives: dict[str, Any], field: str, expected: Any) -> list[dict[str, Any]]:
    """Per drive: ``{drive, observed, ok, line}``; drives without the setting are left out."""
    out = []
    for name, d in sorted(drives.items()):
        observed = d.get(field)
        if observed is None:
            continue
        ok = (str(observed).lower() == str(expected).lower()) if not isinstance(expected, bool) else observed is expected
        lines = d.get("lines") or {}
        line = next((lines[k] for k in _LABEL_KEYS.get(field, ()) if k in lines), None)
        if line is None:
            line = next((v for k, v in lines.items() if field.split("_")[0] in k), f"{field}: {observed}")
        out.append({"drive": name, "observed": observed, "ok": ok, "line": line})
    return out


#: profile variable that opts in to switching the write cache on where it is not protected
SAN_UNPROTECTED_OPT_IN = "san_write_cache_unprotected_ok"


def write_cache_risk(drive: dict[str, Any]) -> str | None:
    """What switching the write cache on would put at risk on this drive; None when it is protected
    (write-cache mirroring reported on, write cache without batteries reported off)."""
    if drive.get("write_cache_without_batteries") is True:
        return ("write cache without batteries is enabled: acknowledged writes still in the controller cache "
                "are lost on a power failure")
    mirroring = drive.get("write_cache_mirroring")
    if mirroring is False:
        return ("write-cache mirroring is off: acknowledged writes still in one controller's cache are lost if that "
                "controller fails (dual-controller array)")
    if mirroring is None:
        return ("write-cache mirroring is not reported: whether acknowledged writes survive a controller failure "
                "is unknown")
    return None


def _controllers(ctx: RuleContext, site_host: Any) -> str:
    """The controllers SMcli addresses for a host, as its probe names them (``san_controllers``)."""
    found = {**(ctx.site.vars if ctx.site else {}), **(site_host.vars if site_host else {})}.get("san_controllers")
    return " ".join(str(c) for c in found or []) or "<controllers>"


def _san_rule(rule_id: str):
    field, var, default, keyword, label = SAN_SETTINGS[rule_id]

    def run(ctx: RuleContext) -> Iterator[Finding]:
        expected = _as_bool(ctx.vars.get(var, default))
        by_name = ctx.site.by_name() if ctx.site else {}
        for host in ctx.hosts():
            facts = ctx.facts(host, SAN)
            if facts is None:
                yield from ctx.missing(host, SAN)
                continue
            results = san_check(facts.get("drives") or {}, field, expected)
            controllers = _controllers(ctx, by_name.get(host.name))
            if not results:
                yield ctx.finding(host.name, FindingStatus.not_applicable,
                                  message=f"no logical drive reports '{label}'")
                continue
            drives = facts.get("drives") or {}
            for r in results:
                status = FindingStatus.passed if r["ok"] else FindingStatus.fail
                risk = write_cache_risk(drives.get(r["drive"]) or {}) if field == "write_cache" and expected is True else None
                if not r["ok"] and risk and _as_bool(ctx.vars.get(SAN_UNPROTECTED_OPT_IN, False)) is not True:
                    # a change that can lose data is never planned unless the profile opts in
                    yield ctx.finding(
                        host.name, status, subject=r["drive"], observed=r["observed"], expected=expected,
                        evidence=[f"{host.name}: {r['drive']}: {r['line']}"], plannable=False,
                        remediation_text=(f"Not planned: {risk}. Switch the write cache on only with mirroring and "
                                          f"battery protection, or set {SAN_UNPROTECTED_OPT_IN}: true in the site's "
                                          "profile to accept the risk."),
                        message=f"write cache off; switching it on is not planned: {risk}",
                    )
                    continue
                yield ctx.finding(
                    host.name, status, subject=r["drive"], observed=r["observed"], expected=expected,
                    evidence=[f"{host.name}: {r['drive']}: {r['line']}"],
                    values={"target": _smcli_value(expected), "controllers": controllers},
                )

    run.__name__ = "san_" + field
    return analytic_rule(rule_id)(run)


for _rid in SAN_SETTINGS:
    _san_rule(_rid)


# ------------------------------------------------------------------------------------------
# XCache
# ------------------------------------------------------------------------------------------


def xcache_watermarks(cache: dict[str, Any] | None) -> tuple[bool, str, dict[str, Any]]:
    """``(ok, message, observed)`` for pfc.diskusage: present, low < high, both same kind."""
    du = (cache or {}).get("pfc_diskusage")
    if not du:
        return False, "pfc.diskusage is not set (XCache then purges only at its built-in watermarks)", {}
    observed = {"low": du.get("low_raw"), "high": du.get("high_raw")}
    lf, hf, lb, hb = du.get("low_fraction"), du.get("high_fraction"), du.get("low_bytes"), du.get("high_bytes")
    if du.get("high_raw") is None:
        return False, "pfc.diskusage needs a low and a high watermark", observed
    if lf is not None and hf is not None:
        return (lf < hf, "low < high" if lf < hf else "low watermark is not below the high watermark", observed)
    if lb is not None and hb is not None:
        return (lb < hb, "low < high" if lb < hb else "low watermark is not below the high watermark", observed)
    if (lf is None and lb is None) or (hf is None and hb is None):
        return True, "watermarks use variables or units that can't be compared here", observed
    return True, "one watermark is a fraction, the other absolute: compared at run time against the disk size", observed


def xcache_occupancy(usage: dict[str, Any], cache: dict[str, Any] | None, log: dict[str, Any] | None) -> dict[str, Any] | None:
    """Used fraction of the cache space vs the high watermark (active value from the log when
    available, else the configured one). None when no watermark is known."""
    used, total = usage.get("used_bytes"), (usage.get("used_bytes") or 0) + (usage.get("available_bytes") or 0)
    frac = usage.get("used_fraction")
    high_frac, source = None, None
    if log and log.get("diskusage_high_bytes") and (log.get("total_disk_bytes") or 0) > 0:
        high_frac, source = log["diskusage_high_bytes"] / log["total_disk_bytes"], "xrootd log (active)"
    else:
        du = (cache or {}).get("pfc_diskusage") or {}
        if du.get("high_fraction") is not None:
            high_frac, source = du["high_fraction"], "configuration"
        elif du.get("high_bytes") and total:
            high_frac, source = du["high_bytes"] / total, "configuration (absolute)"
    if high_frac is None or frac is None:
        return None
    return {"used_fraction": round(frac, 4), "high_fraction": round(high_frac, 4), "used_bytes": used,
            "total_bytes": total, "above": frac > high_frac, "source": source}


@analytic_rule("XCACHE-WATERMARKS")
def xcache_watermarks_rule(ctx: RuleContext) -> Iterator[Finding]:
    for host in ctx.hosts():
        facts = ctx.facts(host, XCONF)
        if facts is None:
            yield from ctx.missing(host, XCONF)
            continue
        cache = facts.get("cache")
        if cache is None:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message="no XCache instance in the xrootd configuration")
            continue
        ok, message, observed = xcache_watermarks(cache)
        du = cache.get("pfc_diskusage") or {}
        low, high = ctx.vars.get("xcache_low_watermark", 0.90), ctx.vars.get("xcache_high_watermark", 0.95)
        yield ctx.finding(
            host.name, FindingStatus.passed if ok else FindingStatus.fail, observed=observed or None,
            expected={"low": low, "high": high}, message=message,
            evidence=[f"{host.name}: {du['line']}"] if du.get("line") else [],
            values={"target": f"{low} {high}"},
        )


@analytic_rule("XCACHE-SPACE-ABOVE-HWM")
def xcache_space_above_hwm(ctx: RuleContext) -> Iterator[Finding]:
    for host in ctx.hosts():
        usage = ctx.facts(host, XUSAGE)
        if usage is None:
            yield from ctx.missing(host, XUSAGE)
            continue
        conf, log = ctx.facts(host, XCONF), ctx.facts(host, XLOG)
        occ = xcache_occupancy(usage, (conf or {}).get("cache"), log)
        if occ is None:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message="no high watermark known for the cache space")
            continue
        evidence = [f"{host.name}: df: {s.get('line')}" for s in (usage.get("spaces") or {}).values()]
        yield ctx.finding(
            host.name, FindingStatus.fail if occ["above"] else FindingStatus.passed,
            observed=occ["used_fraction"], expected=f"<= {occ['high_fraction']} ({occ['source']})",
            evidence=evidence,
            message=("the cache is above its high watermark: purging is not keeping up, or the cache was resized"
                     if occ["above"] else None),
        )


# ------------------------------------------------------------------------------------------
# Mounts
# ------------------------------------------------------------------------------------------


def ceph_fuse_mounts(mounts: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in (mounts.get("mounts") or []) if m.get("ceph_client") == "fuse"]


@analytic_rule("MOUNT-CEPH-FUSE")
def mount_ceph_fuse(ctx: RuleContext) -> Iterator[Finding]:
    for host in ctx.hosts():
        facts = ctx.facts(host, MOUNTS)
        if facts is None:
            yield from ctx.missing(host, MOUNTS)
            continue
        fuse = ceph_fuse_mounts(facts)
        if not fuse:
            yield ctx.finding(host.name, FindingStatus.passed, observed="no ceph-fuse mount", expected="kernel mounts")
            continue
        possible = facts.get("ceph_kernel_possible")
        conf = ctx.facts(host, CEPH_CONF) or {}
        for m in fuse:
            module = ("a ceph kernel module is available on this host" if possible
                      else "no ceph kernel module found: install it (kernel >= 4.x ships it) to switch"
                      if possible is False else "")
            fstab = kernel_fstab_line(m["mountpoint"], conf.get("mon_host") or [])
            yield ctx.finding(
                host.name, FindingStatus.fail, subject=m["mountpoint"], observed=m["fstype"], expected="ceph (kernel client)",
                evidence=[f"{host.name}: {m['line']}"],
                message=module or None,
                remediation_text=(f"Unmount {m['mountpoint']} (ceph-fuse), put this line in /etc/fstab in place of the "
                                  f"ceph-fuse one and mount it with the kernel client (mount {m['mountpoint']}): {fstab}"),
            )


def kernel_fstab_line(mountpoint: str, mons: list[str]) -> str:
    """The /etc/fstab line of a CephFS kernel mount at ``mountpoint`` (mount.ceph(8): monitors, then ``:/``;
    without them mount.ceph reads mon_host from /etc/ceph/ceph.conf)."""
    point = mountpoint.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
    if any("[" in a or "]" in a or a.startswith(("v1:", "v2:")) for a in mons):
        mons = []  # messenger-v2 address vectors: let mount.ceph read them from ceph.conf
    return f"{','.join(mons)}:/ {point} ceph name=admin,noatime,_netdev 0 0"
