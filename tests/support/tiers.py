"""The test tiers: markers that follow from the fixtures a test takes, and a guard that keeps them true.

A test is marked by what it needs or does (the markers are registered in pyproject.toml):

- ``lab``: brings up a storadvise lab: it takes ``lab_registry``, or a fixture built on it (every lab fixture is);
- ``netns``: creates network namespaces: ``netns``, ``ns_hosts``, ``netns_site``, ``netns_pair``; a test that
  makes its namespaces inline says ``@pytest.mark.netns``;
- ``ansible``: runs ansible-playbook: ``ansible_playbook``;
- ``root``: needs root: every ``lab`` and ``netns`` test, and the few tests that say so with ``@pytest.mark.root``
  (a private mount namespace, a drop to another user);
- ``slow``: any of the four above; ``-m "not slow"`` is the fast tier;
- ``quiet``: runs alone, on cores no other test uses: every lab test, the namespace sites that measure throughput
  (``netns_site``, ``netns_pair``), and the tests marked ``quiet`` by hand because they measure throughput or CPU
  time on loopback; tests/support/quiet_scheduling.py gives them one worker after the others have finished.

The guard: while a test runs, every process it starts is seen (a ``subprocess.Popen`` audit hook). A test that
brings up a lab, creates a network namespace or runs ansible-playbook without the marker fails at teardown,
naming the fixture to take: a new test cannot slip into the fast tier by starting a namespace by hand.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

import pytest

#: what taking a fixture (directly or through another fixture) says about a test
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "lab_registry": ("lab",),
    "netns": ("netns",),
    "ns_hosts": ("netns",),
    "netns_site": ("netns", "quiet"),
    "netns_pair": ("netns", "quiet"),
    "ansible_playbook": ("ansible",),
}
#: what a marker brings with it: labs and namespaces need root, and no lab runs beside another test
IMPLIED = {"lab": ("root", "quiet"), "netns": ("root",)}
#: a test with any of these markers is slow: out of the fast tier
SLOW_BECAUSE = ("lab", "netns", "ansible", "root")
#: the markers under which a test may start each kind of work: a lab's own start makes namespaces (its
#: capability probe's scratch namespace among them)
COVERED_BY = {"netns": ("netns", "lab")}
#: the fixture that gives each kind of process the guard watches for
FIXTURE_FOR = {"lab": "lab_registry (tests/support/lab.py)",
               "netns": "netns, ns_hosts, netns_site or netns_pair (tests/support/), or mark it netns",
               "ansible": "ansible_playbook (tests/support/ansible.py)"}

#: a named namespace, which the test must remove (``unshare -n CMD``'s namespace ends with CMD: not counted)
_NETNS_ADD = re.compile(r"(^|[\s/])ip(\s+-\S+)*\s+netns\s+add\b")


def started_kinds(argv: str | bytes | os.PathLike | Sequence) -> set[str]:
    """The kinds of work (``lab``, ``netns``, ``ansible``) a command line starts."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        tokens = [os.fsdecode(argv)]
    else:
        tokens = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv]
    text = " ".join(tokens)
    kinds = set()
    if _NETNS_ADD.search(text):
        kinds.add("netns")
    words = text.split()
    if any(os.path.basename(w) == "ansible-playbook" for w in words):
        kinds.add("ansible")
    lab_cli = [i for i, w in enumerate(words) if w == "lab" or "advisor.lab.cli" in w]
    if any("up" in words[i + 1:] for i in lab_cli):
        kinds.add("lab")
    return kinds


def _mark(item: pytest.Item, name: str) -> None:
    if item.get_closest_marker(name) is None:
        item.add_marker(name)


def apply_markers(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, markers in FIXTURE_MARKERS.items():
            if fixture in names:
                for m in markers:
                    _mark(item, m)
        for marker, implied in IMPLIED.items():
            if item.get_closest_marker(marker) is not None:
                for m in implied:
                    _mark(item, m)
        if any(item.get_closest_marker(m) for m in SLOW_BECAUSE):
            _mark(item, "slow")


class StartGuard:
    """Records what each test starts; fails a test that started work its markers do not name."""

    def __init__(self) -> None:
        self.item: pytest.Item | None = None
        self.started: dict[str, str] = {}
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        if event != "subprocess.Popen" or self.item is None:
            return
        argv = args[1]
        shown = argv if isinstance(argv, str) else " ".join(map(str, argv))
        for kind in started_kinds(argv):
            self.started.setdefault(kind, shown[:160])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        self.item, self.started = item, {}
        try:
            yield
        finally:
            self.item = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        outcome = yield
        if call.when != "teardown":
            return
        unmarked = {k: cmd for k, cmd in self.started.items()
                     if not any(item.get_closest_marker(m) for m in COVERED_BY.get(k, (k,)))}
        if unmarked:
            report = outcome.get_result()
            report.outcome = "failed"
            report.longrepr = "\n".join(
                f"this test started `{cmd}` ({kind}) but is not marked {kind}: take the fixture {FIXTURE_FOR[kind]}, "
                f"so that the test leaves the fast tier (tests/support/tiers.py)" for kind, cmd in unmarked.items())


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(StartGuard(), "storadvise-start-guard")
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None) \
            and config.getoption("dist") == "load" and not hasattr(config, "workerinput"):
        from tests.support.quiet_scheduling import QuietSchedulingPlugin

        config.pluginmanager.register(QuietSchedulingPlugin(), "storadvise-quiet-scheduling")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_markers(items)
    if hasattr(config, "workerinput"):
        from tests.support.quiet_scheduling import write_quiet_ids

        write_quiet_ids(config, items)
