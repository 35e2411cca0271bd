"""The lab's GPFS and SAN emulators: formats of FORMATS.md §1/§2 and state changes (no root needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.lab.emulators import gpfs, san
from advisor.lab.emulators.common import HEADER_COMMENT, read_invocations, write_wrapper
from advisor.lab.emulation import package_root


@pytest.fixture
def gstate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cluster = gpfs.initial_cluster(
        "gpfs.test.lab", "123", ["gpfs01", "gpfs02", "wn01"], {"nsdNodes": ["gpfs01", "gpfs02"]},
        {"pagepool": "512M", "prefetchThreads": 50, "worker1Threads": 100},
        [(["wn01"], {"maxFilesToCache": "4M"})], ["/dev/fs1"],
    )
    gpfs.setup_state(tmp_path, cluster)
    monkeypatch.setenv("STORADVISE_LAB_HOST", "gpfs01")
    return tmp_path


def run(tool: str, args: list[str], state: Path, capsys: pytest.CaptureFixture, host: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if host and monkeypatch:
        monkeypatch.setenv("STORADVISE_LAB_HOST", host)
    mod = san if tool == "SMcli" else gpfs
    rc = mod.main(tool, args, str(state))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_mmlsconfig_layout(gstate: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, _ = run("mmlsconfig", [], gstate, capsys)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "Configuration data for cluster gpfs.test.lab:"
    assert set(lines[1]) == {"-"}
    assert "clusterName gpfs.test.lab" in lines and "pagepool 512M" in lines
    i = lines.index("[wn01]")
    assert lines[i + 1] == "maxFilesToCache 4M"
    assert "[common]" in lines and lines.index("[common]") > i
    j = lines.index("File systems in cluster gpfs.test.lab:")
    assert set(lines[j + 1]) == {"-"} and lines[j + 2] == "/dev/fs1"
    rc, out, _ = run("mmlsconfig", ["pagepool"], gstate, capsys)
    assert out == "pagepool 512M\n"


def test_mmlsconfig_parses_with_the_gpfs_probe(gstate: Path, capsys: pytest.CaptureFixture) -> None:
    fmt = pytest.importorskip("probes.gpfs_format")
    run("mmlsconfig", [], gstate, capsys)
    _, out, _ = run("mmlsconfig", [], gstate, capsys)
    parsed = fmt.parse_mmlsconfig(out)
    assert parsed["cluster_name"] == "gpfs.test.lab"
    assert parsed["filesystems"] == ["/dev/fs1"]
    assert not parsed["unparsed"]
    _, out, _ = run("mmdiag", ["--config", "-Y"], gstate, capsys)
    active = fmt.parse_mmdiag_config(out)["active"]
    assert active["pagepool"]["value"] in ("536870912", 536870912) or "536870912" in json.dumps(active["pagepool"])


def test_mmdiag_y_bytes_and_header(gstate: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, _ = run("mmdiag", ["--config", "-Y"], gstate, capsys)
    lines = out.splitlines()
    assert lines[0] == "mmdiag:config:HEADER:version:reserved:reserved:name:value:changed:"
    assert "mmdiag:config:0:1:::pagepool:536870912:static:" in lines
    assert "mmdiag:config:0:1:::prefetchThreads:50:static:" in lines
    assert all(l.startswith("mmdiag:config:0:1:::") and l.endswith(":") for l in lines[1:])


def test_mmchconfig_persist_then_restart(gstate: Path, capsys: pytest.CaptureFixture, monkeypatch) -> None:
    rc, out, _ = run("mmchconfig", ["pagepool=1G,prefetchThreads=100"], gstate, capsys)
    assert rc == 0 and "mmchconfig: Command successfully completed" in out
    assert run("mmlsconfig", ["pagepool"], gstate, capsys)[1] == "pagepool 1G\n"
    # persisted only: active unchanged until restart
    assert "pagepool:536870912:" in run("mmdiag", ["--config", "-Y"], gstate, capsys)[1]
    run("mmshutdown", [], gstate, capsys)
    assert run("mmdiag", ["--config", "-Y"], gstate, capsys)[0] != 0
    run("mmstartup", [], gstate, capsys)
    out = run("mmdiag", ["--config", "-Y"], gstate, capsys)[1]
    assert "pagepool:1073741824:" in out and "prefetchThreads:100:static:" in out
    # gpfs02 was not restarted
    out = run("mmdiag", ["--config", "-Y"], gstate, capsys, "gpfs02", monkeypatch)[1]
    assert "pagepool:536870912:" in out


def test_mmchconfig_immediate_and_node_scope(gstate: Path, capsys: pytest.CaptureFixture, monkeypatch) -> None:
    rc, out, err = run("mmchconfig", ["pagepool=2G,prefetchThreads=80", "-i", "-N", "nsdNodes"], gstate, capsys)
    assert rc == 0
    assert "prefetchThreads" in err  # cannot change in the running daemon
    out = run("mmlsconfig", [], gstate, capsys)[1]
    assert "[nsdNodes]\npagepool 2G\nprefetchThreads 80\n" in out
    assert "pagepool 512M" in out  # cluster-wide value kept
    d = run("mmdiag", ["--config", "-Y"], gstate, capsys, "gpfs02", monkeypatch)[1]
    assert "pagepool:2147483648:dynamic:" in d and "prefetchThreads:50:" in d
    d = run("mmdiag", ["--config", "-Y"], gstate, capsys, "wn01", monkeypatch)[1]
    assert "pagepool:536870912:" in d
    # -I: active, not persisted
    run("mmchconfig", ["maxMBpS=8000", "-I"], gstate, capsys)
    assert "maxMBpS 8000" not in run("mmlsconfig", [], gstate, capsys)[1]
    assert "maxMBpS:8000:dynamic:" in run("mmdiag", ["--config", "-Y"], gstate, capsys)[1]


def test_mmchconfig_errors_and_log(gstate: Path, capsys: pytest.CaptureFixture) -> None:
    assert run("mmchconfig", ["pagepool"], gstate, capsys)[0] != 0
    assert run("mmchconfig", ["pagepool=1G", "-N", "nosuchnode"], gstate, capsys)[0] != 0
    assert run("mmchconfig", [], gstate, capsys)[0] != 0
    log = read_invocations(gstate)
    assert [e["argv"][0] for e in log] == ["mmchconfig"] * 3
    assert log[1]["argv"] == ["mmchconfig", "pagepool=1G", "-N", "nosuchnode"] and log[1]["host"] == "gpfs01"
    assert log[1]["rc"] != 0


@pytest.fixture
def sstate(tmp_path: Path) -> Path:
    settings = dict(read_cache=True, prefetch=False, write_cache=True, write_cache_mirroring=True,
                    write_cache_without_batteries=False, flush_after=10.0, modification_priority="high",
                    raid_level=5, capacity="5,585.000 GB", status="Optimal")
    san.setup_state(tmp_path, "DS4700_T", ["ds4700-a", "ds4700-b"], ["d1", "d2"], settings)
    return tmp_path


LABELS = ["Logical Drive status:", "Capacity:", "RAID level:", "Read cache:", "Write cache:",
          "Write cache with mirroring:", "Write cache without batteries:", "Flush write cache after (in seconds):",
          "Dynamic cache read prefetch:", "Modification priority:"]


def test_smcli_show_blocks(sstate: Path, capsys: pytest.CaptureFixture) -> None:
    rc, out, _ = run("SMcli", ["ds4700-a", "ds4700-b", "-c", "show allLogicalDrives;"], sstate, capsys)
    assert rc == 0
    lines = [l.strip() for l in out.splitlines()]
    starts = [i for i, l in enumerate(lines) if l.startswith("Logical Drive name:")]
    assert [lines[i] for i in starts] == ["Logical Drive name: d1", "Logical Drive name: d2"]
    block = lines[starts[0] + 1: starts[0] + 1 + len(LABELS)]
    assert [b.split(":")[0] + ":" for b in block] == LABELS
    assert "Read cache: Enabled" in block and "Dynamic cache read prefetch: Disabled" in block
    assert "Modification priority: High" in block
    assert lines[-1] == "SMcli completed successfully."
    rc, out, _ = run("SMcli", ["ds4700-a", "-c", "show allVolumes;"], sstate, capsys)
    assert "Volume name: d1" in out and "Volume status: Optimal" in out


def test_smcli_set_and_errors(sstate: Path, capsys: pytest.CaptureFixture) -> None:
    rc, _, _ = run("SMcli", ["ds4700-a", "ds4700-b", "-c",
                             'set logicalDrive ["d1"] cacheReadPrefetch=TRUE writeCacheEnabled=FALSE modificationPriority=low;'],
                   sstate, capsys)
    assert rc == 0
    out = run("SMcli", ["ds4700-a", "-c", 'show logicalDrive ["d1"];'], sstate, capsys)[1]
    assert "Dynamic cache read prefetch: Enabled" in out and "Write cache: Disabled" in out and "Modification priority: Low" in out
    out = run("SMcli", ["ds4700-a", "-c", 'show logicalDrive ["d2"];'], sstate, capsys)[1]
    assert "Dynamic cache read prefetch: Disabled" in out
    assert run("SMcli", ["ds4700-a", "-c", "set allLogicalDrives readCacheEnabled=FALSE;"], sstate, capsys)[0] == 0
    assert run("SMcli", ["ds4700-a", "-c", "show allLogicalDrives;"], sstate, capsys)[1].count("Read cache: Disabled") == 2
    rc, out, _ = run("SMcli", ["ds4700-a", "-c", "frobnicate everything;"], sstate, capsys)
    assert rc != 0 and "SMcli failed." in out
    assert run("SMcli", ["other-ctrl", "-c", "show allLogicalDrives;"], sstate, capsys)[0] != 0
    assert run("SMcli", ["ds4700-a", "-c", "set allLogicalDrives readCacheEnabled=MAYBE;"], sstate, capsys)[0] != 0
    assert run("SMcli", ["ds4700-a", "-c", 'show logicalDrive ["nope"];'], sstate, capsys)[0] != 0


def test_smcli_parses_with_the_san_probe(sstate: Path, capsys: pytest.CaptureFixture) -> None:
    sanp = pytest.importorskip("probes.san")
    out = run("SMcli", ["ds4700-a", "ds4700-b", "-c", "show allLogicalDrives;"], sstate, capsys)[1]
    parsed = sanp.parse_smcli_show(out)
    assert sorted(parsed["drives"]) == ["d1", "d2"] and parsed["completed"]


def test_wrapper_script_runs_standalone(gstate: Path, tmp_path: Path) -> None:
    w = tmp_path / "bin" / "mmlsconfig"
    write_wrapper(w, sys.executable, package_root(), "advisor.lab.emulators.gpfs", "mmlsconfig", gstate, "test")
    text = w.read_text()
    assert text.startswith(f"#!{sys.executable}\n{HEADER_COMMENT}\n")
    cp = subprocess.run([str(w), "pagepool"], capture_output=True, text=True, env={"STORADVISE_LAB_HOST": "gpfs01"},
                        cwd="/")
    assert cp.returncode == 0 and cp.stdout == "pagepool 512M\n"


def test_an_isolated_wrapper_runs_its_python_isolated(tmp_path: Path) -> None:
    """The shebang's flags reach python (Linux passes everything after the interpreter as one argument)."""
    (tmp_path / "flags_emulator.py").write_text(
        "import sys\n"
        "def main(tool, argv, state):\n"
        "    print(tool, argv, state, sys.flags.isolated, sys.flags.no_site)\n"
        "    return 0\n")
    w = tmp_path / "bin" / "ethtool"
    write_wrapper(w, sys.executable, str(tmp_path), "flags_emulator", "ethtool", tmp_path / "st", "test", isolated=True)
    cp = subprocess.run([str(w), "-g", "eth0"], capture_output=True, text=True, cwd="/")
    assert cp.returncode == 0 and cp.stdout == f"ethtool ['-g', 'eth0'] {tmp_path / 'st'} 1 1\n", cp.stderr
