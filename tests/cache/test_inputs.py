"""Readers of transfer logs: real samples, bad lines with their line numbers, writes skipped."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from advisor.cache.csv_log import CsvColumns, read_csv_log
from advisor.cache.dcache_billing import read_dcache_billing
from advisor.cache.gstream import read_gstream
from advisor.cache.inputs import detect_format
from advisor.cache.trace import CacheInputError, InputIssues, Trace
from advisor.cache.wlcg_json import read_wlcg_json

from .conftest import SAMPLES


def _all(gen):
    bs = list(gen)
    if not bs:
        return None
    return {k: np.concatenate([getattr(b, k) for b in bs]) for k in ("time", "key", "size", "nbytes", "server", "ftype")}


def test_csv_rows_bad_lines_ops_iso_and_quotes(tmp_path):
    p = tmp_path / "log.csv"
    p.write_text(
        "ts,path,bytes_total,host,op,read\n"
        "1700000000,/store/mc/X/AODSIM/a.root,100,fs1,read,50\n"            # 2
        "1700000001.5,\"/store/user/j,doe/b.root\",200,fs2,READ,200\n"     # 3 quoted, comma inside
        "2023-11-14T22:13:22Z,/store/mc/X/AODSIM/a.root,100,fs1,r,100\n"   # 4 ISO time
        "oops,/store/c.root,5,fs1,read,5\n"                                # 5 bad time
        "1700000003,/store/d.root,12x,fs1,read,5\n"                        # 6 bad size
        "1700000004,/store/e.root,7,fs1,write,7\n"                         # 7 write: skipped
        "1700000005,/store/e.root\n"                                       # 8 too few fields
        "\n"                                                               # 9 empty: ignored
        "1700000006, ,7,fs1,read,7\n"                                      # 10 empty name
        "1700000007,/store/mc/X/AODSIM/a.root,100,fs1,,100\r\n"            # 11 empty op = read, CRLF
    )
    tr, iss = Trace(), InputIssues(str(p))
    cols = CsvColumns(time="ts", file="path", size="bytes_total", server="host", nbytes="read", op="op")
    got = _all(read_csv_log(str(p), tr, cols, iss))
    assert iss.records == 4 and len(got["key"]) == 4
    assert [b["line"] for b in iss.first_bad] == [5, 6, 8, 10]
    assert [b["reason"].split(":")[0] for b in iss.first_bad] == ["timestamp", "size", "too few fields", "file"]
    assert iss.skipped == {"not a read (op column)": 1}
    assert got["time"].tolist() == [1700000000.0, 1700000001.5, 1700000002.0, 1700000007.0]
    assert got["key"].tolist() == [0, 1, 0, 0]
    assert got["nbytes"].tolist() == [50, 200, 100, 100]
    assert tr.server_names == ["fs1", "fs2"]
    names = tr.types.names
    assert [names[t] for t in got["ftype"]] == ["AOD", "user", "AOD", "AOD"]


def test_csv_blocks_keep_line_numbers_and_keys(tmp_path):
    p = tmp_path / "big.csv"
    rows = ["timestamp,file,size"] + [f"{i},/f{i % 7},{10 + i % 7}" for i in range(1, 5001)]
    rows[3000] = "3000,/f0"  # line 3001: bad
    p.write_text("\n".join(rows) + "\n")
    tr, iss = Trace(), InputIssues(str(p))
    got = _all(read_csv_log(str(p), tr, CsvColumns(), iss, block_bytes=4096))  # many blocks
    assert iss.records == 4999 and [b["line"] for b in iss.first_bad] == [3001]
    assert tr.n_keys == 7 and got["size"].tolist()[:3] == [11, 12, 13]


def test_csv_missing_column_is_one_line_error(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("when,name,size\n1,/a,1\n")
    with pytest.raises(CacheInputError, match=r"x.csv:1: no column 'timestamp', 'file'"):
        list(read_csv_log(str(p), Trace(), CsvColumns(), InputIssues(str(p))))


def test_dcache_billing_real_sample(tmp_path):
    # dCache/dcache docs/TheBook install.md example billing file (## headers, upload, read, removes)
    src = SAMPLES / "dcache-billing-dCache-TheBook-install.md.txt"
    p = tmp_path / "billing-2019.08.05"
    shutil.copy(src, p)
    assert detect_format(str(p)) == "dcache-billing"
    tr, iss = Trace(), InputIssues(str(p))
    got = _all(read_dcache_billing(str(p), tr, iss))
    assert iss.records == 1 and iss.bad_lines == 0
    assert iss.skipped["write (upload)"] == 1
    assert iss.skipped["door remove record"] == 1 and iss.skipped["pool remove record"] == 1
    assert got["size"].tolist() == [964544] and got["nbytes"].tolist() == [964544]
    import calendar
    assert got["time"].tolist() == [calendar.timegm((2019, 8, 5, 7, 47, 55, 0, 0, 0))]
    assert tr.server_names == ["pool1"]
    with pytest.raises(CacheInputError, match="no year in the file name"):
        list(read_dcache_billing(str(src), Trace(), InputIssues(str(src))))


def test_dcache_billing_unknown_path_joined_from_door_line(tmp_path):
    p = tmp_path / "billing-2024.03.01"
    p.write_text(
        '03.01 10:00:00 [pool:dc-pool-07@dc07Domain:transfer] [0000ABCD,2000] [Unknown] cms:store@osm 1500 12 false '
        '{Xrootd-5.0,10.0.0.5:40000} [door:Xrootd-dc01@xrootd-dc01Domain:AAYx:1709287200000] {0:""}\n'
        '03.01 10:00:00 [door:Xrootd-dc01@xrootd-dc01Domain:request] ["cms001":501:500:10.0.0.5] [0000ABCD,2000] '
        '[/store/data/Run2024A/RAW/v1/x.root] cms:store@osm 40 0 {0:""}\n'
        '03.01 10:00:05 [pool:dc-pool-07@dc07Domain:transfer] [0000ABCD,2000] [Unknown] cms:store@osm 2000 12 false '
        '{Xrootd-5.0,10.0.0.5:40001} [pool:dc-pool-02@dc02Domain:AAYy:1709287205000] {0:""}\n'
        '03.01 10:00:06 [pool:dc-pool-07@dc07Domain:transfer] [0000ABCD,2000] [Unknown] cms:store@osm 0 12 false '
        '{Xrootd-5.0,10.0.0.5:40002} [door:Xrootd-dc01@x:AAYz:1] {10006:"Transfer failed"}\n'
        '03.01 10:00:07 [pool:dc-pool-07@dc07Domain:transfer] garbled\n'
        'not a billing line at all\n'
    )
    tr, iss = Trace(), InputIssues(str(p))
    got = _all(read_dcache_billing(str(p), tr, iss))
    assert iss.records == 1 and got["nbytes"].tolist() == [1500]
    assert tr.types.names[got["ftype"][0]] == "RAW"  # path came from the door line
    assert iss.skipped == {"pool-to-pool copy": 1, "failed transfer (rc != 0)": 1}
    assert [b["line"] for b in iss.first_bad] == [5, 6]


def test_wlcg_json_real_sample():
    # opensciencegrid/xrootd-monitoring-collector wlcg_converter.py docstring record; its first
    # line is our provenance comment, not JSON: a bad line 1
    p = str(SAMPLES / "wlcg-generic-file-monitoring-json-osg-collector.json.txt")
    tr, iss = Trace(), InputIssues(p)
    got = _all(read_wlcg_json(p, tr, iss))
    assert iss.records == 1 and [b["line"] for b in iss.first_bad] == [1]
    assert got["size"].tolist() == [2198266271] and got["nbytes"].tolist() == [358477665]
    assert got["time"].tolist() == [1359423686.0]
    assert tr.server_names == ["cmsstor359"] and tr.types.names[got["ftype"][0]] == "RECO"


def test_wlcg_jsonl_collector_names_ms_and_writes(tmp_path):
    p = tmp_path / "c.jsonl"
    recs = [
        {"filename": "/store/a.root", "filesize": 10, "read": 4, "readv": 6, "write": 0, "start_time": 1700000000123,
         "server_hostname": "s1"},
        {"filename": "/store/b.root", "filesize": 10, "read": 0, "readv": 0, "write": 10, "start_time": 1700000000200},
        {"filesize": 10, "read": 1},
    ]
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n{\"filename\": broken\n" + json.dumps(recs[0]) + "\n")
    assert detect_format(str(p)) == "wlcg-json"
    tr, iss = Trace(), InputIssues(str(p))
    got = _all(read_wlcg_json(str(p), tr, iss))
    assert iss.records == 2 and got["nbytes"].tolist() == [10, 10]
    assert got["time"].tolist() == [1700000000.123, 1700000000.123]
    assert iss.skipped == {"write": 1}
    assert [b["line"] for b in iss.first_bad] == [3, 4]


def test_gstream_file_close(tmp_path):
    # records written with the field order of XrdPfc.cc's format string (no captured record exists)
    fmt = ('{{"event":"file_close","lfn":"{lfn}","size":{size},"blk_size":131072,"n_blks":8,"n_blks_done":8,'
           '"access_cnt":{n},"attach_t":{t},"detach_t":{d},"remotes":["origin.example:1094"],'
           '"b_hit":{h},"b_miss":{m},"b_bypass":0,"b_todisk":{m},"b_prefetch":0,"n_cks_errs":0}}')
    p = tmp_path / "g.json"
    p.write_text(fmt.format(lfn="/store/x/AOD/a.root", size=1048576, n=1, t=100, d=110, h=0, m=1048576) + "\n"
                 + '{"event":"file_open","lfn":"/a"}\n'
                 + fmt.format(lfn="/store/x/AOD/a.root", size=1048576, n=2, t=200, d=210, h=524288, m=0) + "\n")
    assert detect_format(str(p)) == "xcache-gstream"
    tr, iss = Trace(), InputIssues(str(p))
    got = _all(read_gstream(str(p), tr, iss))
    assert got["nbytes"].tolist() == [1048576, 524288] and got["key"].tolist() == [0, 0]
    assert iss.skipped == {"event 'file_open'": 1}
    assert tr.server_names == ["origin.example:1094"]
