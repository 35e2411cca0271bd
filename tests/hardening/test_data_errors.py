"""Bad data gives a clear one-line error, never "internal error" (issue 25 cases 7 and 8): byte
counts out of range are bad lines (never wrapped), non-finite numbers are refused, a damaged
history database is named, and NaN never reaches an SVG coordinate."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from advisor.report.svg import line_plot
from tests.support.cli import storadvise


def _one_line_error(r: subprocess.CompletedProcess, needle: str) -> None:
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr, r.stderr


def test_csv_byte_counts_out_of_range_are_bad_lines(tmp_path):
    (tmp_path / "t.csv").write_text("timestamp,file,size\n"
                                    f"1700000000,/a,{2**64 + 100}\n"
                                    f"1700000001,/b,1{'0' * 400}\n"
                                    f"1700000002,/c,{2**63}\n"
                                    f"1700000003,/d,{2**63 - 1}\n"
                                    "1700000004,/e,100\n")
    r = storadvise("cache", "simulate", "t.csv", "-c", "1G", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (inp,) = json.loads(r.stdout)["inputs"]
    assert inp["requests"] == 2 and inp["bad_lines"] == 3, inp
    assert [b["line"] for b in inp["first_bad_lines"]] == [2, 3, 4]
    assert all("size: not a byte count" in b["reason"] for b in inp["first_bad_lines"])


@pytest.mark.parametrize("record", [
    {"file_lfn": "/a", "file_size": 1e999, "read_bytes": 5, "start_time": 1700000000},
    {"file_lfn": "/a", "file_size": "nan", "read_bytes": 5, "start_time": 1700000000},
    {"file_lfn": "/a", "file_size": 10, "read_bytes": 1e999, "start_time": 1e999},
    {"file_lfn": {"x": [1, {"y": 2}]}, "file_size": {"a": 1}, "read_bytes": [1], "start_time": {"t": 1}},
])
def test_cache_simulate_non_finite_or_nested_is_one_line(tmp_path, record):
    text = json.dumps(record).replace("Infinity", "1e999")
    (tmp_path / "r.json").write_text(text + "\n")
    r = storadvise("cache", "simulate", "r.json", "-c", "1G", "--format", "wlcg-json", cwd=tmp_path)
    _one_line_error(r, "no read requests found (1 bad lines)")


def test_cache_simulate_csv_on_a_binary_file(tmp_path):
    # a lone CR in the first line is what Python's csv module raises on
    (tmp_path / "b.dat").write_bytes(b"\x7fELF\x02\x01\r\x00,\x03\n" + bytes(range(256)) * 8)
    r = storadvise("cache", "simulate", "b.dat", "-c", "1G", "--format", "csv", cwd=tmp_path)
    _one_line_error(r, "b.dat:1: not a CSV header row")
    # a first line that parses: its bytes are named, never sent raw to the terminal
    (tmp_path / "c.dat").write_bytes(bytes(range(256)) * 8)
    r = storadvise("cache", "simulate", "c.dat", "-c", "1G", "--format", "csv", cwd=tmp_path)
    _one_line_error(r, "c.dat:1: no column 'timestamp', 'file', 'size' in the header (\\x00\\x01")


def _sim(tmp: Path) -> dict:
    (tmp / "ok.csv").write_text("timestamp,file,size\n1700000000,/a,100\n1700000001,/b,200\n1700000003,/a,100\n")
    r = storadvise("cache", "simulate", "ok.csv", "-c", "1K,1M", "--curve", "--output", "sim.json", "--json", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp / "sim.json").read_text())


def test_report_with_a_malformed_cache_simulation(tmp_path):
    sim = _sim(tmp_path)
    cap = tmp_path / "cap"
    (cap / "hosts" / "n1").mkdir(parents=True)
    (cap / "manifest.json").write_text(json.dumps(
        {"capture_format": 2, "site": {"name": "t", "hosts": [{"name": "n1", "address": "n1"}]}}))
    assert storadvise("scan", "--from", "cap", "--no-history", "-o", "s.json", cwd=tmp_path).returncode == 3
    cases = {
        "nan": (("configurations", 0, "hit_efficiency"), float("nan"), "finite numbers"),
        "str": (("curve", "capacities_bytes"), ["a", None], "capacities_bytes[0]: 'a' is not a finite number"),
        "int": (("curve", "hit_efficiency"), 5, "hit_efficiency: needs a list of 2 numbers"),
        "inf": (("curve", "transfer_efficiency"), [float("inf"), 0.1], "transfer_efficiency[0]: inf"),
    }
    for name, (where, value, needle) in cases.items():
        bad = json.loads(json.dumps(sim))
        at = bad
        for k in where[:-1]:
            at = at[k]
        at[where[-1]] = value
        (tmp_path / f"{name}.json").write_text(json.dumps(bad))
        r = storadvise("report", "s.json", "--html", f"{name}.html", "--cache-simulation", f"{name}.json", cwd=tmp_path)
        _one_line_error(r, needle)
        assert not (tmp_path / f"{name}.html").exists()


def test_nan_never_reaches_an_svg_coordinate():
    svg = line_plot({"LRU": [(1024.0, 0.5), (2048.0, float("nan")), (float("inf"), 0.2), (4096.0, 0.7)]},
                    title="t", x_label="x")
    assert "nan" not in svg.lower() and "inf" not in svg.lower()
    assert svg.count("<circle") == 2


def test_history_prune_on_a_damaged_database(tmp_path):
    db = tmp_path / "h.db"
    cap = tmp_path / "cap"
    (cap / "hosts" / "n1").mkdir(parents=True)
    (cap / "manifest.json").write_text(json.dumps(
        {"capture_format": 2, "site": {"name": "t", "hosts": [{"name": "n1", "address": "n1"}]}}))
    for _ in range(2):
        assert storadvise("scan", "--from", "cap", "--history", str(db), cwd=tmp_path).returncode == 3
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = c.execute("PRAGMA page_count").fetchone()[0]
    assert pages > 3
    with open(db, "r+b") as f:  # overwrite the pages after the schema: the b-trees are garbage
        f.seek(4096 * 2)
        f.write(b"\xde\xad" * 3000)
    r = storadvise("history", "prune", "--history", str(db), "--keep", "1", cwd=tmp_path)
    _one_line_error(r, "the scan history is unusable: database disk image is malformed")
