"""The mesh's symptoms: which paths are slow, and what the findings about them name.

Plain functions over the mesh's ``paths`` (advisor.mesh.results) and per-host facts dicts
(``{"network.sysctl": {...} | None, "firewall": {...} | None}``, the probes' facts as the rule
engine hands them out; advisor/paths/host_view.py reads them). The analytic rules in
advisor/rules/analytic/mesh.py are thin wrappers around these; what held each path and what a fix
buys is the cause stage's (advisor/diagnosis/). The RTTs and the loss share come from the path's
record (advisor/paths/record.py).

* slow path: measured below ``min_ratio`` of its expected rate (or of the median, when no rate
  is expected);
* asymmetry: slow paths that share a sender (or a receiver) while the reverse directions are
  fine. Which hosts to blame is a greedy cover of the slow paths by (host, side), largest
  first; the blamed hosts' facts are then compared with the facts of hosts on the same side
  whose paths are all fine (IFCA: tcp_sack=0 on the GPFS servers, seen only on their paths to
  the worker nodes);
* loss: a slow path with many retransmits;
* buffer-limited: a slow path whose rate is close to window / idle RTT for one of the windows
  that bound it (sender tcp_wmem max, receiver tcp_rmem max, the receiver's advertised window,
  64 KiB when either end has tcp_window_scaling=0: RFC 7323 needs both SYNs to carry the option,
  so the host with it off is named, never the other end's buffers); the bandwidth-delay product
  (expected rate x idle RTT / 8) says how far to raise it. The idle RTT is the smallest round
  trip the path showed (three pings sent just before the test, iperf3's and the kernel's minimum):
  the mean during the transfer includes the bottleneck's queue, and a window that fills a queue is
  not what limits the path (the queueing delay, mean - idle, is reported apart). A
  buffer already at the recommended size is never blamed (no change that changes nothing);
* failed tests, with a firewall hint when an end has rules that drop, reject or limit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from advisor.adapters.firewall import rule_key
from advisor.model.findings import Change
from advisor.mesh.results import path_ratio
from advisor.paths import host_view as hv
from advisor.paths.host_view import FIREWALL, SYSCTL  # noqa: F401  (the keys of a host's facts map)
from advisor.paths.record import PathRecord
from advisor.util.units import format_bps

HostFactsMap = dict[str, dict[str, dict | None]]  # host -> its HostFacts (advisor.paths.host_view)


def _name(p: dict) -> str:
    return f"{p['src']}->{p['dst']}"


def describe_path(p: dict) -> str:
    """One evidence line for a path."""
    if p.get("status") != "ok":
        return f"{_name(p)}: test failed: {p.get('error')}"
    bits = [f"{_name(p)}: {format_bps(p.get('measured_bps'))}"]
    r = path_ratio(p)
    if p.get("expected_bps"):
        bits.append(f"of {format_bps(p['expected_bps'])} expected" + (f" ({r:.2f})" if r is not None else ""))
    elif r is not None:
        bits.append(f"({r:.2f} of the median path)")
    if p.get("retransmits") is not None:
        bits.append(f"{p['retransmits']} retransmits")
    if p.get("rtt_us") is not None:
        bits.append(f"rtt {p['rtt_us'] / 1000:.2f} ms")
    cc = (p.get("tcp_info") or {}).get("congestion") or p.get("congestion")
    if cc:
        bits.append(str(cc))
    rec = PathRecord.from_mesh(p)
    queue = rec.queue_us
    if queue is not None and p.get("rtt_us") is not None:
        bits.append(f"idle rtt {rec.idle_rtt_us / 1000:.2f} ms, queueing delay {queue / 1000:.2f} ms")
    rt = p.get("retest")
    if rt and not rt.get("error"):
        bits.append(f"measured alone (in round {rt.get('round')}: {format_bps(rt.get('concurrent_bps'))})")
    return ", ".join(bits)


def is_slow(p: dict, min_ratio: float) -> bool:
    r = path_ratio(p)
    return r is not None and r < min_ratio


def is_fine(p: dict, min_ratio: float) -> bool:
    r = path_ratio(p)
    return r is not None and r >= min_ratio


def slow_paths(paths: Iterable[dict], min_ratio: float) -> list[dict]:
    return [p for p in paths if is_slow(p, min_ratio)]


def acting_firewall_rules(facts: HostFactsMap, host: str) -> list[dict] | None:
    """``host``'s rules that drop, reject, queue or rate-limit; None when it has no firewall facts."""
    return hv.acting_rules(facts.get(host))


# ----------------------------------------------------------------------------- asymmetry


@dataclass
class HostDifference:
    """A fact a blamed host has that the good hosts on its side lack (a sysctl, acting firewall rules,
    a smaller buffer): evidence for the asymmetry finding, not a diagnosis cause (those are
    advisor.diagnosis.report_types.Cause, built from the findings' changes)."""

    key: str  # "net.ipv4.tcp_sack", "firewall", ...
    observed: Any
    good: Any
    text: str
    #: the remedy as changes with only a target (the values the scan saw unknown here): the finding
    #: that reports the difference renders them through rules/mesh.yml, and the adapters complete
    #: them with the runtime and persisted values (advisor/rules/finding_changes.py)
    changes: list[Change] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)


@dataclass
class Asymmetry:
    host: str
    side: str  # "sender" | "receiver"
    slow: list[dict]
    #: reverse directions of the slow paths: fine / slow / not measured or failed
    reverse_fine: list[dict]
    reverse_slow: list[dict]
    reverse_unknown: list[tuple[str, str]]
    #: the host's other paths on the same side that are fine
    other_fine: list[dict]
    good_hosts: list[str]
    differences: list[HostDifference]
    #: hosts with the same blame in the same group (for "a sender group" wording)
    group: str | None = None

    @property
    def peers(self) -> list[str]:
        return [p["dst"] if self.side == "sender" else p["src"] for p in self.slow]

    def summary(self) -> str:
        arrow = f"{self.host} -> {', '.join(self.peers)}" if self.side == "sender" else f"{', '.join(self.peers)} -> {self.host}"
        s = (f"{len(self.slow)} slow path(s) {arrow}; reverse directions fine: {len(self.reverse_fine)}"
             f"/{len(self.reverse_fine) + len(self.reverse_slow)}; other paths of {self.host} as {self.side} fine: "
             f"{len(self.other_fine)}")
        if self.differences:
            s += "; likely cause: " + "; ".join(c.text for c in self.differences)
        else:
            s += "; no difference in the collected facts explains it (check the switch ports and NIC on this path)"
        return s


def _side_paths(paths: list[dict], host: str, side: str) -> list[dict]:
    key = "src" if side == "sender" else "dst"
    return [p for p in paths if p.get(key) == host]


def find_asymmetries(paths: list[dict], facts: HostFactsMap, min_ratio: float,
                     groups: dict[str, list[str]] | None = None) -> list[Asymmetry]:
    """Hosts (as sender or receiver) that explain the slow paths whose reverse directions are fine."""
    by_dir = {(p["src"], p["dst"]): p for p in paths}
    slow = [p for p in slow_paths(paths, min_ratio)]
    # only paths whose reverse is fine (or unmeasured) point at one end of the path
    uncovered = {_name(p): p for p in slow if not is_slow(by_dir.get((p["dst"], p["src"]), {}), min_ratio)}
    hosts = sorted({n for p in paths for n in (p["src"], p["dst"])})
    chosen: list[tuple[str, str, list[dict]]] = []
    while uncovered:
        best = None
        for h in hosts:
            for side in ("sender", "receiver"):
                mine = [p for p in _side_paths(list(uncovered.values()), h, side)]
                if len(mine) < 2:
                    continue
                judged = [p for p in _side_paths(paths, h, side) if path_ratio(p) is not None]
                frac = sum(1 for p in judged if is_slow(p, min_ratio)) / max(1, len(judged))
                score = (len(mine), frac, side == "sender", h)
                if best is None or score[:3] > best[0][:3]:
                    best = (score, h, side, mine)
        if best is None:
            break
        _, h, side, mine = best
        for p in mine:
            uncovered.pop(_name(p), None)
        chosen.append((h, side, mine))

    out: list[Asymmetry] = []
    for side in ("sender", "receiver"):
        blamed = {h for h, s, _ in chosen if s == side}
        # good hosts: on this side, every judged path fine
        good = []
        for h in hosts:
            if h in blamed:
                continue
            judged = [p for p in _side_paths(paths, h, side) if path_ratio(p) is not None]
            if judged and all(is_fine(p, min_ratio) for p in judged):
                good.append(h)
        for h, s, mine in chosen:
            if s != side:
                continue
            rev = [by_dir.get((p["dst"], p["src"])) for p in mine]
            rf = [r for r in rev if r is not None and is_fine(r, min_ratio)]
            rs = [r for r in rev if r is not None and is_slow(r, min_ratio)]
            ru = [(p["dst"], p["src"]) for p, r in zip(mine, rev) if r is None or path_ratio(r) is None]
            if not rf:
                continue  # no reverse direction measured fine: not an asymmetry we can show
            other = [p for p in _side_paths(paths, h, side) if is_fine(p, min_ratio)]
            grp = None
            if groups:
                same = [g for g, members in groups.items() if h in members
                        and sum(1 for m in members if m in blamed) >= 2]
                grp = same[0] if same else None
            peer = "dst" if side == "sender" else "src"
            out.append(Asymmetry(h, side, sorted(mine, key=lambda p: p[peer]),
                                 rf, rs, ru, other, good, compare_facts(h, good, side, facts), grp))
    return out


def _majority(values: list[Any]) -> Any:
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return Counter(vals).most_common(1)[0][0]


def compare_facts(host: str, good: list[str], side: str, facts: HostFactsMap) -> list[HostDifference]:
    """What ``host`` has that the good hosts on its side lack (ordered by how likely a cause)."""
    differences: list[HostDifference] = []
    good_with = [g for g in good if (facts.get(g) or {}).get(SYSCTL)]

    for key, bad in (("net.ipv4.tcp_sack", "0"), ("net.ipv4.tcp_timestamps", "0")):
        mine = hv.sysctl(facts.get(host), key)
        if mine is None:
            continue
        theirs = _majority([hv.sysctl(facts.get(g), key) for g in good_with])
        if mine == bad and (theirs is None or theirs != bad):
            short = key.rsplit(".", 1)[-1]
            differences.append(HostDifference(
                key=key, observed=mine, good=theirs,
                text=f"{short}={mine} on {host}" + (f" (good {side}s: {theirs})" if theirs is not None else ""),
                changes=[sysctl_change(host, key, "1")],
                evidence=[f"{host}: {key} = {mine}"] + [f"{g}: {key} = {hv.sysctl(facts.get(g), key)}" for g in good_with[:3]],
            ))

    rules = acting_firewall_rules(facts, host)
    if rules:
        good_fw = [g for g in good if (facts.get(g) or {}).get(FIREWALL) is not None]
        good_counts = [len(acting_firewall_rules(facts, g) or []) for g in good_fw]
        if not good_counts or min(good_counts) == 0:
            differences.append(HostDifference(
                key="firewall", observed=len(rules), good=min(good_counts) if good_counts else None,
                text=f"{len(rules)} firewall rule(s) on {host} that drop, reject or rate-limit"
                     + (" (good hosts: none)" if good_counts else ""),
                changes=firewall_changes(host, rules),
                evidence=[f"{host}: {r.get('text')}" for r in rules[:5]],
            ))

    buf_key = "net.ipv4.tcp_wmem" if side == "sender" else "net.ipv4.tcp_rmem"
    mine_max = hv.sysctl_max(facts.get(host), buf_key)
    good_max = [m for m in (hv.sysctl_max(facts.get(g), buf_key) for g in good_with) if m]
    if mine_max and good_max and mine_max < min(good_max):
        ints = hv.sysctl_ints(facts.get(host), buf_key) or []
        target = min(good_max)
        new = " ".join(str(x) for x in ints[:-1] + [target]) if len(ints) == 3 else str(target)
        differences.append(HostDifference(
            key=buf_key, observed=mine_max, good=target,
            text=f"{buf_key.rsplit('.', 1)[-1]} max {mine_max} on {host} (good {side}s: >= {target})",
            changes=[sysctl_change(host, buf_key, new)],
            evidence=[f"{host}: {buf_key} = {' '.join(map(str, ints)) or mine_max}"],
        ))

    qkey = "net.core.default_qdisc"
    mine_q = hv.sysctl(facts.get(host), qkey)
    good_q = _majority([hv.sysctl(facts.get(g), qkey) for g in good_with])
    if mine_q and good_q and mine_q != good_q:
        differences.append(HostDifference(
            key=qkey, observed=mine_q, good=good_q,
            text=f"default_qdisc {mine_q} on {host} (good {side}s: {good_q})",
            changes=[sysctl_change(host, qkey, good_q)],
            evidence=[f"{host}: {qkey} = {mine_q}"],
        ))
    return differences


def sysctl_change(host: str, key: str, target: str) -> Change:
    """Set ``key`` to ``target`` on ``host`` (the values it has: not read here)."""
    return Change(host=host, adapter="sysctl", key=key, target=target)


def firewall_changes(host: str, rules: list[dict]) -> list[Change]:
    """Remove each rule (named as the firewall adapter names a scanned rule)."""
    return [Change(host=host, adapter="firewall", key=rule_key(r), target="absent") for r in rules]


def merged_changes(differences: list[HostDifference]) -> list[Change]:
    """The changes of every difference, one per (host, adapter, key): a later one's target wins."""
    out: dict[tuple[str, str, str], Change] = {}
    for c in differences:
        for ch in c.changes:
            out[(ch.host, ch.adapter, ch.key)] = ch
    return list(out.values())


# ----------------------------------------------------------------------------- loss


def loss_paths(paths: Iterable[dict], min_ratio: float, min_share: float, min_count: int) -> list[tuple[dict, float]]:
    out = []
    for p in paths:
        if not is_slow(p, min_ratio):
            continue
        share = PathRecord.from_mesh(p).loss_share
        if share is not None and share >= min_share and (p.get("retransmits") or 0) >= min_count:
            out.append((p, share))
    return out


# ----------------------------------------------------------------------------- buffers


@dataclass
class BufferLimit:
    path: dict
    host: str  # where to raise it
    sysctl: str
    window_bytes: int
    window_source: str
    limit_bps: float
    #: idle RTT (the test's minimum): what the window is judged against
    rtt_us: float
    bdp_bytes: int
    recommended_bytes: int
    #: the remedy: the window sysctl (and, for a buffer, the net.core maximum that caps it)
    changes: list[Change]
    #: mean RTT during the test minus the idle RTT (None when iperf3 gave no minimum)
    queueing_delay_us: float | None = None


#: the largest window without the window scale option (RFC 7323 section 2)
UNSCALED_WINDOW = 65535
WINDOW_SCALING = "net.ipv4.tcp_window_scaling"


#: ESnet fasterdata tcp_rmem/tcp_wmem maxima by NIC speed (bytes)
def esnet_tcp_max(rate_bps: float | None) -> int:
    if not rate_bps or rate_bps < 10e9:
        return 33554432
    if rate_bps < 40e9:
        return 134217728
    return 268435456


def _pow2_at_least(n: float) -> int:
    v = 1
    while v < n:
        v *= 2
    return v


def buffer_limited(paths: Iterable[dict], facts: HostFactsMap, min_ratio: float,
                   low: float = 0.4, high: float = 1.15) -> list[BufferLimit]:
    """Slow paths running at window / idle RTT for a window that bounds them.

    Windows tried: 64 KiB when an end has tcp_window_scaling=0 (that end is named), the sender's
    tcp_wmem max, the receiver's tcp_rmem max (the receiver can advertise about half of it with
    the default tcp_adv_win_scale, so both the whole and half are tried), and the largest window
    the receiver advertised during the test (iperf3 max_snd_wnd). ``low``/``high``: the
    measured/limit band called "near". The limit is judged with the idle RTT (module docstring).
    """
    out = []
    for p in paths:
        if not is_slow(p, min_ratio):
            continue
        record = PathRecord.from_mesh(p)
        rtt = record.idle_rtt_us or record.loaded_rtt_us
        if not rtt or not p.get("measured_bps"):
            continue
        streams = int(p.get("streams") or 1)  # windows are per stream; the mesh reports the sum
        measured = p["measured_bps"] / streams
        rate = p.get("expected_bps") or p["measured_bps"] / max(path_ratio(p) or 1, 1e-9)
        bdp = int(rate * (rtt / 1e6) / 8)
        unscaled = [h for h in (p["src"], p["dst"]) if hv.sysctl(facts.get(h), WINDOW_SCALING) == "0"]
        cands: list[tuple[str, str, str, int]] = []  # (host, sysctl, source, bytes)
        for h in unscaled:
            cands.append((h, WINDOW_SCALING, f"{h} tcp_window_scaling=0 (no window scale option: "
                                             f"windows of at most {UNSCALED_WINDOW} B both ways)", UNSCALED_WINDOW))
        w = hv.sysctl_max(facts.get(p["src"]), "net.ipv4.tcp_wmem")
        if w:
            cands.append((p["src"], "net.ipv4.tcp_wmem", f"{p['src']} tcp_wmem max", w))
        r = hv.sysctl_max(facts.get(p["dst"]), "net.ipv4.tcp_rmem")
        if r:
            cands.append((p["dst"], "net.ipv4.tcp_rmem", f"{p['dst']} tcp_rmem max", r))
            cands.append((p["dst"], "net.ipv4.tcp_rmem", f"{p['dst']} tcp_rmem max / 2 (advertised share)", r // 2))
        if p.get("max_snd_wnd") and not unscaled:  # without scaling, the advertised window says nothing of rmem
            cands.append((p["dst"], "net.ipv4.tcp_rmem", f"{p['dst']} advertised receive window (iperf3 max_snd_wnd)",
                          int(p["max_snd_wnd"])))
        best = None
        for host, key, source, window in cands:
            limit = window * 8 / (rtt / 1e6)
            ratio = measured / limit
            if not low <= ratio <= high:
                continue
            rec = max(_pow2_at_least(2 * bdp), esnet_tcp_max(rate), window * 2)
            if key != WINDOW_SCALING and (hv.sysctl_max(facts.get(host), key) or 0) >= rec:
                continue  # already at the recommended size: raising it changes nothing
            # window scaling off explains a 64 KiB window before any buffer does
            rank = (key != WINDOW_SCALING, abs(1 - ratio))
            if best is None or rank < best[0]:
                best = (rank, host, key, source, window, limit, rec)
        if best is None:
            continue
        _, host, key, source, window, limit, rec = best
        if key == WINDOW_SCALING:
            changes = [sysctl_change(host, WINDOW_SCALING, "1")]
        else:
            ints = hv.sysctl_ints(facts.get(host), key) or [4096, 131072 if key.endswith("rmem") else 16384]
            new = " ".join(str(x) for x in ints[:2] + [rec]) if len(ints) >= 2 else str(rec)
            core = "net.core.wmem_max" if key.endswith("wmem") else "net.core.rmem_max"
            changes = [sysctl_change(host, key, new), sysctl_change(host, core, str(max(rec * 2, 67108864)))]
        out.append(BufferLimit(
            path=p, host=host, sysctl=key, window_bytes=window, window_source=source, limit_bps=limit,
            rtt_us=rtt, bdp_bytes=bdp, recommended_bytes=rec, changes=changes,
            queueing_delay_us=record.queue_us if p.get("rtt_us") is not None else None,
        ))
    return out


# ----------------------------------------------------------------------------- failures


def failure_hint(p: dict, facts: HostFactsMap) -> tuple[str | None, list[str], list[Change]]:
    """For a failed test: a firewall on either end that could explain it (text, evidence, changes)."""
    err = str(p.get("error") or "").lower()
    connect = any(s in err for s in ("unable to connect", "refused", "no route", "timed out", "timeout"))
    if not connect:
        return None, [], []
    hits = []
    for h in (p["dst"], p["src"]):
        rules = acting_firewall_rules(facts, h) or []
        if rules:
            hits.append((h, rules))
    if not hits:
        return None, [], []
    h, rules = hits[0]
    text = f"{h} has {len(rules)} firewall rule(s) that drop, reject or rate-limit: the likely cut"
    evidence = [f"{h}: {r.get('text')}" for r in rules[:5]]
    return text, evidence, firewall_changes(h, rules)
