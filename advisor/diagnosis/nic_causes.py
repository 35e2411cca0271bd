"""The host's NIC in the diagnosis (docs/diagnosis.md, "The NIC layer").

* **Loss, localised to a NIC.** A loss cause (advisor/diagnosis/localise.py) blames host sides; the mesh read
  each test end's NIC counters just before and just after its test (advisor/mesh/sampling.py), so the
  counters that rose in the very window the loss was measured in say whether the blamed host's NIC took
  part: a CRC/frame error is a cable or an optic, a missed/no-buffer drop a short ring or a busy CPU. When
  none rose the cause says so: the frames were lost beyond the hosts' NICs. Where the tests' counters were
  not read, the scan's own sample window (the ``nic.ports`` probe) stands in, and says it is that window.
* **A path-MTU black hole** is a cause of its own: the mesh's full-MTU don't-fragment ping was lost on a
  path whose small pings arrived. Its paths' failed tests and slow measurements are its symptoms; with the
  frames carried, the path has its link (the prediction), or "unquantified" where no rate is expected.
* **A NIC negotiated low**: a path held by its link (``limited_by`` link) far below the rate the site
  expects, where an end's NIC runs below that rate (``nic_speed_bps``): the NIC is named, with what its link
  modes say about which end is short, and the prediction is the path's expected link rate.

The findings these causes repair (the NIC's rising counters, its speed) are folded into them by tag
(``counters``, ``speed``): nothing here names a rule.
"""

from __future__ import annotations

from typing import Any

from advisor.diagnosis.candidates import ByHand, Candidate, ref, refkey
from advisor.diagnosis.localise import LossBlame
from advisor.diagnosis.report_types import Predicted
from advisor.diagnosis.paths import Fix, PathState, predict
from advisor.model.findings import Finding
from advisor.model.link_rate import address_mtu
from advisor.util.units import format_bps
from probes.nic_counters import counter_class

PORTS = "nic.ports"
NIC = "network.nic"
#: a path held by its link below this share of its expected rate has a slow link
LOW_LINK = 0.8
_ADVICE = {"errors": "cable or optic", "aggregate": "cable, optic or NIC", "drops": "receive ring or CPU",
           "stack": "the host's stack, not the wire"}


def _rises(blame: LossBlame, states: dict[str, PathState]) -> tuple[dict[str, dict[tuple[str, str], int]], set[str]]:
    """host -> (interface, counter) -> rise over the blamed paths' tests, and the hosts whose counters were read."""
    end = "dst" if blame.side == "recv" else "src"
    out: dict[str, dict[tuple[str, str], int]] = {}
    read: set[str] = set()
    for subject in blame.paths:
        st = states.get(subject)
        if st is None:
            continue
        host = st.dst if end == "dst" else st.src
        e = st.nic_errors.get(end)
        if host not in blame.hosts or not e:
            continue
        read.add(host)
        own = out.setdefault(host, {})
        for counter, n in (e.get("rises") or {}).items():
            if isinstance(n, int) and n > 0:
                own[(str(e.get("interface")), counter)] = own.get((str(e.get("interface")), counter), 0) + n
    return out, read


def _faults(rises: dict[tuple[str, str], int]) -> list[tuple[str, str, int, str]]:
    """(interface, counter, rise, kind) of the fault counters, the largest first; an aggregate only where no
    specific counter of its interface rose."""
    specific = {i for (i, c), n in rises.items() if counter_class(c) in ("errors", "drops")}
    rows = [(i, c, n, counter_class(c) or "") for (i, c), n in rises.items()]
    rows = [r for r in rows if r[3] in ("errors", "drops") or (r[3] == "aggregate" and r[0] not in specific)]
    return sorted(rows, key=lambda r: (-r[2], r[0], r[1]))


def attribute_loss(blame: LossBlame, states: dict[str, PathState], facts: dict[str, Any]) -> set[tuple[str, str]]:
    """Say on ``blame`` which NIC of the blamed hosts lost the packets, or why none did; returns the
    (host, interface) pairs named."""
    during, read = _rises(blame, states)
    named: list[tuple[str, str, str, int, str, str]] = []  # host, iface, counter, rise, kind, window
    for host in blame.hosts:
        for iface, counter, n, kind in _faults(during.get(host, {}))[:2]:
            named.append((host, iface, counter, n, kind, "during the tests"))
    if not named:  # the scan's sample window, for hosts whose tests did not read their counters
        for host in blame.hosts:
            if host in read:
                continue
            ports = ((facts.get(host) or {}).get(PORTS) or {}).get("interfaces") or {}
            for iface, p in sorted(ports.items()):
                for counter, r in sorted((p.get("counters") or {}).items(), key=lambda kv: -kv[1].get("delta", 0)):
                    kind = counter_class(counter) or ""
                    if kind in ("errors", "drops", "aggregate") and r.get("delta"):
                        named.append((host, iface, counter, r["delta"], kind, "during the scan's sample window"))
                        break
    if named:
        host, iface, counter, n, kind, window = named[0]
        more = f" (and {len(named) - 1} more)" if len(named) > 1 else ""
        blame.nic_title = f"{host} {iface} {counter} +{n:,}: {_ADVICE.get(kind, 'NIC')}{more}"
        blame.nic_evidence = [f"{h} {i} {c} +{k:,} {w}" for h, i, c, k, _kind, w in named]
        if kind == "drops":
            blame.nic_action = (f"{host} {iface} dropped frames it had no room for ({counter} +{n:,} {window}): raise its "
                                "RX ring to the maximum, spread its queue interrupts over CPUs (irqbalance), keep its CPU "
                                "governor at performance")
        else:
            blame.nic_action = (f"replace or reseat the cable or optic of {host} {iface} ({counter} +{n:,} {window}) and "
                                "check the error counters of its switch port; move the link to another port if they "
                                "rise there too")
        return {(h, i) for h, i, *_ in named}
    stack = sorted({f"{h} {i} {c} +{n:,}" for h, r in during.items() for (i, c), n in r.items()
                    if counter_class(c) == "stack"})
    unread = [h for h in blame.hosts if h not in read]
    notes = []
    if read:
        ifaces = sorted({f"{h} {i}" for h in read for st in (states.get(s) for s in blame.paths) if st
                         for e in [st.nic_errors.get("dst" if blame.side == "recv" else "src")] if e
                         for i in [e.get("interface")] if (st.dst if blame.side == "recv" else st.src) == h})
        notes.append(f"No error or drop counter of {', '.join(ifaces)} rose during the tests: the frames are lost "
                     "beyond the hosts' NICs (a switch port, the links between switches)"
                     + (f"; only the stack's own drops rose ({', '.join(stack[:3])})" if stack else ""))
    if unread:
        notes.append(f"The NIC counters of {', '.join(unread)} were not read during the tests (no interface to the "
                     "peer in sysfs, or a capture made without them)")
    blame.nic_note = ". ".join(notes) or None
    return set()


def absorbed_by_loss(blame: LossBlame, named: set[tuple[str, str]], state_findings: list[Finding],
                     tags: dict[str, set[str]]) -> list[Finding]:
    """The rising-counter findings (tag ``counters``) of the NICs ``attribute_loss`` named."""
    return [f for f in state_findings if "counters" in tags.get(f.rule_id, set())
            and any((h, f.subject) in named for h in f.hosts)]


def black_hole(paths: list[dict], path_symptoms: dict[str, list[Finding]], facts: dict[str, Any],
               addresses: dict[str, str]) -> Candidate | None:
    """One cause for every path whose full-MTU ping was lost while small pings arrived, between ends that
    both take the larger frames (a receiver with a smaller MTU gets segments of its MSS: no black hole)."""
    def receiver_takes(p: dict) -> bool:
        theirs = address_mtu((facts.get(p["dst"]) or {}).get(NIC), addresses.get(p["dst"]))
        return theirs is None or theirs >= (p["path_mtu"].get("mtu") or 0)

    holes = [p for p in paths if (p.get("path_mtu") or {}).get("carried") is False and receiver_takes(p)]
    if not holes:
        return None
    subjects = sorted(f"{p['src']}->{p['dst']}" for p in holes)
    hosts = sorted({h for p in holes for h in (p["src"], p["dst"])})
    mtus = sorted({p["path_mtu"].get("mtu") for p in holes if p["path_mtu"].get("mtu")})
    mtu = mtus[-1] if mtus else None
    ends = sorted({f"{p['src']} {p['path_mtu'].get('interface')}" for p in holes if p["path_mtu"].get("interface")})
    for p in holes:  # the receivers' interfaces, where their NIC facts name the one carrying the site address
        ports = ((facts.get(p["dst"]) or {}).get(PORTS) or {})
        if ports.get("site_interface"):
            ends.append(f"{p['dst']} {ports['site_interface']}")
    ends = sorted(set(ends))
    cand = Candidate(key=("mtu_black_hole", tuple(subjects)), kind="by_hand", by_hand=ByHand(
        hosts=hosts, title=(f"path-MTU black hole: {mtu}-byte frames are lost between {_short(hosts)}, smaller ones pass "
               f"({len(holes)} path{'s' if len(holes) != 1 else ''})"),
        action=(f"raise the MTU of every switch port on the paths between {', '.join(hosts)} to {mtu} (the ports of "
                f"{', '.join(ends) or ', '.join(hosts)} and the links between their switches), or set those hosts' MTU "
                "to what the ports carry (1500); until then net.ipv4.tcp_mtu_probing=1 on them lets TCP find the "
                "smaller MTU"),
        evidence=[f"{p['src']}->{p['dst']}: a {p['path_mtu'].get('mtu')}-byte ping with don't-fragment set from "
                  f"{p['src']} {p['path_mtu'].get('interface') or ''} did not arrive; small pings did"
                  + (f"; the test {'failed: ' + str(p.get('error'))[:80] if p.get('status') != 'ok' else 'ran at ' + format_bps(p.get('measured_bps') or 0)}")
                  for p in sorted(holes, key=lambda q: (q['src'], q['dst']))[:4]],
        confidence=0.9))
    for p in holes:
        s = f"{p['src']}->{p['dst']}"
        want = p.get("expected_bps")
        cand.predicted.append(Predicted(
            metric="throughput", subject=s, now=round(p["measured_bps"]) if p.get("measured_bps") else None,
            after=round(want) if want else None, unit="bps", model="link" if want else "unquantified",
            inputs={"path_mtu": p["path_mtu"].get("mtu"), "expected_bps": want,
                    **({} if p.get("status") == "ok" else {"now": "test failed: " + str(p.get("error") or "")[:80]})}))
        for f in path_symptoms.get(s, []):
            cand.explains[refkey(f)] = ref(f)
    return cand


def _short(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:3])} and {len(names) - 3} more"


def _slow_nic(ports: dict, below_bps: float) -> tuple[str, dict] | None:
    """The host's NIC carrying its traffic that runs below ``below_bps``: the slowest of those."""
    ifaces = ports.get("interfaces") or {}
    chosen = [(n, p) for n, p in ifaces.items() if (p.get("site") or p.get("storage")) and p.get("speed_mbps")]
    chosen = chosen or [(n, p) for n, p in ifaces.items() if p.get("speed_mbps")]
    slow = [(n, p) for n, p in chosen if p["speed_mbps"] * 1e6 < below_bps]
    return min(slow, key=lambda np: np[1]["speed_mbps"]) if slow else None


def _where_short(host: str, iface: str, p: dict) -> str:
    """Which end of the link holds it back, as the link modes say."""
    speed, sup, adv, partner = (p.get(k) for k in ("speed_mbps", "max_supported_mbps", "max_advertised_mbps",
                                                    "partner_max_mbps"))
    if sup and speed and sup <= speed:
        return (f"{host} {iface} supports no faster mode ({sup} Mb/s): a faster NIC, or correct the site's link_rate")
    if partner and adv and partner < adv:
        return (f"the switch port of {host} {iface} advertises at most {partner} Mb/s: set it to the NIC's "
                f"{adv} Mb/s (or move the link to a port that runs it), then `ethtool -r {iface}`")
    if adv and sup and adv < sup:
        return (f"{host} {iface} advertises at most {adv} Mb/s of its {sup}: `ethtool -s {iface} autoneg on` "
                "with every mode advertised")
    return (f"check the cable and the optic or DAC of {host} {iface} (one that carries only {speed} Mb/s) and the "
            f"switch port's speed setting, then `ethtool -r {iface}`")


def negotiated_low(states: dict[str, PathState], paths: list[dict], path_symptoms: dict[str, list[Finding]],
                   facts: dict[str, Any], speed_findings: list[Finding]) -> list[Candidate]:
    """One cause per host whose NIC, negotiated below the rate the site expects, holds paths at their link."""
    records = {f"{p.get('src')}->{p.get('dst')}": p for p in paths}
    by_host: dict[str, list[PathState]] = {}
    for s, st in states.items():
        want = st.expected_bps
        if st.limited_by != "link" or not want or st.measured_bps >= LOW_LINK * want:
            continue
        speeds = records.get(s, {}).get("nic_speed_bps") or {}
        for end, host in (("src", st.src), ("dst", st.dst)):
            if speeds.get(end) and speeds[end] < want:
                by_host.setdefault(host, []).append(st)
    out = []
    for host, sts in sorted(by_host.items()):
        want = max(st.expected_bps or 0 for st in sts)
        ports = (facts.get(host) or {}).get(PORTS) or {}
        found = _slow_nic(ports, want)
        iface, p = found if found else ("its NIC", {"speed_mbps": min(
            (records[st.subject].get("nic_speed_bps") or {}).get("src" if st.src == host else "dst") or 0 for st in sts) // 10**6})
        title = (f"{host} {iface} negotiated {format_bps((p.get('speed_mbps') or 0) * 1e6)} of the "
                 f"{format_bps(want)} its paths expect")
        if p.get("max_supported_mbps"):
            title += f" (it supports {format_bps(p['max_supported_mbps'] * 1e6)})"
        fixes = {Fix("nic_speed", host)}
        cand = Candidate(key=("nic_low", host, iface), kind="by_hand", fixes=fixes, by_hand=ByHand(
            hosts=[host], title=title, action=_where_short(host, iface, p),
            evidence=[f"{st.subject}: {format_bps(st.measured_bps)} of {format_bps(st.expected_bps)}, held by its link"
                      for st in sorted(sts, key=lambda x: x.subject)[:4]], confidence=0.85))
        for st in sts:
            pr = predict(st, fixes)
            cand.predicted.append(Predicted(
                metric="throughput", subject=st.subject, now=round(st.measured_bps), after=round(pr.bps), unit="bps",
                model=pr.model, inputs={**pr.inputs, "expected_bps": st.expected_bps,
                                        "nic_speed_bps": (p.get("speed_mbps") or 0) * 10**6}))
            for f in path_symptoms.get(st.subject, []):
                cand.explains[refkey(f)] = ref(f)
        cand.folded = [f for f in speed_findings if host in f.hosts and f.subject in (iface, p.get("master"))]
        for f in cand.folded:
            cand.explains[refkey(f)] = ref(f)
        out.append(cand)
    return out
