"""block.queue (sysfs queue tunables) and block.ioerrors (kernel log I/O errors)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes import all_probes
from probes.block import BlockQueueProbe, IoErrorsProbe, disk_of, io_error_device, parse_scheduler
from probes.probe import ProbeContext, ProbeParseError, not_applicable_reason

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "block"
QUEUE = BlockQueueProbe()
IOERRORS = IoErrorsProbe()
CTX = ProbeContext(host="localhost", is_local=True, sample_seconds=0.2)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def run_script(script: str, env: dict[str, str] | None = None) -> str:
    run = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_probes_are_discovered():
    probes = all_probes()
    assert {"block.queue", "block.ioerrors", "block.diskstats"} <= set(probes)
    assert probes["block.ioerrors"].needs_root


# --- block.queue ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, active, offered",
    [
        ("[mq-deadline] kyber bfq none\n", "mq-deadline", ["mq-deadline", "kyber", "bfq", "none"]),
        ("none [mq-deadline] kyber bfq ", "mq-deadline", ["none", "mq-deadline", "kyber", "bfq"]),
        ("[none] mq-deadline kyber bfq", "none", ["none", "mq-deadline", "kyber", "bfq"]),
        ("noop anticipatory deadline [cfq]", "cfq", ["noop", "anticipatory", "deadline", "cfq"]),
        ("none", "none", ["none"]),
        ("", None, []),
    ],
)
def test_scheduler_both_families(line, active, offered):
    assert parse_scheduler(line) == (active, offered)


@pytest.mark.parametrize("line", ["[mq-deadline] [bfq]", "[mq-deadline kyber", "mq-deadline] kyber", "bf@q"])
def test_bad_scheduler_lines(line):
    with pytest.raises(ProbeParseError):
        parse_scheduler(line)


def test_real_capture_from_this_vm():
    facts = QUEUE.parse(fixture("sys-block-firecracker-vm.txt"))
    assert set(facts.devices) == {f"loop{i}" for i in range(8)} | {"vda", "zram0"}
    vda = facts.devices["vda"]
    assert vda.model_dump() == {
        "read_ahead_kb": 8192,
        "scheduler": "mq-deadline",
        "schedulers": ["none", "mq-deadline", "kyber", "bfq"],
        "nr_requests": 256,
        "queue_depth": None,
        "max_sectors_kb": 4096,
        "max_hw_sectors_kb": 2147483647,
        "rotational": True,
        "size_bytes": 536870912 * 512,
        "model": None,
        "vendor": "0x1af4",
        "virtual": False,
    }
    zram = facts.devices["zram0"]
    assert zram.virtual and zram.scheduler is None and zram.schedulers == [] and zram.nr_requests is None
    assert facts.devices["loop3"].virtual and facts.devices["loop3"].scheduler == "none"


def test_old_kernel_cciss_and_virtual_devices():
    facts = QUEUE.parse(fixture("sys-block-centos6-cciss-dm.txt"))
    sda = facts.devices["sda"]
    assert (sda.scheduler, sda.max_sectors_kb, sda.rotational, sda.virtual) == ("cfq", 512, True, False)
    assert (sda.model, sda.vendor, sda.size_bytes) == ("ST2000DM001-1CH1", "ATA", 3907029168 * 512)
    assert "cciss!c0d0" not in facts.devices
    assert facts.devices["cciss/c0d0"].scheduler == "deadline"
    assert facts.devices["cciss/c0d0"].read_ahead_kb == 4096
    for name in ("dm-0", "md0"):
        device = facts.devices[name]
        assert device.virtual and device.scheduler == "none" and device.nr_requests is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("@@section device sda\nread_ahead_kb=128\n", "truncated"),
        ("@@section device sda\nread_ahead_kb=lots\n@@section end\n", "read_ahead_kb is not an integer"),
        ("@@section device sda\nrotational=2\n@@section end\n", "rotational"),
        ("@@section device sda\nqueue_depth=deep\n@@section end\n", "queue_depth is not an integer"),
        ("@@section device sda\nsize=-1\n@@section end\n", "negative"),
        ("@@section device sda\ncat: Permission denied\n@@section end\n", "key=value"),
        ("ls: /sys/block: Permission denied\n@@section end\n", "unexpected output"),
        ("@@section bogus\n@@section end\n", "unexpected section"),
    ],
)
def test_queue_bad_output(text, message):
    with pytest.raises(ProbeParseError, match=message) as info:
        QUEUE.parse(text)
    assert "\n" not in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_queue_parse_raises_only_probe_parse_error(text):
    try:
        QUEUE.parse(text)
    except ProbeParseError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["read_ahead_kb", "scheduler", "rotational", "size", "model", "nr_requests"])), st.text())
def test_queue_parse_on_arbitrary_values(keys, value):
    body = "".join(f"{key}={value}\n" for key in keys)
    try:
        QUEUE.parse(f"@@section device sdz\n{body}@@section end\n")
    except ProbeParseError as exc:
        assert "\n" not in str(exc)


def test_queue_script_runs_on_this_machine():
    facts = QUEUE.parse(run_script(QUEUE.script(CTX)))
    listed = {name.replace("!", "/") for name in os.listdir("/sys/block")}
    assert set(facts.devices) == listed
    for name, device in facts.devices.items():
        assert device.read_ahead_kb is not None, name
        assert device.virtual == os.path.realpath(f"/sys/block/{name.replace('/', '!')}").startswith("/sys/devices/virtual/")


def test_queue_script_reads_values_without_a_process_each(tmp_path):
    """The values are read by the shell (a process per value made block.queue the costliest
    probe of a batch: 56 ms of CPU on a lab host, now 8 ms); the output is what reading each file
    with cat gives, byte for byte. cat runs only for an empty value (and readlink once per device)."""
    import shutil

    log = tmp_path / "calls.log"
    shims = tmp_path / "shims"
    shims.mkdir()
    for tool in ("cat", "readlink"):
        (shims / tool).write_text(f"#!/bin/sh\necho {tool} >>'{log}'\nexec '{shutil.which(tool)}' \"$@\"\n")
        (shims / tool).chmod(0o755)
    env = {"PATH": f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}", "LC_ALL": "C"}
    out = run_script(QUEUE.script(CTX), env)
    devices = os.listdir("/sys/block")
    calls = log.read_text().split() if log.exists() else []
    empty_values = sum(1 for line in out.splitlines() if line.endswith("=") and not line.startswith("link="))
    assert calls.count("readlink") == len(devices)
    assert calls.count("cat") == empty_values
    # the same output as a cat per value, the way the probe read them before
    files = "read_ahead_kb scheduler nr_requests max_sectors_kb max_hw_sectors_kb rotational"
    by_cat = (
        "for d in /sys/block/*; do\n"
        '  [ -e "$d" ] || continue\n'
        '  echo "@@section device ${d##*/}"\n'
        '  printf \'link=%s\\n\' "$(readlink "$d" 2>/dev/null)"\n'
        f"  for f in {files}; do\n"
        '    [ -r "$d/queue/$f" ] && printf \'%s=%s\\n\' "$f" "$(cat "$d/queue/$f" 2>/dev/null)"\n'
        "  done\n"
        '  [ -r "$d/size" ] && printf \'size=%s\\n\' "$(cat "$d/size" 2>/dev/null)"\n'
        "  for f in queue_depth model vendor; do\n"
        '    [ -r "$d/device/$f" ] && printf \'%s=%s\\n\' "$f" "$(cat "$d/device/$f" 2>/dev/null)"\n'
        "  done\n"
        "done\n"
        "echo '@@section end'\n"
    )
    assert out == run_script(by_cat)


# --- block.ioerrors ---------------------------------------------------------------------


def test_dmesg_fixture_counts_errors_per_whole_disk():
    facts = IOERRORS.parse(fixture("dmesg-io-errors.txt"))
    assert facts.source == "dmesg" and facts.log_lines == 1873
    counts = {dev: e.count for dev, e in facts.errors_by_device.items()}
    assert counts == {"ata3.00": 2, "sdb": 6, "sdc": 1, "nvme0n1": 2}  # the EXT4 warning is not counted
    assert facts.total == 11
    sdb = facts.errors_by_device["sdb"]
    assert len(sdb.lines) == 5
    assert sdb.lines[0].startswith("[ 3501.118870] blk_update_request: I/O error, dev sdb, sector 1953120")


def test_journalctl_fixture_old_kernel_formats():
    facts = IOERRORS.parse(fixture("journalctl-io-errors.txt"))
    assert facts.source == "journalctl"
    assert {dev: e.count for dev, e in facts.errors_by_device.items()} == {"ata3.00": 1, "sdd": 2}


@pytest.mark.parametrize(
    "line, device",
    [
        ("[ 9.1] I/O error, dev sda, sector 1234 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2", "sda"),
        ("[ 9.1] critical target error, dev sdq, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "sdq"),
        ("[ 9.1] Buffer I/O error on dev mmcblk0p1, logical block 5, lost async page write", "mmcblk0"),
        ("[ 9.1] Buffer I/O error on dev dm-3, logical block 77, async page read", "dm-3"),
        ("[ 9.1] ata12: failed command: WRITE DMA EXT", "ata12"),
        ("[ 9.1] EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0", None),
        ("[ 9.1] sd 0:0:1:0: [sdb] tag#12 Sense Key : Medium Error [current]", None),
    ],
)
def test_io_error_line_patterns(line, device):
    assert io_error_device(line) == device


def test_partitions_map_to_their_disk():
    assert [disk_of(d) for d in ("sdb1", "sdaa12", "nvme0n1p2", "xvdf3", "md0", "nvme0n1", "dm-0")] == [
        "sdb", "sdaa", "nvme0n1", "xvdf", "md0", "nvme0n1", "dm-0",
    ]  # fmt: skip


def test_unreadable_kernel_log_is_an_error_not_a_pass():
    with pytest.raises(ProbeParseError, match=r"^kernel log not readable: dmesg: .*Operation not permitted"):
        IOERRORS.parse(fixture("kernel-log-unreadable.txt"))


@pytest.mark.parametrize(
    "text, message",
    [
        ("@@section source\ndmesg\n@@section errors\n", "truncated"),
        ("@@section source\ndmesg\n@@section end\n", "incomplete"),
        ("@@section source\nsyslog\n@@section errors\n@@section log-lines\n3\n@@section end\n", "unknown kernel log source"),
        ("@@section source\ndmesg\n@@section errors\n@@section log-lines\nmany\n@@section end\n", "not a number"),
    ],
)
def test_ioerrors_bad_output(text, message):
    with pytest.raises(ProbeParseError, match=message):
        IOERRORS.parse(text)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_ioerrors_parse_raises_only_probe_parse_error(text):
    try:
        IOERRORS.parse(text)
    except ProbeParseError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))))
def test_ioerrors_parse_on_arbitrary_log_lines(lines):
    body = "\n".join(line for line in lines if not line.startswith("@@section "))
    facts = IOERRORS.parse(f"@@section source\ndmesg\n@@section errors\n{body}\n@@section log-lines\n9\n@@section end\n")
    assert facts.total == sum(e.count for e in facts.errors_by_device.values())


def test_ioerrors_script_runs_on_this_machine():
    facts = IOERRORS.parse(run_script(IOERRORS.script(CTX)))
    assert facts.source in ("dmesg", "journalctl")
    assert facts.log_lines > 0


def fake_tools(tmp_path: Path, **scripts: str) -> dict[str, str]:
    """A PATH holding shell stand-ins for dmesg/journalctl plus the real awk, wc, head, ..."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("awk", "head", "cat", "printf"):
        real = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if real.startswith("/"):
            (bindir / tool).symlink_to(real)
    for tool, body in scripts.items():
        path = bindir / tool
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return {"PATH": str(bindir), "LC_ALL": "C"}


def test_script_reports_a_restricted_log(tmp_path):
    env = fake_tools(
        tmp_path,
        dmesg='echo "dmesg: read kernel buffer failed: Operation not permitted" >&2; exit 1',
        journalctl='echo "No journal files were opened due to insufficient permissions." >&2; exit 0',
    )
    with pytest.raises(ProbeParseError, match="^kernel log not readable: dmesg: read kernel buffer failed.*journalctl: No journal"):
        IOERRORS.parse(run_script(IOERRORS.script(CTX), env))


def test_script_falls_back_to_journalctl(tmp_path):
    line = "Mar 02 09:14:07 storage03 kernel: I/O error, dev sdd, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0"
    env = fake_tools(
        tmp_path,
        dmesg='echo "dmesg: read kernel buffer failed: Operation not permitted" >&2; exit 1',
        journalctl=f"echo 'Mar 02 09:14:06 storage03 kernel: Linux version 6.1'; echo '{line}'",
    )
    facts = IOERRORS.parse(run_script(IOERRORS.script(CTX), env))
    assert (facts.source, facts.log_lines, facts.total) == ("journalctl", 2, 1)
    assert facts.errors_by_device["sdd"].lines == [line]


def test_script_not_applicable_without_either_tool(tmp_path):
    env = fake_tools(tmp_path)
    assert not_applicable_reason(run_script(IOERRORS.script(CTX), env)) == "neither dmesg nor journalctl found"


def restricted_kernel_log() -> bool:
    try:
        return Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() == "1"
    except OSError:
        return False


@pytest.mark.skipif(
    os.geteuid() != 0 or not restricted_kernel_log() or not Path("/usr/bin/setpriv").exists(),
    reason="needs root, setpriv and kernel.dmesg_restrict=1 to run the script as an unprivileged user",
)
@pytest.mark.root  # drops to another user
def test_script_as_unprivileged_user_is_an_error():
    run = subprocess.run(
        ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", IOERRORS.script(CTX)],
        capture_output=True, text=True, timeout=30, cwd="/",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with pytest.raises(ProbeParseError, match="^kernel log not readable: dmesg: "):
        IOERRORS.parse(run.stdout)
