"""The one host selector of storadvise: ``--hosts``, waivers, settings a site marks immutable, mesh
pairs, the active test's hosts and lab scenarios all read this grammar (docs/site-file.md, "Host
patterns")."""

from __future__ import annotations

import fnmatch
from functools import lru_cache
from typing import Any, Sequence, TypeVar

HostT = TypeVar("HostT")
_GLOB = set("*?[")


class HostPattern:
    """The one host selector: ``--hosts``, waivers, settings the site marks immutable, mesh pairs,
    the active test's hosts and lab scenarios all read this grammar (the subset of Ansible's host
    patterns a site file needs; docs/site-file.md, "Host patterns")::

        pattern  = term { "," term }           blanks around a term are ignored
        term     = [ "!" ] selector            "!": leave these hosts out
        selector = "all" | glob | word
          word   a host name, a group or a role: every host so named, in that group or with that role
          glob   (with * ? [...]) every host whose name, or one of whose groups, matches it

    The hosts chosen are those any positive term selects (every host when all terms are exclusions),
    minus those any ``!`` term selects, in the site's order. ``gpfs0*,!gpfs03``, ``storage,!nsd*``,
    ``workers,door``, ``all``.
    """

    def __init__(self, text: str):
        terms = [t.strip() for t in str(text).split(",")]
        if not text or not str(text).strip() or any(not t or t == "!" for t in terms):
            raise ValueError(f"host pattern {text!r} has an empty term")
        self.text = str(text)
        self.include = [t for t in terms if not t.startswith("!")]
        self.exclude = [t[1:].strip() for t in terms if t.startswith("!")]

    @staticmethod
    def _selects(selector: str, name: str, groups: Sequence[str], roles: Sequence[str]) -> bool:
        if selector == "all":
            return True
        if _GLOB & set(selector):
            return fnmatch.fnmatchcase(name, selector) or any(fnmatch.fnmatchcase(g, selector) for g in groups)
        return selector == name or selector in groups or selector in roles

    def matches(self, host: Any) -> bool:
        """``host``: a site Host, a lab ScenarioHost, or a bare name (then only names and globs match)."""
        name, groups, roles = _host_terms(host)
        if self.include and not any(self._selects(t, name, groups, roles) for t in self.include):
            return False
        return not any(self._selects(t, name, groups, roles) for t in self.exclude)

    def select(self, hosts: Sequence[HostT]) -> list[HostT]:
        return [h for h in hosts if self.matches(h)]


def _host_terms(host: Any) -> tuple[str, Sequence[str], Sequence[str]]:
    if isinstance(host, str):
        return host, (), ()
    roles = [getattr(r, "value", r) for r in getattr(host, "roles", ())]
    return host.name, list(getattr(host, "groups", ())), roles


@lru_cache(maxsize=4096)
def host_pattern(text: str) -> HostPattern:
    """The parsed pattern (parsed once: a waiver is matched against every host of every finding)."""
    return HostPattern(text)
