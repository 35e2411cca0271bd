"""Disk I/O utilisation (``block.diskstats``): two /proc/diskstats snapshots, iostat's arithmetic.

Layout and formulas: the kernel's
Documentation/admin-guide/iostats.rst (fields 1-17); sysstat ``rd_stats.c:compute_ext_disk_stats()``,
``iostat.c``). Over the interval Δt between the snapshots, per device:

* %util   = Δio_ticks (field 10, ms) / Δt(ms) × 100
* r/s, w/s = Δreads / Δt, Δwrites / Δt; rMB/s, wMB/s = Δsectors × 512 B / 2^20 / Δt
* r_await = Δread_ms / Δreads (0 without reads); w_await likewise; await = Δ(read+write+discard ms)
  / Δ(reads+writes+discards), as sysstat counts them
* aqu-sz  = Δweighted_ms (field 11) / Δt(ms); rareq-sz = Δsectors_read / Δreads / 2 (kB)

**Timestamps.** Each snapshot is preceded by the first field of /proc/uptime, read right
before /proc/diskstats. iostat takes its interval from /proc/uptime too: it is
CLOCK_BOOTTIME, so an NTP step or a manual clock change during the sample cannot distort Δt
(``date +%s.%N`` can jump, and busybox ``date`` has no ``%N``). Its resolution is 10 ms: the
interval is exact to ±0.2 % at the default 5 s.

**Counter wrap.** The kernel prints the ms counters (and, on 32-bit kernels, all counters)
as 32-bit values. A counter smaller in the second snapshot is taken as one 32-bit wrap
(Δ = new + 2^32 - old) when the old value fits in 32 bits; otherwise (a 64-bit counter went
backwards: the device was re-created) its Δ is 0, which is what iostat reports for %util.
A wrap-corrected Δio_ticks larger than the interval (+5 % + 10 ms) is impossible for a real wrap and
is also taken as a reset (Δ 0). Devices present in only one snapshot, or whose major:minor
changed between them, are left out.

**Partitions, virtual devices.** The script also lists /sys/block with each entry's sysfs
link: a device not listed there is a partition (iostat's own test); one linked under
/sys/devices/virtual, or named loop/ram/zram/dm-/md, is ``virtual``. Without that list (a bare pair of snapshots), the 7-column pre-2.6.25
partition form, or a name that is a listed disk's name plus a partition number
(``sda1``, ``nvme0n1p2``, ``cciss/c0d0p1``), marks a partition.

**An odd line.** A line that is not a diskstats record (a column count no kernel prints, a
non-numeric or negative counter) skips that device only, as iostat does; it is named in
``skipped``. A snapshot with no valid line at all is not /proc/diskstats: a parse error.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from probes.block import VIRTUAL_NAME
from probes.probe import NOT_APPLICABLE_MARKER, SampledProbe, ProbeContext, ProbeParseError, section, split_sections, bounded_int

WRAP_32 = 2**32
SECTOR_BYTES = 512
SAMPLE_SECTIONS = ("uptime1", "diskstats1", "uptime2", "diskstats2")
SYSBLOCK_SECTION = "sysblock"
END_SECTION = "end"
#: stats fields, in kernel order (fields 1-17; 12-17 only on newer kernels)
STAT_FIELDS = (
    "reads", "reads_merged", "sectors_read", "read_ms",
    "writes", "writes_merged", "sectors_written", "write_ms",
    "in_flight", "io_ticks", "weighted_ms",
    "discards", "discards_merged", "sectors_discarded", "discard_ms",
    "flushes", "flush_ms",
)  # fmt: skip


class DiskstatsRecord(BaseModel):
    """One /proc/diskstats line. Fields a kernel does not print are 0."""

    major: int
    minor: int
    name: str
    #: the pre-2.6.25 partition line: only reads, sectors_read, writes, sectors_written
    short_form: bool = False
    reads: int = 0
    reads_merged: int = 0
    sectors_read: int = 0
    read_ms: int = 0
    writes: int = 0
    writes_merged: int = 0
    sectors_written: int = 0
    write_ms: int = 0
    in_flight: int = 0
    io_ticks: int = 0
    weighted_ms: int = 0
    discards: int = 0
    discards_merged: int = 0
    sectors_discarded: int = 0
    discard_ms: int = 0
    flushes: int = 0
    flush_ms: int = 0


class DeviceIoStats(BaseModel):
    """iostat -x figures for one device over the interval."""

    util_pct: float
    r_s: float
    w_s: float
    rmb_s: float
    wmb_s: float
    r_await_ms: float
    w_await_ms: float
    await_ms: float
    aqu_sz: float
    rareq_sz_kb: float
    wareq_sz_kb: float
    partition: bool
    #: loop, ram, zram, dm-*, md* or under /sys/devices/virtual (LVM, RAID, ...): its I/O is
    #: also counted on the disks beneath it
    virtual: bool = False


class DiskIoFacts(BaseModel):
    interval_s: float
    devices: dict[str, DeviceIoStats] = Field(default_factory=dict)
    #: lines left out because they are not diskstats records: "diskstatsN: <why>" (the device only)
    skipped: list[str] = Field(default_factory=list)


def parse_diskstats_line(line: str) -> DiskstatsRecord:
    cols = line.split()
    n = len(cols)
    if n != 7 and n != 14 and n != 18 and n < 20:
        raise ProbeParseError(f"diskstats: {n} columns (expected 7, 14, 18 or 20+): {line.strip()[:80]!r}")
    try:
        numbers = [bounded_int(c, "diskstats") for c in cols[3:]]
        major, minor = bounded_int(cols[0], "diskstats"), bounded_int(cols[1], "diskstats")
    except ProbeParseError:
        raise ProbeParseError(f"diskstats: non-numeric field in {line.strip()[:80]!r}") from None
    if min([major, minor, *numbers]) < 0:
        raise ProbeParseError(f"diskstats: negative counter in {line.strip()[:80]!r}")
    if n == 7:
        reads, sectors_read, writes, sectors_written = numbers
        return DiskstatsRecord(
            major=major, minor=minor, name=cols[2], short_form=True, reads=reads,
            sectors_read=sectors_read, writes=writes, sectors_written=sectors_written,
        )  # fmt: skip
    return DiskstatsRecord(major=major, minor=minor, name=cols[2], **dict(zip(STAT_FIELDS, numbers)))


def parse_diskstats_snapshot(text: str, skipped: list[str] | None = None) -> dict[str, DiskstatsRecord]:
    """Parse one /proc/diskstats snapshot into records by device name (``#`` comments skipped).

    With ``skipped``, a malformed line is appended there (its message) and left out; without it, or
    when no line at all is valid, it raises ProbeParseError."""
    records: dict[str, DiskstatsRecord] = {}
    errors: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = parse_diskstats_line(line)
        except ProbeParseError as exc:
            if skipped is None:
                raise
            errors.append(str(exc))
            continue
        if record.name in records:
            raise ProbeParseError(f"diskstats: device {record.name!r} listed twice")
        records[record.name] = record
    if errors and not records:
        raise ProbeParseError(errors[0])
    if skipped is not None:
        skipped.extend(errors)
    return records


def counter_delta(old: int, new: int) -> int:
    """Δ of a kernel counter, with the 32-bit wrap rule in the module docstring."""
    if new >= old:
        return new - old
    if old < WRAP_32 and new < WRAP_32:
        return new + WRAP_32 - old
    return 0



def looks_like_partition(name: str, disks: set[str]) -> bool:
    """``sda1`` of ``sda``, ``nvme0n1p2`` of ``nvme0n1``: a listed disk's name + a partition number."""
    for disk in disks:
        if name != disk and name.startswith(disk):
            rest = name[len(disk):]
            if rest.isdigit() or (disk[-1].isdigit() and rest[:1] == "p" and rest[1:].isdigit()):
                return True
    return False


def compute_device_stats(
    old: DiskstatsRecord, new: DiskstatsRecord, interval_s: float, partition: bool, virtual: bool = False
) -> DeviceIoStats:
    """iostat -x figures between two snapshots of one device, ``interval_s`` seconds apart."""
    d = {f: counter_delta(getattr(old, f), getattr(new, f)) for f in STAT_FIELDS if f != "in_flight"}
    interval_ms = interval_s * 1000.0
    if d["io_ticks"] > interval_ms * 1.05 + 10 and new.io_ticks < old.io_ticks:
        d["io_ticks"] = 0  # a "wrap" longer than the interval: the counter was reset
    ios = d["reads"] + d["writes"] + d["discards"]
    mib = 1024.0 * 1024.0

    def per_io(numerator: int, count: int) -> float:
        return numerator / count if count else 0.0

    return DeviceIoStats(
        util_pct=d["io_ticks"] / interval_ms * 100.0,
        r_s=d["reads"] / interval_s,
        w_s=d["writes"] / interval_s,
        rmb_s=d["sectors_read"] * SECTOR_BYTES / mib / interval_s,
        wmb_s=d["sectors_written"] * SECTOR_BYTES / mib / interval_s,
        r_await_ms=per_io(d["read_ms"], d["reads"]),
        w_await_ms=per_io(d["write_ms"], d["writes"]),
        await_ms=per_io(d["read_ms"] + d["write_ms"] + d["discard_ms"], ios),
        aqu_sz=d["weighted_ms"] / interval_ms,
        rareq_sz_kb=per_io(d["sectors_read"], d["reads"]) / 2.0,
        wareq_sz_kb=per_io(d["sectors_written"], d["writes"]) / 2.0,
        partition=partition,
        virtual=virtual,
    )


def compute_diskio(
    first: dict[str, DiskstatsRecord],
    second: dict[str, DiskstatsRecord],
    interval_s: float,
    whole_disks: dict[str, str] | None = None,
) -> DiskIoFacts:
    """Per-device figures for the devices in both snapshots. ``whole_disks``: the /sys/block
    names (``!`` already turned into ``/``) with their sysfs link; None = decide from the names."""
    if not interval_s > 0:
        raise ProbeParseError(f"diskstats: sample interval is {interval_s} s, expected > 0")
    facts = DiskIoFacts(interval_s=interval_s)
    name_disks = {name for name, rec in second.items() if not rec.short_form}
    for name, new in second.items():
        old = first.get(name)
        if old is None or (old.major, old.minor) != (new.major, new.minor):
            continue
        if whole_disks is not None:
            partition = name not in whole_disks
        else:
            partition = new.short_form or looks_like_partition(name, name_disks)
        link = (whole_disks or {}).get(name, "")
        virtual = bool(VIRTUAL_NAME.match(name)) or "/devices/virtual/" in link
        facts.devices[name] = compute_device_stats(old, new, interval_s, partition, virtual)
    return facts


def parse_uptime(text: str, label: str) -> float:
    fields = text.split()
    try:
        value = float(fields[0])
    except (IndexError, ValueError):
        raise ProbeParseError(f"{label}: expected /proc/uptime, got {text.strip()[:60]!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ProbeParseError(f"{label}: uptime out of range: {fields[0][:30]!r}")
    return value


class DiskstatsProbe(SampledProbe):
    name = "block.diskstats"
    title = "Disk I/O utilisation over a sample interval (iostat -x figures)"
    facts_model = DiskIoFacts

    def script(self, ctx: ProbeContext) -> str:
        seconds = f"{self.sample_seconds(ctx):.3f}".rstrip("0").rstrip(".")
        whole = str(int(-(-self.sample_seconds(ctx) // 1)))  # POSIX sleep only takes integers
        return (
            "if [ ! -r /proc/diskstats ] || [ ! -r /proc/uptime ]; then\n"
            f'  echo "{NOT_APPLICABLE_MARKER} /proc/diskstats or /proc/uptime not readable"; exit 0\n'
            "fi\n"
            + section(SYSBLOCK_SECTION)
            + 'for d in /sys/block/*; do [ -e "$d" ] && printf \'%s %s\\n\' "${d##*/}" "$(readlink "$d")"; done\n'
            + section("uptime1") + "cat /proc/uptime\n"
            + section("diskstats1") + "cat /proc/diskstats\n"
            + f"sleep {seconds} 2>/dev/null || sleep {whole}\n"
            + section("uptime2") + "cat /proc/uptime\n"
            + section("diskstats2") + "cat /proc/diskstats\n"
            + section(END_SECTION)
        )

    def parse(self, text: str) -> DiskIoFacts:
        sections = split_sections(text)
        missing = [s for s in (*SAMPLE_SECTIONS, END_SECTION) if s not in sections]
        if missing:
            raise ProbeParseError(f"block.diskstats output truncated: no {', '.join(missing)} section")
        start = parse_uptime(sections["uptime1"], "uptime1")
        end = parse_uptime(sections["uptime2"], "uptime2")
        skipped1: list[str] = []
        skipped2: list[str] = []
        first = parse_diskstats_snapshot(sections["diskstats1"], skipped1)
        second = parse_diskstats_snapshot(sections["diskstats2"], skipped2)
        if not second:
            raise ProbeParseError("block.diskstats: the second /proc/diskstats snapshot is empty")
        whole_disks = None
        listing = [line.split(None, 1) for line in sections.get(SYSBLOCK_SECTION, "").splitlines() if line.strip()]
        if listing:
            whole_disks = {entry[0].replace("!", "/"): entry[-1] for entry in listing}
        facts = compute_diskio(first, second, round(end - start, 6), whole_disks)
        facts.skipped = [f"diskstats1: {e}" for e in skipped1] + [f"diskstats2: {e}" for e in skipped2]
        return facts
