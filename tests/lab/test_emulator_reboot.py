"""Each lab emulation declares its own reboot (advisor/lab/emulation.py ``reboot``): what a reboot of a
host does to the emulated system, from its persisted state. No root: the hooks that touch only the
lab's files run on a host directory made by the emulation's own ``install``; the ones that restart
processes (GPFS, dCache, Lustre, xrootd) are exercised on real labs (test_lab_process_view,
test_reboot_shapes, tests/apply/test_apply_lab_reboot.py)."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.lab.emulation import LabEmulation, lab_emulations
from advisor.lab.emulators import disks
from advisor.lab.emulators.beegfs_lab import EMULATION as BEEGFS, BeegfsEmulation
from advisor.lab.emulators.disks_lab import EMULATION as DISKS
from advisor.lab.emulators.hdfs_lab import EMULATION as HDFS, HdfsEmulation
from advisor.lab.emulators.san_lab import EMULATION as SAN


def _lab(tmp_path: Path, host: str = "st01") -> tuple[Path, Path]:
    state = tmp_path / "emu"
    hdir = tmp_path / "hosts" / host
    hdir.mkdir(parents=True)
    state.mkdir()
    return state, hdir


def test_every_emulation_declares_its_reboot() -> None:
    for section, emu in lab_emulations().items():
        assert type(emu).reboot is not LabEmulation.reboot, f"{section} does not declare what a reboot does"


def test_no_emulation_claims_a_host_that_does_not_carry_it(tmp_path: Path) -> None:
    _state, hdir = _lab(tmp_path)
    for section, emu in lab_emulations().items():
        assert emu.reboot(hdir, "st01") is None, section


def test_disks_reboot_resets_queues_then_applies_the_udev_rule(tmp_path: Path) -> None:
    state, hdir = _lab(tmp_path)
    disks.setup_state(state, {"st01": disks.host_state("st01", "sata", 2, {})})
    DISKS.install(hdir, state)
    q = hdir / "emu" / "disks" / "sys-block"
    # runtime changes (as block_tuning writes them now) on both disks
    (q / "sda" / "queue" / "read_ahead_kb").write_text("8192\n")
    (q / "sdb" / "queue" / "read_ahead_kb").write_text("8192\n")
    (q / "sdb" / "queue" / "scheduler").write_text("none\n")
    # the role's persisted rule names sda only (the text its module writes)
    rule = hdir / "etc" / "udev" / "rules.d" / "60-storadvise-block.rules"
    rule.write_text("# Managed by storadvise (block_tuning)\n"
                    'ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="sda", ATTR{queue/scheduler}="none", '
                    'ATTR{queue/read_ahead_kb}="8192", ATTR{device/queue_depth}="64"\n')
    said = DISKS.reboot(hdir, "st01")
    assert said and "3 udev rule setting(s)" in said, said
    assert (q / "sda" / "queue" / "read_ahead_kb").read_text() == "8192\n"
    assert (q / "sda" / "queue" / "scheduler").read_text() == "mq-deadline kyber bfq [none]\n"
    assert (q / "sda" / "device" / "queue_depth").read_text() == "64\n"
    # the runtime-only change of sdb is gone: the kernel's boot values
    assert (q / "sdb" / "queue" / "read_ahead_kb").read_text() == "4096\n"
    assert (q / "sdb" / "queue" / "scheduler").read_text() == "[mq-deadline] kyber bfq none\n"


def test_udev_rules_kernel_globs_and_refused_scheduler(tmp_path: Path) -> None:
    root = tmp_path / "sys-block"
    disks.write_sysfs(root, disks.host_state("h", "nvme", 2, {}))
    n = disks.apply_udev_rules(root, [
        'ACTION=="add", SUBSYSTEM=="block", KERNEL=="nvme*n1", ATTR{queue/read_ahead_kb}="1024"\n'
        'ACTION=="add", SUBSYSTEM=="block", KERNEL=="nvme0n1", ATTR{queue/scheduler}="cfq"\n'
        '# ACTION=="add", SUBSYSTEM=="block", KERNEL=="nvme1n1", ATTR{queue/read_ahead_kb}="7"\n'])
    assert n == 2
    assert (root / "nvme0n1" / "queue" / "read_ahead_kb").read_text() == "1024\n"
    assert (root / "nvme1n1" / "queue" / "read_ahead_kb").read_text() == "1024\n"
    assert (root / "nvme0n1" / "queue" / "scheduler").read_text() == "[none] mq-deadline kyber bfq\n"


def test_hdfs_reboot_drops_the_runtime_balancer_bandwidth(tmp_path: Path) -> None:
    state, hdir = _lab(tmp_path, "dn01")

    class Sc:
        hosts = []

        def select_all(self, sels):
            return []

    spec = HdfsEmulation(hosts=["dn01"], properties={"dfs.datanode.balance.bandwidthPerSec": "100m"})
    HDFS.setup(state, spec, Sc())
    HDFS.install(hdir, state)
    f = state / "hdfs" / "dn01.json"
    f.write_text(json.dumps({"bandwidth": 12345}))
    said = HDFS.reboot(hdir, "dn01")
    assert said and "DataNode" in said
    assert "bandwidth" not in json.loads(f.read_text())


def test_file_only_systems_say_their_state_is_persisted(tmp_path: Path) -> None:
    state, hdir = _lab(tmp_path, "wn01")
    spec = BeegfsEmulation(clients=["wn01"], mgmtd="mgmt01", settings={"tuneFileCacheType": "none"})
    BEEGFS.setup(state, spec, None)
    BEEGFS.install(hdir, state)
    conf = hdir / "emu" / "beegfs" / "etc" / "beegfs-client.conf"
    text = conf.read_text()
    said = BEEGFS.reboot(hdir, "wn01")
    assert said and "no runtime-only state" in said
    assert conf.read_text() == text
    (hdir / "emu" / "smcli").mkdir(parents=True)
    (hdir / "emu" / "smcli" / "SMcli").write_text("")
    assert "does not reboot" in SAN.reboot(hdir, "wn01")
