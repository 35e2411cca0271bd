"""Every probe parser, and the unit parsers, raise only their typed errors on hostile input.

The strategies mix real tool output (the fixtures beside the probe tests, each from a named
public source) with the extremes fuzzing found: numbers past Python's int digit limit and past a
float's range, JSON nested deeper than the recursion limit, control characters, lone
surrogates and very long lines. ``derandomize=True``: the same cases on every run (CI is
reproducible); 1,000 cases per parser.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.util.units import UnitError, parse_rate_bps, parse_size_bytes
from probes import all_probes
from probes.json_text import load_host_json
from probes.probe import ProbeParseError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
CASES = settings(max_examples=1000, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_TEXTS = sorted(p.read_text(errors="replace") for p in FIXTURES.rglob("*")
                if p.is_file() and p.suffix in ("", ".txt", ".json", ".cfg") and p.stat().st_size < 60_000)
_LINES = sorted({ln for t in _TEXTS for ln in t.splitlines() if ln.strip()})
_SECTIONS = sorted({m for p in (REPO / "probes").glob("*.py")
                    for m in re.findall(r"@@section ([A-Za-z0-9_.-]+)", p.read_text())}
                   | {"rc", "node", "nodeclasses", "mmlsconfig", "mmdiag", "runtime", "sysfs", "ip-j-addr", "errors",
                      "nft", "iptables-save", "ip6tables-save", "hostname", "kernel", "cpuinfo", "meminfo"})

HUGE = "9" * 5000
EXTREMES = [
    HUGE, "1" + "0" * 400, "1e999", "-" + HUGE, HUGE + "G", "0." + HUGE, "inf", "nan",
    "[" * 3000 + "]" * 3000, '{"nftables":' + "[" * 5000, '{"nftables": [' + '{"a":' * 3000 + "1" + "}" * 3000 + "]}",
    "\x00\x01\x7f", "\udcff\ud800", "x" * 200_000, "@@section ", "@@section rc\n" + HUGE, "@@storadvise-not-applicable:",
    "pagepool " + HUGE, "maxMFTCacheSize " + HUGE + "K", "net.core.rmem_max = " + HUGE, "pfc.ram " + HUGE + "g",
    "pfc.prefetch " + HUGE, "mmdiag:config:0:1:::pagepool:" + HUGE + ":", "net.ipv4.tcp_rmem = 1 " + HUGE + " 3",
]


def _mutate(text: str, where: int, extreme: str) -> str:
    """Replace one number of a real output (the ``where``-th, cyclically) by an extreme value."""
    nums = list(re.finditer(r"\d+", text))
    if not nums:
        return text + "\n" + extreme
    m = nums[where % len(nums)]
    return text[:m.start()] + extreme + text[m.end():]


line = st.sampled_from(_LINES) | st.sampled_from(EXTREMES) | st.sampled_from(_SECTIONS).map(lambda s: "@@section " + s) \
    | st.text(max_size=80)
hostile_text = st.one_of(
    st.lists(line, max_size=40).map("\n".join),
    st.builds(_mutate, st.sampled_from(_TEXTS), st.integers(0, 10_000), st.sampled_from(EXTREMES)),
    st.builds(lambda s, t: f"@@section {s}\n{t}", st.sampled_from(_SECTIONS),
              st.builds(_mutate, st.sampled_from(_TEXTS), st.integers(0, 10_000), st.sampled_from(EXTREMES))),
)


@pytest.mark.parametrize("name", sorted(all_probes()))
def test_probe_parser_raises_only_parse_errors(name):
    probe = all_probes()[name]

    @CASES
    @given(hostile_text)
    def run(text):
        try:
            probe.parse(text)
        except ProbeParseError as exc:
            assert "\n" not in str(exc)

    run()


@CASES
@given(st.one_of(st.sampled_from(EXTREMES), st.text(alphabet="0123456789.eE+-kKmMgGtTpPbit/s ", max_size=60),
                 st.integers(min_value=-(10**40), max_value=10**40), st.floats(allow_nan=True, allow_infinity=True)))
def test_units_raise_only_unit_errors(value):
    for parse in (parse_rate_bps, parse_size_bytes):
        try:
            n = parse(value)
        except UnitError:
            continue
        assert isinstance(n, int) and len(str(n)) < 60


@pytest.mark.parametrize("text", ["9" * 400 + "G", "1" + "0" * 5000, "1.5" + "0" * 400 + "G", "1" * 400])
def test_huge_numbers_are_unit_errors(text):
    with pytest.raises(UnitError, match="too long"):
        parse_rate_bps(text)
    with pytest.raises(UnitError, match="too long"):
        parse_size_bytes(text)
    with pytest.raises(UnitError, match="too large"):
        parse_size_bytes(10**5000)
    with pytest.raises(UnitError, match="too large"):
        parse_rate_bps(10**5000)


def test_deep_json_is_a_parse_error_naming_the_tool():
    with pytest.raises(ProbeParseError, match="nested 100000 deep"):
        load_host_json("[" * 100_000 + "]" * 100_000, "firewall: nft -j output")
    with pytest.raises(ProbeParseError, match="nft -j"):
        all_probes()["firewall"].parse("@@section nft\n" + '{"nftables":' + "[" * 100_000 + "]" * 100_000 + "}\n@@exit 0\n")


def test_nft_xt_match_with_a_list_name_is_not_a_crash():
    text = '{"nftables": [{"table": {"family": "ip", "name": "f"}}, {"chain": {"family": "ip", "table": "f", "name": "c"}},' \
           ' {"rule": {"family": "ip", "table": "f", "chain": "c", "expr": [{"xt": {"name": []}}]}}]}'
    all_probes()["firewall"].parse("@@section nft\n" + text + "\n@@exit 0\n")
