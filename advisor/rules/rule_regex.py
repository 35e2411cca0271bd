"""Rule regexes (``operator: regex``): RE2, compiled when the rule loads, matched under a budget.

A rule pack may come from a site's own rules directory, and the text a regex is matched against
comes from a host: neither may stall a scan. Python's ``re`` backtracks (``^([a-z]+)+$`` against 31
letters and a ``!`` takes minutes); RE2 (google-re2) matches in time linear in the text, and
refuses what only a backtracking engine can do (backreferences, lookaround). Its cost is still
the pattern's program size times the text's length, so:

* a pattern RE2 cannot compile, or whose program is larger than ``MAX_PROGRAM_SIZE``, is refused
  when the rule loads (``rules lint`` names it, a scan does not start);
* one match may cost at most ``MATCH_BUDGET`` steps (program size x characters; about 0.2 s at
  the slowest, when RE2 falls back from its DFA), and the matches of one rule on one host at most
  ``HOST_BUDGET``: a value past either is that host's ``error``, never a stalled scan.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

#: the largest RE2 program a rule may compile to (``^(ftp|http)s?://`` is 30; 1,000 is a long pattern)
MAX_PROGRAM_SIZE = 1000
#: steps (program size x characters) one match may take
MATCH_BUDGET = 100_000_000
#: steps the matches of one rule may take on one host (its items together)
HOST_BUDGET = 500_000_000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the refusal is ours, on one line; RE2 would also log it to stderr
_OPTIONS.max_mem = 8 << 20


class RegexBudgetExceeded(ValueError):
    """A match the budget does not allow (the text is too long for the pattern)."""


class HostBudgetSpent(RegexBudgetExceeded):
    """The rule's matches on this host have spent their budget (other hosts' are their own)."""


class MatchBudget:
    """The steps left for one rule's matches on one host."""

    def __init__(self, steps: int = HOST_BUDGET) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        if steps > self.left:
            raise HostBudgetSpent(f"the regex matches of this rule on this host are past their budget of "
                                      f"{HOST_BUDGET:,} steps (program size x characters)")
        self.left -= steps


def _reason(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


@functools.lru_cache(maxsize=512)
def compile_rule_regex(pattern: Any) -> Any:
    """The compiled pattern; a ValueError saying why when RE2 refuses it or it is too large."""
    if not isinstance(pattern, str):
        raise ValueError(f"a regex is a string, not {type(pattern).__name__}")
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise ValueError(f"regex {pattern[:80]!r} does not compile: {_reason(exc)[:120]} (rule regexes are RE2 "
                         "syntax: no backreferences or lookaround)") from None
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise ValueError(f"regex {pattern[:80]!r} compiles to {compiled.programsize} instructions, more than "
                         f"{MAX_PROGRAM_SIZE}: write a shorter pattern")
    return compiled


def regex_search(pattern: Any, text: str, budget: MatchBudget | None = None) -> bool:
    """``pattern`` found anywhere in ``text`` (RE2 ``search``); RegexBudgetExceeded when the match
    would cost more than its budget, ValueError for a pattern that does not compile."""
    compiled = compile_rule_regex(pattern)
    steps = compiled.programsize * max(len(text), 1)
    if steps > MATCH_BUDGET:
        raise RegexBudgetExceeded(f"a value of {len(text):,} characters is past the regex budget of one match "
                                  f"({compiled.programsize} instructions x {len(text):,} characters > "
                                  f"{MATCH_BUDGET:,} steps)")
    if budget is not None:
        budget.spend(steps)
    return compiled.search(text) is not None
