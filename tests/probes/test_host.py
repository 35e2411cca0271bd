"""The ``host`` probe against a capture of its script on the CI-kind VM, and for real."""

from __future__ import annotations

import os
import platform
import subprocess

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes import get_probe
from probes.host import HostProbe, parse_os_release
from probes.probe import ProbeContext, ProbeParseError

from tests.support.paths import FIXTURES

CAPTURE = (FIXTURES / "host" / "host-script-debian12-amd-epyc-vm.txt").read_text()
CTX = ProbeContext(host="localhost", is_local=True)


def _memtotal_bytes(text: str) -> int:
    line = next(ln for ln in text.splitlines() if ln.startswith("MemTotal:"))
    return int(line.split()[1]) * 1024


def test_registered_under_its_name():
    assert isinstance(get_probe("host"), HostProbe)


def test_parses_the_vm_capture():
    facts = HostProbe().parse(CAPTURE)
    assert facts.hostname == "vm"
    assert facts.kernel == "6.18.44-fc-v595"
    assert facts.os_name == "Debian GNU/Linux 12 (bookworm)"
    assert facts.os_id == "debian"
    assert facts.os_version == "12"
    assert facts.cpu_model == "AMD EPYC"
    assert facts.cpu_cores == 2
    assert facts.cpu_physical_cores == 2
    assert facts.memory_bytes == _memtotal_bytes(CAPTURE) > 0


def test_physical_cores_unknown_without_topology_lines():
    # arm64 and s390x cpuinfo have no "core id": physical cores cannot be derived
    text = "\n".join(ln for ln in CAPTURE.splitlines() if not ln.startswith(("core id", "physical id")))
    facts = HostProbe().parse(text)
    assert facts.cpu_cores == 2 and facts.cpu_physical_cores is None


def test_hyperthreads_share_a_core():
    # the same capture with both logical CPUs on core 0 (two SMT siblings of one core)
    text = CAPTURE.replace("core id\t\t: 1", "core id\t\t: 0")
    assert HostProbe().parse(text).cpu_physical_cores == 1


def test_os_release_quoting():
    osr = parse_os_release('NAME="AlmaLinux"\nID=almalinux\nVERSION_ID=\'9.4\'\n# comment\nPRETTY_NAME="AlmaLinux 9.4 (Seafoam Ocelot)"\nbroken line\n')
    assert osr == {"NAME": "AlmaLinux", "ID": "almalinux", "VERSION_ID": "9.4", "PRETTY_NAME": "AlmaLinux 9.4 (Seafoam Ocelot)"}


def test_missing_os_release_is_not_an_error():
    start = CAPTURE.index("@@section os-release")
    end = CAPTURE.index("@@section cpuinfo")
    facts = HostProbe().parse(CAPTURE[:start] + CAPTURE[end:])
    assert facts.os_id is None and facts.os_name is None and facts.kernel == "6.18.44-fc-v595"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no 'hostname' section"),
        (CAPTURE[: CAPTURE.index("@@section meminfo")], "no 'meminfo' section"),
        (CAPTURE.replace("MemTotal:", "MemTotalX:"), "no MemTotal"),
        (CAPTURE.replace("processor\t:", "proc\t:"), "no 'processor' entries"),
        (CAPTURE.replace("6.18.44-fc-v595", "uname: write error"), "kernel section"),
        (CAPTURE.replace("vm\n", "vm\nsecond line\n", 1), "hostname section"),
    ],
)
def test_malformed_output_is_a_parse_error(text, message):
    with pytest.raises(ProbeParseError, match=message):
        HostProbe().parse(text)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_raises_only_parse_errors(text):
    try:
        HostProbe().parse(text)
    except ProbeParseError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(CAPTURE.splitlines() + ["@@section cpuinfo", "@@section meminfo", "", "x: y"]), max_size=60))
def test_shuffled_capture_lines_raise_only_parse_errors(lines):
    try:
        HostProbe().parse("\n".join(lines))
    except ProbeParseError:
        pass


def test_script_runs_here_and_parses():
    out = subprocess.run(["sh", "-c", HostProbe().script(CTX)], capture_output=True, text=True, timeout=30, check=True)
    facts = HostProbe().parse(out.stdout)
    assert facts.hostname == platform.node()
    assert facts.kernel == platform.release()
    assert facts.cpu_cores == os.cpu_count()
    assert facts.memory_bytes == psutil.virtual_memory().total


def test_local_text_agrees_with_the_script():
    probe = HostProbe()
    remote = probe.parse(subprocess.run(["sh", "-c", probe.script(CTX)], capture_output=True, text=True, check=True).stdout)
    local = probe.parse(probe.local_text(CTX))
    assert local == remote
