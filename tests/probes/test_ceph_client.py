"""ceph.client_conf beyond the real corpus (refusals, precedence), and MOUNT-CEPH-FUSE's by-hand fix: the
kernel-client fstab line built from the mount point and the monitors the host's ceph.conf names."""

from __future__ import annotations

import pytest

from advisor.rules.analytic.storage import kernel_fstab_line
from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from probes import get_probe
from probes.ceph_conf import parse_ceph_conf
from probes.probe import ProbeParseError


def test_client_section_overrides_global_and_named_clients_are_kept_apart():
    f = parse_ceph_conf("[global]\nclient oc = false\nmon host = 10.0.0.1, 10.0.0.2\n[client]\nclient-oc = true\n"
                        "[client.admin]\nclient_oc = false\n")
    assert f.client["client_oc"].flag is True and f.client["client_oc"].section == "client"
    assert f.sections["client.admin"]["client_oc"].flag is False
    assert f.mon_host == ["10.0.0.1", "10.0.0.2"]


@pytest.mark.parametrize("text, msg", [
    ("client_oc = false\n", "line 1: option before any [section]"),
    ("[client]\nclient_oc false\n", "line 2: neither '[section]' nor 'key = value'"),
    ("# only comments\n", "no [section]"),
])
def test_not_a_ceph_conf_is_refused(text, msg):
    with pytest.raises(ProbeParseError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        parse_ceph_conf(text)


def test_kernel_fstab_line():
    assert kernel_fstab_line("/mnt/cephfs", ["10.0.0.1", "10.0.0.2"]) == \
        "10.0.0.1,10.0.0.2:/ /mnt/cephfs ceph name=admin,noatime,_netdev 0 0"
    # messenger-v2 address vectors are left to mount.ceph (it reads mon_host from ceph.conf)
    assert kernel_fstab_line("/mnt/ceph fuse", ["[v2:10.0.0.1:3300,v1:10.0.0.1:6789]"]) == \
        ":/ /mnt/ceph\\040fuse ceph name=admin,noatime,_netdev 0 0"


def test_mount_ceph_fuse_names_the_fstab_line_in_its_remediation():
    mounts = get_probe("mounts").parse(
        "@@section mounts\nceph-fuse /mnt/cephfs fuse.ceph-fuse rw,nosuid,nodev,relatime,user_id=0,group_id=0,"
        "allow_other 0 0\n@@section filesystems\nnodev\tproc\n@@section ceph-module\nno\n")
    conf = parse_ceph_conf("[global]\nmon_host = 192.168.1.10\n")
    h = HostFacts(name="wn1", roles=["worker"], probes={
        "mounts": ProbeResult(probe="mounts", status=ProbeStatus.ok, facts=mounts.model_dump()),
        "ceph.client_conf": ProbeResult(probe="ceph.client_conf", status=ProbeStatus.ok, facts=conf.model_dump())})
    [f] = [f for f in evaluate(FactSet(site="t", hosts={"wn1": h}), profiles=["generic"]).findings
           if f.rule_id == "MOUNT-CEPH-FUSE"]
    assert f.status == FindingStatus.fail and f.subject == "/mnt/cephfs"
    assert f.remediation.text.endswith("192.168.1.10:/ /mnt/cephfs ceph name=admin,noatime,_netdev 0 0")
    assert not f.changes
    assert "no ceph kernel module" in (f.message or "")


def test_option_also_set_for_a_named_client_is_not_planned_in_client():
    from advisor.adapters.ceph_client import ADAPTER
    from advisor.model.findings import Change

    conf = parse_ceph_conf("[client]\nclient_oc = false\n[client.admin]\nclient oc = false\n").model_dump()
    why = ADAPTER.cannot_change({"ceph.client_conf": conf}, Change(host="wn1", adapter="ceph_client", key="client_oc", target="true"), {})
    assert why and "[client.admin]" in why
    plain = parse_ceph_conf("[client]\nclient_oc = false\n").model_dump()
    assert ADAPTER.cannot_change({"ceph.client_conf": plain}, Change(host="wn1", adapter="ceph_client", key="client_oc", target="true"), {}) is None


def test_lab_emulators_say_whose_software_they_are_not(tmp_path):
    from advisor.lab.emulators.common import HEADER_COMMENT, write_wrapper

    write_wrapper(tmp_path / "ceph", "/usr/bin/python3", "/x", "advisor.lab.emulators.ceph", "ceph", tmp_path, "n",
                  vendor="Ceph")
    write_wrapper(tmp_path / "mmlsconfig", "/usr/bin/python3", "/x", "advisor.lab.emulators.gpfs", "mmlsconfig", tmp_path, "n")
    assert (tmp_path / "ceph").read_text().splitlines()[1] == "# storadvise lab emulator — not Ceph software"
    assert (tmp_path / "mmlsconfig").read_text().splitlines()[1] == HEADER_COMMENT
