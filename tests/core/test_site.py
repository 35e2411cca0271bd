"""Site files and Ansible inventories: loading, lookup by name, one-line errors with file:line:field."""

from __future__ import annotations

import textwrap

import pytest

from advisor.util.errors import SiteFileError
from advisor.site.inventory import parse_inventory_list, parse_role_map, site_from_inventory
from advisor.site.model import Role, local_site
from advisor.site.file import load_site

SITE = """\
name: t2-example
storage_kind: gpfs
profiles: [generic, gpfs-site]
defaults:
  user: root
  key: keys/id_ed25519
  link_rate: 1gbit
storage_network:
  prefixes: [10.10.0.0/24]
hosts:
  - name: gpfs01
    address: 10.10.0.11
    roles: [storage, san-controller]
    groups: [gpfs]
    san_controllers: [ds4700-a, ds4700-b]
  - name: wn01
    address: 10.10.0.21
    port: 2222
    roles: [worker]
    groups: [wn]
    link_rate: 10G
waivers:
  - rule: FW-STORAGE-NETWORK
    hosts: "gpfs*"
    justification: security team ticket 4711
    expires: 2027-01-31
mesh:
  pairs:
    - {a: gpfs}
    - {a: wn, b: gpfs, direction: both}
"""


def test_load_site_by_path_and_defaults(tmp_path):
    p = tmp_path / "t2.yml"
    p.write_text(SITE)
    site = load_site(str(p))
    g, w = site.hosts
    assert g.user == "root" and g.key == tmp_path / "keys/id_ed25519"  # relative to the site file
    assert g.link_rate == 10**9 and w.link_rate == 10 * 10**9  # host value beats the default
    assert w.port == 2222 and g.port == 22
    assert g.has_role(Role.storage) and g.has_role("san-controller")
    assert site.hosts_in("gpfs") == [g] and site.hosts_in("worker") == [w]
    assert site.waivers[0].expires.isoformat() == "2027-01-31"
    assert site.mesh.pairs[1].b == "gpfs"
    # a storage kind's host setting written at host level is kept in the host's vars
    assert g.setting("san_controllers") == ["ds4700-a", "ds4700-b"] and "san_controllers" in g.vars


def test_site_found_by_name(tmp_path, monkeypatch):
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "t2-example.yml").write_text(SITE)
    monkeypatch.chdir(tmp_path)
    assert load_site("t2-example").name == "t2-example"
    with pytest.raises(SiteFileError, match="no site named 'nope'"):
        load_site("nope")


@pytest.mark.parametrize(
    "mutate,line,field",
    [
        (lambda s: s.replace("port: 2222", "port: 99999"), 18, "hosts.1.port"),
        (lambda s: s.replace("roles: [worker]", "roles: [wizard]"), 19, "hosts.1.roles.0"),
        (lambda s: s.replace("link_rate: 10G", "link_rate: fast"), 21, "hosts.1.link_rate"),
        (lambda s: s.replace("    justification: security team ticket 4711\n", ""), 23, "waivers.0.justification"),
        (lambda s: s.replace("storage_kind: gpfs", "storage_kind: tape"), 2, "storage_kind"),
        (lambda s: s.replace("  - name: wn01", "  - nam: wn01"), 16, "hosts.1.name"),
    ],
)
def test_bad_site_file_names_file_line_field(tmp_path, mutate, line, field):
    p = tmp_path / "bad.yml"
    p.write_text(mutate(SITE))
    with pytest.raises(SiteFileError) as exc:
        load_site(str(p))
    msg = str(exc.value)
    assert msg.startswith(f"{p}:{line}: {field}"), msg
    assert "\n" not in msg


def test_yaml_syntax_error_and_missing_file(tmp_path):
    p = tmp_path / "broken.yml"
    p.write_text("name: x\nhosts:\n  - name: [unclosed\n")
    with pytest.raises(SiteFileError, match=r"broken.yml:\d+: invalid YAML"):
        load_site(str(p))
    with pytest.raises(SiteFileError, match="site file not found"):
        load_site(str(tmp_path / "missing.yml"))
    (tmp_path / "dup.yml").write_text("name: x\nhosts:\n  - {name: a}\n  - {name: a}\n")
    with pytest.raises(SiteFileError, match="duplicate host name 'a'"):
        load_site(str(tmp_path / "dup.yml"))


INI = """\
# production inventory
[gpfs_servers]
gpfs01 ansible_host=10.10.0.11 ansible_user=root
gpfs02 ansible_host=10.10.0.12

[wn]
wn[01:02]
"""


def test_ini_inventory_read_by_ansible_inventory(tmp_path):
    """Ranges, :children, :vars, group_vars/ and host_vars/ directories: as Ansible sees them."""
    p = tmp_path / "hosts.ini"
    p.write_text(INI + "\n[storage:children]\ngpfs_servers\n\n[all:vars]\nansible_ssh_private_key_file=/k/id\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "wn.yml").write_text("ansible_user: cms\nansible_port: 2222\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "wn02.yml").write_text("ansible_host: 10.20.0.2\n")
    site = site_from_inventory(p, parse_role_map(["gpfs_servers=storage", "wn=worker"]), name="prod")
    by = {h.name: h for h in site.hosts}
    assert sorted(by) == ["gpfs01", "gpfs02", "wn01", "wn02"]  # wn[01:02] expanded by Ansible
    assert by["gpfs01"].address == "10.10.0.11" and by["gpfs01"].user == "root"
    assert by["gpfs01"].role_names == ["storage"] and "storage" in by["gpfs01"].groups  # :children expanded
    assert by["wn01"].port == 2222 and by["wn01"].user == "cms" and by["wn01"].role_names == ["worker"]
    assert by["wn02"].address == "10.20.0.2" and str(by["wn02"].key) == "/k/id"
    with pytest.raises(SiteFileError, match="GROUP=ROLE"):
        parse_role_map(["wn=wizard"])


def test_dynamic_inventory_script(tmp_path):
    script = tmp_path / "cmdb.py"
    script.write_text("#!/bin/sh\n"
                      "echo '{\"wn\": {\"hosts\": [\"wn0001\", \"wn0002\"], \"vars\": {\"ansible_user\": \"grid\"}},"
                      " \"_meta\": {\"hostvars\": {\"wn0001\": {\"ansible_host\": \"10.1.0.1\"}}}}'\n")
    script.chmod(0o755)
    site = site_from_inventory(script, {"wn": "worker"}, name="cmdb")
    by = {h.name: h for h in site.hosts}
    assert by["wn0001"].address == "10.1.0.1" and by["wn0002"].user == "grid" and by["wn0002"].role_names == ["worker"]


def test_inventory_list_groups_and_hostile_values():
    hosts = parse_inventory_list({"_meta": {"hostvars": {"a": {"x": 1}, "b": "junk"}},
                                  "all": {"children": ["ungrouped", "top"]}, "top": {"children": ["mid"]},
                                  "mid": {"hosts": ["a"], "children": ["top"]}, "ungrouped": {"hosts": ["b"]}})
    assert hosts["a"].groups == {"mid", "top", "all"} and hosts["a"].vars == {"x": 1}
    assert hosts["b"].groups == {"ungrouped", "all"} and hosts["b"].vars == {}
    with pytest.raises(SiteFileError, match="not a JSON object|did not return"):
        parse_inventory_list(["a"])


def test_yaml_inventory_in_site_file(tmp_path):
    (tmp_path / "inv.yml").write_text(textwrap.dedent("""\
        all:
          children:
            gpfs:
              hosts:
                gpfs01: {ansible_host: 10.0.0.1}
            wn:
              vars: {ansible_user: cms}
              hosts:
                wn01:
        """))
    (tmp_path / "site.yml").write_text("name: inv-site\ninventory:\n  path: inv.yml\n  role_map: {gpfs: storage, wn: worker}\n")
    site = load_site(str(tmp_path / "site.yml"))
    by = {h.name: h for h in site.hosts}
    assert by["gpfs01"].role_names == ["storage"] and by["wn01"].user == "cms"
    (tmp_path / "site2.yml").write_text("name: s\ninventory:\n  path: inv.yml\n  role_map: {gpfs: wizard}\n")
    with pytest.raises(SiteFileError, match=r"site2.yml:4: inventory.role_map.gpfs: unknown role"):
        load_site(str(tmp_path / "site2.yml"))


def test_inventory_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.ini"
    bad.write_text("[g]\nh1 novalue\n")
    with pytest.raises(SiteFileError, match=r"bad.ini: ansible-inventory cannot read it: .*key=value") as ei:
        site_from_inventory(bad, {})
    assert "\n" not in str(ei.value)
    with pytest.raises(SiteFileError, match="no such file"):
        site_from_inventory(tmp_path / "missing.ini", {})
    templated = tmp_path / "t.ini"
    templated.write_text("h1 ansible_host='{{ lookup(\"pipe\", \"id\") }}'\n")
    with pytest.raises(SiteFileError, match="is a template"):
        site_from_inventory(templated, {})


def test_local_site():
    s = local_site()
    assert s.transport == "local" and len(s.hosts) == 1


def test_immutable_settings_and_waiver_settings(tmp_path):
    p = tmp_path / "s.yml"
    p.write_text("""name: s
hosts: [{name: st01}, {name: wn01}]
immutable:
  - net.core.rmem_max
  - {key: "gpfs:pagepool", hosts: "st*", reason: sized by the vendor}
waivers:
  - {settings: [net.core.wmem_max], hosts: "wn*", justification: kernel team}
""")
    site = load_site(str(p))
    a, b = site.immutable
    assert a.covers("sysctl", "net.core.rmem_max", "wn01") and not a.covers("sysctl", "net.core.wmem_max", "wn01")
    assert b.covers("gpfs", "pagepool", "st01") and not b.covers("gpfs", "pagepool", "wn01")
    assert not b.covers("sysctl", "pagepool", "st01") and b.reason == "sized by the vendor"
    w = site.waivers[0]
    assert w.covers_setting("sysctl", "net.core.wmem_max", "wn01") and not w.covers_setting("sysctl", "net.core.wmem_max", "st01")
    assert not w.matches("NET-CORE-BUFFER-MAX", "wn01")  # settings only: it waives no finding
    p.write_text("name: s\nhosts: [{name: st01}]\nwaivers:\n  - {hosts: '*', justification: why}\n")
    with pytest.raises(SiteFileError) as e:
        load_site(str(p))
    assert "names a 'rule'" in str(e.value) and "\n" not in str(e.value)
