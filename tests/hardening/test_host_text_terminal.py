"""Host text never styles a terminal: Rich markup in a probe's stderr is shown as written (no crash,
no style, no link), and control characters (ESC, BEL, a newline) are shown as ``\\x1b``, never sent
raw: in the console report, in ``history show`` of the stored scan, and in ``plan``'s lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

from rich.console import Console

from tests.support.cli import storadvise

HOSTILE = "boom [/red] after \x1b[2J\x1b]0;pwned\x07 [bold red blink]ALL CLEAR[/] [link=http://e.vil]x[/link]"
SHOWN = ("boom [/red] after", "\\x1b[2J\\x1b]0;pwned\\x07", "[bold red blink]ALL CLEAR[/]",
         "[link=http://e.vil]x[/link]")


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """storadvise in a wide colour terminal."""
    return storadvise(*args, cwd=tmp, env={**os.environ, "COLUMNS": "400", "TERM": "xterm-256color", "FORCE_COLOR": "1"})


def _capture(tmp: Path) -> Path:
    cap = tmp / "cap"
    (cap / "hosts" / "node1").mkdir(parents=True)
    (cap / "manifest.json").write_text(json.dumps(
        {"capture_format": 2, "site": {"name": "t", "hosts": [{"name": "node1", "address": "node1"}]}}))
    (cap / "hosts" / "node1" / "network.sysctl.out").write_text("net.ipv4.tcp_sack = 1\n")
    (cap / "hosts" / "node1" / "firewall.err").write_text(HOSTILE + "\n")
    (cap / "hosts" / "node1" / "firewall.json").write_text('{"rc": 1}')
    return cap


def _without_own_styles(text: str) -> str:
    """The output with the report's own SGR colour sequences removed: what is left must hold no ESC."""
    import re
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _assert_shown_as_text(out: str) -> None:
    plain = _without_own_styles(out)
    assert "\x1b" not in plain and "\x07" not in plain, "a raw control character reached the terminal"
    for piece in SHOWN:
        assert piece in plain, (piece, plain[-2000:])
    assert "\x1b]8;" not in out, "host text became a hyperlink"


def test_probe_stderr_with_markup_and_escapes_is_shown_as_text(tmp_path):
    _capture(tmp_path)
    r = _run(tmp_path, "scan", "--from", "cap", "--history", "h.db")
    assert r.returncode == 3, r.stderr  # incomplete (a probe errored), not 1 (internal error)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    _assert_shown_as_text(r.stdout)
    # the stored scan shows the same way
    r2 = _run(tmp_path, "history", "show", "1", "--history", "h.db")
    assert r2.returncode == 0, r2.stderr
    _assert_shown_as_text(r2.stdout)


def test_plan_lines_show_host_text_as_text(tmp_path, monkeypatch):
    from advisor.apply import cli as apply_cli
    from advisor.apply.plan_model import Plan

    buf = io.StringIO()
    monkeypatch.setattr(apply_cli, "out", Console(file=buf, force_terminal=True, width=400))
    monkeypatch.setattr(apply_cli, "err", Console(file=buf, force_terminal=True, width=400))
    the_plan = Plan(site="t", scan_started_at="2026-01-01T00:00:00Z")
    the_plan.manual.append({"rule": "R-1", "hosts": ["node1"], "severity": "high", "subject": None, "text": HOSTILE})
    the_plan.refused.append({"host": "node[/x]", "reason": HOSTILE})
    apply_cli._render_plan(the_plan, tmp_path / "plan")
    out = buf.getvalue()
    _assert_shown_as_text(out)
    assert "node[/x]" in _without_own_styles(out)
