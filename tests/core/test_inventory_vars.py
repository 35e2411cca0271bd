"""Ansible inventories read faithfully (advisor/site/inventory.py): host and group vars as ``ansible-inventory --list``
gives them: link_rate, rack, storadvise_roles, ansible_become*; a host no role mapping covers is named and left
out, never scanned with no role."""

from __future__ import annotations

import textwrap

import pytest

from advisor.util.errors import SiteFileError
from advisor.site.inventory import parse_role_map, site_from_inventory
from advisor.site.file import resolve_site

INVENTORY = """\
all:
  children:
    fast:
      hosts:
        st01: {ansible_host: 10.0.0.1}
        st02: {ansible_host: 10.0.0.2, link_rate: 25gbit}
    slow:
      hosts:
        wn01: {ansible_host: 10.0.1.1}
    monitoring:
      hosts:
        mon01: {ansible_host: 10.0.9.1}
        mon02: {ansible_host: 10.0.9.2, storadvise_roles: [door]}
"""


def _write(tmp_path):
    inv = tmp_path / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text(INVENTORY)
    (inv / "group_vars" / "fast.yml").write_text("link_rate: 100gbit\nrack: r17\n")
    (inv / "group_vars" / "slow.yml").write_text(textwrap.dedent("""\
        link_rate: 10G
        rack: r02
        ansible_become: true
        ansible_become_user: root
        ansible_become_password: s3cret
        """))
    return inv


def test_group_and_host_vars_are_read_and_unmapped_hosts_skipped(tmp_path, capsys):
    inv = _write(tmp_path)
    site = resolve_site(None, inv, ["fast=storage", "slow=worker"])
    by = {h.name: h for h in site.hosts}
    assert sorted(by) == ["mon02", "st01", "st02", "wn01"]
    # group_vars, and a host's own value over its group's
    assert by["st01"].link_rate == 100 * 10**9 and by["st02"].link_rate == 25 * 10**9 and by["wn01"].link_rate == 10**10
    assert by["st01"].setting("rack") == "r17" and by["wn01"].setting("rack") == "r02"
    assert by["wn01"].sudo is True and by["st01"].sudo is None
    assert by["wn01"].vars.get("ansible_become_user") == "root"
    assert "ansible_become_password" not in by["wn01"].vars  # a secret stays in the site's inventory
    assert by["mon02"].role_names == ["door"] and by["st01"].role_names == ["storage"]
    # a host no role mapping covers is named and left out
    assert site.skipped_hosts == ["mon01"]
    err = capsys.readouterr().err
    assert "skipped 1 inventory host(s)" in err and "mon01" in err and "mon02" not in err


def test_an_inventory_where_no_host_has_a_role_is_refused_naming_its_groups(tmp_path):
    (tmp_path / "hosts.ini").write_text("[fast]\nst01\n[monitoring]\nmon01\n")
    with pytest.raises(SiteFileError,
                       match=r"no host has a role: give --role-map GROUP=ROLE \(groups: fast, monitoring\) or storadvise_roles"):
        site_from_inventory(tmp_path / "hosts.ini", {})


def test_bad_values_are_one_line_errors_naming_the_host(tmp_path):
    inv = _write(tmp_path)
    (inv / "host_vars").mkdir()
    (inv / "host_vars" / "st01.yml").write_text("link_rate: 10\n")
    with pytest.raises(SiteFileError, match=r"host st01: link_rate: .*below 1 Mbit/s") as ei:
        site_from_inventory(inv, parse_role_map(["fast=storage"]))
    assert "\n" not in str(ei.value)
    (inv / "host_vars" / "st01.yml").write_text("storadvise_roles: wizard\n")
    with pytest.raises(SiteFileError, match=r"host st01: storadvise_roles: unknown role 'wizard'"):
        site_from_inventory(inv, parse_role_map(["fast=storage"]))
    (inv / "host_vars" / "st01.yml").write_text("ansible_become: true\nansible_become_method: su\n")
    with pytest.raises(SiteFileError, match=r"host st01: become 'su' to 'root': the probes run with sudo to root only"):
        site_from_inventory(inv, parse_role_map(["fast=storage"]))
