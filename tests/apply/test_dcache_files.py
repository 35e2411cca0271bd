"""The dcache_tuning module's text edits (playbooks/roles/dcache_tuning/library/storadvise_dcache_config.py):
a property set under one header of a real layout file (tests/fixtures/real/dcache.layout, sources in its
SOURCES.md) and the mover limit of a real pool setup file, everything else left as it was."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "real" / "dcache.layout"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_load("ansible.module_utils.storadvise_state", REPO / "playbooks" / "plugins" / "module_utils" / "storadvise_state.py")
dc = _load("storadvise_dcache_config", REPO / "playbooks" / "roles" / "dcache_tuning" / "library" / "storadvise_dcache_config.py")
SECTIONS = (REAL / "book-layout-with-puppet-pool-setup.sections").read_text()
LAYOUT = SECTIONS.split("@@section layout\n", 1)[1].split("@@section setup:", 1)[0]
SETUP = SECTIONS.split("@@section setup:/srv/dcache/pool-1\n", 1)[1]


def test_a_property_goes_under_its_header_only():
    lines = LAYOUT.splitlines()
    out, old = dc.set_property(lines, "[dCacheDomain]", "dcache.java.memory.direct", "2147483648")
    assert old is None and out[out.index("[dCacheDomain]") + 1] == "dcache.java.memory.direct = 2147483648"
    assert [x for x in out if x != "dcache.java.memory.direct = 2147483648"] == lines
    # an existing line of that section is replaced, the same key under another header is not touched
    again, old = dc.set_property(out, "[dCacheDomain]", "dcache.java.memory.direct", "4g")
    assert old == "2147483648" and again.count("dcache.java.memory.direct = 4g") == 1 and len(again) == len(out)
    svc, old = dc.set_property(lines, "[dCacheDomain/webdav]", "webdav.authn.basic", "false")
    assert old == "true" and "webdav.authn.basic = false" in svc and " webdav.authn.basic = true" not in svc
    assert dc.set_property(lines, "[nope]", "x", "1") is None


def test_the_mover_limit_line_of_its_queue_is_replaced_or_added():
    lines = SETUP.splitlines()
    out, old = dc.set_mover(lines, "regular", 400)
    assert old == "100" and "mover set max active -queue=regular 400" in out and "mover set max active -queue=p2p 10" in out
    assert len(out) == len(lines) and [x for x in out if "regular 400" not in x] == [x for x in lines if "regular 100" not in x]
    bare, old = dc.set_mover(["mover set max active 20", "set max diskspace 100g"], "regular", 100)
    assert old == "20" and bare == ["mover set max active -queue=regular 100", "set max diskspace 100g"]
    added, old = dc.set_mover(["csm set checksumtype ADLER32"], "io", 50)
    assert old is None and added[-1] == "mover set max active -queue=io 50"


def test_the_same_key_of_another_domain_is_left_alone_in_a_real_site_layout():
    lines = (REAL / "desy-real-installation-layout.conf").read_text().splitlines()
    out, old = dc.set_property(lines, "[${host.name}_coreDomain]", "dcache.java.memory.heap", "8192m")
    assert old == "4096m"
    core = out.index("[${host.name}_coreDomain]")
    assert out[core + 2] == "dcache.java.memory.heap = 8192m"
    msg = out.index("[${host.name}_messageDomain]")
    assert out[msg + 2] == "dcache.java.memory.heap=4096m"
    assert sum(a != b for a, b in zip(lines, out)) == 1 and len(out) == len(lines)
