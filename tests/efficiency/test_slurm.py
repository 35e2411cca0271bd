import pytest

from advisor.efficiency.ingest import iter_file
from advisor.efficiency.records import JobRecord, ParseIssue, RowError
from advisor.efficiency.slurm import expand_nodelist, parse_duration


def split(items):
    return ({r.job_id: r for r in items if isinstance(r, JobRecord)},
            [i for i in items if isinstance(i, ParseIssue)])


@pytest.mark.parametrize("text,sec", [
    ("00:00", 0.0), ("05:00", 300.0), ("26:27.692", 1587.692), ("03:00:30", 10830.0),
    ("1-00:30:00", 88200.0), ("4-00:16:00", 346560.0), ("", None), ("INVALID", None),
])
def test_durations(text, sec):
    assert parse_duration(text) == (pytest.approx(sec) if sec is not None else None)


@pytest.mark.parametrize("bad", ["1:2:3:4", "abc", "1-05", "12"])
def test_bad_durations(bad):
    with pytest.raises(RowError):
        parse_duration(bad)


def test_steps_aggregate(fix):
    recs, issues = split(list(iter_file(fix("sacct-P-steps-CONSTRUCTED.txt"))))
    assert issues == []
    a = recs["1001"]  # the allocation row's TotalCPU (the steps' sum): not added again
    assert (a.cpu_seconds, a.wall_seconds, a.cores, a.host, a.status) == (38400.0, 7200.0, 8, "wn01", "completed")
    b = recs["1002"]  # allocation TotalCPU 0: the steps' CPU is summed
    assert b.cpu_seconds == pytest.approx(176400 + 0.25 + 1587.692)
    assert b.wall_seconds == 88200 and b.status == "failed" and b.exit_code == 1
    assert b.efficiency == pytest.approx((176400 + 0.25 + 1587.692) / (88200 * 4))
    assert recs["1003_7"].efficiency == pytest.approx(0.75)
    p = recs["1003_[8-9]"]
    assert p.status == "pending" and p.efficiency is None and p.host is None
    c = recs["1004"]
    assert c.status == "cancelled" and c.exit_code == -15 and c.host == "wn[04-05]"
    assert c.to_dict()["nodes"] == 2 and c.efficiency == pytest.approx(600 / (300 * 16))
    assert len(recs) == 5


def test_trailing_pipe(fix):
    recs, issues = split(list(iter_file(fix("sacct-p-trailing-CONSTRUCTED.txt"), "slurm")))
    assert issues == []
    assert recs["2001"].efficiency == pytest.approx(0.9)
    assert recs["2002"].status == "timeout" and recs["2002"].efficiency == pytest.approx(0.5)


def test_bad_rows_have_line_numbers(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("JobID|State|AllocCPUS|Elapsed|TotalCPU\n1|COMPLETED|1|10:00|05:00\n2|COMPLETED|1\n"
                 "x.y|COMPLETED|1|10:00|05:00\n3|COMPLETED|1|1:2:3:4|05:00\n")
    recs, issues = split(list(iter_file(str(p))))
    assert list(recs) == ["1"]
    assert [i.line for i in issues] == [3, 4, 5]


def test_expand_nodelist():
    assert expand_nodelist("wn[01-03,07],gpfs1") == ["wn01", "wn02", "wn03", "wn07", "gpfs1"]
