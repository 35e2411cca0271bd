"""The CI slice of bench/bench_fuzz.py: 500 cases for each parser in probes/, the capture reader
and each renderer; zero tracebacks, zero text a renderer hid or let act on its format."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("bench_fuzz", Path(__file__).resolve().parents[2] / "bench" / "bench_fuzz.py")
bench_fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_fuzz)

CASES = 500


@pytest.mark.parametrize("target", sorted(bench_fuzz.TARGETS))
def test_fuzz_slice(target):
    tally = bench_fuzz.TARGETS[target](CASES, random.Random(25))
    assert tally.cases >= CASES
    assert tally.failures == 0, tally.first
