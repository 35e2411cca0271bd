"""A real XCache (xrootd + libXrdPfc, Debian's xrootd-server-plugins) against `cache simulate
--policy xcache` with the same parameters: hit and transfer efficiency within 3 points.

In a network namespace of its own (only ``lo``): an origin xrootd exporting /store, an XCache in
front of it with a private 61 MiB tmpfs disk, watermarks 0.5/0.7, purge every 60 s (XrdPfc's
minimum), files of 1 and 2 MiB read whole with xrdcp. The trace is paced in real time, in three
windows between XrdPfc's purges (t0 = the purge it runs at start): the first fills the disk past
the high watermark -- the purge at t0+60 finds every file opened since the last purge, so
protected; the second re-reads some files and adds new ones -- the purge at t0+120 removes the
oldest files not opened since t0+60; the third re-reads kept and purged files. No read falls near
a purge. The real cache's hits come from its own .cinfo access records (xrdpfc_print -j), taken
before each purge and at the end: an access that fetched nothing from the origin (B_miss =
B_bypass = 0) is a hit; each read is of the whole file. ~2.5 minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from advisor.cache.simulate import SimulateOptions, simulate
from advisor.lab import xrootd_service as xs

from tests.support.lab import require_root

MIB = 1 << 20
DISK = 61 * MIB
LOW, HIGH, INTERVAL = 0.5, 0.7, 60
N_FILES = 40


def _size(i: int) -> int:
    return MIB if i % 2 == 0 else 2 * MIB


def _windows(rng: np.random.Generator) -> list[tuple[float, float, list[int]]]:
    """(start, end, files) in seconds after t0."""
    w1 = list(range(30))
    for _ in range(5):
        w1.insert(int(rng.integers(5, len(w1))), int(rng.integers(0, 20)))
    w2 = [int(x) for x in rng.choice(30, 8, replace=False)] + list(range(30, 36))
    rng.shuffle(w2)
    w3 = [int(x) for x in rng.integers(0, N_FILES, 30)]
    return [(1.0, 30.0, w1), (66.0, 100.0, w2), (126.0, 142.0, w3)]


def _probes_read_the_live_cache(cache: xs.XrootdProcess) -> None:
    """The XCache probes' own scripts, run in the live cache's mount namespace, and their parsers."""
    from probes.probe import ProbeContext
    from probes.xcache import XCacheConfigProbe, XCacheLogProbe, XCacheUsageProbe

    ctx = ProbeContext(host="xcache", roles=["cache"], vars={
        "xcache_config": str(cache.state_dir / "xcache.cfg"), "xcache_log": str(cache.log),
        "xcache_paths": str(cache.state_dir / "cache")})

    def run(probe):
        cp = subprocess.run(["nsenter", "-t", str(cache.pid), "-m", "/bin/sh", "-c", probe.script(ctx)],
                            capture_output=True, text=True, timeout=30)
        assert cp.returncode == 0, cp.stderr
        return probe.parse(cp.stdout)

    conf = run(XCacheConfigProbe())
    inst = conf.model_dump()
    assert "libXrdPfc.so" in str(inst) and "127.0.0.1:21094" in str(inst)
    active = run(XCacheLogProbe())
    assert active.total_disk_bytes == DISK
    assert (active.diskusage_low_bytes, active.diskusage_high_bytes) == (int(LOW * DISK), int(HIGH * DISK))
    assert active.purgeinterval_s == INTERVAL and active.blocksize_bytes == MIB
    usage = run(XCacheUsageProbe())
    assert usage.total_bytes == DISK and usage.used_fraction is not None and usage.used_fraction < LOW


@pytest.mark.netns
def test_real_xcache_matches_simulated_xcache():
    require_root()
    ns = f"saxc{os.getpid() % 100000}"
    # not under pytest's basetemp: pytest resets its root to 0700, and xrootd runs as 'xrootd'
    tmp_path = Path(tempfile.mkdtemp(prefix="storadvise-xcache-test-"))
    subprocess.run(["ip", "netns", "add", ns], check=True)
    procs: list[xs.XrootdProcess] = []
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        data = tmp_path / "origin-data"
        (data / "store").mkdir(parents=True)
        rng = np.random.default_rng(15)
        for i in range(N_FILES):
            (data / "store" / f"f{i}.root").write_bytes(rng.bytes(_size(i)))
        os.chmod(tmp_path, 0o755)
        for p in [data, data / "store", *(data / "store").iterdir()]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        procs.append(xs.start_origin(tmp_path / "origin", data, "127.0.0.1", 21094, netns=ns))
        cache = xs.start_xcache(tmp_path / "xcache", "127.0.0.1:21094", "127.0.0.1", 21095, disk_bytes=DISK,
                                low=LOW, high=HIGH, purge_interval=INTERVAL, netns=ns)
        procs.append(cache)
        end = time.monotonic() + 20
        while not xs.purge_times(cache) and time.monotonic() < end:  # XrdPfc purges once at start
            time.sleep(0.05)
        assert xs.purge_times(cache), "the cache logged no purge at start"
        _probes_read_the_live_cache(cache)
        t0 = time.time()
        log: list[tuple[float, int]] = []
        snaps = []
        for start, stop, files in _windows(rng):
            for j, f in enumerate(files):
                time.sleep(max(0.0, t0 + start + (stop - start) * j / len(files) - time.time()))
                log.append((time.time(), f))
                xs.xrdcp(f"root://127.0.0.1:21095//store/f{f}.root", netns=ns)
            cut = t0 + stop + 2  # before the next purge
            time.sleep(max(0.0, cut - time.time()))
            snaps.append((cut, xs.cache_records(cache)))
        purges = xs.purge_times(cache)
        assert len(purges) >= 3, purges
        # the real cache: each window's accesses from the snapshot taken after it
        acc, lo = [], ""
        for cut, recs in snaps:
            hi = time.strftime("%y%m%d:%H%M%S", time.localtime(cut))
            acc += [(r["file"], a) for r in recs for a in r["accesses"] if lo <= a["attach"] < hi]
            lo = hi
        assert len(acc) == len(log), (len(acc), len(log))
        hit = [a["B_miss"] == 0 and a["B_bypass"] == 0 for _, a in acc]
        size = [_size(int(f.rsplit("/f", 1)[1].split(".")[0])) for f, _ in acc]
        real_hit = sum(hit) / len(acc)
        real_transfer = sum(s for s, h in zip(size, hit) if h) / sum(size)
        # the simulator, same parameters, the reads at the times they were made
        csv = tmp_path / "trace.csv"
        csv.write_text("timestamp,file,size\n" + "".join(f"{t:.3f},/store/f{f}.root,{_size(f)}\n" for t, f in log))
        res = simulate([(str(csv), "csv")], SimulateOptions(capacities=[DISK], policies=["xcache"], high=HIGH,
                                                             low=LOW, purge_interval=INTERVAL))
        sim = res["configurations"][0]
        print(f"real XCache: hit {real_hit:.3f} transfer {real_transfer:.3f}; simulated: hit "
              f"{sim['hit_efficiency']:.3f} transfer {sim['transfer_efficiency']:.3f}; purges {purges}; "
              f"sim {sim['xcache']}")
        assert sim["xcache"]["files_purged"] >= 10 and sim["xcache"]["protected_skipped"] > 0  # both rules at work
        assert sim["xcache"]["not_written_disk_full"] == 0
        assert abs(real_hit - sim["hit_efficiency"]) <= 0.03
        assert abs(real_transfer - sim["transfer_efficiency"]) <= 0.03
    finally:
        for p in reversed(procs):
            p.stop()
        subprocess.run(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(tmp_path, ignore_errors=True)


PLAY = """---
- name: XCache
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: xcache
      vars:
        xcache_state: "{{ state | default('present') }}"
"""


@pytest.mark.netns
@pytest.mark.usefixtures("ansible_playbook")
def test_xcache_role_on_a_real_instance():
    """The xcache Ansible role (real ansible-playbook) changes a live XCache's configuration; after a
    restart the instance runs with it (read back by the xcache.log probe from its own log);
    rollback restores it."""
    require_root()
    from tests.support.ansible import ANSIBLE_PLAYBOOK
    from probes.probe import ProbeContext
    from probes.xcache import XCacheLogProbe

    from tests.support.lab import REPO

    ns = f"saxr{os.getpid() % 100000}"
    tmp = Path(tempfile.mkdtemp(prefix="storadvise-xcache-role-"))
    subprocess.run(["ip", "netns", "add", ns], check=True)
    cache = None
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        os.chmod(tmp, 0o755)
        cache = xs.start_xcache(tmp / "xcache", "127.0.0.1:21094", "127.0.0.1", 21095, disk_bytes=DISK, low=0.90,
                                high=0.95, purge_interval=300, netns=ns)
        cfg = cache.state_dir / "xcache.cfg"

        def active():
            ctx = ProbeContext(host="xcache", roles=["cache"], vars={"xcache_log": str(cache.log)})
            cp = subprocess.run(["sh", "-c", XCacheLogProbe().script(ctx)], capture_output=True, text=True)
            return XCacheLogProbe().parse(cp.stdout)

        before = active()
        assert (before.diskusage_low_bytes, before.purgeinterval_s) == (round(0.90 * DISK), 300)
        (tmp / "play.yml").write_text(PLAY)
        (tmp / "vars.json").write_text(json.dumps({
            "xcache_directives": {"pfc.diskusage": "0.85 0.92 purgeinterval 120", "pfc.prefetch": "8"},
            "xcache_config_file": str(cfg), "xcache_backup_file": str(tmp / "backup" / "xcache.json")}))
        env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
               "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_LOCALHOST_WARNING": "false",
               "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"}

        def play(*args):
            cp = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "play.yml", "-e", "@vars.json", *args],
                                cwd=tmp, capture_output=True, text=True, timeout=300, env=env)
            assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
            return cp.stdout

        out = play()
        assert "changed=1" in out and "restart the xrootd instance" in out
        assert "changed=0" in play()  # idempotent
        cache.restart()
        after = active()
        assert (after.diskusage_low_bytes, after.diskusage_high_bytes) == (round(0.85 * DISK), round(0.92 * DISK))
        assert after.purgeinterval_s == 120 and after.prefetch_blocks == 8
        play("-e", "state=rollback")
        cache.restart()
        back = active()
        assert (back.diskusage_low_bytes, back.purgeinterval_s, back.prefetch_blocks) == (round(0.90 * DISK), 300, 0)
    finally:
        if cache is not None:
            cache.stop()
        subprocess.run(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
