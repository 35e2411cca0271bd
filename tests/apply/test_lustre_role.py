"""lustre_tuning against the lab's lctl emulator (advisor/lab/emulators/lustre: lctl's output format,
per-host state, an invocation log), run by real Ansible over a real sshd in a namespace of this test's
own; then the lustre.params probe's script reads the result back through the same emulator."""

from __future__ import annotations

import json

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK, play_recap
from tests.support.ns_host import requirements_missing

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

PLAYS = """---
- name: Lustre
  hosts: storadvise_lustre_tuning
  gather_facts: false
  environment: {STORADVISE_LAB_HOST: wn01}
  roles:
    - role: lustre_tuning
      vars: {lustre_tuning_state: "{{ state | default('present') }}"}
"""


@pytest.fixture(scope="module")
def world(ns_hosts):
    from advisor.apply.planner import Plan
    from advisor.apply.project import write_project
    from advisor.lab.emulators import lustre
    from advisor.lab.emulators.lustre_lab import EMULATION
    from advisor.site.file import load_site

    host, cleanup = ns_hosts("wn01", {})
    try:
        state = host.dir / "emu-state"
        lustre.setup_state(state, ["wn01"], "atlas", 2, 1, {"llite.max_read_ahead_mb": 40})
        bin_dir = EMULATION.install(host.dir / "emuhost", state)["/usr/local/sbin"]
        inst = lustre.instance_of("wn01")
        keys = {"osc0": f"osc.atlas-OST0000-osc-{inst}.max_rpcs_in_flight",
                "osc1": f"osc.atlas-OST0001-osc-{inst}.max_rpcs_in_flight",
                "llite": f"llite.atlas-{inst}.max_read_ahead_mb"}
        site = load_site(str(host.site_file(host.dir / "site.yml", ["worker"])))
        plan = Plan(site="applytest", scan_started_at="-")
        plan.host_vars["wn01"] = {"lustre_tuning": {
            "lustre_params": {keys["osc0"]: "16", keys["osc1"]: "16", keys["llite"]: "256"},
            "lustre_tuning_lctl": str(bin_dir / "lctl")}}
        out = host.dir / "plan"
        write_project(plan, site, out)
        (out / "lustre.yml").write_text(PLAYS)
        yield {"host": host, "plan": out, "state": state, "lctl": bin_dir / "lctl", "bin": bin_dir, "keys": keys}
    finally:
        cleanup()


def playbook(world, *args):
    return world["host"].controller([ANSIBLE_PLAYBOOK, "lustre.yml", *args], cwd=world["plan"])


def sets(world):
    from advisor.lab.emulators.common import read_invocations

    return [" ".join(r["argv"]) for r in read_invocations(world["state"]) if r["argv"][1:2] == ["set_param"]]


def probe_facts(world):
    from probes import get_probe
    from probes.probe import ProbeContext

    probe = get_probe("lustre.params")
    script = probe.script(ProbeContext(host="wn01"))
    cp = world["host"].on_host(f"export STORADVISE_LAB_HOST=wn01 PATH={world['bin']}:/usr/bin:/bin\n{script}")
    return probe.parse(cp.stdout)


def value(facts, key):
    kind, _, rest = key.partition(".")
    dev, _, param = rest.rpartition(".")
    return getattr(facts, kind)[dev].values[param]


def test_check_mode_sends_no_change(world):
    cp = playbook(world, "--check", "--diff")
    assert play_recap(cp.stdout)["wn01"]["changed"] == 1, cp.stdout
    assert sets(world) == []


def test_apply_sets_what_differs_and_the_probe_reads_it_back(world):
    before = probe_facts(world)
    assert value(before, world["keys"]["osc0"]) == 8 and value(before, world["keys"]["llite"]) == 40
    cp = playbook(world)
    assert play_recap(cp.stdout)["wn01"]["changed"] == 1, cp.stdout
    k = world["keys"]
    # one set_param per parameter (one refused never keeps the others unchanged)
    assert sets(world) == [f"lctl set_param {k['llite']}=256", f"lctl set_param {k['osc0']}=16",
                           f"lctl set_param {k['osc1']}=16"]
    assert "runtime only" in cp.stdout
    after = probe_facts(world)
    assert value(after, k["osc0"]) == 16 and value(after, k["osc1"]) == 16 and value(after, k["llite"]) == 256
    # a parameter nobody asked for is untouched
    assert value(after, k["osc0"].replace("max_rpcs_in_flight", "max_dirty_mb")) == 32


def test_second_run_changes_nothing(world):
    n = len(sets(world))
    cp = playbook(world)
    assert play_recap(cp.stdout)["wn01"]["changed"] == 0
    assert len(sets(world)) == n


def test_rollback_restores_the_old_values(world):
    cp = playbook(world, "-e", "state=rollback")
    assert play_recap(cp.stdout)["wn01"]["failed"] == 0, cp.stdout
    facts = probe_facts(world)
    k = world["keys"]
    assert value(facts, k["osc0"]) == 8 and value(facts, k["llite"]) == 40
    cp = playbook(world, "-e", "state=rollback")
    assert play_recap(cp.stdout)["wn01"]["changed"] == 0 and "nothing to roll back" in cp.stdout


def test_bad_parameters_are_reported_and_the_good_one_is_set(world):
    """A missing device, a glob and a non-number are each reported per setting; the valid one is still set."""
    k = world["keys"]
    dirty = k["osc0"].replace("max_rpcs_in_flight", "max_dirty_mb")
    params = {"osc.nosuch-OST0000-osc-x.max_dirty_mb": "64", "osc.*.max_dirty_mb": "64", k["osc1"]: "many", dirty: "64"}
    bad = world["plan"] / "bad.yml"
    bad.write_text(PLAYS.replace("lustre_tuning_state: \"{{ state | default('present') }}\"",
                                 "lustre_tuning_state: present, lustre_tuning_params: " + json.dumps(params))
                   + "  post_tasks:\n    - ansible.builtin.debug: {var: lustre_tuning_result.failed_settings}\n")
    cp = world["host"].controller([ANSIBLE_PLAYBOOK, "bad.yml"], cwd=world["plan"], check=False)
    assert play_recap(cp.stdout)["wn01"]["changed"] == 1, cp.stdout
    assert "lctl get_param -n osc.nosuch-OST0000-osc-x.max_dirty_mb" in cp.stdout and "No such file" in cp.stdout
    assert "no glob" in cp.stdout and "is not a whole number" in cp.stdout
    assert value(probe_facts(world), dirty) == 64
