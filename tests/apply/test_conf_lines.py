"""The line edits behind the ceph_client and beegfs_client roles (playbooks/module_utils/storadvise_conf_lines.py),
on real files: ceph's own sample ceph.conf excerpt and ThinkParQ's shipped beegfs-client.conf."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("storadvise_conf_lines", REPO / "playbooks" / "module_utils" / "storadvise_conf_lines.py")
conf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conf)

CEPH = (REPO / "tests/fixtures/real/ceph.client_conf/ceph-sample.ceph.conf-global-and-client-excerpt.txt").read_text()
BEEGFS = (REPO / "tests/fixtures/real/beegfs.client_conf/thinkparq-beegfs-client.conf-settings.txt").read_text()


def canon(k: str) -> str:
    return re.sub(r"[ _-]+", "_", k.strip()).lower()


def test_ceph_option_added_to_the_client_section_only():
    assert conf.read_option(CEPH, "client", "client_oc", canon, "#;") is None
    new = conf.set_option(CEPH, "client", "client_oc", "true", canon)
    assert conf.read_option(new, "client", "client_oc", canon, "#;") == "true"
    # after [client]'s last option, before [client.radosgw.gateway]; with that option's indentation
    lines = new.splitlines()
    i = lines.index("    client_oc = true")
    assert lines[i - 1].strip().startswith("rbd cache") and "[client.radosgw.gateway]" in "\n".join(lines[i:])
    assert conf.read_option(new, "client.radosgw.gateway", "client_oc", canon, "#;") is None
    # every other line is kept
    assert [ln for ln in lines if ln != "    client_oc = true"] == CEPH.splitlines()


def test_ceph_spelling_with_spaces_is_the_same_option():
    new = conf.set_option(CEPH, "client", "rbd_cache", "false", canon)
    assert "    rbd cache                           = false" in new.splitlines()
    assert conf.read_option(new, "client", "rbd_cache", canon, "#;") == "false"
    # [global] is untouched: the option lives there too under another name
    assert conf.read_option(new, "global", "auth_client_required", canon, "#;") == "cephx"


def test_missing_section_is_added_at_the_end():
    new = conf.set_option("[global]\n\tfsid = x\n", "client", "client_oc", "true", canon)
    assert new == "[global]\n\tfsid = x\n\n[client]\n\tclient_oc = true\n"


def test_inline_comment_goes_with_the_old_value():
    text = "[client]\nclient_oc = false   # off while debugging\n"
    assert conf.set_option(text, "client", "client_oc", "true", canon) == "[client]\nclient_oc = true\n"


def test_commented_option_is_not_the_option():
    text = "[client]\n;client_oc = false\n"
    assert conf.read_option(text, "client", "client_oc", canon, "#;") is None
    assert conf.set_option(text, "client", "client_oc", "true", canon) == "[client]\n\tclient_oc = true\n;client_oc = false\n"


def test_beegfs_flat_file_value_rewritten_in_place():
    assert conf.read_option(BEEGFS, None, "connMaxInternodeNum") == "12"
    new = conf.set_option(BEEGFS, None, "connMaxInternodeNum", "24")
    assert conf.read_option(new, None, "connMaxInternodeNum") == "24"
    changed = [(a, b) for a, b in zip(BEEGFS.splitlines(), new.splitlines()) if a != b]
    assert changed == [("connMaxInternodeNum           = 12", "connMaxInternodeNum           = 24")]
    # keys are case-sensitive in beegfs-client.conf: another spelling is another key
    assert conf.read_option(BEEGFS, None, "connmaxinternodenum") is None


def test_values_that_would_not_read_back_are_refused():
    assert conf.refusal("client_oc", "true") is None
    assert conf.refusal("client_oc", "true\n[global]") and conf.refusal("client_oc", "a;b")
    assert conf.refusal("client oc", "true") and conf.refusal("x", " padded")


_xs = importlib.util.spec_from_file_location("storadvise_hadoop_xml", REPO / "playbooks" / "module_utils" / "storadvise_hadoop_xml.py")
hxml = importlib.util.module_from_spec(_xs)
_xs.loader.exec_module(hxml)

SITE = """<?xml version="1.0"?>
<configuration>
  <!-- <property><name>dfs.balancer.dispatcherThreads</name><value>10</value></property> -->
  <property>
    <name>dfs.balancer.dispatcherThreads</name>
    <value>400</value>
    <description>kept</description>
  </property>
  <property><name>dfs.balancer.dispatcherThreads</name><value>500</value></property>
</configuration>
"""


def test_hdfs_site_last_property_wins_and_comments_are_not_properties():
    assert hxml.read_property(SITE, "dfs.balancer.dispatcherThreads") == "500"
    new = hxml.set_property(SITE, "dfs.balancer.dispatcherThreads", "200")
    assert hxml.read_property(new, "dfs.balancer.dispatcherThreads") == "200"
    assert "<value>10</value></property> -->" in new and "<value>400</value>" in new  # only the last one changed


def test_hdfs_site_missing_property_added_before_the_end():
    new = hxml.set_property(SITE, "dfs.datanode.balance.max.concurrent.moves", "50")
    assert new.endswith("  <property>\n    <name>dfs.datanode.balance.max.concurrent.moves</name>\n"
                        "    <value>50</value>\n  </property>\n</configuration>\n")
    assert new.startswith(SITE.rsplit("</configuration>", 1)[0])


def test_hdfs_site_not_a_configuration_file_is_refused():
    import pytest

    with pytest.raises(ValueError, match="not a Hadoop configuration file"):
        hxml.read_property("<configuration><property>", "x")
    with pytest.raises(ValueError, match="root element is <beans>"):
        hxml.set_property("<beans/>", "dfs.x", "1")
    assert hxml.refusal("dfs.x", "1</value>") and hxml.refusal("dfs.x", "50") is None
