"""Content-addressed raw outputs and parsed facts: what a thousand hosts printed identically is
held once and parsed once.

A Tier-1's workers are installed from one image: their sysctl, mount, firewall and GPFS outputs
are mostly byte-identical. The store keys each output by its content (the text's hash and
equality, as a dict does), so the second host's identical ``sysctl -a`` is replaced by the first
host's string, and its parse outcome (status, facts, message) is looked up rather than computed
again. Memory then grows with what differs between hosts, not with their number.

Parsers are pure (text in, facts out), which is what makes the reuse exact. Facts handed out by
the store are shared between hosts: downstream stages read them and never change them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

#: (status, facts, message) of interpreting one output
Outcome = tuple[str, dict[str, Any], "str | None"]


class OutputStore:
    """Raw texts and parse outcomes, each stored once by content. Thread-safe."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._outcomes: dict[tuple, Outcome] = {}
        self._lock = threading.Lock()
        self.parsed = 0  # outcomes computed
        self.reused = 0  # outcomes looked up

    def text(self, text: str) -> str:
        """The one stored string equal to ``text`` (``text`` itself the first time)."""
        if not text:
            return ""
        stored = self._texts.get(text)
        if stored is not None:
            return stored
        with self._lock:
            return self._texts.setdefault(text, text)

    def outcome(self, key: tuple, compute: Callable[[], Outcome]) -> Outcome:
        """The outcome stored under ``key`` (which holds every input it depends on), computed
        by ``compute`` the first time."""
        found = self._outcomes.get(key)
        if found is not None:
            self.reused += 1
            return found
        value = compute()
        with self._lock:
            self.parsed += 1
            return self._outcomes.setdefault(key, value)

    @property
    def distinct_texts(self) -> int:
        return len(self._texts)
