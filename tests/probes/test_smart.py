"""disk.smart: smartctl --json per disk (real documents from other projects' fixtures in tests/fixtures/real/disk.smart)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.probe import ProbeContext, ProbeParseError, not_applicable_reason
from probes.smart import SmartProbe

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "disk.smart"
PROBE = SmartProbe()


def test_failing_ata_disk_behind_a_usb_bridge():
    disk = PROBE.parse((REAL / "scrutiny-smart-fail2.txt").read_text()).devices["sdc"]
    assert (disk.smart_passed, disk.reallocated_sectors, disk.pending_sectors, disk.exit_status) == (False, 1975, 8, 216)
    assert disk.unreadable is None  # exit bit 3 (disk failing) does not hide the counters


def test_open_failure_is_unreadable_not_zero_counters():
    doc = {"json_format_version": [1, 0], "smartctl": {"version": [7, 3], "exit_status": 2, "messages": [
        {"string": "Smartctl open device: /dev/sda failed: Permission denied", "severity": "error"}]},
        "device": {"name": "/dev/sda", "info_name": "/dev/sda", "type": "scsi", "protocol": "SCSI"}}
    disk = PROBE.parse(f"@@section device sda\n{json.dumps(doc)}\n@@section end\n").devices["sda"]
    assert disk.unreadable == "Smartctl open device: /dev/sda failed: Permission denied"
    assert disk.reallocated_sectors is None and disk.media_errors is None and disk.smart_passed is None


@pytest.mark.parametrize("text, message", [
    ('@@section device sda\n{"smartctl": {}}\n', "truncated"),
    ("@@section device sda\nsmartctl: command not found\n@@section end\n", "sda"),
    ('@@section device sda\n{"device": {}}\n@@section end\n', "not smartctl --json output"),
    ('@@section device sda\n{"smartctl": {"exit_status": 0}, "nvme_smart_health_information_log": {"media_errors": -1}}\n'
     "@@section end\n", "media_errors"),
    ('@@section device sda\n{"smartctl": {"exit_status": 0}, "ata_smart_attributes": {"table": [{"id": 5, "raw": {"value": "x"}}]}}\n'
     "@@section end\n", "attribute 5"),
    ("junk\n@@section end\n", "unexpected output"),
])
def test_bad_output(text, message):
    with pytest.raises(ProbeParseError, match=message):
        PROBE.parse(text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_parse_raises_only_probe_parse_error(body):
    try:
        PROBE.parse(f"@@section device sda\n{body}\n@@section end\n")
    except ProbeParseError:
        pass


def test_script_runs_smartctl_per_physical_disk(tmp_path):
    """The script with an emulated smartctl (a shell script on PATH printing a real document) on this
    machine's /sys/block: one section per non-virtual disk, parsed back."""
    doc = (REAL / "exporter-ST3500418AS_11.txt").read_text().split("\n", 1)[1].rsplit("@@section end", 1)[0]
    (tmp_path / "doc.json").write_text(doc)
    fake = tmp_path / "smartctl"
    fake.write_text(f"#!/bin/sh\n# emulated smartctl for the test: prints a real smartctl --json document\ncat {tmp_path / 'doc.json'}\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    ctx = ProbeContext(host="localhost", is_local=True)
    out = subprocess.run(["/bin/sh", "-c", PROBE.script(ctx)], capture_output=True, text=True, timeout=60, env=env).stdout
    physical = [d for d in os.listdir("/sys/block")
                if not d.startswith(("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd"))
                and "/devices/virtual/" not in os.readlink(f"/sys/block/{d}")]
    facts = PROBE.parse(out)
    assert sorted(facts.devices) == sorted(d.replace("!", "/") for d in physical)
    assert all(d.reallocated_sectors == 1 for d in facts.devices.values())


def test_script_without_smartctl_on_path(tmp_path):
    out = subprocess.run(["/bin/sh", "-c", PROBE.script(ProbeContext(host="h"))], capture_output=True, text=True,
                         timeout=60, env={"PATH": str(tmp_path)}).stdout
    if any(os.access(f"{d}/smartctl", os.X_OK) for d in ("/usr/sbin", "/sbin")):
        assert not_applicable_reason(out) is None and out.rstrip().endswith("@@section end")  # found in sbin
    else:
        assert not_applicable_reason(out) == "smartctl not found"


def test_virtio_disk_smartctl_cannot_identify_is_unreadable():
    """Captured on the development VM: smartctl 7.3 on /dev/vda exits 1 with its message; no counter is invented."""
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "block" / "smartctl-json-firecracker-vm-virtio.txt").read_text()
    vda = PROBE.parse(text).devices["vda"]
    assert (vda.exit_status, vda.unreadable) == (1, "/dev/vda: Unable to detect device type")
    assert vda.smart_passed is None and vda.reallocated_sectors is None and vda.temperature_c is None
