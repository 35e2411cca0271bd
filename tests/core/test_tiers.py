"""The test tiers (tests/support/tiers.py, quiet_scheduling.py), on small suites of their own run by real pytest:
markers follow the fixtures a test takes, the guard fails a test that starts work its markers do not name, and
under xdist the quiet tests run after every other test has ended, one at a time, on one worker."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.tiers import started_kinds

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest

pytest_plugins = ["tests.support.tiers", "tests.support.ansible", "tests.support.lab"]


@pytest.fixture
def ns_hosts():  # the real one starts sshd in a namespace: the name is what marks a test
    return None
"""
INI = """
[pytest]
markers =
    lab: x
    netns: x
    ansible: x
    root: x
    slow: x
    quiet: x
"""


def _suite(pytester: pytest.Pytester, tests: str, **more: str) -> None:
    """A suite in test_suite.py (``tests``), and in each module ``more`` names."""
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_suite=textwrap.dedent(tests), **{k: textwrap.dedent(v) for k, v in more.items()})


@pytest.fixture(autouse=True)
def _support_importable(monkeypatch):
    """The suites below run in a directory of their own and import tests/support from this checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def test_started_kinds_names_namespaces_labs_and_playbooks():
    assert started_kinds(["ip", "netns", "add", "sa-x"]) == {"netns"}
    assert started_kinds(["sh", "-c", "/usr/sbin/ip netns add y && ip -n y link set lo up"]) == {"netns"}
    assert started_kinds("ip netns exec sa-x ip link set lo up") == set()
    assert started_kinds(["unshare", "-rn", "iptables-save"]) == set()  # ends with its command
    assert started_kinds([sys.executable, "-c", "from advisor.lab.cli import app; app()", "up", "--name", "t"]) == {"lab"}
    assert started_kinds([Path("/v/bin/storadvise"), "lab", "up", "--scenario", "ifca"]) == {"lab"}
    assert started_kinds(["storadvise", "lab", "down", "--name", "t"]) == set()
    assert started_kinds(["nsenter", "--net=/run/netns/x", "--", "/v/bin/ansible-playbook", "site.yml"]) == {"ansible"}
    assert started_kinds(["ansible-galaxy", "collection", "build"]) == set()


def test_markers_follow_the_fixtures_a_test_takes(pytester):
    _suite(pytester, """
        import pytest

        @pytest.fixture
        def world(ns_hosts):
            return ns_hosts

        def test_unit():
            pass

        def test_through_a_fixture(world):
            pass

        def test_playbook(ansible_playbook):
            pass

        @pytest.mark.root
        def test_by_hand():
            pass

        @pytest.mark.quiet
        def test_measures():
            pass
    """)
    pytester.makeconftest(CONFTEST + textwrap.dedent("""
        import json

        def pytest_collection_finish(session):
            with open("markers.json", "w") as f:
                json.dump({i.name: sorted({m.name for m in i.iter_markers()} - {"usefixtures"}) for i in session.items}, f)
    """))
    _run(pytester, "-n0", "--collect-only", "-q")
    assert json.loads((pytester.path / "markers.json").read_text()) == {
        "test_unit": [],
        "test_through_a_fixture": ["netns", "root", "slow"],
        "test_playbook": ["ansible", "slow"],
        "test_by_hand": ["root", "slow"],
        "test_measures": ["quiet"],
    }
    fast = _run(pytester, "-n0", "--collect-only", "-q", "-m", "not slow")
    assert sorted(line.split("::")[1] for line in fast.outlines if "::" in line) == ["test_measures", "test_unit"]


def test_a_test_that_runs_a_playbook_unmarked_fails_naming_the_fixture(pytester):
    _suite(pytester, """
        import subprocess, sys
        from pathlib import Path

        PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")

        def test_unmarked():
            subprocess.run([PLAYBOOK, "--version"], capture_output=True)

        def test_marked(ansible_playbook):
            subprocess.run([PLAYBOOK, "--version"], capture_output=True)
    """)
    r = _run(pytester, "-n0")
    r.assert_outcomes(passed=2, errors=1)
    r.stdout.fnmatch_lines(["*ERROR at teardown of test_unmarked*",
                            "*started `*ansible-playbook --version` (ansible) but is not marked ansible: "
                            "take the fixture ansible_playbook*"])


def test_quiet_tests_run_after_every_other_test_alone_on_one_worker(pytester, tmp_path):
    log = tmp_path / "log.jsonl"
    _suite(pytester, f"""
        import json, os, time
        import pytest

        def _record(name):
            start = time.monotonic()
            time.sleep(0.3)
            with open({str(log)!r}, "a") as f:
                f.write(json.dumps({{"name": name, "worker": os.environ["PYTEST_XDIST_WORKER"],
                                    "start": start, "end": time.monotonic()}}) + "\\n")

        @pytest.mark.parametrize("i", range(8))
        def test_unit(i):
            _record(f"unit{{i}}")

        @pytest.mark.quiet
        @pytest.mark.parametrize("i", range(3))
        def test_quiet(i):
            _record(f"quiet{{i}}")

        @pytest.mark.parametrize("i", range(8, 12))
        def test_unit_after(i):
            _record(f"unit{{i}}")
    """, test_more=f"""
        import json, os, time
        import pytest

        @pytest.mark.parametrize("i", range(12, 20))
        def test_unit(i):
            start = time.monotonic()
            time.sleep(0.3)
            with open({str(log)!r}, "a") as f:
                f.write(json.dumps({{"name": f"unit{{i}}", "worker": os.environ["PYTEST_XDIST_WORKER"],
                                    "start": start, "end": time.monotonic()}}) + "\\n")
    """)
    r = _run(pytester, "-n", "2")
    r.assert_outcomes(passed=23)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    units = [x for x in runs if x["name"].startswith("unit")]
    quiet = sorted((x for x in runs if x["name"].startswith("quiet")), key=lambda x: x["start"])
    assert len({x["worker"] for x in units}) == 2  # the others share the cores
    assert min(q["start"] for q in quiet) > max(u["end"] for u in units)
    assert len({q["worker"] for q in quiet}) == 1
    assert [q["name"] for q in quiet] == ["quiet0", "quiet1", "quiet2"]  # collection order, one at a time
    assert all(a["end"] <= b["start"] for a, b in zip(quiet, quiet[1:]))


def test_a_module_s_tests_run_on_one_worker_in_order(pytester, tmp_path):
    """A module-scoped fixture's state (a namespace host, its plan, then its apply) is set up once and seen
    by the module's later tests: the load scheduler cut test_network_apply between two workers, and the
    second found no plan."""
    log = tmp_path / "log.jsonl"
    module = f"""
        import json, os
        import pytest

        @pytest.fixture(scope="module")
        def world():
            return {{"done": []}}

        @pytest.mark.parametrize("i", range(7))
        def test_step(i, world):
            assert world["done"] == list(range(i))  # every earlier step ran here, in order
            world["done"].append(i)
            with open({str(log)!r}, "a") as f:
                f.write(json.dumps({{"module": __name__, "worker": os.environ["PYTEST_XDIST_WORKER"]}}) + "\\n")
    """
    _suite(pytester, module, **{f"test_m{k}": module for k in range(5)})
    r = _run(pytester, "-n", "2")
    r.assert_outcomes(passed=42)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    workers: dict[str, set[str]] = {}
    for x in runs:
        workers.setdefault(x["module"], set()).add(x["worker"])
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2  # and the modules still share the cores
