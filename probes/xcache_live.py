"""Probes of a running XCache: ``xcache.cinfo`` (what the cache holds, from its ``.cinfo`` files)
and ``xcache.process`` (is the instance's xrootd process running).

``xcache.cinfo``
----------------
``xrdpfc_print -j`` (xrootd-client; XrdPfc's own reader of its per-file ``.cinfo`` state) on at
most ``xcache_cinfo_max`` (default 500) ``.cinfo`` files under each ``oss.localroot`` /
``oss.space`` path of the instance (the files ``xcache_config`` names, else /etc/xrootd). Each
output line is one JSON object: ``file``, ``file_size``, ``buffer_size`` (the block size the file
was cached with), ``n_blocks``, ``state_complete``, ``state_percentage``, ``n_acc_total`` and
``accesses`` (per access: ``B_hit``, ``B_miss``, ``B_bypass``, ``attach``, ``detach`` ...).
Facts: file counts, bytes held, block sizes in use, byte hits / misses / bypass over the kept
access records and their hit fraction. No xrdpfc_print or no .cinfo -> not applicable.

``xcache.process``
------------------
The xrootd processes (``ps``) whose arguments name the instance's configuration file
(``xcache_config``; else any ``xrootd`` process with ``libXrdPfc`` in its configuration cannot be
told apart: every ``xrootd`` process is listed). Where systemd runs the instance,
``services.xrootd`` reports the ``xrootd@`` unit; this probe reads the process itself, as in a
container or the lab.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, Field

from probes.json_text import load_host_json
from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int
from probes.xcache import XROOTD_ETC, _configured_paths

_NA = NOT_APPLICABLE_MARKER


def _space_paths_script(ctx: ProbeContext) -> str:
    cfgs = _configured_paths(ctx, "xcache_config")
    files = ("FILES=" + shlex.quote(" ".join(cfgs)) + "\n" if cfgs else
             f"FILES=$(ls {XROOTD_ETC}/xrootd-*.cfg {XROOTD_ETC}/config.d/* 2>/dev/null)\n")
    return (files + '[ -n "$FILES" ] || { echo "' + _NA + ' no xrootd configuration (/etc/xrootd)"; exit 0; }\n'
            "PATHS=$(awk '$1==\"oss.localroot\"{print $2} $1==\"oss.space\"{print $3}' $FILES 2>/dev/null"
            " | grep '^/' | sort -u)\n")


# ---------------------------------------------------------------------------------------------
# xcache.cinfo
# ---------------------------------------------------------------------------------------------

class CinfoFile(BaseModel):
    file: str
    file_size: int
    block_size: int
    complete: bool
    percent: float
    accesses_total: int
    bytes_hit: int = 0
    bytes_miss: int = 0
    bytes_bypass: int = 0


class XCacheCinfoFacts(BaseModel):
    files: list[CinfoFile] = Field(default_factory=list)
    n_files: int = 0
    n_complete: int = 0
    #: file_size x state_percentage summed: the bytes the cache holds
    bytes_cached: int = 0
    block_sizes: list[int] = Field(default_factory=list)
    bytes_hit: int = 0
    bytes_miss: int = 0
    bytes_bypass: int = 0
    #: bytes_hit / (hit + miss + bypass) over the kept access records; None without accesses
    hit_fraction: float | None = None
    #: xrdpfc_print's complaints (unreadable or corrupt .cinfo), verbatim
    errors: list[str] = Field(default_factory=list)


def _int(rec: dict, key: str, where: str) -> int:
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ProbeParseError(f"xrdpfc_print: {where}: {key} is not a non-negative number ({v!r})")
    return bounded_int(str(int(v)), f"xrdpfc_print: {key}")


def parse_xrdpfc_print_json(text: str) -> XCacheCinfoFacts:
    """``xrdpfc_print -j`` output, one JSON object per .cinfo file; other non-blank lines are
    xrdpfc_print's errors (kept). Input with no JSON object and no such error is refused."""
    facts = XCacheCinfoFacts()
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("{"):
            if s.startswith("@@"):
                raise ProbeParseError(f"xrdpfc_print: line {n}: not xrdpfc_print output: {s[:80]!r}")
            facts.errors.append(s[:300])
            continue
        rec = load_host_json(s, f"xrdpfc_print: line {n}")
        if not isinstance(rec, dict) or not isinstance(rec.get("file"), str) or "state_complete" not in rec:
            raise ProbeParseError(f"xrdpfc_print: line {n}: not a .cinfo record (no file / state_complete)")
        where = f"line {n}"
        acc = rec.get("accesses") or []
        if not isinstance(acc, list) or not all(isinstance(a, dict) for a in acc):
            raise ProbeParseError(f"xrdpfc_print: line {n}: accesses is not a list of records")
        pct = rec.get("state_percentage")
        if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 <= pct <= 100:
            raise ProbeParseError(f"xrdpfc_print: line {n}: state_percentage out of 0..100 ({pct!r})")
        f = CinfoFile(
            file=rec["file"].removesuffix(".cinfo"), file_size=_int(rec, "file_size", where),
            block_size=_int(rec, "buffer_size", where), complete=rec["state_complete"] == "complete",
            percent=float(pct), accesses_total=_int(rec, "n_acc_total", where),
            bytes_hit=sum(_int(a, "B_hit", where) for a in acc), bytes_miss=sum(_int(a, "B_miss", where) for a in acc),
            bytes_bypass=sum(_int(a, "B_bypass", where) for a in acc),
        )
        facts.files.append(f)
    if not facts.files and not facts.errors:
        raise ProbeParseError("xrdpfc_print: no output")
    facts.n_files = len(facts.files)
    facts.n_complete = sum(f.complete for f in facts.files)
    facts.bytes_cached = sum(round(f.file_size * f.percent / 100) for f in facts.files)
    facts.block_sizes = sorted({f.block_size for f in facts.files})
    facts.bytes_hit = sum(f.bytes_hit for f in facts.files)
    facts.bytes_miss = sum(f.bytes_miss for f in facts.files)
    facts.bytes_bypass = sum(f.bytes_bypass for f in facts.files)
    total = facts.bytes_hit + facts.bytes_miss + facts.bytes_bypass
    facts.hit_fraction = round(facts.bytes_hit / total, 4) if total else None
    return facts


class XCacheCinfoProbe(Probe):
    name = "xcache.cinfo"
    title = "XCache contents and access records (xrdpfc_print -j of the .cinfo files)"
    roles = frozenset({"cache"})
    facts_model = XCacheCinfoFacts

    def script(self, ctx: ProbeContext) -> str:
        try:
            cap = max(1, min(int(ctx.vars.get("xcache_cinfo_max", 500)), 100000))
        except (TypeError, ValueError):
            cap = 500
        return (
            "command -v xrdpfc_print >/dev/null 2>&1 || { echo \"" + _NA + " xrdpfc_print not found (xrootd-client)\"; exit 0; }\n"
            + _space_paths_script(ctx)
            + f'[ -n "$PATHS" ] || {{ echo "{_NA} no oss.localroot/oss.space path"; exit 0; }}\n'
            + f"L=$(for p in $PATHS; do find \"$p\" -xdev -type f -name '*.cinfo' 2>/dev/null; done | head -n {cap})\n"
            + f'[ -n "$L" ] || {{ echo "{_NA} no .cinfo file in the cache space"; exit 0; }}\n'
            + 'echo "$L" | tr "\\n" "\\0" | xargs -0 xrdpfc_print -j 2>&1\n'
        )

    def parse(self, text: str) -> XCacheCinfoFacts:
        return parse_xrdpfc_print_json(text)


# ---------------------------------------------------------------------------------------------
# xcache.process
# ---------------------------------------------------------------------------------------------

class XrootdProcessInfo(BaseModel):
    pid: int
    user: str
    elapsed_s: int
    args: str


class XCacheProcessFacts(BaseModel):
    #: the configuration file looked for in the arguments (None: every xrootd process)
    config: str | None = None
    processes: list[XrootdProcessInfo] = Field(default_factory=list)
    running: bool = False


def parse_xrootd_ps(text: str) -> XCacheProcessFacts:
    """``@@config <path>`` then ``ps -o pid=,user=,etimes=,args=`` lines of xrootd processes."""
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines or not lines[0].startswith("@@config"):
        raise ProbeParseError("xcache.process: output does not start with @@config")
    cfg = lines[0][len("@@config"):].strip() or None
    facts = XCacheProcessFacts(config=cfg)
    for n, line in enumerate(lines[1:], 2):
        parts = line.split(None, 3)
        if len(parts) < 4 or not parts[0].isdigit() or not parts[2].isdigit():
            raise ProbeParseError(f"xcache.process: line {n}: not 'pid user etimes args': {line[:80]!r}")
        args = parts[3]
        argv = args.split()
        if not argv or not argv[0].rsplit("/", 1)[-1].startswith("xrootd"):
            continue
        if cfg and cfg not in argv:
            continue
        facts.processes.append(XrootdProcessInfo(pid=bounded_int(parts[0], "pid"), user=parts[1][:64],
                                                 elapsed_s=bounded_int(parts[2], "etimes"), args=args[:500]))
    facts.running = bool(facts.processes)
    return facts


class XCacheProcessProbe(Probe):
    name = "xcache.process"
    title = "XCache instance process (xrootd running with the instance's configuration)"
    roles = frozenset({"cache"})
    facts_model = XCacheProcessFacts

    def script(self, ctx: ProbeContext) -> str:
        cfgs = _configured_paths(ctx, "xcache_config")
        return (
            f"echo '@@config '{shlex.quote(cfgs[0]) if cfgs else ''}\n"
            "ps -ww -eo pid=,user=,etimes=,args= 2>/dev/null | awk '$4 ~ /(^|\\/)xrootd$/'\n"
        )

    def parse(self, text: str) -> XCacheProcessFacts:
        return parse_xrootd_ps(text)
