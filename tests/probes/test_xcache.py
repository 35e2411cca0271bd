"""xcache.config / xcache.log / xcache.usage: real OSG samples, edge fixtures, rule logic, scripts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.rules.analytic.storage import xcache_occupancy, xcache_watermarks
from probes import get_probe
from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext, ProbeParseError

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLES, XC = FIX / "samples", FIX / "xcache"
CONF, LOG, USAGE = get_probe("xcache.config"), get_probe("xcache.log"), get_probe("xcache.usage")


def test_osg_sample_config():
    f = CONF.parse((SAMPLES / "xcache-osg-40-osg-xcache.cfg").read_text())
    c = f.cache
    assert f.cache_instance == "<input>" and c.is_cache
    assert c.pss_origin.raw == "redirector.osgstorage.org:1094" and not c.pss_origin.conditional
    assert [d.args for d in c.directives if d.name == "pss.origin"] == [
        "redirector.osgstorage.org:1094", "xrootd-local.unl.edu:1094"]
    cond = [d for d in c.directives if d.name == "pss.origin"][1]
    assert cond.condition == ["if named stashcache-cache-server-auth"]
    assert c.conditionals == ["if named stashcache-cache-server-auth", "fi"]
    assert c.oss_localroot.raw == "$(cachedir)"  # kept raw
    assert c.pfc_blocksize.raw == "512k" and c.pfc_blocksize.bytes == 512 * 1024
    assert c.pfc_ram.raw == "1g" and c.pfc_ram.bytes == 2**30
    assert c.pfc_prefetch.blocks == 10 and not c.pfc_prefetch.legacy
    du = c.pfc_diskusage
    assert (du.low_fraction, du.high_fraction, du.files, du.purgeinterval_s) == (0.90, 0.95, None, None)
    assert c.ofs_osslib.raw == "libXrdPss.so"
    assert c.pss_cachelib.raw == "libXrdFileCache.so" and c.cachelib_legacy
    assert [d.args for d in c.directives if d.name == "pss.setopt"][-1] == "ConnectionRetry 2"
    assert xcache_watermarks(f.model_dump()["cache"])[0] is True


def test_osg_monitoring_sample_continuation_lines():
    f = CONF.parse((SAMPLES / "xrootd-monitor-osg-40-osg-monitoring.cfg").read_text())
    inst = f.instances["<input>"]
    assert not inst.is_cache and f.cache is None
    mon = next(d for d in inst.directives if d.name == "xrootd.monitor")
    assert mon.args.split() == ("all auth flush 30s window 5s fstat 60 lfn ops xfr 5 dest redir fstat info user "
                                "xrd-report.osgstorage.org:9930 dest fstat info user xrd-mon.osgstorage.org:9930").split()
    assert next(d for d in inst.directives if d.name == "all.sitename").args == "$(sitename)"


def test_instances_continue_and_edge_directives():
    main = (XC / "xrootd-xcache-main-with-continue.cfg").read_text()
    site = (XC / "50-site-xcache-edge.cfg").read_text()
    osg = (SAMPLES / "xcache-osg-40-osg-xcache.cfg").read_text()
    text = ("@@section instance /etc/xrootd/xrootd-clustered.cfg\n@@section file /etc/xrootd/xrootd-clustered.cfg\n"
            "all.role server\nxrd.port 1094\n"
            f"@@section instance /etc/xrootd/xrootd-xcache.cfg\n@@section file /etc/xrootd/xrootd-xcache.cfg\n{main}"
            f"@@section file /etc/xrootd/config.d/40-osg-xcache.cfg\n{osg}"
            f"@@section file /etc/xrootd/config.d/50-site.cfg\n{site}")
    f = CONF.parse(text)
    assert list(f.instances) == ["/etc/xrootd/xrootd-clustered.cfg", "/etc/xrootd/xrootd-xcache.cfg"]
    assert not f.instances["/etc/xrootd/xrootd-clustered.cfg"].is_cache
    c = f.cache
    assert f.cache_instance == "/etc/xrootd/xrootd-xcache.cfg"
    assert c.files == ["/etc/xrootd/xrootd-xcache.cfg", "/etc/xrootd/config.d/40-osg-xcache.cfg", "/etc/xrootd/config.d/50-site.cfg"]
    assert c.continues == ["/etc/xrootd/config.d/"]
    assert c.variables == {"cachedir": "/data/xcache"}
    assert c.oss_localroot.raw == "/data/xcache"  # the later unconditional line wins
    assert [(s.name, s.path) for s in c.oss_spaces] == [("data", "/data1/xcache"), ("data", "/data2/xcache"), ("meta", "/ssd/xcache-meta")]
    assert c.pfc_spaces.raw == "data meta"
    assert c.pfc_ram.raw == "$(ramsize)" and c.pfc_ram.bytes is None
    assert c.pfc_prefetch.raw == "4" and c.pfc_prefetch.legacy  # pfc.nramprefetch, later than pfc.prefetch 10
    assert (c.pfc_writequeue.blocks, c.pfc_writequeue.threads) == (16, 4)
    du = c.pfc_diskusage
    assert du.files == ["300g", "500g", "600g"] and du.purgeinterval_s == 300 and du.purgecoldfiles == ["86400", "10"]
    ok, msg, observed = xcache_watermarks(f.model_dump()["cache"])
    assert not ok and observed == {"low": "0.95", "high": "0.90"}
    # the if/else cachelib: both conditional, the last one is taken and flagged
    assert c.pss_cachelib.raw == "libXrdFileCache.so" and c.pss_cachelib.conditional is False  # OSG's unconditional line
    libs = [(d.args, d.condition) for d in c.directives if d.name == "pss.cachelib"]
    assert libs[1] == ("libXrdPfc.so", ["if exec xrootd"])
    assert libs[2][1] == ["else-of if exec xrootd"]


def test_watermark_forms():
    assert xcache_watermarks(None)[0] is False
    assert xcache_watermarks({"pfc_diskusage": {"low_raw": "100g", "high_raw": "200g", "low_bytes": 100 * 2**30,
                                                "high_bytes": 200 * 2**30, "line": "x"}})[0] is True
    assert xcache_watermarks({"pfc_diskusage": {"low_raw": "0.9", "high_raw": None, "line": "x"}})[0] is False


def test_config_unreadable_is_error():
    with pytest.raises(ProbeParseError, match="permission denied"):
        CONF.parse("@@section instance /etc/xrootd/x.cfg\n@@section file /etc/xrootd/x.cfg\n@@section error\ncannot read /etc/xrootd/x.cfg: permission denied or missing\n")


def test_log_effective_block():
    f = LOG.parse("@@section log /var/log/xrootd/xcache/xrootd.log\n"
                  + (XC / "xrootd-log-config-effective-CONSTRUCTED-from-XrdPfcConfiguration.txt").read_text())
    assert f.log_file == "/var/log/xrootd/xcache/xrootd.log"
    assert f.config_file == "/etc/xrootd/xrootd-xcache.cfg"
    assert f.blocksize_bytes == 524288 and f.prefetch_blocks == 10 and f.ram_bytes == 4 * 2**30
    assert (f.writequeue_blocks, f.writequeue_threads) == (16, 4)
    assert f.total_disk_bytes == 21990232555520
    assert (f.diskusage_low_bytes, f.diskusage_high_bytes) == (19791209299968, 20890720927744)
    assert f.files_baseline_bytes is None and f.purgeinterval_s == 300 and f.purgecoldfiles_s is None
    assert f.spaces == ["data", "meta"] and f.parsing_ok is True
    assert f.directives["pfc.writemode"] == "off"
    # older releases print the block size with a k suffix
    g = LOG.parse("Config effective /x.cfg pfc configuration:\n       pfc.blocksize 1024k\n       pfc.ram 1g\n")
    assert g.blocksize_bytes == 2**20 and g.parsing_ok is None


def test_log_sample_without_block_is_error():
    with pytest.raises(ProbeParseError, match="Config effective"):
        LOG.parse((SAMPLES / "xrootd-log-lines-unattributed.txt").read_text())


def test_usage_and_occupancy():
    f = USAGE.parse((XC / "df-P-B1-cache-spaces.txt").read_text())
    assert set(f.spaces) == {"/data1/xcache", "/data2/xcache"}
    s1, s2 = f.spaces["/data1/xcache"], f.spaces["/data2/xcache"]
    assert s1.mountpoint == "/data1" and s1.used_bytes == 10664262834176
    assert s2.used_bytes == 8589934592 * 1024  # 1024-blocks
    assert f.errors == ["/ssd/xcache-meta: df: /ssd/xcache-meta: No such file or directory"]
    assert round(f.max_used_fraction, 2) == 0.97
    conf = {"pfc_diskusage": {"high_fraction": 0.95}}
    occ = xcache_occupancy(f.model_dump(), conf, None)
    assert occ["source"] == "configuration" and occ["above"] is (f.used_fraction > 0.95)
    log = LOG.parse((XC / "xrootd-log-config-effective-CONSTRUCTED-from-XrdPfcConfiguration.txt").read_text()).model_dump()
    occ = xcache_occupancy({"used_bytes": 99, "available_bytes": 1, "used_fraction": 0.99}, conf, log)
    assert occ["source"] == "xrootd log (active)" and occ["above"] and occ["high_fraction"] == 0.95
    with pytest.raises(ProbeParseError):
        USAGE.parse("@@section path /x\ndf: /x: No such file or directory\n")


@pytest.mark.root  # hides an installed xrootd in a private mount namespace
@pytest.mark.parametrize("probe", [CONF, LOG, USAGE])
def test_scripts_not_applicable_here(probe):
    """On a host with no xrootd configuration or log. This machine may have Debian's xrootd
    packages (install.sh installs them for the real-XCache lab test): then the script runs in a
    private mount namespace with empty tmpfs over /etc/xrootd and /var/log/xrootd."""
    script = probe.script(ProbeContext(host="c"))
    hide = [d for d in ("/etc/xrootd", "/var/log/xrootd") if Path(d).exists()]
    if hide:
        if os.geteuid() != 0:
            pytest.skip("xrootd is installed here; hiding /etc/xrootd needs root (CI is root)")
        mounts = " && ".join(f"mount -t tmpfs storadvise-test {d}" for d in hide)
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", f"{mounts} && {script}"]
    else:
        cmd = ["sh", "-c", script]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith(NOT_APPLICABLE_MARKER), out.stdout + out.stderr


def test_config_script_follows_continue(tmp_path):
    d = tmp_path / "config.d"
    d.mkdir()
    (d / "40-osg-xcache.cfg").write_text((SAMPLES / "xcache-osg-40-osg-xcache.cfg").read_text())
    (d / "50-site.cfg.rpmsave").write_text("pfc.ram 99g\n")
    main = tmp_path / "xrootd-xcache.cfg"
    main.write_text(f"all.export /\ncontinue {d}/\n")
    out = subprocess.run(["sh", "-c", CONF.script(ProbeContext(host="c", vars={"xcache_config": str(main)}))],
                         capture_output=True, text=True)
    f = CONF.parse(out.stdout)
    assert f.cache.files == [str(main), f"{d}/40-osg-xcache.cfg"]
    assert f.cache.pfc_ram.raw == "1g"


def test_usage_script_on_paths(tmp_path):
    out = subprocess.run(["sh", "-c", USAGE.script(ProbeContext(host="c", vars={"xcache_paths": [str(tmp_path)]}))],
                         capture_output=True, text=True)
    f = USAGE.parse(out.stdout)
    assert f.spaces[str(tmp_path)].size_bytes > 0


def test_usage_script_reads_the_configured_instance(tmp_path):
    """With ``xcache_config`` set, df measures that instance's oss.localroot, not /etc/xrootd's."""
    space = tmp_path / "cache"
    space.mkdir()
    cfg = tmp_path / "xcache.cfg"
    cfg.write_text(f"ofs.osslib libXrdPss.so\npss.cachelib libXrdPfc.so\noss.localroot {space}\n")
    out = subprocess.run(["sh", "-c", USAGE.script(ProbeContext(host="c", vars={"xcache_config": str(cfg)}))],
                         capture_output=True, text=True)
    f = USAGE.parse(out.stdout)
    assert list(f.spaces) == [str(space)] and f.spaces[str(space)].size_bytes > 0


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parsers_raise_only_parse_error(text):
    for probe in (CONF, LOG, USAGE):
        try:
            probe.parse(text)
        except ProbeParseError:
            pass


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["@@section instance /a", "@@section file /b", "@@section path /c", "if x", "else",
                                 "fi", "pfc.diskusage 0.9", "pfc.diskusage a b files", "pfc.ram", "oss.space data",
                                 "Config effective pfc configuration:", "   pfc.diskusage 1 2 files 3", "x \\",
                                 "Filesystem 1B-blocks", "/dev/x 1 2 3 4% /m", "", "@@section error"]), max_size=20))
def test_parsers_structured_noise(lines):
    for probe in (CONF, LOG, USAGE):
        try:
            probe.parse("\n".join(lines))
        except ProbeParseError:
            pass
