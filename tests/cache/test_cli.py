"""``storadvise cache simulate`` from outside: JSON keys, plots beside the JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli.root import app

runner = CliRunner()


def test_simulate_json_plots_and_types(trace_csv, tmp_path):
    path = trace_csv(5_000, 800)
    out = tmp_path / "res" / "sim.json"
    out.parent.mkdir()  # storadvise creates no directory for a file
    r = runner.invoke(app, ["cache", "simulate", str(path), "--capacity", "1G,100M", "--policy", "lru,arc,xcache",
                            "--areas", "per-server", "--curve", "--output", str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert [(c["policy"], c["capacity_bytes"]) for c in res["configurations"]] == [
        ("lru", 100 * 2**20), ("lru", 2**30), ("arc", 100 * 2**20), ("arc", 2**30), ("xcache", 100 * 2**20),
        ("xcache", 2**30)]
    c = res["configurations"][0]
    assert {"hit_efficiency", "transfer_efficiency", "by_type", "n_areas"} <= set(c) and c["n_areas"] == 3
    assert set(c["by_type"]) == {"AOD", "MiniAOD", "NanoAOD", "RAW"}
    assert res["configurations"][-1]["xcache"]["high_watermark"] == 0.95
    assert "knee" in res["curve"]
    assert json.loads(out.read_text())["requests"] == 5_000
    png, svg = out.with_suffix(".png"), out.with_suffix(".svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert b"<svg" in svg.read_bytes()[:2000]


def test_custom_types_and_human_output(trace_csv):
    path = trace_csv(2_000, 300)
    r = runner.invoke(app, ["cache", "simulate", str(path), "-c", "500M", "--type", "mini=MINIAOD", "--type", "raw=/RAW/"])
    assert r.exit_code == 0, r.output
    assert "mini" in r.stdout and "raw" in r.stdout and "other" in r.stdout and "2,000 reads" in r.stdout


def test_bad_input_is_one_line_error_exit_1(tmp_path):
    cases = [
        (["/nonexistent.csv", "-c", "1T"], "no such file"),
        ([str(tmp_path), "-c", "1T"], "is a directory"),
        (["x.csv", "-c", "lots"], "--capacity 'lots'"),
        (["x.csv", "-c", "1T", "--policy", "fifo"], "--policy fifo"),
        (["x.csv", "-c", "1T", "--sample", "2"], "--sample"),
        (["x.csv", "-c", "1T", "--type", "a=(AOD"], "file type 'a': bad pattern"),
        (["x.csv", "-c", "1T", "--type", "a=(?P<x>AOD)"], "has named groups"),
    ]
    for args, msg in cases:
        r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "cache", "simulate", *args], capture_output=True,
                           text=True, cwd=Path(__file__).resolve().parents[2])
        assert r.returncode == 1, (args, r.stderr)
        assert msg in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_all_lines_bad_is_an_error(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("timestamp,file,size\nx,/a,1\ny,/b,2\n")
    r = runner.invoke(app, ["cache", "simulate", str(p), "-c", "1G"])
    assert r.exit_code == 1 and "no read requests found (2 bad lines)" in r.output
