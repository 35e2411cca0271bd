"""san.logical_drives: both SMcli generations (CONSTRUCTED fixtures: no verbatim capture exists,
FORMATS.md §2), errors, the SAN rules' core logic, scripts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.rules.analytic.storage import san_check
from probes import get_probe
from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext, ProbeParseError

SAN = Path(__file__).resolve().parents[1] / "fixtures" / "san"
PROBE = get_probe("san.logical_drives")


def test_old_generation_logical_drives():
    f = PROBE.parse((SAN / "show-allLogicalDrives-CONSTRUCTED-from-FORMATS-labels.txt").read_text())
    assert f.generation == "logical_drive" and f.completed
    assert list(f.drives) == ["data_raid5_01", "data_raid5_02"]
    d1, d2 = f.drives["data_raid5_01"], f.drives["data_raid5_02"]
    assert (d1.read_cache, d1.write_cache, d1.write_cache_mirroring, d1.write_cache_without_batteries) == (True, True, True, False)
    assert d1.read_prefetch is False and d1.modification_priority == "high"
    assert d1.raid_level == "5" and d1.status == "Optimal" and d1.capacity == "2,725.311 GB" and d1.flush_after == "10.00"
    assert d2.read_cache is False and d2.write_cache_without_batteries is True and d2.read_prefetch is True
    assert d2.modification_priority == "low"
    assert d2.lines["some unknown label"] == "Some unknown label:                   with: a colon"
    assert d2.lines["read cache"].startswith("Read cache:")


def test_new_generation_volumes_without_trailer():
    f = PROBE.parse((SAN / "show-allVolumes-CONSTRUCTED-from-FORMATS-labels.txt").read_text())
    assert f.generation == "volume" and not f.completed
    v1, v2 = f.drives["vol_cms_01"], f.drives["vol_cms_02"]
    assert v1.write_cache is False and v1.read_prefetch is True and v1.modification_priority is None
    assert v2.write_cache is True  # "Enabled (currently suspended)"
    assert v2.status == "Degraded" and v2.raid_level == "6"


def test_sectioned_output_and_errors():
    body = (SAN / "show-allVolumes-CONSTRUCTED-from-FORMATS-labels.txt").read_text()
    text = f"@@section controllers\nctrl-a\nctrl-b\n@@section command\nshow allVolumes;\n@@section output\n{body}\n@@section rc\n0\n"
    f = PROBE.parse(text)
    assert f.controllers == ["ctrl-a", "ctrl-b"] and f.command == "show allVolumes;"
    err = (SAN / "smcli-error-code-12-CONSTRUCTED.txt").read_text()
    with pytest.raises(ProbeParseError, match="error code 12"):
        PROBE.parse(err)
    with pytest.raises(ProbeParseError, match="status 12.*error code 12"):
        PROBE.parse(f"@@section command\nshow allVolumes;\n@@section output\n{err}\n@@section rc\n12\n")
    with pytest.raises(ProbeParseError, match="printed no .Logical Drive name"):
        PROBE.parse("SMcli completed successfully.\n")


def test_rule_logic():
    drives = PROBE.parse((SAN / "show-allLogicalDrives-CONSTRUCTED-from-FORMATS-labels.txt").read_text()).model_dump()["drives"]
    rc = san_check(drives, "read_cache", True)
    assert [(r["drive"], r["ok"]) for r in rc] == [("data_raid5_01", True), ("data_raid5_02", False)]
    assert rc[1]["line"].startswith("Read cache:")
    nb = san_check(drives, "write_cache_without_batteries", False)
    assert [r["ok"] for r in nb] == [True, False]
    assert nb[1]["line"].startswith("Write cache without batteries:")
    mp = san_check(drives, "modification_priority", "low")
    assert [r["ok"] for r in mp] == [False, True]
    wc = san_check(drives, "write_cache", False)  # ifca profile
    assert [r["ok"] for r in wc] == [False, False]
    vols = PROBE.parse((SAN / "show-allVolumes-CONSTRUCTED-from-FORMATS-labels.txt").read_text()).model_dump()["drives"]
    assert san_check(vols, "modification_priority", "low") == []  # label absent: not judged


def test_script_not_applicable_without_controllers_or_tool():
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="m"))], capture_output=True, text=True)
    assert out.stdout.startswith(NOT_APPLICABLE_MARKER) and "san_controllers" in out.stdout
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="m", vars={"san_controllers": ["10.0.0.1", "b; rm -rf /"]}))],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout.startswith(NOT_APPLICABLE_MARKER + " SMcli not found")


def test_script_falls_back_to_allVolumes(tmp_path):
    vols = (SAN / "show-allVolumes-CONSTRUCTED-from-FORMATS-labels.txt")
    tool = tmp_path / "SMcli"
    tool.write_text(
        "#!/bin/sh\necho \"$@\" >> " + str(tmp_path / "calls") + "\n"
        'case "$*" in *allLogicalDrives*) echo "Error 2 - unknown command (error code 2)"; exit 2;; esac\n'
        f"cat {vols}\n"
    )
    tool.chmod(0o755)
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="m", vars={"san_controllers": ["ctl a", "ctl-b"]}))],
                         capture_output=True, text=True, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    f = PROBE.parse(out.stdout)
    assert f.generation == "volume" and f.command == "show allVolumes;"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["ctl a ctl-b -c show allLogicalDrives;", "ctl a ctl-b -c show allVolumes;"]


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_raises_only_parse_error(text):
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["Volume name: v", "Logical Drive name:", "Read cache: Enabled", "Write cache: maybe",
                                 "Modification priority:", "x: y", "SMcli completed successfully.", "@@section output",
                                 "@@section rc", "abc", "Dynamic cache read prefetch: 3", ""]), max_size=20))
def test_parse_structured_noise(lines):
    try:
        PROBE.parse("\n".join(lines))
    except ProbeParseError:
        pass
