"""Parsers raise only their typed errors (or report a ParseIssue) on arbitrary input."""

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.efficiency import fjr, htcondor, htcondor_json, htcondor_jsonl, htcondor_summary, htcondor_text, slurm
from advisor.efficiency.ingest import detect_format, iter_file
from advisor.efficiency.records import EfficiencyInputError, JobRecord, ParseIssue, RowError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
junk = st.binary(max_size=400) | st.text(alphabet='{}[]",:|\n 0123456789.-_abcJobIDStaeu@<>#=\t', max_size=300).map(str.encode)


def _drain(it):
    for x in it:
        assert isinstance(x, (JobRecord, ParseIssue))


@SETTINGS
@given(junk)
def test_htcondor_readers(data):
    _drain(htcondor_jsonl.iter_jsonl(io.BytesIO(data), "x"))
    _drain(htcondor_json.iter_json_stream(io.BytesIO(data), "x"))
    _drain(htcondor_text.iter_autoformat(io.BytesIO(data), "x"))
    _drain(htcondor_text.iter_long(io.BytesIO(data), "x"))
    _drain(htcondor_text.iter_long(io.BytesIO(b"ClusterId = 1\nProcId = 2\nChirpCMSSW_SiteIO = " + data), "x"))
    htcondor_summary.summarize_jsonl(io.BytesIO(data), "x", __import__("advisor.efficiency.analysis", fromlist=["Summary"]).Summary(),
                             lambda i: None)


@SETTINGS
@given(junk)
def test_sacct(data):
    _drain(slurm.iter_sacct(io.BytesIO(b"JobID|State|AllocCPUS|Elapsed|TotalCPU|ExitCode|NodeList\n" + data), "x"))
    _drain(slurm.iter_sacct(io.BytesIO(data), "x"))


@SETTINGS
@given(junk)
def test_fjr(data):
    try:
        rep = fjr.parse_fjr(io.BytesIO(data), "x")
        fjr.record_from_fjr(rep, "x")
    except RowError:
        pass


@SETTINGS
@given(st.dictionaries(st.sampled_from(htcondor.ATTRIBUTES),
                       st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20), max_size=12))
def test_ad_values(ad):
    try:
        htcondor.record_from_ad(ad)
    except RowError:
        pass


@SETTINGS
@given(data=junk)
def test_ingest_any_file(tmp_path, data):
    p = tmp_path / "in.txt"
    p.write_bytes(data)
    try:
        _drain(iter_file(str(p)))
    except EfficiencyInputError:
        pass
