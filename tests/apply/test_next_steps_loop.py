"""The whole loop by its own "next" lines (issue 37, item 4): scan a real host (sshd in a network
namespace of this test's own, tcp_sack=0 from an old tuning file), then run, exactly as printed, the plan
line the scan prints, the review and apply lines the plan prints (ansible-playbook over SSH) and the verify
line, which then finds NET-TCP-SACK fixed."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import next_lines
from tests.support.ns_host import STORADVISE

pytestmark = pytest.mark.usefixtures("ansible_playbook")

WAIVERS = [{"rule": "NET-CORE-BUFFER-MAX", "justification": "read-only inside a network namespace"}]


def test_every_next_line_runs_as_printed_and_the_loop_closes(ns_hosts):
    host, cleanup = ns_hosts("nx01", {"60-old.conf": "net.ipv4.tcp_sack = 0\n"})
    try:
        host.on_host("sysctl -q -w net.ipv4.tcp_sack=0")
        work = host.dir / "work"
        work.mkdir()
        site = host.site_file(work / "site.yml", ["storage"], extra={"waivers": WAIVERS})

        def run(line: str):
            cp = host.controller(["/bin/sh", "-c", line], cwd=work, check=False, env_extra={"COLUMNS": "80"})
            assert cp.returncode in (0, 2), (line, cp.stdout[-2000:], cp.stderr[-2000:])
            return cp

        scan = run(f"{STORADVISE} scan --site site.yml --sample-seconds 0.2 --no-history --no-mesh -o before.json")
        plan_line = next(v for k, v in next_lines(scan.stdout).items() if "fix" in k)
        plan = run(plan_line)
        steps = next_lines(plan.stdout)
        review = run(steps["review what would change"])
        assert "changed=" in review.stdout and host.sysctl("net.ipv4.tcp_sack") == "0"  # --check: nothing changed
        run(steps["apply"])
        assert host.sysctl("net.ipv4.tcp_sack") == "1"
        verify = run(steps["after applying, measure the outcome"] + " --json")
        fixed = [f for f in json.loads(verify.stdout)["findings"] if f["rule_id"] == "NET-TCP-SACK"]
        assert fixed and all(f["outcome"] == "fixed" for f in fixed), fixed
    finally:
        cleanup()
