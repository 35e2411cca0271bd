"""Names are matched whole: no validator accepts a trailing newline (docs/security.md, guard 1).

A pattern anchored ``^...$`` and tried with ``re.match`` accepts ``"a\\n"``: ``$`` also matches before
a final newline. ``name: "a\\n"``, an ``address``, a ``user`` and a ``probe_helper`` passed; ``sudoers``
then wrote a snippet visudo rejects (one broken file in /etc/sudoers.d breaks sudo on that host) and
``plan`` wrote the inventory key ``? 'node1\\n\\n  '``. Every validator now matches the whole string.
``defaults:`` passes the same checks as a host (``user``, ``key``, ``known_hosts``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def refused(cp: subprocess.CompletedProcess, *words: str) -> str:
    assert cp.returncode == 1, (cp.returncode, cp.stdout[-1000:], cp.stderr[-1000:])
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.mark.parametrize("host_yaml, field", [
    ('    name: "node1\\n"\n', "hosts.0.name"),
    ('    name: node1\n    address: "10.0.0.1\\n"\n', "hosts.0.address"),
    ('    name: node1\n    address: "node1.example.org\\n"\n', "hosts.0.address"),
    ('    name: node1\n    user: "scanner\\n"\n', "hosts.0.user"),
    ('    name: node1\n    groups: ["wn\\n"]\n', "hosts.0.groups"),
    ('    name: node1\n    vars: {probe_helper: "/usr/local/sbin/storadvise-probe\\n"}\n', "probe_helper"),
    ('    name: node1\n    vars: {mesh_address: "10.0.0.1\\n"}\n', "mesh_address"),
])
def test_a_trailing_newline_is_refused_in_every_site_field(tmp_path, host_yaml, field):
    site = tmp_path / "site.yml"
    site.write_text("name: t\nhosts:\n  - " + host_yaml[4:])
    for command in (["scan", "--dry-run"], ["plan", "--out-dir", tmp_path / "plan"]):
        refused(run(*command, "--site", site, cwd=tmp_path), "site.yml:", field)
    assert not (tmp_path / "plan").exists()


def test_a_site_name_with_a_newline_is_refused(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text('name: "t\\n"\nhosts:\n  - name: node1\n')
    refused(run("scan", "--dry-run", "--site", site, cwd=tmp_path), "site.yml:", "name")


@pytest.mark.parametrize("defaults_yaml, field", [
    ("  user: \"x$(touch MARKER)\"\n", "defaults.user"),
    ("  user: \"scanner\\n\"\n", "defaults.user"),
    ("  known_hosts: '/tmp/k\" -oProxyCommand=touch MARKER \"'\n", "defaults.known_hosts"),
    ("  key: '-oProxyCommand=touch MARKER'\n", "defaults.key"),
    ("  key: \"/tmp/k\\n-oProxyCommand=x\"\n", "defaults.key"),
])
def test_defaults_pass_the_same_checks_as_a_host(tmp_path, defaults_yaml, field):
    site = tmp_path / "site.yml"
    site.write_text("name: t\ndefaults:\n" + defaults_yaml + "hosts:\n  - name: node1\n    address: 127.0.0.1\n")
    for command in (["scan", "--dry-run"], ["collect", "--ansible-vars", "v.yml"], ["sudoers"]):
        refused(run(*command, "--site", site, cwd=tmp_path), "site.yml:", field)
    assert not (tmp_path / "v.yml").exists() and not (tmp_path / "MARKER").exists()


def test_the_same_defaults_pass_when_legal(tmp_path):
    from advisor.site.file import load_site

    site = tmp_path / "site.yml"
    site.write_text("name: t\ndefaults:\n  user: scanner\n  known_hosts: /etc/ssh/ssh_known_hosts\nhosts:\n  - name: node1\n")
    h = load_site(str(site)).hosts[0]
    assert h.user == "scanner" and str(h.known_hosts) == "/etc/ssh/ssh_known_hosts"


def _rule(rule_id: str):
    from advisor.rules.specs import RuleSpec

    return RuleSpec.model_validate({"id": rule_id, "title": "t", "probe": "network.sysctl", "fact": "x",
                                    "operator": "present", "severity": "low", "rationale": "r"})


def _validators():
    """(name, a legal value, check) of the validators of names that reach commands, files and plans:
    check(value) raises, or returns a false value, to refuse. Each is the product's own entry point."""
    from advisor.util.ansible_data import vars_as_data
    from advisor.efficiency.active_plan import _dir, python_command
    from advisor.util.path_component import path_component
    from advisor.site.probe_helper_path import helper_path
    from advisor.util.shipped_code import module_utils
    from advisor.site.model import Host, HostDefaults, Site, host_address
    from advisor.transport.capture_objects import is_object_id
    from probes.legal_values import DEVICE_NAME, GPFS_ATTRIBUTE, SMCLI_NAME, check_name, check_path

    zones = module_utils("storadvise_firewalld_zones")
    layout = module_utils("storadvise_capture_layout")
    return [
        ("host address", "node1.example.org", host_address),
        ("IP address", "10.0.0.1", host_address),
        ("login name", "scanner", lambda v: Host(name="a", user=v)),
        ("login name in defaults", "scanner", lambda v: HostDefaults(user=v)),
        ("host name", "node1", lambda v: Host(name=v)),
        ("host group", "wn", lambda v: Host(name="a", groups=[v])),
        ("site name", "t2", lambda v: Site(name=v)),
        ("probe_helper", "/usr/local/sbin/storadvise-probe", lambda v: helper_path({"probe_helper": v})),
        ("variable name", "firewall_rules", lambda v: vars_as_data({v: 1}, "x")),
        ("path component", "node1", lambda v: path_component(v, "host")),
        ("capture layout component", "node1", layout.host_component),
        ("rule id", "NET-TCP-SACK", _rule),
        ("capture object id", "a" * 64, is_object_id),
        ("active test python", "/usr/bin/python3", python_command),
        ("active test dir", "/srv/data", lambda v: _dir(v, "x")),
        ("device name", "sda", lambda v: check_name(v, DEVICE_NAME, "x")),
        ("GPFS attribute", "pagepool", lambda v: check_name(v, GPFS_ATTRIBUTE, "x")),
        ("SMcli name", "vol_1", lambda v: check_name(v, SMCLI_NAME, "x")),
        ("absolute path", "/var/log/x", lambda v: check_path(v, "x")),
        ("firewalld zone file", "public", lambda v: zones.zone_name(v + ".xml")),
    ]


@pytest.mark.parametrize("name, good, check", _validators(), ids=[v[0] for v in _validators()])
def test_no_validator_takes_a_trailing_newline(name, good, check):
    assert check(good)
    for bad in (good + "\n", good + "\n\n  ", "\n" + good):
        try:
            accepted = check(bad)
        except Exception:  # noqa: BLE001 (each validator refuses in its own way)
            continue
        assert not accepted, f"{name} accepts {bad!r}"


def test_sudoers_refuses_a_user_with_a_newline(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text("name: t\nhosts:\n  - name: node1\n    user: scanner\n    vars: {probe_helper: true}\n")
    refused(run("sudoers", "--site", site, "--user", "scanner\n", cwd=tmp_path), "--user", "not a user name")
