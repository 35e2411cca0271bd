"""The docs are checked: every storadvise command line in README.md and docs/*.md names options its
command has (shown in --help, not an old hidden name); every one that needs no lab is run; every
YAML example of a rule pack, a profile or a site file (waivers, immutable, mesh, ...) passes
`storadvise rules lint`; the role lists are the registry's.

A fenced block is marked by an HTML comment on the line before it, ``<!-- docs-test: KIND -->``:
``lab`` (needs a lab or a site's hosts: options checked, not run), ``synopsis`` (placeholders such as
FILE or [--site S]: options checked), ``data`` (needs a site's own input files: options checked),
``system`` (installs on the machine: apt, dnf, pip; options checked),
``other`` (YAML that is not storadvise's: an Ansible task, a CI job, a lab scenario with
placeholders) or ``fragment`` (a part of a YAML file that cannot stand alone). An unmarked shell
block is run, command by command (in bash, as a user types it), in a scratch directory holding a site file of this machine
(``site.yml``) and a saved GPFS output (``mmlsconfig.txt``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
import yaml

from advisor.cli.root import app

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARK = re.compile(r"<!--\s*docs-test:\s*([\w-]+)\s*-->")
KINDS = {"lab", "synopsis", "data", "system", "other", "fragment"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
LOCAL_SITE = "name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n"
# the hosts a site-file fragment is linted with: every role, and the host names the docs' examples use
FRAGMENT_HOSTS = [
    {"name": "gpfs01", "roles": ["storage"], "groups": ["gpfs"]}, {"name": "gpfs02", "roles": ["storage"]},
    {"name": "se01", "roles": ["door"]}, {"name": "xrd01", "roles": ["storage"]},
    {"name": "cache01", "roles": ["cache"]}, {"name": "wn01", "roles": ["worker"]},
    {"name": "wn02", "roles": ["worker"]}, {"name": "nsd01", "roles": ["storage"]},
]


def _blocks():
    """(doc, line, language, body, marker) of every fenced block."""
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            mark = MARK.search(before)
            yield doc.relative_to(REPO), text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2), \
                mark.group(1) if mark else None


def _command_lines(body: str) -> list[str]:
    """The storadvise invocations of a block: continuations joined, comments and prompts dropped,
    ``a && b`` split."""
    out = []
    for line in body.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        line = re.split(r"\s+#\s", " " + line + " ", maxsplit=1)[0].strip()
        for part in line.split("&&"):
            words = part.split()
            if words and (words[0] == "storadvise" or words[0].endswith("/storadvise")):
                out.append(" ".join(["storadvise", *words[1:]]))
    return out


def _embedded_lines(body: str) -> list[str]:
    """storadvise invocations inside a non-shell block (a CI job's script line)."""
    return [m.group(1) for m in re.finditer(r"(?:^|[\s'\"])(storadvise\s+[a-z][^'\"\n#]*)", body)]


def _command_and_options(line: str):
    root = typer.main.get_command(app)
    words = shlex.split(line.replace("|", " "))[1:]
    cmd, path = root, ["storadvise"]
    while words and hasattr(cmd, "commands") and words[0] in cmd.commands:
        path.append(words[0])
        cmd = cmd.commands[words.pop(0)]
    opts = []
    for w in words:
        w = w.strip("[](),")
        if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w):
            opts.append(w.split("=", 1)[0])
    return " ".join(path), cmd, opts


def _option_problems(where: str, line: str) -> list[str]:
    name, cmd, opts = _command_and_options(line)
    if getattr(cmd, "hidden", False):
        return [f"{where}: `{line}`: {name} is an old hidden name"]
    shown = {o for p in cmd.params if not getattr(p, "hidden", False) for o in (*p.opts, *p.secondary_opts)}
    shown |= {"-h", "--help"}
    return [f"{where}: `{line}`: {name} has no option {o}" for o in opts if o not in shown]


def test_every_documented_command_line_names_options_its_command_shows():
    problems, seen = [], 0
    for doc, line_no, lang, body, mark in _blocks():
        assert mark is None or mark in KINDS, f"{doc}:{line_no}: unknown docs-test marker {mark!r}"
        lines = _command_lines(body) if lang in ("", "sh", "console") else _embedded_lines(body)
        for line in lines:
            seen += 1
            problems += _option_problems(f"{doc}:{line_no}", line)
    assert seen > 40
    assert problems == []


def _sandbox(tmp: Path) -> dict[str, str]:
    (tmp / "home").mkdir()
    (tmp / "site.yml").write_text(LOCAL_SITE)
    shutil.copy(REPO / "tests" / "fixtures" / "samples" / "mmlsconfig-pagepool-ibm-linuxonibm-doc.txt", tmp / "mmlsconfig.txt")
    venv_bin = Path(sys.executable).parent
    return {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
            "HOME": str(tmp / "home"), "SHELL": "/bin/bash", "XDG_DATA_HOME": str(tmp / "data"),
            "XDG_CONFIG_HOME": str(tmp / "config"), "STORADVISE_HISTORY": str(tmp / "history.db")}


def _runnable_blocks():
    for doc, line_no, lang, body, mark in _blocks():
        if lang in ("", "sh", "console") and mark is None and _command_lines(body):
            yield pytest.param(doc, body, id=f"{doc}:{line_no}")


@pytest.mark.parametrize("doc,body", list(_runnable_blocks()))
def test_documented_commands_that_need_no_lab_run(doc, body, tmp_path):
    env = _sandbox(tmp_path)
    for line in body.replace("\\\n", " ").splitlines():
        line = line.strip()
        if not _command_lines(line):
            continue
        r = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        # 0 clean, 2 findings at or above --fail-on, 3 incomplete: the command worked; 1 is an error
        assert r.returncode in (0, 2, 3), f"{doc}: `{line}` exited {r.returncode}: {r.stderr[-500:]}"
        assert "Traceback" not in r.stderr, r.stderr


def _lint(args: list[str], where: str) -> None:
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "rules", "lint", *args], capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    assert r.returncode == 0, f"{where}: rules lint: {r.stderr.strip()} {r.stdout.strip()}"


def _yaml_examples():
    for doc, line_no, lang, body, mark in _blocks():
        if lang in ("yaml", "yml") and mark not in ("other", "fragment"):
            yield pytest.param(body, id=f"{doc}:{line_no}")


@pytest.mark.parametrize("body", list(_yaml_examples()))
def test_every_yaml_example_passes_rules_lint(body, tmp_path, request):
    where = request.node.callspec.id
    data = yaml.safe_load(body)
    assert isinstance(data, dict), f"{where}: not a mapping; mark it <!-- docs-test: other --> or fragment"
    if "rules" in data:  # a rule pack
        (tmp_path / "example.yml").write_text(body)
        _lint(["--instead-of-shipped", str(tmp_path)], where)
    elif {"include", "select", "exclude", "severity"} & set(data):  # a profile, beside the shipped ones
        shutil.copytree(REPO / "rules", tmp_path / "rules")
        (tmp_path / "rules" / "profiles" / f"{data['name']}.yml").write_text(body)
        _lint(["--instead-of-shipped", str(tmp_path / "rules")], where)
    else:  # a site file, or a section of one
        site = dict(data)
        site.setdefault("name", "example")
        site.setdefault("hosts", FRAGMENT_HOSTS)
        path = tmp_path / "site.yml"
        path.write_text(yaml.safe_dump(site) if site != data else body)
        for d in site.get("rules_dirs") or []:  # a site-local rules directory the example names, empty
            (tmp_path / d).mkdir(parents=True, exist_ok=True)
        _lint(["--site", str(path)], where)


def test_role_lists_are_the_registrys_and_roles_need_the_collections_ansible():
    from advisor.apply.role_docs import COLLECT_ROLE, DOCUMENTS, REGION, role_list_text, role_names

    on_disk = sorted(p.name for p in (REPO / "playbooks" / "roles").iterdir() if (p / "tasks").is_dir())
    assert sorted([*role_names(), COLLECT_ROLE]) == on_disk and len(on_disk) == 16
    for rel in DOCUMENTS:
        regions = REGION.findall((REPO / rel).read_text())
        assert regions and all(r[1] == role_list_text() for r in regions), \
            f"{rel}: the role list is not the registry's; run: python -m advisor.apply.role_docs"
    needs = yaml.safe_load((REPO / "playbooks" / "meta" / "runtime.yml").read_text())["requires_ansible"]
    minimum = re.fullmatch(r">=\s*(\d+\.\d+)(\.0)?", needs).group(1)
    for role in on_disk:
        meta = yaml.safe_load((REPO / "playbooks" / "roles" / role / "meta" / "main.yml").read_text())
        assert str(meta["galaxy_info"]["min_ansible_version"]) == minimum, (role, needs)


def test_privileges_table_is_the_probe_registrys():
    """docs/privileges.md names every probe once, with the registry's answer to 'needs root'."""
    from probes import all_probes

    rows = re.findall(r"^\| `([a-z][\w.]*)` \| (yes|no) \|", (REPO / "docs" / "privileges.md").read_text(), re.M)
    assert sorted(n for n, _ in rows) == sorted(all_probes()), "docs/privileges.md: the probe table and the registry differ"
    assert {n: r == "yes" for n, r in rows} == {n: p.needs_root for n, p in all_probes().items()}
