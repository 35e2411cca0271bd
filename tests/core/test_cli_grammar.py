"""One CLI grammar (docs/cli.md), walked over every command: every --help readable at 80 columns,
-o/--output always a file, --out-dir always a directory, --fail-on wherever a severity decides the
exit code, --profile only a rule profile, and the old names of renamed options still working."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli.root import app

from tests.support.cli import every_command
from tests.support.cli import storadvise

REPO = Path(__file__).resolve().parents[2]


def _options(cmd):
    return [p for p in cmd.params if p.param_type_name == "option"]


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_every_help_at_80_columns_shows_every_option_whole_with_its_help():
    runner = CliRunner()
    problems, seen = [], 0
    for path, cmd, _ctx in every_command():
        r = runner.invoke(app, [*path[1:], "--help"], prog_name="storadvise", env={"COLUMNS": "80"})
        assert r.exit_code == 0, (path, r.output)
        seen += 1
        name, text, flat = " ".join(path), r.output, _squeeze(r.output)
        if "…" in text:
            problems.append(f"{name}: an ellipsis: {text[text.index('…') - 30:text.index('…') + 1]!r}")
        for line in text.splitlines()[1:]:  # a cut command summary ends in '...' (the usage line may)
            if line.rstrip().endswith("..."):
                problems.append(f"{name}: cut: {line.strip()!r}")
        for p in _options(cmd):
            if p.hidden:
                continue
            if not (p.help or "").strip():
                problems.append(f"{name} {'/'.join(p.opts)}: no help text")
                continue
            for opt in p.opts + p.secondary_opts:
                if not re.search(rf"(^|[\s,/]){re.escape(opt)}([\s,=]|$)", text, re.M):
                    problems.append(f"{name}: option {opt} not shown whole")
            if _squeeze(p.help) not in flat:
                problems.append(f"{name} {p.opts[0]}: help not shown whole: {p.help!r}")
    assert seen > 30
    assert problems == []


def test_option_names_mean_one_thing():
    outputs, out_dirs, profiles, fail_on = [], [], [], set()
    for path, cmd, _ in every_command():
        name = " ".join(path)
        for p in _options(cmd):
            if p.hidden:
                continue
            assert "--out" not in p.opts, f"{name}: --out is an old name (now --out-dir or --output), hidden only"
            if "--output" in p.opts or "-o" in p.opts:
                outputs.append((name, p))
            if "--out-dir" in p.opts:
                out_dirs.append((name, p))
            if "--profile" in p.opts:
                profiles.append((name, p))
            if "--fail-on" in p.opts:
                fail_on.add(name)
            assert "--threshold" not in p.opts or "cache" in (p.help or ""), \
                f"{name}: a severity threshold is --fail-on (--threshold: a hidden alias)"
    # -o/--output: always a file, always both spellings
    assert outputs and all(set(p.opts) == {"--output", "-o"} and "FILE" in p.help.upper() for _, p in outputs), \
        [(n, p.opts, p.help) for n, p in outputs]
    assert {n for n, _ in out_dirs} == {"storadvise collect", "storadvise plan"}
    assert all("irectory" in p.help for _, p in out_dirs)
    # --profile: a rule profile, wherever it is shown
    assert profiles and all(set(p.opts) == {"--profile", "-p"} and "rofile" in p.help for _, p in profiles)
    assert {"storadvise scan", "storadvise verify", "storadvise audit", "storadvise history diff"} <= fail_on
    # one what-if: the old spelling is there, hidden
    group = dict((" ".join(p), c) for p, c, _ in every_command())["storadvise efficiency"]
    assert group.commands["whatif"].hidden and not group.commands["what-if"].hidden


def test_what_if_takes_rtts_or_a_scan_and_the_old_spellings_still_work(tmp_path):
    fjr = REPO / "tests" / "fixtures" / "samples" / "cmssw-fjr-performance-WMCore-XrdSiteStatistics.xml"
    new = storadvise("efficiency", "what-if", "--rtt-ms", "150", "--job-report", fjr, "--json")
    old = storadvise("efficiency", "whatif", "--rtt-ms", "150", "--profile", fjr, "--json")
    assert new.returncode == 0 and old.returncode == 0, new.stderr + old.stderr
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert json.loads(new.stdout)["profile"]["origin"] == "fjr"
    r = storadvise("efficiency", "what-if", "--json")
    assert r.returncode == 1 and "--rtt-ms MS (typed) or --scan FILE" in r.stderr and r.stderr.count("\n") == 1
    r = storadvise("efficiency", "what-if", "--rtt-ms", "9", "--scan", tmp_path / "s.json")
    assert r.returncode == 1 and "one of the two" in r.stderr
    r = storadvise("efficiency", "what-if", "--rtt-ms", "9", "--job-report", fjr, "--profile", tmp_path / "other.xml")
    assert r.returncode == 1 and "--profile is the old name of --job-report" in r.stderr
    r = storadvise("efficiency", "what-if", "--rtt-ms", "9", "--source", "se01")
    assert r.returncode == 1 and "--source selects data sources of --scan" in r.stderr


def test_renamed_file_and_directory_options_keep_their_old_names(tmp_path):
    site = tmp_path / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n")
    cap_new, cap_old = tmp_path / "cap", tmp_path / "cap-old"
    assert storadvise("collect", "--site", site, "--out-dir", cap_new, "--sample-seconds", "0.2").returncode == 0
    assert storadvise("collect", "--site", site, "--out", cap_old, "--sample-seconds", "0.2").returncode == 0  # the README's
    assert sorted(p.name for p in cap_new.iterdir()) == sorted(p.name for p in cap_old.iterdir())
    r = storadvise("collect", "--site", site, "--out-dir", tmp_path / "a", "--out", tmp_path / "b")
    assert r.returncode == 1 and "--out is the old name of --out-dir" in r.stderr and r.stderr.count("\n") == 1
    r = storadvise("collect", "--site", site)
    assert r.returncode == 1 and "--out-dir DIR" in r.stderr

    scan = tmp_path / "scan.json"
    r = storadvise("scan", "--from", cap_new, "-o", scan, "--no-history", "--fail-on", "critical")
    assert r.returncode in (0, 2) and json.loads(scan.read_text())["site"] == "here", r.stderr
    for flag, where in (("--out-dir", "fix-new"), ("--out", "fix"), ("--output", "fix-output"), ("-o", "fix-o")):
        r = storadvise("plan", "--site", site, "--scan", scan, flag, tmp_path / where, "--min-severity", "info", "--json")
        assert r.returncode in (0, 3), (flag, r.stderr)
        assert json.loads(r.stdout)["directory"] == str(tmp_path / where) and (tmp_path / where / "PLAN.md").is_file()
    r = storadvise("plan", "--site", site, "--scan", scan)
    assert r.returncode == 1 and "--out-dir DIR" in r.stderr and "Traceback" not in r.stderr

    after = tmp_path / "after.json"
    r = storadvise("verify", "--site", site, "--from", cap_new, "--before", scan, "-o", after, "--no-history",
            "--fail-on", "critical", "--json")
    assert r.returncode in (0, 2), r.stderr
    assert json.loads(after.read_text())["site"] == "here"

    r = storadvise("audit", "--site", site, "--from", cap_new, "--fail-on", "critical", "--no-history", "--json")
    by_new = json.loads(r.stdout)
    r_old = storadvise("audit", "--site", site, "--from", cap_new, "--threshold", "critical", "--no-history", "--json")
    assert r_old.returncode == r.returncode and json.loads(r_old.stdout)["checks"] == by_new["checks"]
    r = storadvise("audit", "--site", site, "--from", cap_new, "--fail-on", "low", "--threshold", "high")
    assert r.returncode == 1 and "--threshold is the old name of --fail-on" in r.stderr

    for flag in ("-o", "--output", "--out"):
        out = tmp_path / f"gen{flag.strip('-')}.yml"
        r = storadvise("lab", "generate", "--seed", "3", flag, out)
        assert r.returncode == 0 and out.read_text().startswith(("name:", "#")), (flag, r.stderr)


def test_plan_table_never_cuts_a_cell_at_80_or_100_columns(tmp_path):
    site = tmp_path / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [storage]}\n")
    cap, scan = tmp_path / "cap", tmp_path / "scan.json"
    assert storadvise("collect", "--site", site, "--out-dir", cap, "--sample-seconds", "0.2").returncode == 0
    storadvise("scan", "--from", cap, "--no-history", "-o", scan)
    r = storadvise("plan", "--site", site, "--scan", scan, "--out-dir", tmp_path / "j", "--min-severity", "info", "--json")
    changes = json.loads((tmp_path / "j" / "plan.json").read_text())["changes"]
    assert changes, "the local host has settings a plan changes (e.g. the TCP buffer maxima)"
    for columns in ("80", "100"):
        out = tmp_path / f"p{columns}"
        r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "plan", "--site", str(site), "--scan", str(scan),
                            "--out-dir", str(out), "--min-severity", "info"], capture_output=True, text=True,
                           cwd=REPO, env={**__import__("os").environ, "COLUMNS": columns})
        assert r.returncode in (0, 3), r.stderr
        assert "…" not in r.stdout, r.stdout
        # a table where it fits, one change per block where not: each value whole on one line
        for c in changes:
            assert any(str(c["setting"]) in ln for ln in r.stdout.splitlines()), (columns, c)
            assert any(c["rules"][0] in ln for ln in r.stdout.splitlines()), (columns, c)
