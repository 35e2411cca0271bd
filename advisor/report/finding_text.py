"""A finding in words, the same in every report (console, HTML, JUnit, the plan's PLAN.md):

* its headline: for a failed or waived finding what is wrong, in its rule's words for its failure
  (``Finding.failure``, advisor.rules.specs.failure_line: "SACK is off on gpfs01"), never the rule's
  healthy title; for any other finding the title;
* its comparison as the rule states it, with units: "observed 0, expected != 0", "observed 92.5%,
  expected < 75%", "observed pfifo_fast, expected one of fq, fq_codel".
"""

from __future__ import annotations

from typing import Any

from advisor.rules.comparisons import comparison_text, value_text


def headline(f: Any, host: str | None = None) -> str:
    """What a reader skimming a list of findings should read for ``f`` (``host``: as that one of
    its hosts reads it, as a JUnit case does)."""
    from advisor.rules.specs import failure_for_host, failure_line

    if f.status.value in ("fail", "waived"):
        if f.failure:
            return f.failure if host is None else failure_for_host(f, host)
        # a report written before rules carried their failure's words, or a site rule without them
        return failure_line(None, f if host is None else f.model_copy(update={"hosts": [host]}))
    return f.title


def said(f: Any, host: str | None = None) -> str:
    """The headline, then the comparison when the headline does not already hold it."""
    compared = comparison_line(f)
    return headline(f, host) + (f": {compared}" if compared and f.failure else "")


def observed_text(f: Any) -> str:
    return value_text(f.observed, f.unit)


def expected_text(f: Any) -> str:
    """The expectation with its comparison: ``!= 0``, ``< 75%``, ``one of fq, fq_codel``."""
    return comparison_text(f.operator, f.expected, f.unit)


def comparison_line(f: Any) -> str | None:
    """``observed X, expected Y`` (None when the finding compared nothing)."""
    if f.observed is None and f.expected is None:
        return None
    return f"observed {observed_text(f)}, expected {expected_text(f)}"
