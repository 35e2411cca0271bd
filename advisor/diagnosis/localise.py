"""Where packets are lost: votes across paths (Arzani et al., '007: Democratically Finding the
Cause of Packet Drops', NSDI 2018).

Each slow path that loses packets, and that no packet-rate limit on its data's way explains (a limit
on the ACKs drops no data), votes for
both of its ends: the sender's outgoing side and the receiver's incoming side. A host side whose
measured paths are mostly lossy is the suspect; sides are chosen greedily, most covered paths
first, until every lossy path is covered or no side has a majority. A host whose paths lose in
one direction only is named for that direction; hosts blamed for the same peers are one repair.
"""

from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass, field

from advisor.diagnosis.paths import PathState

#: retransmitted / sent segments above which a path counts as lossy, and a floor on the count
MIN_LOSS = 0.0005
#: a side is a suspect when at least this share of its measured paths is lossy
MIN_SHARE = 0.5


@dataclass
class LossBlame:
    side: str  # send | recv
    hosts: list[str]
    peers: list[str]
    paths: list[str]
    loss: float
    #: the share of the blamed sides' measured paths that are lossy (the vote)
    share: float
    evidence: list[str] = field(default_factory=list)
    #: the blamed hosts' NICs over the tests' windows (advisor/diagnosis/nic_causes.py ``attribute_loss``):
    #: a NIC whose counters rose: what the title adds ("st03 eth0 rx_crc_errors +3,112: cable or optic") and
    #: what to do instead of searching; none rose: why the NICs are not it (``nic_note``)
    nic_title: str | None = None
    nic_action: str | None = None
    nic_note: str | None = None
    nic_evidence: list[str] = field(default_factory=list)

    def title(self) -> str:
        way = "on the way to" if self.side == "send" else "on the way from"
        base = f"packet loss {self.loss:.2%} {way} {_short(self.peers)}"
        return f"{base}: {self.nic_title}" if self.nic_title else base

    def action(self) -> str:
        where = "NIC, cable, switch port or the switch between"
        found = (f"find where packets of {', '.join(self.paths[:3])}{' ...' if len(self.paths) > 3 else ''} are lost "
                 f"({where}): `ethtool -S` on {', '.join(self.hosts)} (rx/tx errors, drops), the switch port counters")
        if self.nic_action:
            return self.nic_action
        return f"{found}. {self.nic_note}" if self.nic_note else found


def _short(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:3])} and {len(names) - 3} more"


def _neg(score: tuple[int, float, bool, str]) -> tuple:
    """A score as a min-heap key that pops the highest score first (the host name too: the greater
    name wins a tie, as max() of the scores picks it)."""
    n, share, send, host = score
    return (-n, -share, not send, tuple(-ord(c) for c in host) + (1,))


def lossy(st: PathState) -> bool:
    return st.loss >= MIN_LOSS and not st.data_policed


def localise_loss(slow: list[PathState], every: list[PathState]) -> list[LossBlame]:
    """The host sides that explain the slow lossy paths (``every``: all measured paths, for shares)."""
    uncovered = {st.subject: st for st in slow if lossy(st)}
    if not uncovered:
        return []
    measured: dict[tuple[str, str], int] = {}
    for st in every:
        measured[(st.src, "send")] = measured.get((st.src, "send"), 0) + 1
        measured[(st.dst, "recv")] = measured.get((st.dst, "recv"), 0) + 1
    votes: dict[tuple[str, str], dict[str, PathState]] = {}
    for st in uncovered.values():
        votes.setdefault((st.src, "send"), {})[st.subject] = st
        votes.setdefault((st.dst, "recv"), {})[st.subject] = st

    def score(key: tuple[str, str]) -> tuple[int, float, bool, str] | None:
        mine = votes[key]
        share = len(mine) / max(1, measured.get(key, 1))
        return (len(mine), share, key[1] == "send", key[0]) if mine and share >= MIN_SHARE else None

    # greedy, most covered paths first: a side's score only falls as paths are covered, so a side
    # popped with its score unchanged is the best (lazy greedy), and one under MIN_SHARE stays so
    heap = [(_neg(sc), key) for key in votes if (sc := score(key)) is not None]
    heapq.heapify(heap)
    chosen: list[tuple[str, str, list[PathState], float]] = []
    while uncovered and heap:
        neg, key = heapq.heappop(heap)
        sc = score(key)
        if sc is None:
            continue
        if _neg(sc) != neg:
            heapq.heappush(heap, (_neg(sc), key))
            continue
        mine = list(votes[key].values())
        for st in mine:
            uncovered.pop(st.subject, None)
            votes[(st.src, "send")].pop(st.subject, None)
            votes[(st.dst, "recv")].pop(st.subject, None)
        chosen.append((key[0], key[1], mine, sc[1]))
    # hosts blamed on the same side for the same peers are one repair
    grouped: dict[tuple[str, tuple[str, ...]], list[tuple[str, list[PathState], float]]] = {}
    for host, side, mine, share in chosen:
        peers = tuple(sorted(st.dst if side == "send" else st.src for st in mine))
        grouped.setdefault((side, peers), []).append((host, mine, share))
    out = []
    for (side, peers), members in grouped.items():
        sts = [st for _, mine, _ in members for st in mine]
        loss = statistics.median(st.loss for st in sts)
        out.append(LossBlame(
            side=side, hosts=sorted(h for h, _, _ in members), peers=list(peers),
            paths=sorted(st.subject for st in sts), loss=loss,
            share=min(share for _, _, share in members),
            evidence=[f"{st.subject}: {st.loss:.2%} of segments retransmitted, "
                      f"{st.measured_bps / 1e6:.0f} Mb/s" + (f" of {st.expected_bps / 1e6:.0f}" if st.expected_bps else "")
                      for st in sorted(sts, key=lambda s: s.subject)[:4]],
        ))
    return out
