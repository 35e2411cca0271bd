"""YAML aliases cannot hang a command or exhaust memory (docs/security.md, "Rule packs and site files").

Nine lines of anchors and aliases ("billion laughs") load as shared references and expand to 10^9
values once anything walks them: in a rule pack's ``vars:`` they hung ``rules lint`` and ``scan``
(``${var}`` substitution built the list), in a site file's ``vars:`` ``collect --ansible-vars`` died
("memory allocation of 4294967296 bytes failed", exit 134). A document whose aliases expand past a
bound, that nests too deep, or whose alias holds itself, is now refused with one line naming the
file and the line; aliases that repeat small values still load."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: address space each command may use here: the commands need ~0.5 GB; a 10^9-item list needs 8 GB
MEMORY_LIMIT = 3 << 30


def laughs(indent: str = "  ") -> list[str]:
    lines = [f"{indent}lol0: &lol0 \"lol\""]
    for i in range(1, 10):
        lines.append(f"{indent}lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 10) + "]")
    return lines


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(*args, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=60, preexec_fn=_limited)


def one_line_error(cp: subprocess.CompletedProcess, file: Path, line: int) -> str:
    assert cp.returncode == 1, (cp.returncode, cp.stderr[-2000:])
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr and "internal error" not in cp.stderr, cp.stderr[-2000:]
    assert f"{file}:{line}:" in lines[0], lines
    return lines[0]


RULE = """\
rules:
  - id: SITE-LOL
    title: a rule reading the variable
    probe: network.sysctl
    fact: sysctls."net.ipv4.tcp_sack".runtime
    operator: in
    expected: ${lol9}
    severity: low
    rationale: the variable is a list
"""


def test_a_rule_pack_vars_bomb_is_refused_by_lint_and_scan(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    pack = d / "laughs.yml"
    pack.write_text("vars:\n" + "\n".join(laughs()) + "\n" + RULE)
    msg = one_line_error(run("rules", "lint", "--rules", d), pack, 9)  # lol7 is the first past the bound
    assert "aliases" in msg
    one_line_error(run("scan", "--rules", d, "--no-history", "--json"), pack, 9)


def test_a_profile_vars_bomb_is_refused(tmp_path):
    d = tmp_path / "rules"
    (d / "profiles").mkdir(parents=True)
    prof = d / "profiles" / "lol.yml"
    prof.write_text("name: lol\nselect: ['*']\nvars:\n" + "\n".join(laughs()) + "\n")
    cp = run("rules", "lint", "--rules", d)
    assert cp.returncode == 1 and f"{prof}:" in cp.stdout + cp.stderr and "aliases" in cp.stdout + cp.stderr, \
        cp.stdout + cp.stderr


@pytest.mark.parametrize("command", [["collect", "--ansible-vars", "v.yml"], ["scan", "--dry-run"],
                                     ["sudoers", "--user", "scanner"], ["rules", "lint"]])
def test_a_site_vars_bomb_is_refused_by_every_command(tmp_path, command):
    site = tmp_path / "site.yml"
    site.write_text("name: t\nvars:\n" + "\n".join(laughs()) + "\nhosts:\n  - name: a\n    address: 127.0.0.1\n")
    msg = one_line_error(run(*command, "--site", site, cwd=tmp_path), site, 10)
    assert "aliases" in msg
    assert not (tmp_path / "v.yml").exists()


def test_a_site_defaults_alias_that_holds_itself_is_refused(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text("name: t\nvars:\n  loop: &loop [1, *loop]\nhosts:\n  - name: a\n")
    assert "holds it" in one_line_error(run("scan", "--dry-run", "--site", site, cwd=tmp_path), site, 3)


def test_nesting_past_the_bound_is_one_line(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text("name: t\nvars:\n  deep: " + "[" * 100_000 + "]" * 100_000 + "\nhosts:\n  - name: a\n")
    assert "deep" in one_line_error(run("scan", "--dry-run", "--site", site, cwd=tmp_path), site, 3)


def test_aliases_that_repeat_small_values_still_load(tmp_path):
    from advisor.site.file import load_site

    site = tmp_path / "site.yml"
    site.write_text("name: t\nhosts:\n  - name: a\n    vars: &common {xcache_cinfo_max: 20, mesh_address: 10.0.0.1}\n"
                    "  - name: b\n    vars: *common\n")
    s = load_site(str(site))
    assert [h.vars["xcache_cinfo_max"] for h in s.hosts] == [20, 20]
