"""``--probes`` / ``--skip-probes``: which probes a scan or a collect runs.

A probe left out is not run on any host. Where it would have applied it is recorded as
``not_applicable`` with :data:`SKIPPED` in its message, so every rule reading it is
``not_applicable`` with that reason, and ``plan`` and ``verify`` can say that those rules were not
checked (:func:`skipped_in`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from advisor.util.errors import UsageError

#: the words that mark a probe (and the findings of its rules) as left out by the selection
SKIPPED = "not run: left out by --probes/--skip-probes"


def _patterns(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def _matching(flag: str, patterns: list[str], names: list[str]) -> set[str]:
    chosen: set[str] = set()
    for p in patterns:
        hit = {n for n in names if fnmatch.fnmatchcase(n, p)}
        if not hit:
            raise UsageError(f"{flag} {p!r} matches no probe (see 'storadvise probe list': {', '.join(sorted(names))})")
        chosen |= hit
    return chosen


def selected_probes(only: str | None, skip: str | None, names: Iterable[str]) -> frozenset[str] | None:
    """The probe names to run (None: all of them). ``only`` and ``skip``: comma-separated names or
    globs (``network.*``); a pattern that matches no probe is refused."""
    if not only and not skip:
        return None
    names = list(names)
    chosen = _matching("--probes", _patterns(only), names) if only else set(names)
    chosen -= _matching("--skip-probes", _patterns(skip), names) if skip else set()
    if not chosen:
        raise UsageError("--probes/--skip-probes leave no probe to run")
    return frozenset(chosen)


def skipped_message(probe: str) -> str:
    return f"probe {probe} {SKIPPED}"


def is_skipped(message: str | None) -> bool:
    """Does a probe result's or a finding's message say that its probe was left out?"""
    return bool(message) and SKIPPED in message


def skipped_in(findings: Iterable) -> list[str]:
    """The rule ids among ``findings`` that were not checked because their probe was left out."""
    return sorted({f.rule_id for f in findings if f.status.value == "not_applicable" and is_skipped(f.message)})


def skipped_probes_of(host) -> list[str]:
    """The probes left out on one host of a report (a ``HostReport``: its ``probe_messages``)."""
    return sorted(p for p, m in (host.probe_messages or {}).items() if is_skipped(m))


def skipped_probes(report) -> list[str]:
    """The probes a scan report's hosts had left out."""
    return sorted({p for h in report.hosts for p in skipped_probes_of(h)})
