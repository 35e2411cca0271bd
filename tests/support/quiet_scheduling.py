"""pytest-xdist scheduling in two phases: the tests that allow it on every worker, then the `quiet` tests
alone on one worker, every other worker already gone. A module's tests go to one worker together.

A `quiet` test brings up a lab or measures throughput or CPU time. On a 2-core machine a measurement taken
beside other CPU work reads low (the ifca loop read a 0.80 path as 0.61 beside a parallel run), so these
tests never share the machine with another test: the other workers finish and exit first, then one worker
runs the quiet tests one after another, in collection order (so a lab fixture shared by neighbouring tests
comes up once).

The controller collects nothing under xdist: each worker writes the node ids it marked quiet
(tests/support/tiers.py) to a file the controller named in its ``workerinput``; the scheduler reads it once
every worker has collected.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from xdist.scheduler import LoadScheduling

QUIET_IDS_KEY = "storadvise_quiet_ids"


class QuietLastScheduling(LoadScheduling):
    """LoadScheduling for the other tests; the quiet ones go, in order, to one worker left alone."""

    def __init__(self, config: pytest.Config, quiet_ids: Path, log=None) -> None:
        super().__init__(config, log)
        self.quiet_ids_file = quiet_ids
        self.quiet: list[int] = []
        self.quiet_node = None

    @property
    def tests_finished(self) -> bool:
        return not self.quiet and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return bool(self.quiet) or super().has_pending

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            collection = next(iter(self.node2collection.values()))
            quiet = set(json.loads(self.quiet_ids_file.read_text())) if self.quiet_ids_file.exists() else set()
            self.quiet = [i for i, nodeid in enumerate(collection) if nodeid in quiet]
        if not self.quiet:
            super().schedule()
            return
        if self.collection is None:
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = collection
            quiet = set(self.quiet)
            self.pending[:] = [i for i in range(len(collection)) if i not in quiet]
            if self.maxschedchunk is None:
                self.maxschedchunk = len(collection)
        for node in self.nodes:
            self.check_schedule(node)

    def _send_tests(self, node, num: int) -> None:
        """Send ``num`` pending tests, and the rest of the last one's module: a module's tests run on one
        worker, in order, so a module-scoped fixture (a namespace host, its plan, then its apply) is set
        up once and its tests see the state the earlier ones left (pytest's own order in one process)."""
        assert self.collection is not None
        if 0 < num < len(self.pending):
            module = self.collection[self.pending[num - 1]].split("::", 1)[0]
            while num < len(self.pending) and self.collection[self.pending[num]].split("::", 1)[0] == module:
                num += 1
        super()._send_tests(node, num)

    def check_schedule(self, node, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if self.pending or not self.quiet:
            super().check_schedule(node, duration)
            return
        # nothing but quiet tests left: one worker keeps them, the others run their last test and exit
        if self.quiet_node is None or self.quiet_node not in self.node2pending:
            self.quiet_node = node
        if node is not self.quiet_node:
            node.shutdown()
        self._start_quiet_phase()

    def remove_node(self, node):
        crashitem = super().remove_node(node) if node is not self.quiet_node else self._remove_quiet_node(node)
        for other in self.nodes:
            self.check_schedule(other)
        return crashitem

    def _remove_quiet_node(self, node):
        pending = self.node2pending.pop(node)
        self.quiet_node = None
        if not pending:
            return None
        # the worker died: what it had not run goes back to the quiet queue, the test it was running is the crash
        self.quiet[:0] = pending[1:]
        assert self.collection is not None
        return self.collection[pending[0]]

    def _start_quiet_phase(self) -> None:
        """Send every quiet test to the quiet worker once it is the only worker left."""
        node = self.quiet_node
        if node is None or not self.quiet or list(self.node2pending) != [node]:
            return
        indices, self.quiet = self.quiet, []
        self.node2pending[node].extend(indices)
        node.send_runtest_some(indices)
        node.shutdown()


class QuietSchedulingPlugin:
    """Registered in the controller of an xdist run (``-n``) whose ``--dist`` is the default, load."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="storadvise-tiers-"))
        self.quiet_ids = self.dir / "quiet-ids.json"

    def pytest_configure_node(self, node) -> None:
        node.workerinput[QUIET_IDS_KEY] = str(self.quiet_ids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        return QuietLastScheduling(config, self.quiet_ids, log)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def write_quiet_ids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: hand the controller the node ids of the quiet tests (every worker collects the same)."""
    path = getattr(config, "workerinput", {}).get(QUIET_IDS_KEY)
    if path:
        ids = [item.nodeid for item in items if item.get_closest_marker("quiet")]
        tmp = Path(f"{path}.{config.workerinput['workerid']}")
        tmp.write_text(json.dumps(ids))
        tmp.replace(path)
