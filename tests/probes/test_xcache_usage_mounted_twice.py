"""xcache.usage: one file system mounted at two points (``/`` and ``/sysroot``) counts once."""

from __future__ import annotations

import subprocess

import pytest

from probes import get_probe
from probes.probe import ProbeContext

from tests.support.netns import have_root

USAGE = get_probe("xcache.usage")

# df -P -B1 as printed on an image-based system (ostree): the root file system is also mounted at /sysroot.
TWICE = """@@section path /var/cache/xrootd
Filesystem        1-blocks        Used   Available Capacity Mounted on
/dev/vda4      42410704896 30213537792 12197167104      72% /
@@section path /sysroot/ostree/xcache
Filesystem        1-blocks        Used   Available Capacity Mounted on
/dev/vda4      42410704896 30213537792 12197167104      72% /sysroot
@@section path /dev/shm/xcache
Filesystem        1-blocks        Used   Available Capacity Mounted on
tmpfs           8388608000     4096000  8384512000       1% /dev/shm
@@section path /run/xcache
Filesystem        1-blocks        Used   Available Capacity Mounted on
tmpfs           1677721600    20480000  1657241600       2% /run
"""


def test_same_device_at_two_mount_points_counts_once():
    f = USAGE.parse(TWICE)
    assert set(f.spaces) == {"/var/cache/xrootd", "/sysroot/ostree/xcache", "/dev/shm/xcache", "/run/xcache"}
    # /dev/vda4 once; the two tmpfs are distinct file systems and both count
    assert f.total_bytes == 42410704896 + 8388608000 + 1677721600
    assert f.used_bytes == 30213537792 + 4096000 + 20480000


def test_fsid_decides_when_printed():
    text = ("@@section path /a\nFilesystem 1-blocks Used Available Capacity Mounted on\n"
            "overlay 1000 600 400 60% /a\nfsid 1234abcd\n"
            "@@section path /b\nFilesystem 1-blocks Used Available Capacity Mounted on\n"
            "overlay 1000 600 400 60% /b\nfsid 1234abcd\n")
    f = USAGE.parse(text)
    assert f.total_bytes == 1000 and f.used_fraction == 0.6 and f.errors == []


@pytest.mark.root  # a private mount namespace
def test_bind_mount_of_the_cache_counts_once(tmp_path):
    if not have_root():
        pytest.fail("this test needs root (a private mount namespace); CI runs as root")
    a, b = tmp_path / "cache", tmp_path / "alias"
    a.mkdir()
    b.mkdir()
    script = USAGE.script(ProbeContext(host="c", vars={"xcache_paths": [str(a), str(b)]}))
    # a private mount namespace: the bind mount disappears with the process
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                          f"mount --bind {a} {b} && {script}"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    f = USAGE.parse(out.stdout)
    sa, sb = f.spaces[str(a)], f.spaces[str(b)]
    assert sa.size_bytes == sb.size_bytes > 0
    assert f.total_bytes == sa.size_bytes
