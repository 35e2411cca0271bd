"""Where packets are lost (advisor/diagnosis/localise.py): the greedy vote of 007 (Arzani et al., NSDI 2018),
checked against the plain greedy it implements (every side re-counted at each choice) on random sites."""

from __future__ import annotations

import random
from types import SimpleNamespace

from advisor.diagnosis.localise import MIN_SHARE, localise_loss, lossy


def _path(src: str, dst: str, loss: float):
    return SimpleNamespace(src=src, dst=dst, subject=f"{src}->{dst}", loss=loss, data_policed=False,
                           measured_bps=1e8, expected_bps=1e9)


def _plain_greedy(slow, every):
    """(host, side, covered subjects) in the order chosen: the most covered paths first, then the larger
    share, the send side, the greater name; a side under MIN_SHARE of its measured paths is never chosen."""
    uncovered = {st.subject: st for st in slow if lossy(st)}
    measured: dict = {}
    for st in every:
        for key in ((st.src, "send"), (st.dst, "recv")):
            measured[key] = measured.get(key, 0) + 1
    chosen = []
    while uncovered:
        votes: dict = {}
        for st in uncovered.values():
            votes.setdefault((st.src, "send"), []).append(st)
            votes.setdefault((st.dst, "recv"), []).append(st)
        scored = [((len(m), len(m) / measured[k], k[1] == "send", k[0]), k, m) for k, m in votes.items()
                  if len(m) / measured[k] >= MIN_SHARE]
        if not scored:
            break
        _, key, mine = max(scored, key=lambda x: x[0])
        for st in mine:
            uncovered.pop(st.subject)
        chosen.append((key[0], key[1], sorted(st.subject for st in mine)))
    return chosen


def test_the_blamed_sides_are_those_the_plain_greedy_vote_chooses():
    for seed in range(400):
        rng = random.Random(seed)
        hosts = [f"h{i}" for i in range(rng.randint(2, 10))]
        every = [_path(a, b, rng.choice([0.0, 0.0, 0.001, 0.01])) for a in hosts for b in hosts
                 if a != b and rng.random() < 0.6]
        slow = [st for st in every if rng.random() < 0.7]
        want = {(side, host, tuple(paths)) for host, side, paths in _plain_greedy(slow, every)}
        got = {(b.side, h, tuple(sorted(st for st in b.paths if st.startswith(h + "->") or st.endswith("->" + h))))
               for b in localise_loss(slow, every) for h in b.hosts}
        assert got == want, seed


def test_a_lossy_port_among_thousands_of_paths_is_one_side():
    every = [_path(f"st{s:02d}", f"wn{w:04d}", 0.004 if s == 7 else 0.0) for s in range(20) for w in range(500)]
    blames = localise_loss(every, every)
    assert [(b.side, b.hosts, len(b.paths)) for b in blames] == [("send", ["st07"], 500)]
