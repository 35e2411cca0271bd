"""efficiency ingest on small inputs (issue 37, item 12): quantiles of a small group are exact (type 7,
interpolated; docs/efficiency.md), a host named wn01 by Slurm and wn01.example.org by HTCondor is one host,
and a file no parser recognises is one line naming the accepted formats, before any report is printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ingest(*args):
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", "efficiency", "ingest", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def _ad(proc: int, host: str, cpu: float, wall: float = 6000.0) -> str:
    return json.dumps({"ClusterId": 9, "ProcId": proc, "JobStatus": 4, "ExitCode": 0, "RequestCpus": 1,
                       "LastRemoteHost": f"slot1_{proc}@{host}", "CumulativeRemoteUserCpu": cpu,
                       "CumulativeRemoteSysCpu": 0.0, "RemoteWallClockTime": wall, "CumulativeSuspensionTime": 0})


def test_two_jobs_give_exact_median_and_percentiles(tmp_path):
    f = tmp_path / "two.jsonl"
    f.write_text(_ad(0, "wn01.example.org", 1000.0) + "\n" + _ad(1, "wn01.example.org", 2000.0) + "\n")
    r = ingest(f, "--json")
    assert r.returncode == 0, r.stderr
    eff = json.loads(r.stdout)["summary"]["efficiency"]
    assert (eff["median"], eff["p10"], eff["p90"]) == (0.25, 0.1833, 0.3167), eff
    r = ingest(f)
    assert "median 25.0% (p10 18.3%, p90 31.7%" in " ".join(r.stdout.split()), r.stdout


def test_one_host_across_sources(tmp_path):
    condor = tmp_path / "h.jsonl"
    condor.write_text(_ad(0, "WN01.example.org", 3000.0) + "\n")
    slurm = tmp_path / "s.txt"
    slurm.write_text("JobID|JobName|State|ExitCode|AllocCPUS|Elapsed|TotalCPU|NodeList\n"
                     "77|analysis|COMPLETED|0:0|1|01:40:00|00:50:00|wn01\n")
    r = ingest(condor, slurm, "--json", "--by", "host")
    assert r.returncode == 0, r.stderr
    hosts = json.loads(r.stdout)["summary"]["by_host"]
    assert list(hosts) == ["wn01"] and hosts["wn01"]["count"] == 2, hosts


def test_an_unrecognised_file_is_one_line_naming_the_formats(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello world\nthis is not accounting\n")
    r = ingest(f)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"storadvise: error: {f}:1: not a job accounting format")
    assert all(w in r.stderr for w in ("HTCondor", "Slurm", "CMSSW")), r.stderr
