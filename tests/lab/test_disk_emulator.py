"""The lab's disk emulator (advisor/lab/emulators/disks.py) read by the real probes' parsers: what the
lab's failing disk shows is what smartctl, the kernel log and /proc/diskstats show on a real host
(no root needed; the lab test is tests/lab/test_lab_failing_disk.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.lab.emulators import disks
from probes.block import BlockQueueProbe, count_io_errors
from probes.diskio import compute_diskio, parse_diskstats_snapshot
from probes.smart import SmartProbe, parse_smartctl_json


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    disks.setup_state(tmp_path, {
        "st01": disks.host_state("st01", "ata", 4, {"sdc": ["smart", "io_errors", "slow"]}),
        "nv01": disks.host_state("nv01", "nvme", 3, {"nvme1n1": ["smart"]}),
    })
    return tmp_path


def _run(tool, argv, state, host, monkeypatch, capsys):
    monkeypatch.setenv("STORADVISE_LAB_HOST", host)
    rc = disks.main(tool, argv, str(state))
    return rc, capsys.readouterr().out


def test_smartctl_json_of_failing_and_healthy_disks(state, monkeypatch, capsys):
    rc, out = _run("smartctl", ["--json", "-a", "/dev/sdc"], state, "st01", monkeypatch, capsys)
    assert rc == disks.EXIT_DISK_FAILING | disks.EXIT_ERROR_LOG
    h = parse_smartctl_json("sdc", out)
    assert (h.protocol, h.smart_passed, h.reallocated_sectors, h.pending_sectors, h.uncorrectable_sectors,
            h.reported_uncorrect, h.exit_status) == ("ATA", False, 1832, 24, 24, 41, rc)
    rc, out = _run("smartctl", ["--json", "-a", "/dev/sda"], state, "st01", monkeypatch, capsys)
    h = parse_smartctl_json("sda", out)
    assert rc == 0 and h.smart_passed is True and h.reallocated_sectors == 0 and h.temperature_c == 34
    rc, out = _run("smartctl", ["--json", "-a", "/dev/nvme1n1"], state, "nv01", monkeypatch, capsys)
    h = parse_smartctl_json("nvme1n1", out)
    assert (h.protocol, h.media_errors, h.nvme_critical_warning, h.smart_passed) == ("NVMe", 37, 4, False)
    # a device the host does not have: smartctl's open failure, which the probe reports as unreadable
    rc, out = _run("smartctl", ["--json", "-a", "/dev/sdz"], state, "st01", monkeypatch, capsys)
    assert rc == disks.EXIT_OPEN_FAILED and parse_smartctl_json("sdz", out).unreadable


def test_smart_probe_parses_the_emulated_sections(state, monkeypatch, capsys):
    text = ""
    for d in ("sda", "sdb", "sdc", "sdd"):
        _, out = _run("smartctl", ["--json", "-a", f"/dev/{d}"], state, "st01", monkeypatch, capsys)
        text += f"@@section device {d}\n{out}"
    facts = SmartProbe().parse(text + "@@section end\n")
    assert [d for d, h in facts.devices.items() if h.smart_passed is False] == ["sdc"]


def test_dmesg_lines_are_the_kernel_formats_the_probe_counts(state, monkeypatch, capsys):
    rc, out = _run("dmesg", [], state, "st01", monkeypatch, capsys)
    facts = count_io_errors("dmesg", len(out.splitlines()), out.splitlines())
    assert rc == 0 and set(facts.errors_by_device) == {"sdc"} and facts.errors_by_device["sdc"].count == 9
    _, out = _run("dmesg", [], state, "nv01", monkeypatch, capsys)
    assert count_io_errors("dmesg", 0, out.splitlines()).total == 0


def test_diskstats_snapshots_give_the_slow_disk_its_await(state):
    st = json.loads((state / "disks" / "st01.json").read_text())
    first = parse_diskstats_snapshot(disks.diskstats_text(st, 1000.0))
    second = parse_diskstats_snapshot(disks.diskstats_text(st, 1010.0))
    facts = compute_diskio(first, second, 10.0, {d: "" for d in st["disks"]})
    awaits = {d: round(s.await_ms, 1) for d, s in facts.devices.items()}
    assert awaits["sdc"] == 90.0 and all(3.9 < a < 5.0 for d, a in awaits.items() if d != "sdc")
    assert all(s.r_s + s.w_s > 30 for s in facts.devices.values())


def test_sysfs_reads_as_block_queue_facts(state, tmp_path):
    st = json.loads((state / "disks" / "st01.json").read_text())
    root = tmp_path / "sys-block"
    disks.write_sysfs(root, st)
    text = ""
    for d in sorted(p.name for p in root.iterdir()):
        text += f"@@section device {d}\nlink=\n"
        for f in ("read_ahead_kb", "scheduler", "nr_requests", "max_sectors_kb", "max_hw_sectors_kb", "rotational"):
            text += f"{f}={(root / d / 'queue' / f).read_text().strip()}\n"
        text += f"size={(root / d / 'size').read_text().strip()}\n"
        for f in ("queue_depth", "model", "vendor"):
            text += f"{f}={(root / d / 'device' / f).read_text().strip()}\n"
    facts = BlockQueueProbe().parse(text + "@@section end\n")
    sdc = facts.devices["sdc"]
    assert (sdc.scheduler, sdc.nr_requests, sdc.queue_depth, sdc.rotational, sdc.virtual) == ("mq-deadline", 256, 32, True, False)


def test_disks_section_is_checked():
    from advisor.lab.scenario import Scenario

    base = {"name": "d", "switches": [{"name": "core"}],
            "hosts": [{"name": "st01", "roles": ["storage"], "groups": ["servers"], "switch": "core"},
                      {"name": "wn01", "roles": ["worker"], "groups": ["workers"], "switch": "core"}]}
    ok = Scenario.model_validate({**base, "disks": {"hosts": ["servers"], "failing": [{"host": "st01", "disk": "sdc"}]}})
    assert ok.emulations["disks"].failing[0].signs == ["smart", "io_errors", "slow"]
    for bad, why in (({"hosts": ["nowhere"]}, "matches no host"),
                     ({"hosts": ["servers"], "failing": [{"host": "wn01", "disk": "sda"}]}, "has no emulated disks"),
                     ({"hosts": ["servers"], "count": 3, "failing": [{"host": "st01", "disk": "sdd"}]}, "has no disk 'sdd'"),
                     ({"hosts": ["servers"], "count": 2}, "greater than or equal to 3")):
        with pytest.raises(ValueError, match=why):
            Scenario.model_validate({**base, "disks": bad})
    with pytest.raises(ValueError, match="share hosts"):
        Scenario.model_validate({**base, "lustre": {"clients": ["st01"]}, "disks": {"hosts": ["servers"]}})
    with pytest.raises(ValueError, match="share hosts"):
        Scenario.model_validate({**base, "disks": {"hosts": ["servers"]}, "lustre": {"clients": ["st01"]}})
