"""block.diskstats: /proc/diskstats parsing and iostat -x arithmetic."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.diskio import (
    WRAP_32,
    DiskstatsProbe,
    compute_diskio,
    counter_delta,
    parse_diskstats_snapshot,
)
from probes.probe import ProbeContext, ProbeParseError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SYSSTAT_DISKSTATS = FIXTURES / "samples" / "proc-diskstats-sysstat-tests-root6.txt"
PROBE = DiskstatsProbe()


def fixture(name: str) -> str:
    return (FIXTURES / "diskio" / name).read_text()


def pair(first: str, second: str, start: float = 100.0, end: float = 105.0, sysblock: str | None = None) -> str:
    """The probe's output for two snapshots taken at uptimes ``start`` and ``end``."""
    head = f"@@section sysblock\n{sysblock}\n" if sysblock is not None else ""
    return (
        f"{head}@@section uptime1\n{start:.2f} 1.00\n@@section diskstats1\n{first}\n"
        f"@@section uptime2\n{end:.2f} 2.00\n@@section diskstats2\n{second}\n@@section end\n"
    )


# --- snapshot parsing -------------------------------------------------------------------


def test_sysstat_fixture_parses_every_line_form():
    records = parse_diskstats_snapshot(SYSSTAT_DISKSTATS.read_text())
    assert len(records) == 20
    sda = records["sda"]
    assert (sda.major, sda.minor) == (8, 0)
    assert (sda.reads, sda.reads_merged, sda.sectors_read, sda.read_ms) == (49601, 2822, 3195498, 623970)
    assert (sda.writes, sda.sectors_written, sda.write_ms) == (12180, 821088, 117109)
    assert (sda.io_ticks, sda.weighted_ms, sda.discards, sda.discard_ms) == (32862, 714408, 100, 100)
    cciss = records["cciss/c0d0"]  # 14 columns: no discard fields
    assert (cciss.writes, cciss.io_ticks, cciss.weighted_ms, cciss.discards) == (5055711, 7365500, 19000180, 0)
    assert records["xvdq"].minor == 4096


def test_twenty_column_line_reads_flush_fields():
    text = fixture("proc-diskstats-firecracker-vm-pair.txt").split("@@section diskstats1\n")[1].split("@@section")[0]
    vda = parse_diskstats_snapshot(text)["vda"]
    assert (vda.major, vda.reads, vda.discards, vda.flushes, vda.flush_ms) == (254, 32488, 3784, 598, 23)


def test_short_partition_form():
    # pre-2.6.25 partition line: reads issued, sectors read, writes issued, sectors written
    rec = parse_diskstats_snapshot("   8    1 sda1 35713 1122730 106304 850432")["sda1"]
    assert rec.short_form
    assert (rec.reads, rec.sectors_read, rec.writes, rec.sectors_written, rec.io_ticks) == (35713, 1122730, 106304, 850432, 0)


@pytest.mark.parametrize(
    "line",
    [
        "   8 0 sda 1 2 3 4 5 6 7 8 9 10",  # 13 columns
        "   8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",  # 19 columns
        "   8 0 sda 1 2 x 4 5 6 7 8 9 10 11",
        "   8 0 sda 1 2 -3 4 5 6 7 8 9 10 11",
        "sda 1 2 3 4 5 6 7 8 9 10 11 12 13",
    ],
)
def test_malformed_lines_raise_parse_error(line):
    with pytest.raises(ProbeParseError):
        parse_diskstats_snapshot(line)


def test_duplicate_device_is_an_error():
    with pytest.raises(ProbeParseError, match="twice"):
        parse_diskstats_snapshot("8 0 sda 0 0 0 0 0 0 0 0 0 0 0\n8 0 sda 0 0 0 0 0 0 0 0 0 0 0")


# --- arithmetic -------------------------------------------------------------------------


def test_matches_sysstat_expected_iostat_x_for_sda():
    """tests/expected.iostat-x, first report, sda: r/s 6.90 rkB/s 222.14 r_await 12.58 rareq-sz 32.21
    w/s 1.69 wkB/s 57.08 w_await 9.61 wareq-sz 33.71 aqu-sz 0.10 %util 0.46 (see fixtures/diskio/README.md)."""
    facts = PROBE.parse(fixture("sysstat-root6-sda-since-boot.txt"))
    assert facts.interval_s == 7192.5
    sda = facts.devices["sda"]
    assert round(sda.r_s, 2) == 6.90
    assert round(sda.rmb_s * 1024, 2) == 222.14
    assert round(sda.r_await_ms, 2) == 12.58
    assert round(sda.rareq_sz_kb, 2) == 32.21
    assert round(sda.w_s, 2) == 1.69
    assert round(sda.wmb_s * 1024, 2) == 57.08
    assert round(sda.w_await_ms, 2) == 9.61
    assert round(sda.wareq_sz_kb, 2) == 33.71
    assert round(sda.aqu_sz, 2) == 0.10
    assert round(sda.util_pct, 2) == 0.46
    # await counts discards as sysstat does: (623970 + 117109 + 100) / (49601 + 12180 + 100)
    assert sda.await_ms == pytest.approx(741179 / 61881)
    assert sda.partition is False
    assert facts.devices["sda1"].partition is True  # not in /sys/block
    assert facts.devices["cciss/c0d0"].partition is False  # sysfs "cciss!c0d0"


def test_hand_computed_example():
    """5 s apart: 500 reads of 8 sectors taking 1000 ms, 250 writes of 64 sectors taking 2500 ms,
    io_ticks +4000 ms, weighted +6000 ms."""
    first = "   8 16 sdb 1000 0 8000 2000 500 0 32000 5000 0 10000 20000"
    second = "   8 16 sdb 1500 0 12000 3000 750 0 48000 7500 2 14000 26000"
    sdb = PROBE.parse(pair(first, second, 100.0, 105.0)).devices["sdb"]
    assert sdb.util_pct == pytest.approx(80.0)  # 4000 ms busy / 5000 ms
    assert sdb.r_s == pytest.approx(100.0) and sdb.w_s == pytest.approx(50.0)
    assert sdb.rmb_s == pytest.approx(4000 * 512 / 2**20 / 5)
    assert sdb.wmb_s == pytest.approx(16000 * 512 / 2**20 / 5)
    assert sdb.r_await_ms == pytest.approx(2.0) and sdb.w_await_ms == pytest.approx(10.0)
    assert sdb.await_ms == pytest.approx(3500 / 750)
    assert sdb.aqu_sz == pytest.approx(1.2)
    assert sdb.rareq_sz_kb == pytest.approx(4.0) and sdb.wareq_sz_kb == pytest.approx(32.0)


def test_idle_device_gives_zeros_not_division_errors():
    line = "   8 32 sdc 7 0 56 3 0 0 0 0 0 4 3"
    sdc = PROBE.parse(pair(line, line)).devices["sdc"]
    assert sdc.model_dump() == {k: (False if k == "partition" else 0.0) for k in sdc.model_dump()}


def test_real_capture_from_this_vm():
    facts = PROBE.parse(fixture("proc-diskstats-firecracker-vm-pair.txt"))
    assert facts.interval_s == pytest.approx(1.0)
    vda = facts.devices["vda"]
    # diskstats deltas: reads 3220, sectors read 410040, io_ticks 456 ms, weighted 485 ms
    assert vda.r_s == pytest.approx(3220.0)
    assert vda.rmb_s == pytest.approx(410040 * 512 / 2**20)
    assert vda.util_pct == pytest.approx(45.6)
    assert vda.aqu_sz == pytest.approx(0.485)
    assert vda.await_ms == pytest.approx((360 + 99 + 27) / (3220 + 235 + 3))
    assert set(facts.devices) == {f"loop{i}" for i in range(8)} | {"vda", "zram0"}
    assert not any(d.partition for d in facts.devices.values())
    # this capture's sysblock list holds names only (an older script): virtual comes from the names
    assert {name for name, d in facts.devices.items() if d.virtual} == {f"loop{i}" for i in range(8)} | {"zram0"}


def test_32bit_counter_wrap():
    # io_ticks and weighted_ms wrapped past 2^32 during the 5 s sample
    first = f"   8 0 sda 100 0 800 50 0 0 0 0 0 {WRAP_32 - 1000} {WRAP_32 - 2000}"
    second = "   8 0 sda 200 0 1600 150 0 0 0 0 0 1500 3000"
    sda = PROBE.parse(pair(first, second)).devices["sda"]
    assert sda.util_pct == pytest.approx(2500 / 5000 * 100)
    assert sda.aqu_sz == pytest.approx(5000 / 5000)
    assert sda.r_s == pytest.approx(20.0)


def test_counter_reset_yields_zero_like_iostat():
    # a 64-bit counter going backwards cannot be a 32-bit wrap; io_ticks "wrapping" by far more
    # than the interval is a reset too: both give 0, as iostat's %util does for a smaller counter
    assert counter_delta(2**40, 5) == 0
    first = "   8 0 sda 5000000000 0 800 50 0 0 0 0 0 900000 900000"
    second = "   8 0 sda 10 0 1600 60 0 0 0 0 0 20 30"
    sda = PROBE.parse(pair(first, second)).devices["sda"]
    assert sda.util_pct == 0.0
    assert sda.r_s == 0.0


def test_devices_in_one_sample_only_are_ignored():
    first = "8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n8 16 sdb 1 0 8 1 0 0 0 0 0 1 1"
    second = "8 0 sda 2 0 16 2 0 0 0 0 0 2 2\n8 32 sdc 1 0 8 1 0 0 0 0 0 1 1\n8 17 sdb 9 0 8 1 0 0 0 0 0 1 1"
    facts = PROBE.parse(pair(first, second))
    assert set(facts.devices) == {"sda"}  # sdc is new; "sdb" changed major:minor: not the same disk


def test_partitions_from_names_without_sysblock_list():
    first = "\n".join(
        f"{mm} {name} 1 0 8 1 0 0 0 0 0 1 1"
        for mm, name in [("259 0", "nvme0n1"), ("259 1", "nvme0n1p1"), ("8 0", "sda"), ("8 1", "sda1"), ("9 0", "md0")]
    )
    facts = PROBE.parse(pair(first + "\n8 2 sda2 4 8 0 0", first + "\n8 2 sda2 5 16 0 0"))
    parts = {name: d.partition for name, d in facts.devices.items()}
    assert parts == {"nvme0n1": False, "nvme0n1p1": True, "sda": False, "sda1": True, "md0": False, "sda2": True}


def test_partitions_from_sysblock_list():
    line = "8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n8 1 sda1 1 0 8 1 0 0 0 0 0 1 1"
    facts = PROBE.parse(pair(line, line, sysblock="sda"))
    assert (facts.devices["sda"].partition, facts.devices["sda1"].partition) == (False, True)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "truncated"),
        (pair("8 0 sda 0 0 0 0 0 0 0 0 0 0 0", "8 0 sda 0 0 0 0 0 0 0 0 0 0 0").replace("@@section end\n", ""), "truncated"),
        (pair("8 0 sda 0 0 0 0 0 0 0 0 0 0 0", "8 0 sda 0 0 0 0 0 0 0 0 0 0 0", 5.0, 5.0), "interval"),
        (pair("8 0 sda 0 0 0 0 0 0 0 0 0 0 0", "8 0 sda 0 0 0 0 0 0 0 0 0 0 0", 9.0, 5.0), "interval"),
        (pair("8 0 sda 0 0 0 0 0 0 0 0 0 0 0", "").replace("5.00 2.00", "x"), "uptime"),
        (pair("8 0 sda 0 0 0 0 0 0 0 0 0 0 0", ""), "empty"),
        (pair("8 0 sda 0 0 0 0 0 0 0 0 0 0 0", "cat: /proc/diskstats: Permission denied"), "columns"),
    ],
)
def test_bad_output_raises_one_line_parse_error(text, message):
    with pytest.raises(ProbeParseError, match=message) as info:
        PROBE.parse(text)
    assert "\n" not in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_raises_only_probe_parse_error(text):
    try:
        PROBE.parse(text)
    except ProbeParseError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=2**64), min_size=11, max_size=11),
    st.lists(st.integers(min_value=0, max_value=2**64), min_size=11, max_size=11),
    st.one_of(st.floats(min_value=-10, max_value=1e6), st.just(float("nan")), st.just(float("inf"))),
)
def test_any_counter_pair_parses_or_raises_parse_error(old, new, end):
    text = pair(f"8 0 sda {' '.join(map(str, old))}", f"8 0 sda {' '.join(map(str, new))}", 0.0, 0.0)
    text = text.replace("@@section uptime2\n0.00", f"@@section uptime2\n{end}")
    try:
        facts = PROBE.parse(text)
    except ProbeParseError:
        return
    assert facts.devices["sda"].util_pct >= 0


def test_compute_diskio_rejects_zero_interval():
    with pytest.raises(ProbeParseError):
        compute_diskio({}, {}, 0.0)


# --- the script, run for real -----------------------------------------------------------


def test_script_runs_on_this_machine():
    ctx = ProbeContext(host="localhost", is_local=True, sample_seconds=0.2)
    run = subprocess.run(["sh", "-c", PROBE.script(ctx)], capture_output=True, text=True, timeout=PROBE.timeout(ctx))
    assert run.returncode == 0, run.stderr
    facts = PROBE.parse(run.stdout)
    assert 0.15 <= facts.interval_s <= 2.0
    assert facts.devices, "this machine has block devices in /proc/diskstats"
    for name, stats in facts.devices.items():
        assert stats.util_pct >= 0 and stats.r_s >= 0 and stats.aqu_sz >= 0
        sysfs = Path("/sys/block") / name.replace("/", "!")
        assert stats.partition == (not sysfs.exists()), name
        if sysfs.exists():
            assert stats.virtual == os.path.realpath(sysfs).startswith("/sys/devices/virtual/"), name


def test_virtual_from_sysfs_links():
    line = "253 0 dm-0 1 0 8 1 0 0 0 0 0 1 1\n8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n43 0 nbd0 1 0 8 1 0 0 0 0 0 1 1"
    sysblock = (
        "dm-0 ../devices/virtual/block/dm-0\n"
        "sda ../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda\n"
        "nbd0 ../devices/virtual/block/nbd0"
    )
    facts = PROBE.parse(pair(line, line, sysblock=sysblock))
    assert {name: d.virtual for name, d in facts.devices.items()} == {"dm-0": True, "sda": False, "nbd0": True}


def test_one_odd_line_skips_that_device_only():
    """A real snapshot (node_exporter's fixture, tests/fixtures/real/block.diskstats) with one line no
    kernel prints (15 columns) added: that device is left out and named, the others are computed."""
    real = (FIXTURES / "real" / "block.diskstats" / "node_exporter-proc-diskstats.since-boot.txt").read_text()
    odd = "   65     144 sdz 1 2 3 4 5 6 7 8 9 10 11 12\n"
    text = real.replace("@@section uptime2", odd.rstrip("\n") + "\n@@section uptime2").replace("@@section end", odd + "@@section end")
    facts = PROBE.parse(text)
    assert "sdz" not in facts.devices and "sda" in facts.devices and len(facts.devices) == 51
    # parse errors are folded to one line with runs of blanks collapsed (probes.probe.ProbeParseError)
    assert facts.skipped == ["diskstats1: diskstats: 15 columns (expected 7, 14, 18 or 20+): '65 144 sdz 1 2 3 4 5 6 7 8 9 10 11 12'",
                             "diskstats2: diskstats: 15 columns (expected 7, 14, 18 or 20+): '65 144 sdz 1 2 3 4 5 6 7 8 9 10 11 12'"]
    with pytest.raises(ProbeParseError, match="15 columns"):
        PROBE.parse("@@section uptime1\n1\n@@section diskstats1\n" + odd + "@@section uptime2\n2\n@@section diskstats2\n" + odd + "@@section end\n")
