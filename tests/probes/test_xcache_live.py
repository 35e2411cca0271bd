"""xcache.cinfo and xcache.process: parsers on outputs of the real daemon and tools (Debian
xrootd 5.5.3: xrdpfc_print -j of a live XCache's .cinfo files in the storadvise lab, with its
warnings for a corrupt and a missing file; ps of the lab's origin and cache processes), and the
scripts run here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes import get_probe
from probes.probe import ProbeContext, ProbeParseError
from probes.xcache_live import parse_xrdpfc_print_json, parse_xrootd_ps

XC = Path(__file__).resolve().parents[1] / "fixtures" / "real"
CINFO, PROC = get_probe("xcache.cinfo"), get_probe("xcache.process")


def test_cinfo_of_a_live_cache():
    f = parse_xrdpfc_print_json((XC / "xcache.cinfo" / "xrdpfc_print-j-lab-5.5.3.txt").read_text())
    assert f.n_files == 3 and f.n_complete == 3 and not f.errors
    assert {Path(x.file).name for x in f.files} == {"file0003", "file0005", "file0006"}
    assert f.bytes_cached == 3 * 1048576 and f.block_sizes == [65536]
    f5 = next(x for x in f.files if x.file.endswith("file0005"))
    assert f5.accesses_total == 2  # read twice through the cache
    assert f.bytes_miss >= 3 * 1048576 and 0 < f.hit_fraction < 1


def test_cinfo_keeps_xrdpfc_print_warnings():
    f = parse_xrdpfc_print_json((XC / "xcache.cinfo" / "xrdpfc_print-j-with-errors-lab-5.5.3.txt").read_text())
    assert f.n_files == 1 and len(f.errors) == 2
    assert "File version 877638360 not supported" in f.errors[0]


@pytest.mark.parametrize("text", ["", "@@section path /x\n", '{"file": 1}\n', "{not json\n",
                                  '{"file":"/a","state_complete":"complete","state_percentage":150,'
                                  '"file_size":1,"buffer_size":1,"n_acc_total":0}\n'])
def test_cinfo_refuses_other_input(text):
    with pytest.raises(ProbeParseError):
        parse_xrdpfc_print_json(text)


def test_process_of_the_configured_instance():
    text = (XC / "xcache.process" / "ps-xrootd-lab.txt").read_text()
    f = parse_xrootd_ps(text)
    assert f.running and len(f.processes) == 1
    assert f.processes[0].user == "xrootd" and "-n xcache" in f.processes[0].args
    stopped = parse_xrootd_ps("\n".join(l for l in text.splitlines() if "xcache.cfg -l" not in l))
    assert not stopped.running


def test_process_refuses_other_input():
    for text in ("", "1 root 5 /usr/bin/xrootd\n", "@@config /a\nx y z w\n"):
        with pytest.raises(ProbeParseError):
            parse_xrootd_ps(text)


def test_process_script_sees_a_real_process(tmp_path):
    """The script finds a process whose argv names the configuration (a real `xrootd`-named
    process started here: a copy of sh, whose argv ends with the file), and not once it is gone."""
    exe = tmp_path / "xrootd"
    exe.write_bytes(Path("/bin/sh").read_bytes())
    exe.chmod(0o755)
    cfg = tmp_path / "xcache.cfg"
    p = subprocess.Popen([str(exe), "-c", "sleep 30; :", str(cfg)])
    try:
        script = PROC.script(ProbeContext(host="c", vars={"xcache_config": str(cfg)}))
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
        f = PROC.parse(out)
        assert [x.pid for x in f.processes] == [p.pid], out
    finally:
        p.kill()
        p.wait()
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
    assert not PROC.parse(out).running


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_parsers_raise_only_parse_error(text):
    for parse in (parse_xrdpfc_print_json, parse_xrootd_ps):
        try:
            parse(text)
        except ProbeParseError:
            pass
