"""Every output is written atomically and never half (issue 25 case 9): a lone surrogate in a scan
JSON leaves no stray Prometheus temp file, a failed write leaves the old file and no temp file,
and host text cannot add a heading, a link or a cell to PLAN.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.apply.plan_model import Plan
from advisor.apply.project import plan_markdown
from advisor.util.atomic_files import write_atomic
from tests.support.cli import storadvise


def _scan_json(tmp: Path) -> Path:
    cap = tmp / "cap"
    (cap / "hosts" / "node1").mkdir(parents=True)
    (cap / "manifest.json").write_text(json.dumps(
        {"capture_format": 2, "site": {"name": "t", "hosts": [{"name": "node1", "address": "node1"}]}}))
    (cap / "hosts" / "node1" / "firewall.err").write_text("boom\n")
    (cap / "hosts" / "node1" / "firewall.json").write_text('{"rc": 1}')
    r = storadvise("scan", "--from", "cap", "--no-history", "-o", "scan.json", cwd=tmp)
    assert r.returncode == 3, r.stderr
    return tmp / "scan.json"


def test_lone_surrogate_in_a_scan_leaves_no_stray_temp_file(tmp_path):
    scan = _scan_json(tmp_path)
    d = json.loads(scan.read_text())
    d["site"] = "t\udcff-site"  # as json.dumps writes undecodable bytes read with surrogateescape
    d["hosts"][0]["probe_messages"]["firewall"] = "bad \udc80 bytes"
    scan.write_text(json.dumps(d))
    out = tmp_path / "prom"
    out.mkdir()
    r = storadvise("report", str(scan), "--prometheus", str(out / "s.prom"), "--junit", str(out / "s.xml"),
             "--html", str(out / "s.html"), cwd=tmp_path)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []
    if r.returncode == 0:
        assert "t\\\\udcff-site" in (out / "s.prom").read_text()
    else:
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1


def test_failed_write_keeps_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "new \udcff text")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]
    write_atomic(target, "new\n", mode=0o600)
    assert target.read_text() == "new\n" and (target.stat().st_mode & 0o777) == 0o600


def test_plan_markdown_keeps_host_text_on_its_line(tmp_path):
    plan = Plan(site="t", scan_started_at="2026-01-01T00:00:00Z")
    plan.manual.append({"rule": "R-1", "hosts": ["node1"], "severity": "high", "subject": "s\n# Subject",
                        "text": "fix it\n\n## Injected heading\n[click](http://e.vil) | cell <script>x</script>"})
    plan.refused.append({"host": "node1", "reason": "down\n- injected item"})
    plan.notices.append("note\r\n## Another")
    md = plan_markdown(plan, tmp_path / "p")
    headings = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert all("Injected" not in h and "Another" not in h and "Subject" not in h for h in headings), headings
    assert not any(ln.startswith("- injected") for ln in md.splitlines())
    assert "\\\\x0a\\\\x0a## Injected heading" in md  # visible, not a line break
    assert "](http" not in md.replace("\\](http", "") and "<script>" not in md
    assert "\\| cell" in md
