"""mounts: fstype classification (ceph kernel vs fuse, gpfs, beegfs, lustre, nfs), escapes,
mountinfo, the Ceph FUSE rule logic, and the real /proc of this machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.rules.analytic.storage import ceph_fuse_mounts
from probes import get_probe
from probes.probe import ProbeContext, ProbeParseError

MOUNTS = Path(__file__).resolve().parents[1] / "fixtures" / "mounts"
PROBE = get_probe("mounts")


def test_storage_mounts_classified():
    text = ("@@section mounts\n" + (MOUNTS / "proc-mounts-storage-CONSTRUCTED.txt").read_text()
            + "@@section filesystems\nnodev\tproc\n\txfs\nnodev\tceph\n@@section ceph-module\nyes loaded\n")
    f = PROBE.parse(text)
    sm = f.storage_mounts
    assert set(sm) == {"/gpfs/gpfs1", "/cephfs", "/mnt/ceph fuse", "/mnt/beegfs", "/lustre", "/home"}
    assert sm["/gpfs/gpfs1"].kind == "parallel"
    assert sm["/cephfs"].ceph_client == "kernel" and sm["/cephfs"].device == "10.0.0.1:6789,10.0.0.2:6789:/"
    assert sm["/mnt/ceph fuse"].ceph_client == "fuse" and sm["/mnt/ceph fuse"].kind == "fuse"
    assert sm["/home"].kind == "network" and "vers=4.2" in sm["/home"].options
    assert sm["/lustre"].fstype == "lustre"
    kinds = {m.mountpoint: m.kind for m in f.mounts}
    assert kinds["/cvmfs/cms.cern.ch"] == "fuse-other" and kinds["/data"] == "local" and kinds["/proc"] == "virtual"
    assert f.kernel_filesystems == ["proc", "xfs", "ceph"]
    assert f.ceph_kernel_possible is True
    fuse = ceph_fuse_mounts(f.model_dump())
    assert [m["mountpoint"] for m in fuse] == ["/mnt/ceph fuse"]


def test_mountinfo_and_raw():
    f = PROBE.parse((MOUNTS / "mountinfo-CONSTRUCTED.txt").read_text())
    assert [(m.mountpoint, m.fstype, m.device) for m in f.mounts] == [
        ("/", "xfs", "/dev/sda2"), ("/mnt/cephfs", "fuse.ceph-fuse", "ceph-fuse")]
    assert "allow_other" in f.mounts[1].super_options and f.ceph_kernel_possible is None
    with pytest.raises(ProbeParseError):
        PROBE.parse("garbage\n")


def test_script_on_this_machine():
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="local"))], capture_output=True, text=True)
    assert out.returncode == 0
    f = PROBE.parse(out.stdout)
    real = Path("/proc/self/mounts").read_text().split()
    assert any(m.mountpoint == "/" for m in f.mounts)
    assert len(f.mounts) >= len([ln for ln in Path("/proc/self/mounts").read_text().splitlines() if ln.strip()]) - 2
    assert f.kernel_filesystems and "proc" in f.kernel_filesystems
    assert real  # /proc/self/mounts was readable here too
    assert f.ceph_kernel_module in (True, False, None)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_raises_only_parse_error(text):
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass
