"""CLI manners walked over every command: an example in each --help, one meaning per short option,
rule ids never cut, shell completion that installs and completes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from advisor.cli.root import app
from tests.support.cli import every_command

REPO = Path(__file__).resolve().parents[2]


def test_every_help_has_an_example():
    from typer.testing import CliRunner

    runner = CliRunner()
    missing, seen = [], 0
    for path, _cmd, _ctx in every_command():
        r = runner.invoke(app, [*path[1:], "--help"], prog_name="storadvise", env={"COLUMNS": "120"})
        assert r.exit_code == 0, (path, r.output)
        seen += 1
        if "example" not in r.output.lower():
            missing.append(" ".join(path))
    assert seen > 25 and not missing, f"--help without an example: {missing}"


def test_a_short_option_means_one_thing_everywhere():
    meaning: dict[str, set[str]] = {}
    for path, cmd, _ in every_command():
        for p in cmd.params:
            shorts = [o for o in p.opts if len(o) == 2 and o[0] == "-" and o[1] != "-"]
            longs = [o for o in p.opts if o.startswith("--")]
            for s in shorts:
                meaning.setdefault(s, []).append((" ".join(path), set(longs)))
    # every option a short letter stands for shares one long name (aliases may add others)
    clashes = {s: uses for s, uses in meaning.items() if not set.intersection(*(longs for _, longs in uses))}
    assert clashes == {}
    assert all("--site" in longs for _, longs in meaning["-s"])


def test_rules_list_never_cuts_rule_ids():
    ids = [r["id"] for r in json.loads(subprocess.run([sys.executable, "-m", "advisor.cli.root", "rules", "list", "--json"],
                                                      capture_output=True, text=True, cwd=REPO).stdout)]
    for columns in ("40", "80"):
        r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "rules", "list"], capture_output=True, text=True,
                           cwd=REPO, env={**os.environ, "COLUMNS": columns})
        shown = {line.split("│")[1].strip() for line in r.stdout.splitlines() if line.startswith("│") and line.split("│")[1].strip()}
        assert set(ids) <= shown, (columns, set(ids) - shown)


def test_install_completion_and_complete(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "--install-completion", "bash"], capture_output=True,
                       text=True, cwd=REPO, env=env)
    assert r.returncode == 0, r.stderr
    script = (tmp_path / ".bash_completions" / "storadvise.sh").read_text()
    assert "_STORADVISE_COMPLETE=complete_bash" in script and "storadvise.sh" in (tmp_path / ".bashrc").read_text()
    exe = Path(sys.executable).parent / "storadvise"
    r = subprocess.run([str(exe)], capture_output=True, text=True, cwd=REPO,
                       env={**env, "_STORADVISE_COMPLETE": "complete_bash", "COMP_WORDS": "storadvise history pr",
                            "COMP_CWORD": "2"})
    assert r.stdout.split() == ["prune"], r.stdout + r.stderr
