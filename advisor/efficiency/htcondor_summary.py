"""The summary-only hot path for ``condor_history -jsonl`` (no record per job)."""

from __future__ import annotations

from array import array
from typing import IO, Any

from advisor.efficiency import htcondor_jsonl
from advisor.efficiency.htcondor import JOB_STATUS
from advisor.efficiency.records import FAILED_STATUSES, ParseIssue, RowError

#: JobStatus -> the status of the ads summarize_jsonl folds inline (not 2: a running job's wall
#: time needs ServerTime and JobCurrentStartDate; 4 is decided by the exit)
_INLINE_STATUS: dict[Any, str] = {k: v for k, v in {**JOB_STATUS, None: "unknown"}.items() if k != 2}
#: efficiency histogram bins (steps of 0.005) 0 .. 2**_DENSE_BITS - 1 (efficiency up to 1.2775)
#: a local cell counts in a list; others in a dict
_DENSE_BITS = 8


def summarize_jsonl(f: IO[bytes], source: str, summary: Any, add_issue: Any) -> None:
    """The hot path for ``-jsonl`` when no per-job record is wanted (the summary only).

    Gives the same aggregates as :func:`iter_jsonl` feeding ``Summary.add``, without a record
    per job. Blocks of lines are decoded at once (:func:`_decode_block`) into ``_SumAd``;
    the common case (ClusterId/ProcId, cumulative CPU with RemoteWallClockTime, a named
    LastRemoteHost, positive wall time and core-wall time, not running) is folded inline, with
    the rules of :func:`build_record` and ``Summary.add_values``, into local cells per host and
    length bin (CPU, core-wall and efficiency sums and an efficiency histogram, whose total is
    the job count) that are added to the summary's at the end; every other line goes through
    :func:`_record_from_line` and ``Summary.add``, or is reported with its line number.
    Kept in step by tests/efficiency/test_hot_path.py.
    """
    hj = htcondor_jsonl  # read at call time: tests switch the accelerator off on the module
    if hj._SUM is None:
        for item in hj.iter_jsonl(f, source):
            if isinstance(item, ParseIssue):
                add_issue(item)
            else:
                summary.add(item)
        return
    from bisect import bisect_right
    from collections import defaultdict
    from itertools import compress

    from advisor.efficiency.analysis import NO_BIN, WALL_BIN0, WALL_EDGES
    from advisor.efficiency.histogram import CELL_EXACT_LIMIT

    inline_status = _INLINE_STATUS
    failed_statuses = FAILED_STATUSES
    wasted_by_host: defaultdict[str, float] = defaultdict(float)  # by the name as read: normalised at the end
    cell_limit = CELL_EXACT_LIMIT
    edges = tuple(map(float, WALL_EDGES))
    dense_bits = _DENSE_BITS
    dense = 1 << dense_bits
    #: local cells by index: length bin WALL_BIN0 + i, and NO_BIN last
    bins = [WALL_BIN0 + i for i in range(len(edges) + 1)] + [NO_BIN]
    #: host (the part of LastRemoteHost after the last @, checked once) -> its local cells:
    #: [cpu, core_wall, eff_sum, [jobs by eff bin < dense], {eff bin: jobs} for the others,
    #:  [efficiencies] while at most CELL_EXACT_LIMIT (then None: advisor.efficiency.histogram)]
    by_host: dict[str, list[list[Any]]] = {}
    other_status: defaultdict[str, int] = defaultdict(int)  # all but completed
    wasted = 0.0
    zero_cpu = 0
    line0 = 1
    for data, end in hj._line_blocks(f):
        ads, lines = hj._decode_block(data, end, hj._SUM)
        if lines is not None:  # decoded line by line: None where msgspec did not take the line
            ads = [(hj._SumAd(),) if t is None else t for t in ads]
        odd = []  # not folded inline; each ad is a distinct object, found again by id below
        # every number is a float (_Num): float constants keep CPython on its fast float paths
        for (a,) in ads:
            try:
                lrh = a.LastRemoteHost
                if lrh[0] == "/" or a.ClusterId is None or a.ProcId is None:  # "/Expr(": no string
                    odd.append(a)
                    continue
                if a.ChirpCMSSWEvents is not None or a.ChirpCMSSWReadBytes is not None:
                    odd.append(a)  # a CMS job: its events and read volume (by_storage) need its record
                    continue
                wall = a.RemoteWallClockTime - (a.CumulativeSuspensionTime or 0.0)
                cpu = a.CumulativeRemoteUserCpu + (a.CumulativeRemoteSysCpu or 0.0)
                cw = wall * (a.CpusProvisioned or a.RequestCpus or 1.0)
                if not (wall > 0.0 and cw > 0.0):
                    odd.append(a)
                    continue
                eff = cpu / cw
                k = int(eff * 200.0 + 0.5)
            except (TypeError, IndexError, OverflowError, ValueError):  # None; ""; efficiency inf, nan
                odd.append(a)
                continue
            host = lrh.rpartition("@")[2]
            try:
                hc = by_host[host]
            except KeyError:
                if not host or host[0] == "<" or host.strip() != host:
                    odd.append(a)
                    continue
                hc = by_host[host] = [[0.0, 0.0, 0.0, [0] * dense, {}, []] for _ in bins]
            st = a.JobStatus
            if st == 4.0 and not (a.ExitBySignal or a.ExitCode):
                c = hc[bisect_right(edges, wall)]
            else:
                if st == 4.0:
                    name = "failed"
                else:
                    name = inline_status.get(st)
                    if name is None:  # running, or a number that is no status
                        odd.append(a)
                        continue
                other_status[name] += 1
                if name in failed_statuses:
                    wasted += cw
                    wasted_by_host[host] += cw
                c = hc[-1]
            c[0] += cpu
            c[1] += cw
            c[2] += eff
            if k >> dense_bits:  # k < 0 or k >= dense
                c[4][k] = c[4].get(k, 0) + 1
            else:
                c[3][k] += 1
            ex = c[5]
            if ex is not None:
                if len(ex) < cell_limit:
                    ex.append(eff)
                else:
                    c[5] = None
            if cpu == 0.0:
                zero_cpu += 1
        if odd:
            if lines is None:
                lines = data[:end].split(b"\n")
            index = {id(t[0]): i for i, t in enumerate(ads)}
            for a in odd:
                i = index[id(a)]
                text = lines[i].strip()
                if not text or text[:1] == b"#":
                    continue
                try:
                    rec = hj._record_from_line(text, source, line0 + i)
                except RowError as e:
                    add_issue(ParseIssue(source, line0 + i, str(e)))
                    continue
                summary.add(rec)
        line0 += len(ads)
    # the local cells and counts into the summary
    cells = summary.cells
    jobs = completed = 0
    total_cw = 0.0
    for name, hc in by_host.items():
        host = summary._host_key(name)  # one name per host across sources, as Summary.add names it
        for b, (cpu, cw, eff_sum, counts, extra, exact) in zip(bins, hc):
            n = sum(counts) + sum(extra.values())
            if not n:
                continue
            c = cells.get((host, b))
            if c is None:
                c = cells[(host, b)] = [0, 0.0, 0.0, 0.0, {}, array("d")]
            if c[5] is not None:
                if exact is None or len(c[5]) + len(exact) > CELL_EXACT_LIMIT:
                    c[5] = None
                else:
                    c[5].extend(exact)
            c[0] += n
            c[1] += cpu
            c[2] += cw
            c[3] += eff_sum
            h = c[4]
            for k in compress(range(dense), counts):
                h[k] = h.get(k, 0) + counts[k]
            for k, v in extra.items():
                h[k] = h.get(k, 0) + v
            jobs += n
            total_cw += cw
            if b != NO_BIN:
                completed += n
    bs = summary.by_status
    if completed:
        bs["completed"] = bs.get("completed", 0) + completed
    for name, n in other_status.items():
        bs[name] = bs.get(name, 0) + n
        if name in failed_statuses:
            summary.failed_jobs += n
    summary.records += jobs
    summary.total_core_seconds += total_cw
    summary.wasted_core_seconds += wasted
    summary.zero_cpu += zero_cpu
    for name, cw in wasted_by_host.items():
        summary.wasted_by_host[summary._host_key(name)] += cw
