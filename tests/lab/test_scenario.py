"""Scenario files: schema, built-ins, one-line errors with file:line:field (no root needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.util.errors import SiteFileError, StoradviseError
from advisor.lab.scenario import builtin_scenarios, expand_host_pattern, load_scenario, parse_loss_ppm


def test_builtins_load() -> None:
    assert {"clean", "ifca"} <= set(builtin_scenarios())
    sc = load_scenario("ifca")
    assert [h.name for h in sc.hosts] == ["gpfs01", "gpfs02", "se01", "wn01", "wn02", "wn03", "wn04"]
    assert {h.name for h in sc.select("storage")} == {"gpfs01", "gpfs02"}
    assert sc.paths[0].loss == 5000 and sc.needs_loss and not sc.needs_delay
    gp = {h.name: h for h in sc.hosts}
    assert gp["gpfs01"].sysctls == {"net.ipv4.tcp_sack": 0} and gp["wn01"].sysctls == {}
    assert gp["gpfs02"].firewall and gp["gpfs02"].firewall.iptables and not gp["gpfs01"].firewall
    gpfs, san = sc.emulations["gpfs"], sc.emulations["san"]
    assert gpfs.config["pagepool"] == "512M"
    assert san.settings.modification_priority == "high" and not san.settings.prefetch
    assert san.logical_drives == ["gpfs_data01", "gpfs_data02", "gpfs_data03", "gpfs_data04"]
    assert load_scenario("clean").hosts


def test_helpers() -> None:
    assert expand_host_pattern("wn[01:03]") == ["wn01", "wn02", "wn03"]
    assert expand_host_pattern("gpfs01") == ["gpfs01"]
    assert parse_loss_ppm("0.2%") == 2000 and parse_loss_ppm("150ppm") == 150 and parse_loss_ppm(0.001) == 1000


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yml"
    p.write_text(text)
    return p


def test_error_names_file_line_field(tmp_path: Path) -> None:
    p = write(tmp_path, "name: x\nhosts:\n  - name: a\n    roles: [storage, nonsense]\n")
    with pytest.raises(SiteFileError) as e:
        load_scenario(str(p))
    msg = str(e.value)
    assert msg.startswith(f"{p}:4: hosts.0.roles.1:") and "\n" not in msg


def test_runtime_sysctl_must_be_per_namespace(tmp_path: Path) -> None:
    p = write(tmp_path, "name: x\nhosts:\n  - name: a\n    sysctls: {vm.swappiness: 1}\n")
    with pytest.raises(SiteFileError, match="not per network namespace"):
        load_scenario(str(p))


def test_unknown_selector_and_switch(tmp_path: Path) -> None:
    p = write(tmp_path, "name: x\nhosts:\n  - name: a\npaths:\n  - {from: nobody, to: a, loss: 1%}\n")
    with pytest.raises(SiteFileError, match="matches no host"):
        load_scenario(str(p))
    p = write(tmp_path, "name: x\nhosts:\n  - name: a\n    switch: nope\n")
    with pytest.raises(SiteFileError, match="unknown switch"):
        load_scenario(str(p))


def test_unknown_scenario_name() -> None:
    with pytest.raises(StoradviseError, match="built-in: .*ifca"):
        load_scenario("no-such-scenario")


def test_refuses_what_the_kernel_cannot_do(tmp_path: Path) -> None:
    from advisor.lab.control import refuse_unrealisable
    from advisor.lab.netns import Capabilities

    p = write(tmp_path, "name: x\nhosts:\n  - name: a\n  - name: b\npaths:\n  - {from: a, to: b, delay: 2ms, loss: 1%}\n")
    sc = load_scenario(str(p))
    caps = Capabilities(tbf=True, bridge=True, nft_bridge_numgen=False, netem=False, ethtool=True, iptables=True,
                        errors={"netem": "Error: Specified qdisc kind is unknown.", "nft bridge": "Error: no numgen",
                                "nfqueue": "Error: no NFQUEUE target"}, nfqueue=False)
    with pytest.raises(StoradviseError) as e:
        refuse_unrealisable(sc, caps)
    msg = str(e.value)
    assert "NFQUEUE delay forwarder" in msg and "no NFQUEUE target" in msg and "numgen" in msg and "\n" not in msg


def test_not_root_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.lab import control

    monkeypatch.setattr(control.os, "geteuid", lambda: 1000)
    with pytest.raises(StoradviseError, match="needs root"):
        control.lab_up("ifca")
    with pytest.raises(StoradviseError, match="needs root"):
        control.lab_down("ifca")


def test_xcache_section(tmp_path: Path) -> None:
    sc = load_scenario("xcache")
    spec = sc.emulations["xcache"]
    assert spec.host == "cache01" and spec.origin.host == "xrd01"
    assert "pfc.ram" not in {k for k, v in spec.directives.items() if v is not None}
    base = (Path(__file__).resolve().parents[2] / "advisor" / "lab" / "scenarios" / "xcache.yml").read_text()
    for bad, why in ((base.replace("host: cache01", "host: nosuch"), "unknown host 'nosuch'"),
                     (base.replace("host: xrd01", "host: wn01"), "lacks the role 'storage'"),
                     (base.replace("pfc.blocksize: 64k", "ofs.osslib: x"), "not a pfc.* directive"),
                     (base.replace("disk: 64m", "disk: lots"), "not a size")):
        p = tmp_path / "s.yml"
        p.write_text(bad)
        with pytest.raises(SiteFileError) as e:
            load_scenario(str(p))
        assert why in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_cpu_load_and_an_inconclusive_expectation(tmp_path: Path) -> None:
    """cpu_load: spinning processes in the host's boot script, one per CPU in turn; an expectation
    without a rule only as ``inconclusive``."""
    from advisor.lab.hosts import boot_script

    p = write(tmp_path, "name: x\nhosts:\n  - name: a\n    cpu_load: 3\nexpect:\n  - {host: a, inconclusive: true}\n")
    sc = load_scenario(str(p))
    assert sc.hosts[0].cpu_load == 3 and sc.expect[0].rule is None
    script = boot_script(tmp_path, tmp_path / "a", "a", "198.18.0.11", {}, iperf3=False, cpu_load=3)
    spins = [ln for ln in script.splitlines() if "while :; do :; done" in ln]
    assert len(spins) == 3 and all(ln.startswith("taskset -c ") and ln.endswith("&") for ln in spins)
    assert script.rstrip().splitlines()[-1].startswith("exec ")  # they run before sshd takes pid 1's place
    p = write(tmp_path, "name: x\nhosts:\n  - name: a\nexpect:\n  - {host: a}\n")
    with pytest.raises(SiteFileError, match="'rule' is required"):
        load_scenario(str(p))
    p = write(tmp_path, "name: x\nhosts:\n  - name: a\n    cpu_load: 99\n")
    with pytest.raises(SiteFileError, match="cpu_load"):
        load_scenario(str(p))
