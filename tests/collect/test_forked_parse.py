"""A large capture parsed on every core (advisor/collect/forked_parse.py): the same results in the same order
as one process, parts parsed in forked children, a part whose child dies parsed again at home."""

from __future__ import annotations

import os

import pytest

from advisor.collect import forked_parse
from advisor.collect.forked_parse import parse_on_every_core, split


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(forked_parse, "cores", lambda: 2)
    monkeypatch.setattr(forked_parse, "MIN_PER_PART", 10)


def test_split_keeps_order_and_sizes():
    assert split(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert [len(p) for p in split(list(range(10_000)), 2)] == [5000, 5000]


def test_parts_are_parsed_in_a_forked_child_and_come_back_in_order(two_cores):
    home = os.getpid()
    out = list(parse_on_every_core(list(range(40)), lambda xs: [(x * x, os.getpid()) for x in xs]))
    assert [v for v, _ in out] == [x * x for x in range(40)]
    pids = [pid for _, pid in out]
    assert set(pids[:20]) == {home} and home not in pids[20:] and len(set(pids[20:])) == 1


def test_too_few_items_or_not_allowed_stays_in_this_process(two_cores):
    home = os.getpid()
    assert {pid for _, pid in parse_on_every_core(list(range(19)), lambda xs: [(x, os.getpid()) for x in xs])} == {home}
    assert {pid for _, pid in parse_on_every_core(list(range(40)), lambda xs: [(x, os.getpid()) for x in xs],
                                                   forked=False)} == {home}


def test_a_part_whose_child_dies_is_parsed_again_here(two_cores):
    home = os.getpid()

    def parse(xs):
        if os.getpid() != home:
            os._exit(9)  # killed (the OOM killer, a signal): the pool breaks
        return [x + 1 for x in xs]

    assert list(parse_on_every_core(list(range(40)), parse)) == [x + 1 for x in range(40)]
