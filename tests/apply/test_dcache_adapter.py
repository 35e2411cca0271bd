"""The dcache adapter (advisor/adapters/dcache.py) on facts the dcache.layout probe parsed: current values,
what a host cannot change, the dcache_tuning role variables, and when the changes take effect (the
site's dcache_restart_domains)."""

from __future__ import annotations

from advisor.adapters.dcache import ADAPTER
from advisor.model.findings import Change
from probes import get_probe

TEXT = """@@section hostname
dc01
@@section layout_name
dc01
@@section conf
dcache.layout = ${host.name}
@@section layout
[${host.name}_poolsDomain]
dcache.java.memory.heap = 2g
[${host.name}_poolsDomain/pool]
pool.name = ${host.name}_1
pool.path = /data/p1
[doorsDomain]
[doorsDomain/srm]
@@section setup:/data/p1
mover set max active 20
"""


def facts(memory: int | None = None) -> dict:
    f = {"dcache.layout": get_probe("dcache.layout").parse(TEXT).model_dump()}
    if memory:
        f["host"] = {"memory_bytes": memory}
    return f


def change(key: str, target: str) -> Change:
    return Change(host="dc01", adapter="dcache", key=key, target=target)


def test_current_values_are_the_files_or_dcache_defaults():
    f = facts()
    assert ADAPTER.current(f, "layout:dc01_poolsDomain:dcache.java.memory.direct") == ("512m", "512m")
    assert ADAPTER.current(f, "layout:dc01_poolsDomain:dcache.java.memory.heap") == ("2g", "2g")
    assert ADAPTER.current(f, "layout:doorsDomain/srm:srm.limits.transfer-tcp-buffer.size") == ("1048576", "1048576")
    assert ADAPTER.current(f, "setup:dc01_1:regular") == ("20", "20")
    assert ADAPTER.same("2147483648", "2g")


def test_what_a_host_cannot_change():
    f = facts(memory=3 * 2**30)
    # 2 GiB direct + 2 GiB heap is more than the host's 3 GiB
    assert "more than the host's memory" in ADAPTER.cannot_change(
        f, change("layout:dc01_poolsDomain:dcache.java.memory.direct", "2147483648"), {})
    assert ADAPTER.cannot_change(facts(memory=64 * 2**30),
                                 change("layout:dc01_poolsDomain:dcache.java.memory.direct", "2147483648"), {}) is None
    assert "no domain" in ADAPTER.cannot_change(f, change("layout:nope:x", "1"), {})
    assert "runs no srm" in ADAPTER.cannot_change(f, change("layout:dc01_poolsDomain/srm:x", "1"), {})
    assert "takes a number" in ADAPTER.cannot_change(f, change("setup:dc01_1:regular", "lots"), {})
    assert "no pool" in ADAPTER.cannot_change(f, change("setup:other:regular", "100"), {})
    assert "no dCache layout" in ADAPTER.cannot_change({}, change("setup:dc01_1:regular", "100"), {})


def test_role_vars_name_the_headers_as_the_file_writes_them_and_the_restart_opt_in():
    changes = [change("layout:dc01_poolsDomain:dcache.java.memory.direct", "2147483648"),
               change("layout:doorsDomain/srm:srm.limits.transfer-tcp-buffer.size", "4194304"),
               change("setup:dc01_1:regular", "100")]
    v = ADAPTER.role_vars(changes, facts(), {})
    assert v["dcache_layout_file"] == "/etc/dcache/layouts/dc01.conf" and v["dcache_restart"] is False
    assert v["dcache_layout_settings"] == [
        {"header": "[${host.name}_poolsDomain]", "domain": "dc01_poolsDomain", "property": "dcache.java.memory.direct",
         "value": "2147483648"},
        {"header": "[doorsDomain/srm]", "domain": "doorsDomain", "property": "srm.limits.transfer-tcp-buffer.size",
         "value": "4194304"}]
    assert v["dcache_setup_settings"] == [{"file": "/data/p1/setup", "queue": "regular", "value": 100,
                                           "domain": "dc01_poolsDomain"}]
    assert "takes effect at next domain restart" in ADAPTER.notice("dc01", changes, {})
    assert ADAPTER.role_vars(changes, facts(), {"dcache_restart_domains": "true"})["dcache_restart"] is True
    assert ADAPTER.notice("dc01", changes, {"dcache_restart_domains": "true"}) is None
