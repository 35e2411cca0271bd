"""The summary-only -jsonl hot path agrees with the record path, case by case."""

import json

from advisor.efficiency.analysis import Summary
from advisor.efficiency.ingest import IssueLog, ingest_into, iter_records

ADS = [
    {"ClusterId": 1, "ProcId": 0, "JobStatus": 4, "ExitCode": 0, "LastRemoteHost": "slot1@wn01.x", "RequestCpus": 2,
     "CumulativeRemoteUserCpu": 100.0, "CumulativeRemoteSysCpu": 5, "RemoteWallClockTime": 90.0},
    {"ClusterId": 1, "ProcId": 1, "JobStatus": 4, "ExitCode": 3, "LastRemoteHost": "wn01.x",
     "CumulativeRemoteUserCpu": 10.0, "RemoteWallClockTime": 90.0, "CumulativeSuspensionTime": 10},
    {"ClusterId": 1, "ProcId": 2, "JobStatus": 2, "LastRemoteHost": "wn02.x", "CumulativeRemoteUserCpu": 10.0,
     "RemoteWallClockTime": 0.0, "JobCurrentStartDate": 100, "ServerTime": 150},
    {"ClusterId": 1, "ProcId": 3, "JobStatus": 3, "RemoteUserCpu": 10, "RemoteWallClockTime": 40, "NumJobStarts": 1},
    {"ClusterId": 1, "ProcId": 4, "JobStatus": 4, "RequestCpus": "/Expr(x)/", "LastRemoteHost": "<1.2.3.4:9618>",
     "CumulativeRemoteUserCpu": 10.0, "RemoteWallClockTime": 20},
    {"ClusterId": 1, "ProcId": 5, "JobStatus": 4, "ExitBySignal": True, "ExitSignal": 9, "LastRemoteHost": "wn03.x",
     "CumulativeRemoteUserCpu": 0, "RemoteWallClockTime": 7200, "CpusProvisioned": 8},
    {"ClusterId": 1, "ProcId": 6, "JobStatus": 4, "LastRemoteHost": "wn03.x", "CumulativeRemoteUserCpu": 1.0,
     "RemoteWallClockTime": 0},
]


def test_hot_path_equals_record_path(tmp_path):
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(json.dumps(a) for a in ADS * 3) + "\n{broken\n\n# comment\n")
    fast, slow = Summary(), Summary()
    i1, i2 = IssueLog(), IssueLog()
    ingest_into([str(p)], "auto", fast, i1)
    slow.extend(iter_records([str(p)], "auto", i2))
    assert fast.to_dict() == slow.to_dict()
    assert fast.wasted_by_host == slow.wasted_by_host
    assert [(i.line, i.message) for i in i1.items] == [(i.line, i.message) for i in i2.items] != []
