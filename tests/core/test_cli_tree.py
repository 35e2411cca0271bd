"""One CLI grammar, enforced over the whole command tree (issue 37, item 5; docs/cli.md): one error style,
--fail-on exits 2 wherever it exists, human placeholders, -s/--site wherever a site is read, host patterns
wherever hosts are chosen, no one-letter long option, examples printed once, --debug on every command,
`report FILE` prints the console summary, one node_exporter path in all the help and docs."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli.root import app, main
from advisor.model.findings import SEVERITY_ORDER

from tests.support.cli import every_command as _commands

REPO = Path(__file__).resolve().parents[2]
#: what a placeholder may look like: FILE, N, HOSTS, GROUP=ROLE, N,N,..., FILE...
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(=[A-Z]+|,[A-Z,.]+|\.\.\.)?$")


def _help(path) -> str:
    r = CliRunner().invoke(app, [*path[1:], "--help"], prog_name="storadvise", env={"COLUMNS": "80"})
    assert r.exit_code == 0, (path, r.output)
    return r.output


def _leaves():
    return [(p, c) for p, c, _ in _commands() if not hasattr(c, "commands")]


def _run_main(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_every_value_has_a_human_placeholder():
    problems = []
    for path, _cmd, _ in _commands():
        text = _help(path)
        name = " ".join(path)
        for bad in re.findall(r"<[a-z][^>]*>|\{[a-z_]+\}", text):
            problems.append(f"{name}: {bad}")
        options = text.split("\nOptions:\n", 1)[1] if "\nOptions:\n" in text else ""
        options = re.split(r"\n(?=\S)", options, 1)[0]  # up to the next heading or epilog
        for m in re.finditer(r"^\s{2}(?:-\w, )?--[\w-]+(?: ([^\s]+))?", options, re.M):
            if m.group(1) and m.group(1) != "/" and not PLACEHOLDER.match(m.group(1)):
                problems.append(f"{name}: placeholder {m.group(1)!r} in {m.group(0).strip()!r}")
        usage = text.splitlines()[0]
        for word in usage.split()[len(path) + 2:]:  # Usage: storadvise CMD [OPTIONS] ARGS
            if not PLACEHOLDER.match(word.strip("[]").rstrip(".")) and word != "COMMAND" and word != "[ARGS]...":
                problems.append(f"{name}: usage word {word!r}")
    assert problems == []


def test_examples_once_and_debug_everywhere():
    twice = []
    for path, _cmd, _ in _commands():
        text = _help(path)
        examples = [ln for ln in text.splitlines() if ln.strip().lower().startswith("example")]
        commands = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("storadvise ")]
        if len(examples) != 1 or len(commands) != len(set(commands)):
            twice.append(" ".join(path))
    assert twice == []
    for path, _cmd in _leaves():
        assert "--debug" in _help(path), path
        r = CliRunner().invoke(app, [*path[1:], "--debug", "--help"], prog_name="storadvise")
        assert r.exit_code == 0, (path, r.output)


def test_one_error_style_on_every_command():
    for path, _cmd in _leaves():
        code, out, err = _run_main(*path[1:], "--no-such-option-here")
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and lines[0].startswith("storadvise: error: "), (path, err)
        assert "--no-such-option-here" in lines[0] and f"'{' '.join(path)} --help'" in lines[0], lines
    # a missing argument reads with its placeholder, in the same style
    code, _, err = _run_main("history", "diff")
    assert code == 1 and err.strip() == "storadvise: error: Missing argument 'A'. (see 'storadvise history diff --help')"
    # a value the command refuses, and an error of the site file: the same style
    code, _, err = _run_main("scan", "--fail-on", "urgent")
    assert code == 1 and err.startswith("storadvise: error: --fail-on must be one of info, low, medium, high, critical")


def test_option_names_follow_one_grammar():
    problems = []
    for path, cmd, _ in _commands():
        name = " ".join(path)
        for p in cmd.params:
            if p.param_type_name != "option":
                continue
            visible_longs = [] if p.hidden else [o for o in p.opts + p.secondary_opts if o.startswith("--")]
            problems += [f"{name}: one-letter long option {o}" for o in visible_longs if len(o) <= 3]
            if "--site" in p.opts and "-s" not in p.opts:
                problems.append(f"{name}: --site without -s")
            if "--hosts" in p.opts and "host pattern" not in (p.help or ""):
                problems.append(f"{name}: --hosts is not the host-pattern grammar")
            if "--fail-on" in p.opts and not all(s in (p.help or "") for s in SEVERITY_ORDER):
                problems.append(f"{name}: --fail-on does not list the severities")
        if any(getattr(p, "name", None) == "site" for p in cmd.params) and not any(
                "--site" in p.opts for p in cmd.params if p.param_type_name == "option"):
            problems.append(f"{name}: reads a site without --site")
    assert problems == []


def test_old_spellings_still_work(tmp_path):
    site = tmp_path / "t1.yml"
    hosts = [{"name": f"st0{i}", "roles": ["storage"]} for i in (1, 2)] + \
            [{"name": f"wn0{i}", "roles": ["worker"]} for i in range(1, 6)]
    site.write_text(json.dumps({"name": "t1", "hosts": hosts, "mesh": {"pairs": [{"a": "worker", "b": "storage"}]}}))
    new = _run_main("mesh", "plan", "--site", str(site), "--strategy", "sample", "--partners", "1", "--json")
    old = _run_main("mesh", "plan", "--site", str(site), "--strategy", "sample", "--k", "1", "--json")
    assert new[0] == old[0] == 0 and json.loads(new[1]) == json.loads(old[1])
    assert "--k" not in _help(("storadvise", "mesh", "plan"))
    code, _, err = _run_main("rules", "lint", "--rules-dir", str(tmp_path / "none"))
    assert code == 1 and "--instead-of-shipped" in err


# --------------------------------------------------------------------------- --fail-on exits 2 everywhere

ALWAYS_FAILS = """\
rules:
  - id: T-ALWAYS-FAILS
    title: the test's rule holds
    failure: "the test's rule fails on {host}"
    probe: host
    fact: kernel
    operator: absent
    severity: medium
    rationale: a rule that fails on every host, so that --fail-on has something to count
"""


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    d = tmp_path_factory.mktemp("failon")
    (d / "rules").mkdir()
    (d / "rules" / "always.yml").write_text(ALWAYS_FAILS)
    site = d / "here.yml"
    site.write_text(f"name: here\ntransport: local\nrules_dirs: [{d / 'rules'}]\n"
                    "hosts:\n  - {name: box, address: localhost, roles: [worker]}\n")
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "collect", "--site", str(site), "--out-dir", str(d / "cap"),
                        "--sample-seconds", "0.2", "--probes", "host,network.*"], capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    return d


def test_fail_on_exits_2_wherever_it_exists(failing):
    d = failing
    cap, rules, hist = str(d / "cap"), str(d / "rules"), str(d / "h.db")
    commands_with_fail_on = {" ".join(p) for p, c, _ in _commands() if any("--fail-on" in x.opts for x in c.params)}
    assert commands_with_fail_on == {"storadvise scan", "storadvise verify", "storadvise audit",
                                     "storadvise history diff"}, "a new --fail-on: add its exit-2 check here"

    def code(*argv):
        return _run_main(*argv)[0]

    assert code("scan", "--from", cap, "--rules", rules, "--history", hist, "-o", str(d / "s1.json"),
                "--fail-on", "medium") == 2
    assert code("scan", "--from", cap, "--rules", rules, "--history", hist, "--fail-on", "critical") in (0, 3)
    assert code("verify", "--site", str(d / "here.yml"), "--from", cap, "--before", str(d / "s1.json"),
                "--no-history", "--fail-on", "medium") == 2
    assert code("audit", "--site", str(d / "here.yml"), "--from", cap, "--no-history", "--fail-on", "medium") == 2
    rc, out, err = _run_main("history", "list", "--history", hist, "--json")
    first, second = sorted(s["id"] for s in json.loads(out))[:2]
    rc, out, err = _run_main("history", "diff", str(first), str(second), "--history", hist, "--fail-on", "medium")
    assert rc == 2 and "at or above medium" in out, (rc, out, err)
    rc, out, err = _run_main("history", "diff", str(first), str(second), "--history", hist, "--fail-on", "critical")
    assert rc == 0, (out, err)


def test_report_file_prints_the_console_summary(failing):
    rc, out, err = _run_main("report", str(failing / "s1.json"))
    assert rc == 0 and "storadvise scan of site here" in out and "the test's rule fails on box" in out, err


def test_efficiency_test_hosts_is_a_host_pattern():
    from advisor.efficiency.active_plan import resolve_hosts
    from advisor.site.model import Site

    site = Site(name="t", hosts=[{"name": "wn01", "roles": ["worker"]}, {"name": "wn02", "roles": ["worker"]},
                                 {"name": "wn03", "roles": ["worker"], "groups": ["slow"]},
                                 {"name": "st01", "roles": ["storage"]}])
    assert [h.name for h in resolve_hosts(site, "worker,!slow")] == ["wn01", "wn02"]
    assert [h.name for h in resolve_hosts(site, "wn0[13]")] == ["wn01", "wn03"]


def test_one_node_exporter_path_everywhere():
    texts = [_help(p) for p, _c, _ in _commands()]
    texts += [(REPO / "README.md").read_text()] + [p.read_text() for p in (REPO / "docs").glob("*.md")]
    paths = {m for t in texts for m in re.findall(r"/var/lib/node_exporter[\w/.-]*", t)}
    assert paths == {"/var/lib/node_exporter/textfile/storadvise.prom"}, paths
