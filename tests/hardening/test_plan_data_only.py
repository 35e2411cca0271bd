"""What a host or a site file says reaches Ansible as data, never as a template.

A real host (a namespace of this test's own with sshd, tests/support/ns_host.py) carries iptables rules
and nft rules whose comments are Jinja2 (``x{{ 7*7 }}`` and a ``lookup('pipe', 'touch ...')``; the nft
ones also in the host's persisted ruleset) and a site file
whose host vars hold ``lookup('pipe', ...)`` (one of them an XCache config path). ``scan``, ``plan`` and a real
``ansible-playbook --check`` then a real apply must run none of the lookups, and the rule whose
comment is ``x{{ 7*7 }}`` must really be removed (before, Ansible templated it into ``x49``, did
not find it, and reported success with the rule still in place); so must the nft ones, at run time
and in the persisted file, every other rule and line staying.
"""

from __future__ import annotations

import json

import pytest

from advisor.util.ansible_data import load_data
from tests.support.ansible import ANSIBLE_PLAYBOOK, play_recap
from tests.support.ns_host import STORADVISE, requirements_missing

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]


def _pipe(mark) -> str:
    return "{{ lookup('pipe', 'touch " + str(mark) + "') }}"


def _rules(host) -> list[str]:
    return [ln for ln in host.on_host("iptables -w -S INPUT").stdout.splitlines() if ln.startswith("-A ")]


def _nft_ruleset(mark) -> str:
    return ("table inet inj {\n  chain input {\n    type filter hook input priority 0; policy accept;\n"
            "    tcp dport 22 accept\n"
            '    ip saddr 10.77.0.8 tcp dport 1094 drop comment "x{{ 7*7 }}"\n'
            f'    ip saddr 10.77.0.9 tcp dport 1094 drop comment "{_pipe(mark)}"\n'
            '    ip saddr 10.77.0.8 tcp dport 1095 accept comment "x49"\n'
            "  }\n}\n")


def _nft_rules(host) -> list[str]:
    out = host.on_host("nft list chain inet inj input").stdout
    return [" ".join(ln.split()) for ln in out.splitlines()
            if ln.strip() and not ln.strip().startswith(("table", "chain", "type", "}"))]


@pytest.fixture(scope="module")
def world(ns_hosts):
    host, cleanup = ns_hosts("inj01", {})
    try:
        marks = {k: host.dir / f"pwned-{k}" for k in ("comment", "hostvar", "xcache", "nft")}
        nft = _nft_ruleset(marks["nft"])
        host.on_host("nft -f - <<'EOF'\n" + nft + "EOF\n")
        (host.dir / "etc").mkdir(exist_ok=True)
        (host.dir / "etc" / "nftables.conf").write_text("#!/usr/sbin/nft -f\n" + nft)
        limit = "-p tcp -m hashlimit --hashlimit-above 40000/sec --hashlimit-burst 4000 --hashlimit-mode srcip"
        host.on_host("iptables -w -A INPUT -p tcp --dport 22 -j ACCEPT\n"
                     f"iptables -w -A INPUT -s 10.77.0.5/32 {limit} --hashlimit-name g5"
                     " -m comment --comment 'x{{ 7*7 }}' -j DROP\n"
                     f"iptables -w -A INPUT -s 10.77.0.7/32 {limit} --hashlimit-name g7"
                     f" -m comment --comment \"{_pipe(marks['comment'])}\" -j DROP\n")
        site = host.site_file(host.dir / "site.yml", ["storage"],
                              extra={"waivers": [{"rule": "NET-*", "justification": "this test is about the firewall"}]},
                              host_vars={"site_note": _pipe(marks["hostvar"]),
                                         "xcache_config": "/etc/xrootd/" + _pipe(marks["xcache"]) + ".cfg"})
        scan = host.dir / "scan.json"
        host.controller([STORADVISE, "scan", "--site", str(site), "--sample-seconds", "0.2", "-o", str(scan), "--json"],
                        check=False)
        plan = host.dir / "plan"
        host.controller([STORADVISE, "plan", "--site", str(site), "--scan", str(scan), "--out", str(plan), "--json"])
        yield {"host": host, "plan": plan, "marks": marks, "before": _rules(host), "nft_before": _nft_rules(host),
               "nft_file": "#!/usr/sbin/nft -f\n" + nft}
    finally:
        cleanup()


def _playbook(world, *args):
    return world["host"].controller([ANSIBLE_PLAYBOOK, "apply-tuning.yml", *args], cwd=world["plan"])


def test_plan_holds_the_values_verbatim(world):
    inv = load_data((world["plan"] / "inventory.yml").read_text())["all"]["hosts"]["inj01"]
    assert inv["site_note"] == _pipe(world["marks"]["hostvar"])
    assert "!unsafe" in (world["plan"] / "inventory.yml").read_text()
    hv = load_data((world["plan"] / "host_vars" / "inj01.yml").read_text())
    ipt = sorted(r["text"] for r in hv["firewall_remove_rules"] if r["backend"] == "iptables")
    assert len(ipt) == 2 and "x{{ 7*7 }}" in ipt[0] and "lookup(" in ipt[1], ipt
    nft = sorted(r["text"] for r in hv["firewall_remove_rules"] if r["backend"] == "nft")
    assert len(nft) == 2 and 'comment "x{{ 7*7 }}"' in nft[0] and "comment \"{{ lookup('pipe'" in nft[1], nft


def test_check_then_apply_runs_no_template_and_removes_the_rules(world):
    host, marks = world["host"], world["marks"]
    cp = _playbook(world, "--check", "--diff")
    assert play_recap(cp.stdout)["inj01"]["failed"] == 0
    assert not [m for m in marks.values() if m.exists()], "a lookup in a scanned or site value ran on the controller"
    assert _rules(host) == world["before"]
    cp = _playbook(world)
    recap = play_recap(cp.stdout)["inj01"]
    assert recap["failed"] == 0 and recap["changed"] == 1, cp.stdout[-3000:]
    assert not [m for m in marks.values() if m.exists()]
    after = _rules(host)
    assert after == [r for r in world["before"] if "10.77.0." not in r] and len(after) == 1, after
    assert "x49" not in cp.stdout
    backup = json.loads((host.backup_dir / "firewall.json").read_text())
    assert any('x{{ 7*7 }}' in r["text"] for r in backup["removed"])
    # the nft rules: exactly the two with Jinja2 comments are gone, at run time and in the file
    nft_after = _nft_rules(host)
    assert nft_after == [r for r in world["nft_before"] if "1094" not in r] and len(nft_after) == 2, nft_after
    assert 'ip saddr 10.77.0.8 tcp dport 1095 accept comment "x49"' in nft_after
    nft_file = (host.dir / "etc" / "nftables.conf").read_text()
    kept = [ln for ln in nft_file.splitlines() if "1094" in ln]
    assert len(kept) == 2 and all(ln.strip().startswith("# storadvise removed") for ln in kept), nft_file
    assert [ln for ln in nft_file.splitlines() if "1094" not in ln] == \
        [ln for ln in world["nft_file"].splitlines() if "1094" not in ln]
    assert sum('x{{ 7*7 }}' in r["text"] for r in backup["removed"]) == 2
    cp = _playbook(world)
    assert play_recap(cp.stdout)["inj01"]["changed"] == 0
    assert not [m for m in marks.values() if m.exists()]
