"""services.xrootd: list-units + show parsing, the inactive-unit check, and this machine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes import get_probe
from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext, ProbeParseError

SERVICES = Path(__file__).resolve().parents[1] / "fixtures" / "services"
PROBE = get_probe("services.xrootd")


def test_units_and_show():
    f = PROBE.parse((SERVICES / "systemctl-xrootd-units-CONSTRUCTED.txt").read_text())
    assert set(f.units) == {"xrootd@xcache_dca.service", "cmsd@xcache_dca.service", "xrootd@clustered.service"}
    x = f.units["xrootd@xcache_dca.service"]
    assert (x.daemon, x.instance, x.active, x.sub, x.unit_file_state) == ("xrootd", "xcache_dca", "active", "running", "enabled")
    c = f.units["cmsd@xcache_dca.service"]
    assert (c.active, c.result, c.exec_main_status, c.n_restarts) == ("failed", "exit-code", 255, 5)
    assert f.units["xrootd@clustered.service"].active == "inactive"  # bullet stripped
    assert f.not_active == ["cmsd@xcache_dca.service", "xrootd@clustered.service"]
    assert c.line.startswith("cmsd@xcache_dca.service")


def test_errors_and_empty():
    assert PROBE.parse("@@section units\n").units == {}
    with pytest.raises(ProbeParseError, match="Failed to connect"):
        PROBE.parse("@@section units\nFailed to connect to bus: No such file or directory\n")


def test_script_on_this_machine():
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="local"))], capture_output=True, text=True)
    assert out.returncode == 0
    if not os.path.isdir("/run/systemd/system"):
        assert out.stdout.startswith(NOT_APPLICABLE_MARKER)
    else:  # pragma: no cover - on a systemd host the real output must parse
        PROBE.parse(out.stdout)
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="local"))], capture_output=True, text=True,
                         env={"PATH": "/nonexistent"}, executable="/bin/sh")
    assert out.stdout.startswith(NOT_APPLICABLE_MARKER + " systemctl not found")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_raises_only_parse_error(text):
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass
