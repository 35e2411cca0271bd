"""The host's own network layer, per physical interface (``nic.ports``): what ESnet fasterdata's host
checklist reads of a NIC.

Physical means a device behind the interface in sysfs (``/sys/class/net/IF/device``) and nothing
under ``/sys/devices/virtual`` (veth, bridge, docker/cni, tun, bond, VLAN, loopback): those are
listed by name (``virtual``) and never judged as the host's NIC. A host with no physical interface
is not applicable, saying which virtual ones it has. Per physical interface:

* speed, duplex, auto-negotiation and the link modes (``ethtool IF``): the fastest supported and
  advertised mode, and the link partner's (the switch port's) when the driver reports it;
* MTU, state, driver, PCI address, addresses; the bond it is a member of;
* ring sizes against their maxima (``ethtool -g``), offloads (``ethtool -k``: gro, tso, gso, lro);
* error and drop counters (``/sys/class/net/IF/statistics/*`` and ``ethtool -S``) read twice, the
  scan's sample window (``--sample-seconds``) apart, as rises and rates (probes/nic_counters.py);
* the NIC's queue interrupts (its MSI vectors, ``/sys/class/net/IF/device/msi_irqs``, and the
  ``/proc/interrupts`` lines that name it), the CPUs each may run on (``smp_affinity_list``, the
  kernel's ``effective_affinity_list`` where it has one), and whether irqbalance runs.

Bonds (``/proc/net/bonding/*``) give each member's state. Which interface carries the site address:
the one holding the address the controller's SSH session reached (``SSH_CONNECTION``), else the one
of the default route; which carry the storage traffic: those with an address in the site's storage
network (or named by it). A bond or VLAN that does is resolved to the physical NICs below it
(``lower_*`` links). Without ``ethtool`` the sysfs values are still read (speed, duplex, counters).
"""

from __future__ import annotations

import ipaddress
import re
import shlex

from pydantic import BaseModel, Field

from probes.bonding_format import Bond, parse_bonding
from probes.diskio import parse_uptime
from probes.ethtool_format import (FEATURE_ALIASES, LinkSettings, Rings, parse_features, parse_link_settings,
                                   parse_nic_statistics, parse_rings)
from probes.interrupts_format import parse_cpu_list, parse_interrupts
from probes.legal_values import IFACE_NAME, check_name
from probes.network import _addresses_from_json, _addresses_from_oneline  # the ip addr readers, one of each
from probes.nic_counters import CounterRise, counter_rises, fault_rates, rising_lines
from probes.probe import (NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int, section,
                          split_sections)

MIN_SAMPLE_SECONDS = 0.1
#: queue interrupt names that are not queues (a NIC's admin/config/link vectors)
_NOT_A_QUEUE = re.compile(r"config|misc|async|ctrl|lsc|-fw|pages|cmd|other|mbx|adminq", re.I)
_LINK_FIELDS = ("operstate", "mtu", "speed", "duplex", "address")


class IrqQueue(BaseModel):
    irq: int
    name: str
    #: CPUs it may run on (smp_affinity_list)
    affinity: list[int] = Field(default_factory=list)
    #: CPUs the kernel delivers it to (effective_affinity_list; None: not reported)
    effective: list[int] | None = None
    #: interrupts taken per CPU since boot
    counts: list[int] = Field(default_factory=list)


class NicPort(BaseModel):
    driver: str | None = None
    #: the device's bus address (PCI ``0000:3b:00.0``)
    bus: str | None = None
    operstate: str | None = None
    mtu: int | None = None
    mac: str | None = None
    addresses: list[str] = Field(default_factory=list)
    speed_mbps: int | None = None
    duplex: str | None = None
    autoneg: bool | None = None
    max_supported_mbps: int | None = None
    max_advertised_mbps: int | None = None
    #: the fastest mode the link partner (switch port) advertises, when the driver reports it
    partner_max_mbps: int | None = None
    #: negotiated speed / fastest supported mode (None: either unknown)
    speed_of_max: float | None = None
    ring: Rings | None = None
    #: current RX ring / its maximum
    ring_rx_of_max: float | None = None
    #: gro, tso, gso, lro: "on" / "off"
    offloads: dict[str, str] = Field(default_factory=dict)
    #: offloads the driver does not let change (``[fixed]``)
    offloads_fixed: list[str] = Field(default_factory=list)
    #: the fault counters (probes/nic_counters.py) that rose over the sample window, with their rise
    counters: dict[str, CounterRise] = Field(default_factory=dict)
    #: how many fault counters were read (0: none, e.g. no statistics)
    counters_read: int = 0
    #: errors and drops per second over the window (None: no window)
    errors_per_s: float | None = None
    rx_drops_per_s: float | None = None
    #: ``rx_crc_errors +200 (40/s)``, the largest first
    rising: list[str] = Field(default_factory=list)
    irqs: list[IrqQueue] = Field(default_factory=list)
    #: the CPUs its queue interrupts run on
    irq_cpus: list[int] = Field(default_factory=list)
    #: every queue interrupt on one CPU of a host with several (None: no queue interrupts found)
    irq_on_one_cpu: bool | None = None
    #: the bond (or team) it is a member of
    master: str | None = None
    #: it carries the address the site reaches the host at (itself or through its bond/VLAN)
    site: bool = False
    #: it carries the storage network (an address in it, itself or through its bond/VLAN)
    storage: bool = False


class NicPortsFacts(BaseModel):
    interfaces: dict[str, NicPort] = Field(default_factory=dict)
    #: interfaces with no device behind them (veth, bridge, bond, VLAN, tun, loopback)
    virtual: list[str] = Field(default_factory=list)
    bonds: dict[str, Bond] = Field(default_factory=dict)
    #: the address the controller reached the host at, and the interface holding it
    site_address: str | None = None
    site_interface: str | None = None
    #: running, stopped (installed, not running) or absent
    irqbalance: str | None = None
    cpus_online: int | None = None
    interval_s: float | None = None
    ethtool: bool = True


def _script(ctx: ProbeContext, seconds: float) -> str:
    secs = f"{seconds:.3f}".rstrip("0").rstrip(".")
    whole = str(int(-(-seconds // 1)))
    storage = "".join(f"echo {shlex.quote('prefix ' + p)}\n" for p in ctx.storage_prefixes) + \
        "".join(f"echo {shlex.quote('iface ' + i)}\n" for i in ctx.storage_interfaces)
    return f"""\
phys=; virt=
for d in /sys/class/net/*; do
  [ -e "$d" ] || continue
  i=${{d##*/}}
  case "$(readlink -f "$d")" in */devices/virtual/*) virt="$virt $i"; continue ;; esac
  if [ -e "$d/device" ]; then phys="$phys $i"; else virt="$virt $i"; fi
done
if [ -z "$phys" ]; then
  echo "{NOT_APPLICABLE_MARKER} no physical network interface (only virtual ones:${{virt:- none}})"; exit 0
fi
{section('site')}if [ -n "${{SSH_CONNECTION:-}}" ]; then set -- $SSH_CONNECTION; echo "ssh $3"; fi
ip -o route show default 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/default \\1/p' | head -n 1
ip -o -6 route show default 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/default \\1/p' | head -n 1
{section('storage')}{storage}{section('links')}for i in $phys $virt; do
  d=/sys/class/net/$i
  case " $phys " in *" $i "*)
    printf '%s\\tphysical\\t1\\n' "$i"
    drv=; [ -e "$d/device/driver" ] && drv=$(readlink "$d/device/driver") && drv=${{drv##*/}}
    bus=$(readlink "$d/device"); printf '%s\\tdriver\\t%s\\n%s\\tbus\\t%s\\n' "$i" "$drv" "$i" "${{bus##*/}}" ;;
  esac
  for f in {' '.join(_LINK_FIELDS)}; do v=; read -r v 2>/dev/null <"$d/$f"; printf '%s\\t%s\\t%s\\n' "$i" "$f" "$v"; done
  for l in "$d"/lower_*; do [ -e "$l" ] && printf '%s\\tlower\\t%s\\n' "$i" "${{l##*/lower_}}"; done
  if [ -e "$d/master" ]; then m=$(readlink "$d/master"); printf '%s\\tmaster\\t%s\\n' "$i" "${{m##*/}}"; fi
done
if ip -j addr >/dev/null 2>&1; then {section('ip-j-addr').strip()}; ip -j addr; else {section('ip-o-addr').strip()}; ip -o addr; fi
for b in /proc/net/bonding/*; do [ -r "$b" ] && {{ echo "@@section bond ${{b##*/}}"; cat "$b"; }}; done
{section('cpus')}cat /sys/devices/system/cpu/online 2>/dev/null
{section('irqbalance')}if pgrep -x irqbalance >/dev/null 2>&1; then echo running
elif command -v irqbalance >/dev/null 2>&1 || [ -x /usr/sbin/irqbalance ]; then echo stopped; else echo absent; fi
if command -v ethtool >/dev/null 2>&1; then et=1; else et=; {section('no-ethtool').strip()}; fi
irqs=
for i in $phys; do
  d=/sys/class/net/$i
  if [ -n "$et" ]; then
    echo "@@section ethtool $i"; ethtool "$i" 2>&1
    echo "@@section ring $i"; ethtool -g "$i" 2>&1
    echo "@@section features $i"; ethtool -k "$i" 2>&1
  fi
  m="$d/device/msi_irqs"; [ -d "$m" ] || m="$d/device/../msi_irqs"
  own=; for n in "$m"/*; do [ -e "$n" ] && own="$own ${{n##*/}}"; done
  named=$(awk -v n="$i" 'NR > 1 && (index($0, " " n "-") || index($0, " " n "_") || $NF == n) {{ sub(":", "", $1); print $1 }}' /proc/interrupts 2>/dev/null)
  echo "@@section irqs $i"
  for q in $own $named; do
    a=; e=; read -r a 2>/dev/null </proc/irq/$q/smp_affinity_list; read -r e 2>/dev/null </proc/irq/$q/effective_affinity_list
    printf '%s\\t%s\\t%s\\n' "$q" "$a" "$e"; irqs="$irqs $q"
  done
done
{section('interrupts')}awk -v want=" $irqs " 'NR == 1 {{ print; next }} {{ n = $1; sub(":", "", n); if (index(want, " " n " ")) print }}' /proc/interrupts 2>/dev/null
snap() {{
  echo "@@section uptime$1"; cat /proc/uptime
  echo "@@section stats$1"
  for i in $phys; do for f in /sys/class/net/$i/statistics/*; do v=; read -r v 2>/dev/null <"$f"; printf '%s\\t%s\\t%s\\n' "$i" "${{f##*/}}" "$v"; done; done
  if [ -n "$et" ]; then for i in $phys; do echo "@@section ethtool-S$1 $i"; ethtool -S "$i" 2>&1; done; fi
}}
snap 1
sleep {secs} 2>/dev/null || sleep {whole}
snap 2
{section('end').strip()}
"""


def _link_table(body: str) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for lineno, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise ProbeParseError(f"nic.ports links line {lineno} is not 'iface<TAB>field<TAB>value': {line[:60]!r}")
        name = check_name(parts[0], IFACE_NAME, "nic.ports interface")
        out.setdefault(name, {}).setdefault(parts[1], []).append(parts[2].strip())
    return out


def _int(v: str | None) -> int | None:
    v = (v or "").strip()
    return bounded_int(v, "nic.ports value") if re.fullmatch(r"-?\d+", v) else None


def _stats(sections: dict[str, str], n: str) -> dict[str, dict[str, int]]:
    """interface -> counter -> value, sysfs and ``ethtool -S`` merged (the larger of one name)."""
    out: dict[str, dict[str, int]] = {}
    for line in sections.get(f"stats{n}", "").splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and _int(parts[2]) is not None:
            out.setdefault(parts[0], {})[parts[1]] = _int(parts[2])
    for name, body in sections.items():
        if name.startswith(f"ethtool-S{n} ") and "NIC statistics:" in body:
            own = out.setdefault(name.split(" ", 1)[1], {})
            for k, v in parse_nic_statistics(body).items():
                own[k] = max(v, own.get(k, v))
    return out


def _in_prefixes(addresses: list[str], prefixes: list[str]) -> bool:
    nets = []
    for p in prefixes:
        try:
            nets.append(ipaddress.ip_network(p, strict=False))
        except ValueError:
            continue
    for a in addresses:
        try:
            ip = ipaddress.ip_address(a.split("/")[0])
        except ValueError:
            continue
        if any(ip.version == n.version and ip in n for n in nets):
            return True
    return False


def _physical_below(name: str, links: dict[str, dict[str, list[str]]], physical: set[str], depth: int = 0) -> set[str]:
    if name in physical:
        return {name}
    if depth > 8:
        return set()
    return {p for low in links.get(name, {}).get("lower", []) for p in _physical_below(low, links, physical, depth + 1)}


def parse_nic_ports(text: str) -> NicPortsFacts:
    sections = split_sections(text)
    missing = [s for s in ("links", "uptime1", "stats1", "uptime2", "stats2", "end") if s not in sections]
    if missing:
        raise ProbeParseError(f"nic.ports output truncated: no {', '.join(missing)} section")
    links = _link_table(sections["links"])
    physical = {i for i, f in links.items() if f.get("physical") == ["1"]}
    if "ip-j-addr" in sections:
        addresses = _addresses_from_json(sections["ip-j-addr"])
    else:
        addresses = _addresses_from_oneline(sections.get("ip-o-addr", ""))
    facts = NicPortsFacts(virtual=sorted(set(links) - physical), ethtool="no-ethtool" not in sections)
    start = parse_uptime(sections["uptime1"], "nic.ports uptime1")
    end = parse_uptime(sections["uptime2"], "nic.ports uptime2")
    seconds = round(end - start, 3) if end > start else None
    facts.interval_s = seconds
    online = sections.get("cpus", "").strip()
    facts.cpus_online = len(parse_cpu_list(online, "cpu online")) if online else None
    state = sections.get("irqbalance", "").strip()
    facts.irqbalance = state if state in ("running", "stopped", "absent") else None
    header_cpus, interrupts = (parse_interrupts(sections["interrupts"]) if sections.get("interrupts", "").strip()
                               else ([], {}))
    before, after = _stats(sections, "1"), _stats(sections, "2")
    for name in sorted(physical):
        f = {k: v[-1] for k, v in links[name].items()}
        port = NicPort(driver=f.get("driver") or None, bus=f.get("bus") or None, operstate=f.get("operstate") or None,
                       mtu=_int(f.get("mtu")), mac=f.get("address") or None, addresses=addresses.get(name, []),
                       master=check_name(f["master"], IFACE_NAME, "nic.ports master") if f.get("master") else None)
        speed = _int(f.get("speed"))
        port.speed_mbps = speed if speed and speed > 0 else None
        port.duplex = f.get("duplex") if f.get("duplex") in ("full", "half") else None
        _ethtool(port, sections, name)
        rises = counter_rises(before.get(name, {}), after.get(name, {}), seconds)
        port.errors_per_s, port.rx_drops_per_s = fault_rates(rises, seconds)
        port.rising = rising_lines(rises)
        port.counters = {k: r for k, r in rises.items() if r.delta > 0}
        port.counters_read = len(rises)
        _irqs(port, name, sections.get(f"irqs {name}", ""), interrupts, header_cpus, facts.cpus_online)
        facts.interfaces[name] = port
    for sec, body in sections.items():
        if sec.startswith("bond "):
            bond = check_name(sec.split(" ", 1)[1], IFACE_NAME, "nic.ports bond")
            facts.bonds[bond] = parse_bonding(body, bond)
    _site_and_storage(facts, sections, links, addresses, physical)
    return facts


def _ethtool(port: NicPort, sections: dict[str, str], name: str) -> None:
    body = sections.get(f"ethtool {name}")
    if body and "Settings for" in body:
        ls: LinkSettings = parse_link_settings(body)
        port.speed_mbps = ls.speed_mbps or port.speed_mbps
        port.duplex = ls.duplex or port.duplex
        port.autoneg = ls.autoneg
        port.max_supported_mbps = LinkSettings.fastest(ls.supported_modes)
        port.max_advertised_mbps = LinkSettings.fastest(ls.advertised_modes)
        port.partner_max_mbps = LinkSettings.fastest(ls.partner_modes)
    if port.speed_mbps and port.max_supported_mbps:
        port.speed_of_max = round(port.speed_mbps / port.max_supported_mbps, 4)
    body = sections.get(f"ring {name}")
    if body and "Ring parameters for" in body:
        port.ring = parse_rings(body)
        if port.ring.rx and port.ring.rx_max:
            port.ring_rx_of_max = round(port.ring.rx / port.ring.rx_max, 4)
    body = sections.get(f"features {name}")
    if body and ("Features for" in body or "Offload parameters for" in body):
        features = parse_features(body)
        for long, short in FEATURE_ALIASES.items():
            if long in features:
                port.offloads[short] = "on" if features[long].on else "off"
                if features[long].fixed:
                    port.offloads_fixed.append(short)


def _irqs(port: NicPort, iface: str, body: str, interrupts: dict, header_cpus: list[int],
          cpus_online: int | None) -> None:
    """The interface's queue interrupts: its vectors but those named like admin ones or by the bare
    interface name (igb/ixgbe's link vector ``eth0`` beside ``eth0-TxRx-N``)."""
    seen: set[int] = set()
    for line in body.splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or _int(parts[0]) is None or _int(parts[0]) in seen:
            continue
        irq = _int(parts[0])
        seen.add(irq)
        line_of = interrupts.get(irq)
        name = line_of.name if line_of else ""
        if not line_of or _NOT_A_QUEUE.search(name) or name == iface:
            continue
        port.irqs.append(IrqQueue(irq=irq, name=name, counts=line_of.counts,
                                  affinity=parse_cpu_list(parts[1], f"IRQ {irq} smp_affinity_list") if parts[1].strip() else [],
                                  effective=parse_cpu_list(parts[2], f"IRQ {irq} effective_affinity_list") if parts[2].strip() else None))
    if not port.irqs:
        return
    # where the kernel delivers each: its effective affinity, else its affinity, else (neither readable)
    # the CPUs that took its interrupts
    cpus = sorted({c for q in port.irqs
                   for c in (q.effective if q.effective is not None else q.affinity
                             or [c for c, n in zip(header_cpus, q.counts) if n])})
    port.irq_cpus = cpus
    port.irq_on_one_cpu = len(cpus) == 1 and (cpus_online or len(header_cpus)) > 1


def _site_and_storage(facts: NicPortsFacts, sections: dict[str, str], links: dict, addresses: dict[str, list[str]],
                      physical: set[str]) -> None:
    site_addr = default = None
    for line in sections.get("site", "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "ssh" and value and site_addr is None:
            site_addr = value.strip()
        elif key == "default" and value and default is None:
            default = value.strip()
    holder = None
    if site_addr:
        holder = next((i for i, addrs in addresses.items() if any(a.split("/")[0] == site_addr for a in addrs)), None)
    holder = holder or (default if default in links else None)
    facts.site_address, facts.site_interface = site_addr, holder
    if holder:
        for p in _physical_below(holder, links, physical):
            facts.interfaces[p].site = True
    prefixes, named = [], []
    for line in sections.get("storage", "").splitlines():
        key, _, value = line.strip().partition(" ")
        (prefixes if key == "prefix" else named if key == "iface" else []).append(value.strip())
    for iface in links:
        if iface in named or (prefixes and _in_prefixes(addresses.get(iface, []), prefixes)):
            for p in _physical_below(iface, links, physical):
                facts.interfaces[p].storage = True


class NicPortsProbe(Probe):
    name = "nic.ports"
    title = "Physical NICs: link speed and modes, duplex, MTU, rings, offloads, error counters over the sample window, queue interrupts"
    facts_model = NicPortsFacts

    def sample_seconds(self, ctx: ProbeContext) -> float:
        return max(MIN_SAMPLE_SECONDS, float(ctx.sample_seconds))

    def timeout(self, ctx: ProbeContext) -> float:
        return self.sample_seconds(ctx) + 30.0

    def script(self, ctx: ProbeContext) -> str:
        return _script(ctx, self.sample_seconds(ctx))

    def parse(self, text: str) -> NicPortsFacts:
        return parse_nic_ports(text)
