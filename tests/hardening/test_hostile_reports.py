"""A saved scan is read under limits: one-line errors naming the file and the place.

JSON nested 100,000 deep gave RecursionError as "internal error" in ``report``, ``verify --before``
and ``plan --scan``; a 5,001-digit number gave Python's "Exceeds the limit (4300 digits)". Every
reader of a saved scan now checks nesting (at most 64) and integer digits (at most 24), the limits
host JSON has, and names the file, line and column (advisor/report/saved_json.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.hardening.sysctl_capture import cli, saved_scan

DEEP = "[" * 100_000 + "]" * 100_000


def run(*args, cwd: Path):
    return cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    s = saved_scan(tmp_path_factory.mktemp("saved"))
    assert any(f["changes"] for f in json.loads(s["text"])["findings"] if f["status"] == "fail")
    return s


def _commands(path: Path, saved: dict) -> list[list]:
    return [["report", path, "-o", saved["dir"] / "out.json"],
            ["verify", "--site", saved["site"], "--before", path, "--from", saved["capture"], "--no-history"],
            ["plan", "--site", saved["site"], "--scan", path, "--out-dir", saved["dir"] / f"plan-{path.stem}"]]


def _hostile(saved: dict, name: str, edit) -> Path:
    text = edit(saved["text"])
    assert text != saved["text"]
    p = saved["dir"] / f"{name}.json"
    p.write_text(text)
    return p


def _first_change_target(text: str, value: str) -> str:
    return re.sub(r'("changes": \[\s*\{[^\]]*?"target": )("[^"]*")', lambda m: m.group(1) + value, text, count=1)


HOSTILE = {
    # nesting in a value every reader decodes, and in one only the plan's adapters decode
    "deep-mesh": lambda t: t.replace('"mesh": null', '"mesh": ' + DEEP, 1),
    "deep-target": lambda t: _first_change_target(t, DEEP),
    # a fact leaf whose value is JSON text nested deep, and a leaf with a deep field of its own
    "deep-leaf-value": lambda t: t.replace('"value":"[0]","value_num":null,"type":"array"',
                                           '"value":"' + DEEP + '","value_num":null,"type":"array"', 1),
    "deep-leaf-field": lambda t: t.replace('"value":"[0]","value_num":null,"type":"array"',
                                           '"value":"[0]","value_num":null,"type":"array","x":' + DEEP, 1),
    "digits-target": lambda t: _first_change_target(t, "9" * 5001),
    "digits-400-target": lambda t: _first_change_target(t, "9" * 400),
    "digits-duration": lambda t: re.sub(r'"duration_s": [0-9.]+', '"duration_s": ' + "9" * 5001, t, count=1),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_report_is_a_one_line_error_naming_the_place(saved, name):
    path = _hostile(saved, name, HOSTILE[name])
    for command in _commands(path, saved):
        cp = run(*command, cwd=saved["dir"])
        if command[0] == "plan" and name == "digits-duration":
            # the plan does not read duration_s (its decoder skips what it does not read): no harm, no error
            assert cp.returncode in (0, 3), cp.stderr
            continue
        assert cp.returncode == 1, (command[0], cp.returncode, cp.stderr[-1500:])
        lines = cp.stderr.strip().splitlines()
        assert len(lines) == 1 and "internal error" not in cp.stderr and "Traceback" not in cp.stderr, \
            (command[0], cp.stderr[-1500:])
        assert re.search(re.escape(str(path)) + r"(:\d+:\d+|: hosts\[0\]\.facts\.[a-z.]+(\[\d+\])?:\d+:\d+):", lines[0]), \
            (command[0], lines[0])
        assert ("nested more than 64 deep" if "deep" in name else "digits (at most 24)") in lines[0], (command[0], lines[0])


def test_the_untouched_report_is_read_by_every_command(saved):
    path = saved["dir"] / "clean.json"
    path.write_text(saved["text"])
    for command in _commands(path, saved):
        cp = run(*command, cwd=saved["dir"])
        assert cp.returncode in (0, 2, 3), (command[0], cp.stderr[-1500:])
