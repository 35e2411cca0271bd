"""Caltech's failing disk: one disk's SMART/NVMe counters, its kernel I/O errors and its await against
its peers' on the same host, joined into one finding that names the disk and what the host serves
from it (its mount points, the host's storage roles and running XRootD units)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.rules.analytic.diskio import DISKSTATS, await_limits, busy_devices, outlier_settings
from advisor.model.findings import Finding, FindingStatus
from advisor.rules.context import RuleContext, analytic_rule
from probes.block import disk_of

SMART = "disk.smart"
IOERRORS = "block.ioerrors"
MOUNTS = "mounts"
SERVICES = "services.xrootd"
#: SMART/NVMe counters that are zero on a healthy disk
FAILURE_COUNTERS = ("reallocated_sectors", "pending_sectors", "uncorrectable_sectors", "media_errors",
                    "nvme_critical_warning")


def smart_signals(health: dict) -> list[str]:
    """What the disk itself reports as failing (empty: nothing)."""
    out = [f"{k.replace('_', ' ')} {health[k]}" for k in FAILURE_COUNTERS if (health.get(k) or 0) > 0]
    if health.get("smart_passed") is False:
        out.insert(0, "SMART overall health FAILED")
    return out


def served_from(ctx: RuleContext, host, disk: str) -> str:
    """The host's storage service on ``disk``: its mount points there, roles and active XRootD units."""
    mounts = ctx.facts(host, MOUNTS) or {}
    points = sorted({m["mountpoint"] for m in mounts.get("mounts") or []
                     if str(m.get("device", "")).startswith("/dev/") and disk_of(m["device"][5:]) == disk})
    units = sorted(u for u, s in ((ctx.facts(host, SERVICES) or {}).get("units") or {}).items()
                   if s.get("active") == "active")
    parts = [f"mounted at {', '.join(points)}" if points else "no mount point seen"]
    roles = [r for r in host.roles if r != "worker"] or list(host.roles)
    if roles:
        parts.append(f"{'/'.join(roles)} host")
    if units:
        parts.append(f"serving {', '.join(units)}")
    return "; ".join(parts)


@analytic_rule("DISK-FAILING")
def failing_disk(ctx: RuleContext) -> Iterator[Finding]:
    factor, floor_ms, min_iops = outlier_settings(ctx)
    for host in ctx.hosts():
        smart = ctx.facts(host, SMART)
        ioerrors = ctx.facts(host, IOERRORS)
        diskstats = ctx.facts(host, DISKSTATS)
        if smart is None and ioerrors is None:
            yield from ctx.missing(host, SMART)
            continue
        errors = {d: e.get("count", 0) for d, e in ((ioerrors or {}).get("errors_by_device") or {}).items()}
        busy = busy_devices(diskstats or {}, min_iops)
        limits = await_limits(busy, factor, floor_ms)
        slow = {d: (busy[d]["await_ms"], lim, med) for d, (lim, med) in limits.items() if busy[d]["await_ms"] > lim}
        disks = sorted(set((smart or {}).get("devices") or {}) | set(errors) | set(slow))
        if not disks:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message="no disk with SMART data or I/O errors")
            continue
        for disk in disks:
            health = ((smart or {}).get("devices") or {}).get(disk) or {}
            signals = smart_signals(health)
            evidence = [f"{host.name}: {disk} {s}" for s in signals]
            if errors.get(disk):
                evidence.append(f"{host.name}: {disk} kernel I/O errors {errors[disk]}")
                evidence += [f"{host.name}: {line}" for line in (ioerrors["errors_by_device"][disk].get("lines") or [])[:2]]
            if disk in slow:
                ms, lim, med = slow[disk]
                evidence.append(f"{host.name}: {disk} await {ms:.1f} ms > {lim:.1f} ms ({factor:g} x peers' median {med:.1f} ms)")
            # the disk says it fails, or the kernel saw its errors and it is slower than its peers
            failing = bool(signals) or (bool(errors.get(disk)) and disk in slow)
            if health.get("unreadable") and not failing:
                # a virtual or RAID-hidden disk smartctl cannot open says nothing about its health
                yield ctx.finding(host.name, FindingStatus.not_applicable, subject=disk,
                                  message=f"smartctl could not read {disk}: {health['unreadable']}")
                continue
            where = served_from(ctx, host, disk)
            if health.get("temperature_c") is not None:
                evidence.append(f"{host.name}: {disk} temperature {health['temperature_c']} C")
            yield ctx.finding(
                host.name, FindingStatus.fail if failing else FindingStatus.passed, subject=disk,
                observed="; ".join(e.split(f"{disk} ", 1)[1] for e in evidence if f"{disk} " in e) or "healthy",
                expected="no SMART failure counters; not (kernel I/O errors and await far above peers)",
                evidence=evidence,
                message=(f"{disk} on {host.name} is failing ({where})" if failing else None),
                values={"disk": disk, "service": where},
            )
