"""-jsonl: the msgspec paths (block decoding, the summary's inline fold) against the json module.

``iter_jsonl_json`` (json.loads + record_from_ad per line) is the reference: ``iter_jsonl`` must
give the same records (same values and types) and the same issues at the same lines, and
``summarize_jsonl`` the same summary as the reference records fed to ``Summary.add``, for real
samples, constructed ads and malformed lines, at any block size.
"""

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.efficiency import htcondor_jsonl as h
from advisor.efficiency.htcondor import ATTRIBUTES
from advisor.efficiency.htcondor_summary import summarize_jsonl
from advisor.efficiency.analysis import Summary
from advisor.efficiency.ingest import IssueLog, ingest_into
from advisor.efficiency.records import JobRecord, ParseIssue

pytestmark = pytest.mark.skipif(h.msgspec is None, reason="the fast paths need msgspec")

BLOCKS = (1, 7, 64, 300, 1 << 16)


def _ad(**kw):
    base = {"GlobalJobId": "schedd#1.0#1", "ClusterId": 1, "ProcId": 0, "Owner": "cms", "JobStatus": 4,
            "ExitCode": 0, "ExitBySignal": False, "LastRemoteHost": "slot1_2@glidein_3_4@wn01.example.org",
            "RequestCpus": 4, "CpusProvisioned": 4, "RemoteUserCpu": 900.5, "RemoteSysCpu": 10,
            "CumulativeRemoteUserCpu": 1900.5, "CumulativeRemoteSysCpu": 20, "RemoteWallClockTime": 1000.0,
            "CumulativeSuspensionTime": 0, "CommittedTime": 500, "CommittedSuspensionTime": 0,
            "NumJobStarts": 2, "JobRunCount": 2, "QDate": 1699990000}
    for k, v in kw.items():
        if v is _DROP:
            base.pop(k, None)
        else:
            base[k] = v
    return json.dumps(base)


_DROP = object()
BIG = "9" * 400  # an int beyond the float range

# lines the fast paths must treat exactly as the json module does
EDGE_LINES = [
    _ad(),
    _ad(ProcId=1, JobStatus=3),                                      # removed
    _ad(ProcId=2, ExitCode=1),                                       # failed by exit code
    _ad(ProcId=3, ExitBySignal=True, ExitSignal=9),                  # failed by signal
    _ad(ProcId=4, ExitBySignal="true"),                              # a string: json path
    _ad(ProcId=5, JobStatus=2, ServerTime=1700000100, JobCurrentStartDate=1700000000),  # running
    _ad(ProcId=6, JobStatus=5), _ad(ProcId=7, JobStatus=1), _ad(ProcId=8, JobStatus=6),
    _ad(ProcId=9, JobStatus=7), _ad(ProcId=10, JobStatus=9), _ad(ProcId=11, JobStatus=4.5),
    _ad(ProcId=12, JobStatus=3.0), _ad(ProcId=13, JobStatus=_DROP), _ad(ProcId=14, JobStatus=None),
    _ad(ProcId=15, RequestCpus="/Expr(RequestCpusFromWrapper)/", CpusProvisioned=_DROP),
    _ad(ProcId=16, CpusProvisioned=0), _ad(ProcId=17, CpusProvisioned=0, RequestCpus=0),
    _ad(ProcId=18, CpusProvisioned=-2), _ad(ProcId=19, CpusProvisioned=2.5),
    _ad(ProcId=20, CumulativeSuspensionTime=2000),                    # negative wall: an issue
    _ad(ProcId=95, CumulativeSuspensionTime=2000, CpusProvisioned=-1),  # ... with core-wall > 0
    _ad(ProcId=21, RemoteWallClockTime=0), _ad(ProcId=22, RemoteWallClockTime=-0.0),
    _ad(ProcId=23, CumulativeRemoteUserCpu=_DROP), _ad(ProcId=24, CumulativeRemoteUserCpu=_DROP,
                                                       CumulativeRemoteSysCpu=_DROP),
    _ad(ProcId=25, CumulativeRemoteUserCpu=0, CumulativeRemoteSysCpu=0),  # zero CPU
    _ad(ProcId=26, CumulativeRemoteUserCpu=-5000.0),                 # negative efficiency
    _ad(ProcId=27, CumulativeRemoteUserCpu=1e6),                     # efficiency > 1.2775: sparse bins
    _ad(ProcId=28, RemoteWallClockTime=1e-320),                      # efficiency beyond the float range
    _ad(ProcId=29, CumulativeRemoteUserCpu=1.7e308, CumulativeRemoteSysCpu=1.7e308),
    _ad(ProcId=30, RemoteWallClockTime=1.7e308, CpusProvisioned=1e10),  # core-wall inf
    _ad(ProcId=31, LastRemoteHost=""), _ad(ProcId=32, LastRemoteHost="<10.0.0.1:9618?sock=x>"),
    _ad(ProcId=33, LastRemoteHost="slot1@"), _ad(ProcId=34, LastRemoteHost="slot1@ wn02.x "),
    _ad(ProcId=35, LastRemoteHost="/Expr(x@wn03.x", RemoteHost="slot1@wn04.x"),
    _ad(ProcId=36, LastRemoteHost=_DROP, RemoteHost="slot1@wn05.x"), _ad(ProcId=37, LastRemoteHost=7),
    _ad(ProcId=38, LastRemoteHost="wn06.x"), _ad(ProcId=39, LastRemoteHost="a@b@wn07.x"),
    _ad(ProcId=40, ClusterId=_DROP), _ad(ProcId=41, ClusterId=_DROP, GlobalJobId=_DROP),
    _ad(ProcId=_DROP), _ad(ProcId=42, ClusterId="/Expr(1)/"), _ad(ProcId=43, ClusterId=9007199254740993),
    _ad(ProcId=44, RemoteWallClockTime=7 * 3600.0), _ad(ProcId=45, RemoteWallClockTime=600),
    _ad(ProcId=46, RemoteWallClockTime=86400), _ad(ProcId=47, RemoteWallClockTime=90000),
    _ad(ProcId=48, ChirpCMSSWReadBytes=682977179), _ad(ProcId=49, ExitCode=0.0),
    _ad(ProcId=50, Owner="Jürgen"), _ad(ProcId=51, Cmd="/bin/[x]"), _ad(ProcId=52, List=[1, [2, {"a": 3}]]),
    _ad(ProcId=53, RequestCpus=True, CpusProvisioned=_DROP),
    _ad(ProcId=54, CumulativeRemoteSysCpu=None), _ad(ProcId=55, CumulativeSuspensionTime=None),
    _ad(ProcId=56, RemoteWallClockTime="1000"), _ad(ProcId=57, ExitCode=-1),
    _ad(ProcId=58, CumulativeRemoteUserCpu=_DROP, RemoteWallClockTime=_DROP),       # committed time
    _ad(ProcId=59, CumulativeRemoteUserCpu=_DROP, CommittedTime=_DROP, NumJobStarts=1),
    _ad(ProcId=60, CumulativeRemoteUserCpu=_DROP, CommittedTime=_DROP, NumJobStarts=_DROP, JobRunCount=_DROP),
    _ad(ProcId=61).replace('"ProcId": 61', '"ProcId": 0, "ProcId": 61'),  # duplicate key: the last
    # ints beyond the ranges the summary's struct takes (its block goes line by line)
    _ad(ProcId=62, RemoteWallClockTime=2**41), _ad(ProcId=63, CpusProvisioned=5000),
    _ad(ProcId=64, ClusterId=2**64), _ad(ProcId=65, CumulativeRemoteUserCpu=2**40, CumulativeRemoteSysCpu=2**40,
                                         RemoteWallClockTime=2**40, CumulativeSuspensionTime=-2**40, CpusProvisioned=4096),
    _ad(ProcId=66, RemoteWallClockTime=2**53 + 1, CumulativeSuspensionTime=1),
]
MALFORMED = [
    "{broken", "[1, 2, 3]", "5", '"a string"', "null", "{}", "", "   ", "\t", "# a comment", "#",
    _ad(ProcId=70) + " " + _ad(ProcId=71),           # two ads on a line
    _ad(ProcId=72) + "," + _ad(ProcId=73),
    _ad(ProcId=74) + "],[" + _ad(ProcId=75),
    _ad(ProcId=76)[:-1] + "\n" + ', "X": 1}',         # an ad over two lines
    '{"ClusterId": 1, "ProcId": 77, "A": "x', 'y"}',  # a string over two lines
    '{"ClusterId": 1, "ProcId": 78, "A": [[1', '2]], "RemoteWallClockTime": 5}',
    _ad(ProcId=79) + "\r",                            # CRLF
    "\ufeff" + _ad(ProcId=80),                        # a byte-order mark
    _ad(ProcId=81).replace("1900.5", BIG), _ad(ProcId=82).replace('"ClusterId": 1', '"ClusterId": ' + BIG),
    _ad(ProcId=83).replace('"ExitCode": 0', '"ExitCode": ' + BIG),
    _ad(ProcId=84).replace("1900.5", "1e999"), _ad(ProcId=85).replace("1900.5", "NaN"),
    _ad(ProcId=86).replace("1900.5", "Infinity"), _ad(ProcId=87).replace('"cms"', '"\\ud800"'),
    _ad(ProcId=88).replace('"cms"', '"' + "[" * 3000 + "]" * 3000 + '"'),
    '{"ClusterId": 1, "ProcId": 89, "Deep": ' + "[" * 3000 + "]" * 3000 + "}",
    _ad(ProcId=90).replace("1900.5", "01"), _ad(ProcId=91) + " trailing",
    _ad(ProcId=92).replace('"cms"', '"a\tb"'),
]


def _bytes_lines():
    out = [line.encode() for line in EDGE_LINES + MALFORMED]
    # invalid UTF-8 in an attribute we do not read (msgspec skips it unchecked; json does not)
    out.append(_ad(ProcId=93).encode().replace(b'"cms"', b'"\xff\xfe"'))
    out.append(_ad(ProcId=94).encode().replace(b'"cms"', b'"\xed\xa0\x80"'))  # an encoded surrogate
    return out


def _samples(sample, fix):
    """Every real and constructed HTCondor ad in the fixtures, one JSON line each."""
    ads = []
    text = open(sample("htcondor-condor_q-json-running-job-unattributed.txt")).read()
    ads.append(json.loads("".join(l for l in text.splitlines(True) if not l.startswith("#"))))
    lines = [l for l in open(sample("cms-htcondor-es-JobMonitoring-json-excerpt.txt")) if not l.startswith("#")]
    ad = json.loads("{" + ",".join(l.split(":", 1)[1].strip().rstrip(",") for l in lines if l.strip()) + "}")
    ads.append({**ad, "ClusterId": 1, "ProcId": 0, "JobStatus": 4})
    ads.append({**ad, "ClusterId": 1, "ProcId": 1, "JobStatus": 4, "LastRemoteHost": "slot1@t2-wn1.ucsd.edu"})
    ads += json.load(open(fix("condor_history-json-CONSTRUCTED.json")))
    out = [json.dumps(a).encode() for a in ads]
    out += open(fix("condor_history-jsonl-CONSTRUCTED.jsonl"), "rb").read().split(b"\n")
    return out


def _compare(data: bytes, monkeypatch, block: int) -> None:
    monkeypatch.setattr(h, "_BLOCK", block)
    ref = list(h.iter_jsonl_json(io.BytesIO(data), "f"))
    fast = list(h.iter_jsonl(io.BytesIO(data), "f"))
    assert [type(x) for x in fast] == [type(x) for x in ref]
    for a, b in zip(fast, ref):
        assert a == b
        # the same types too (4.0, not 4): the JSON output is the same text
        assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())
    ref_summary = Summary()
    issues = []
    for x in ref:
        if isinstance(x, ParseIssue):
            issues.append(x)
        else:
            ref_summary.add(x)
    fast_summary, fast_issues = Summary(), []
    summarize_jsonl(io.BytesIO(data), "f", fast_summary, fast_issues.append)
    assert fast_summary.to_dict() == ref_summary.to_dict()
    assert fast_summary.wasted_by_host == pytest.approx(ref_summary.wasted_by_host)
    def cell(v):  # jobs, histogram and the exact values (their order is the paths' own) per cell
        return [v[0], v[4], None if v[5] is None else sorted(v[5])]

    assert {k: cell(v) for k, v in fast_summary.cells.items()} == {k: cell(v) for k, v in ref_summary.cells.items()}
    assert fast_issues == issues


@pytest.mark.parametrize("block", BLOCKS)
def test_edge_and_malformed_lines(monkeypatch, block):
    lines = _bytes_lines()
    _compare(b"\n".join(lines) + b"\n", monkeypatch, block)
    _compare(b"\n".join(lines), monkeypatch, block)  # no newline at the end
    _compare(b"\n".join(reversed(lines)), monkeypatch, block)


@pytest.mark.parametrize("block", BLOCKS)
def test_real_samples(sample, fix, monkeypatch, block):
    _compare(b"\n".join(_samples(sample, fix)) + b"\n", monkeypatch, block)


def test_samples_each_alone(sample, fix, monkeypatch):
    for line in _samples(sample, fix):
        _compare(line + b"\n", monkeypatch, 1 << 16)


def test_clean_blocks_take_the_one_call_path(monkeypatch):
    """The bench-like case is decoded a block at a time, and only then (no ']' in the block)."""
    lines = [_ad(ProcId=i).encode() for i in range(50)]
    data = b"\n".join(lines) + b"\n"
    blocks = list(h._line_blocks(io.BytesIO(data), 4096))
    assert all(h._decode_block(d, e, h._SUM)[1] is None for d, e in blocks)
    bad = data.replace(b'"cms"', b'"c]"', 1)
    d, e = next(h._line_blocks(io.BytesIO(bad), 4096))
    ads, lines_ = h._decode_block(d, e, h._SUM)
    assert lines_ is not None and all(t is not None for t in ads)
    # a line that closes our brackets cannot merge or split lines
    tricky = b"\n".join([lines[0], lines[1][:-1] + b"],[{}", lines[2]])
    ads, lines_ = h._decode_block(tricky, len(tricky), h._SUM)
    assert lines_ is not None and ads[1] is None and ads[0] is not None and ads[2] is not None
    # ... nor, together, one line that an added bracket pair would join to the next (one element
    # fewer) and one that would split in two (one more): same count, lines shifted
    pair = [lines[0], b'{"ClusterId": 1, "ProcId": 78, "A": [[1', b'2]], "RemoteWallClockTime": 5}',
            lines[3][:-1] + b"],[{}", lines[4]]
    tricky = b"\n".join(pair)
    ads, lines_ = h._decode_block(tricky, len(tricky), h._SUM)
    assert lines_ is not None and [t is None for t in ads] == [False, True, True, True, False]
    _compare(tricky, monkeypatch, 1 << 16)


class _Pipe(io.RawIOBase):
    """A non-seekable stream that returns at most ``n`` bytes a read."""

    def __init__(self, data: bytes, n: int):
        self.f, self.n = io.BytesIO(data), n

    def readable(self):
        return True

    def readinto(self, b):
        chunk = self.f.read(min(len(b), self.n))
        b[:len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("size", (1, 2, 5, 64, 1 << 16))
@pytest.mark.parametrize("data", [b"", b"\n", b"\n\n", b"a", b"a\n", b"a\nb", b"abc\n\nde\nfghijklmnop\n\nq",
                                  b"x" * 200 + b"\n" + b"y" * 3,
                                  b"\n".join(b"%d" % i * (i % 13) for i in range(300))])
def test_line_blocks_give_every_line_once(data, size):
    """As ``for line in f`` would (seekable, buffered; a pipe giving short reads)."""
    want = [line.rstrip(b"\n") for line in io.BytesIO(data)]
    for f in (io.BytesIO(data), io.BufferedReader(_Pipe(data, 3)), io.BufferedReader(io.BytesIO(data), 8)):
        lines = []
        for d, e in h._line_blocks(f, size):
            assert e <= len(d) and (e == len(d) or d[e:e + 1] == b"\n")
            lines += d[:e].split(b"\n")
        assert lines == want


def test_without_msgspec_the_json_module_decides(monkeypatch):
    data = b"\n".join(_bytes_lines())
    ref = list(h.iter_jsonl_json(io.BytesIO(data), "f"))
    monkeypatch.setattr(h, "_FAST", None)
    monkeypatch.setattr(h, "_SUM", None)
    monkeypatch.setattr(h, "_fast_decode", None)
    assert list(h.iter_jsonl(io.BytesIO(data), "f")) == ref
    s, issues = Summary(), []
    summarize_jsonl(io.BytesIO(data), "f", s, issues.append)
    assert issues == [x for x in ref if isinstance(x, ParseIssue)]
    assert s.to_dict() == Summary().extend(x for x in ref if isinstance(x, JobRecord)).to_dict()


def test_ingest_into_hot_path_over_files(tmp_path):
    """Several files into one summary (cells shared across files), issues with file and line."""
    p1, p2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    p1.write_bytes(b"\n".join(_bytes_lines()) + b"\n")
    p2.write_bytes(b"\n".join(reversed(_bytes_lines())) + b"\n")
    fast, slow = Summary(), Summary()
    i1, i2 = IssueLog(), IssueLog()
    ingest_into([str(p1), str(p2)], "auto", fast, i1)
    ingest_into([str(p1), str(p2)], "auto", slow, i2, on_record=lambda r: None)
    assert fast.to_dict() == slow.to_dict()
    assert [(i.file, i.line, i.message) for i in i1.items] == [(i.file, i.line, i.message) for i in i2.items]
    assert i1.count > 20


_value = (st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(-1e4, 1e7, allow_nan=False)
          | st.sampled_from(["", "/Expr(x)/", "4", "slot1@wn1.x", "<1.2.3.4>", "a@b@wn2.x", " wn3 ", "x]"]))
_ads = st.dictionaries(st.sampled_from(ATTRIBUTES + ("Owner",)), _value, max_size=14)
_lines = st.lists(_ads.map(lambda a: json.dumps(a).encode())
                  | st.sampled_from([b"", b"#", b"{", b"[]", b"{}", b"{} {}", b"\xff{}"]), max_size=30)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_lines, block=st.sampled_from(BLOCKS))
def test_random_ads(monkeypatch, lines, block):
    _compare(b"\n".join(lines), monkeypatch, block)
