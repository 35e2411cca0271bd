"""The NIC probe's parsers on real outputs (tests/fixtures/nic/SOURCES.md), its script on this machine's
own NICs, and on a namespace that holds only a veth and a bridge (not applicable, naming them).
The assembled probe outputs are tests/fixtures/real/nic.ports (tests/probes/test_real_corpus.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from probes.bonding_format import parse_bonding
from probes.ethtool_format import LinkSettings, parse_features, parse_link_settings, parse_nic_statistics, parse_rings
from probes.interrupts_format import cpu_list_text, parse_cpu_list, parse_interrupts
from probes.nic import NicPortsProbe, parse_nic_ports
from probes.nic_counters import counter_class, counter_rises, fault_rates
from probes.probe import ProbeContext, ProbeParseError, not_applicable_reason

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nic"


def fx(name: str) -> str:
    return (FIX / name).read_text()


def test_link_settings_of_real_nics():
    tg3 = parse_link_settings(fx("ethtool-tg3-lolyu-aoi.txt"))
    assert (tg3.speed_mbps, tg3.duplex, tg3.autoneg, tg3.port) == (1000, "full", True, "Twisted Pair")
    assert tg3.supported_modes[-1] == "1000baseT/Full" and len(tg3.supported_modes) == 6
    assert tg3.partner_modes == ["1000baseT/Full"]
    ne = parse_link_settings(fx("ethtool-node-exporter-eth0.txt"))  # non-root: a netlink error line in it
    assert LinkSettings.fastest(ne.supported_modes) == 10000 and LinkSettings.fastest(ne.advertised_modes) == 1000
    assert ne.link_detected is True and ne.speed_mbps == 1000
    ix = parse_link_settings(fx("ethtool-ixgbe-10g-adamxiao.txt"))
    assert ix.speed_mbps == 10000 and LinkSettings.fastest(ix.supported_modes) == 10000


def test_unknown_speed_and_duplex_are_unknown():
    text = "Settings for eth0:\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no\n"
    ls = parse_link_settings(text)
    assert (ls.speed_mbps, ls.duplex, ls.link_detected) == (None, None, False)


def test_rings_old_and_new_layouts():
    assert parse_rings(fx("ethtool-g-tg3-lolyu-aoi.txt")).model_dump() == {"rx": 200, "rx_max": 511, "tx": 511, "tx_max": 511}
    assert parse_rings(fx("ethtool-g-eno1-meow-watermelon.txt")).rx_max == 4096
    new = parse_rings(fx("ethtool-g-atlantic-l2-unattributed.txt"))
    assert (new.rx, new.rx_max, new.tx, new.tx_max) == (2048, 8184, 4096, 8184)


def test_features_fixed_and_requested():
    f = parse_features(fx("ethtool-k-sqm-scripts-11.txt"))
    assert f["tcp-segmentation-offload"].on is False and not f["tcp-segmentation-offload"].fixed
    assert f["generic-segmentation-offload"].on is False  # "off [requested on]"
    assert f["large-receive-offload"].fixed and f["generic-receive-offload"].on
    assert parse_features(fx("ethtool-k-ofsoftswitch13-151.txt"))["generic-segmentation-offload"].on is False


def test_statistics_names_with_colons_and_blanks():
    s = parse_nic_statistics(fx("ethtool-S-node-exporter-eth0.txt"))
    assert s["rx_missed"] == 401 and s["duplicate metric"] == 1
    assert parse_nic_statistics("NIC statistics:\n     rxq0: rx_bytes: 176801946854589\n")["rxq0: rx_bytes"] == 176801946854589


def test_counter_classes_of_real_drivers():
    be2net = parse_nic_statistics(fx("ethtool-S-be2net-ethq-7.txt"))
    kinds = {n: counter_class(n) for n in be2net}
    assert kinds["rx_crc_errors"] == "errors" and kinds["rx_drops_no_pbuf"] == "drops"
    assert kinds["rxpp_fifo_overflow_drop"] == "drops" and kinds["rx_alignment_symbol_errors"] == "errors"
    assert kinds["rx_pause_frames"] is None and kinds["rx_address_filtered"] is None  # not faults
    e1000e = parse_nic_statistics(fx("ethtool-S-e1000e-netdata-988.txt"))
    assert counter_class("rx_no_buffer_count") == "drops" and counter_class("rx_missed_errors") == "drops"
    assert counter_class("rx_errors") == "aggregate" and counter_class("rx_dropped") == "stack"
    assert counter_class("rxq0: rx_drops_no_frags") is None  # per queue: the totals hold it
    assert "tx_deferred_ok" in e1000e and counter_class("tx_deferred_ok") is None


def test_rises_and_rates():
    before = {"rx_crc_errors": 100, "rx_errors": 100, "rx_missed_errors": 7, "rx_dropped": 3, "tx_fifo_errors": 9}
    after = {"rx_crc_errors": 300, "rx_errors": 300, "rx_missed_errors": 57, "rx_dropped": 900, "tx_fifo_errors": 2}
    rises = counter_rises(before, after, 5.0)
    assert rises["rx_crc_errors"].delta == 200 and rises["rx_crc_errors"].per_s == 40.0
    assert rises["tx_fifo_errors"].delta == 0  # fell: reset, not negative
    errors, drops = fault_rates(rises, 5.0)
    assert (errors, drops) == (40.0, 10.0)  # rx_errors sums rx_crc_errors: counted once; rx_dropped never
    assert fault_rates(counter_rises({"rx_errors": 0}, {"rx_errors": 50}, 5.0), 5.0) == (10.0, 0.0)


def test_interrupts_old_and_new_layouts():
    cpus, irqs = parse_interrupts(fx("interrupts-tg3-lolyu-aoi.txt"))
    assert cpus == [0, 1, 2, 3] and irqs[40].name == "eth0-rx-1" and irqs[40].counts == [0, 0, 395, 0]
    cpus, irqs = parse_interrupts(fx("interrupts-nehalem-deater-excerpt.txt"))
    assert len(cpus) == 16 and irqs[18].name == "ehci_hcd:usb1, uhci_hcd:usb7" and irqs[3].name == ""
    assert irqs[136].counts[10] == 7832075 and 999 not in irqs
    with pytest.raises(ProbeParseError, match="counts for 4 CPUs"):
        parse_interrupts("   CPU0 CPU1 CPU2 CPU3\n 30: 1 2 IO-APIC 3-edge x\n")


def test_cpu_lists():
    assert parse_cpu_list("0-3,8,10-11", "x") == [0, 1, 2, 3, 8, 10, 11]
    assert cpu_list_text([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    for bad in ("3-1", "a", "0-99999", ""):
        with pytest.raises(ProbeParseError):
            parse_cpu_list(bad, "x")


def test_bonding_members():
    b = parse_bonding(fx("bonding-8023ad-accelerated-text-387.txt"), "bond0")
    assert b.mode.startswith("IEEE 802.3ad") and set(b.members) == {"eth1", "eth2"}
    assert b.members["eth1"].mii_status == "up" and b.members["eth2"].link_failures == 0


@pytest.mark.parametrize("parser,text", [
    (parse_link_settings, "Cannot get device settings: No such device\n"),
    (parse_rings, "Features for eth0:\nrx-checksumming: on\n"),
    (parse_features, "Ring parameters for eth0:\nPre-set maximums:\nRX: 1\n"),
    (parse_nic_statistics, "no stats available\n"),
    (lambda t: parse_bonding(t, "bond0"), "Settings for eth0:\n"),
    (parse_interrupts, "Ring parameters for eth0:\n"),
])
def test_each_parser_refuses_what_is_not_its_output(parser, text):
    with pytest.raises(ProbeParseError):
        parser(text)


def test_truncated_probe_output_is_refused():
    text = (FIX.parent / "real" / "nic.ports" / "tg3-lolyu-aoi.since-boot.txt").read_text()
    with pytest.raises(ProbeParseError, match="truncated"):
        parse_nic_ports(text.split("@@section uptime2")[0])
    with pytest.raises(ProbeParseError, match="not a legal name"):
        parse_nic_ports(text.replace("eth0\tphysical", "eth0;reboot\tphysical", 1))


def test_script_on_this_machine_reads_its_physical_nics():
    """The real script, run here (read-only): this VM's virtio NIC is physical (a device behind it), the lab
    veths and loopback are not; a host without cpufreq or ethtool data still parses."""
    probe = NicPortsProbe()
    ctx = ProbeContext(host="local", sample_seconds=0.2, is_local=True)
    cp = subprocess.run(["sh", "-c", probe.script(ctx)], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    physical = [p.name for p in Path("/sys/class/net").iterdir()
                if (p / "device").exists() and "/devices/virtual/" not in os.path.realpath(p)]
    if not physical:
        assert not_applicable_reason(cp.stdout)
        return
    facts = parse_nic_ports(cp.stdout)
    assert sorted(facts.interfaces) == sorted(physical)
    assert "lo" in facts.virtual and 0.1 < facts.interval_s < 2
    for name, port in facts.interfaces.items():
        assert port.mtu == int((Path("/sys/class/net") / name / "mtu").read_text())
        assert port.counters_read > 0


def test_a_host_of_veths_and_bridges_has_no_physical_nic(netns):
    """In a namespace holding only a veth pair and a bridge the probe is not applicable and names them."""
    ns = netns
    subprocess.run(["ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"], check=True)
    subprocess.run(["ip", "-n", ns, "link", "add", "br0", "type", "bridge"], check=True)
    script = NicPortsProbe().script(ProbeContext(host="x", sample_seconds=0.1))
    cp = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script], capture_output=True, text=True, timeout=60)
    reason = not_applicable_reason(cp.stdout)
    assert reason and "no physical network interface" in reason
    for name in ("v0", "v1", "br0", "lo"):
        assert name in reason


def test_a_local_scan_among_veths_and_bridges_says_there_is_no_physical_nic(netns):
    """A real local scan in a namespace of veths and a bridge (a container host's view): no interface is taken as the
    host's link; the buffer rules say the link rate is unknown and the NIC probe says there is no physical NIC."""
    import json

    from tests.support.cli import STORADVISE

    for args in (["link", "add", "veth0", "type", "veth", "peer", "name", "veth1"], ["link", "add", "br0", "type", "bridge"],
                 ["link", "set", "veth1", "master", "br0"], ["link", "set", "veth0", "up"], ["link", "set", "br0", "up"],
                 ["addr", "add", "10.88.0.2/16", "dev", "br0"]):
        subprocess.run(["ip", "-n", netns, *args], check=True)
    cp = subprocess.run(["ip", "netns", "exec", netns, *STORADVISE, "scan", "--json", "--no-history", "--no-mesh",
                         "--sample-seconds", "0.2", "--probes", "network.nic,network.sysctl,nic.ports"],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode in (0, 2, 3), cp.stderr[-2000:]
    scan = json.loads(cp.stdout)
    assert len(scan["hosts"]) == 1
    buffers = [f for f in scan["findings"] if f["rule_id"] == "NET-TCP-BUFFER-MAX"]
    assert buffers and all(f["status"] == "not_applicable" and "link rate unknown" in (f["message"] or "") for f in buffers)
    na = [f for f in scan["findings"] if f["rule_id"] == "NIC-GRO-OFF"]
    assert na and all(f["status"] == "not_applicable" for f in na)
    reason = na[0]["message"]
    assert "no physical network interface" in reason and all(n in reason for n in ("veth0", "veth1", "br0")), reason
