"""XRootD server probes: ``xrootd.server`` (configuration directives of each instance) and
``xrootd.process`` (each running xrootd / cmsd: open files against its limit).

``xrootd.server``
-----------------
The files of the host variable ``xrootd_config``, else each ``/etc/xrootd/xrootd-NAME.cfg`` whose instance
is in use (unit ``xrootd@NAME`` enabled or active, or a running xrootd/cmsd naming the file: the packages
ship one per instance kind), ``continue`` followed, parsed by the XrdOucStream reader of probes.xcache. Per instance (``servers``, by instance
name: ``xrootd-NAME.cfg`` -> NAME, else the file's name): its role (``all.role``), exports
(``all.export``), port (``xrd.port``), whether it is a cache (pfc / pss.cachelib), the thread scheduler
(``xrd.sched mint maxt avlt idle``; the Xrd/Cmsd Configuration Reference, "xrd.sched", gives the
defaults ``mint 8 maxt 2048 avlt 512 idle 780`` used for what the file leaves out), ``xrd.buffers``,
``xrootd.async``, ``oss.fdlimit``, ``ofs.osslib``, ``pss.origin``, with the line that set each.

``xrootd.process``
------------------
For each process named ``xrootd`` or ``cmsd`` (with ``xrootd_config`` or ``xcache_config`` set: only those whose
arguments name one of those files): its argument list (``-c`` configuration, ``-n`` instance
name), ``/proc/PID/limits`` (the "Max open files" soft and hard limits) and the number of entries in
``/proc/PID/fd``. No such process -> not applicable.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from probes.probe import NOT_APPLICABLE_MARKER, SECTION_MARKER, Probe, ProbeContext, ProbeParseError
from probes.xcache import XCacheConfigProbe, parse_xcache_config

#: Xrd/Cmsd Configuration Reference, "xrd.sched", Defaults
SCHED_DEFAULTS = {"mint": 8, "maxt": 2048, "avlt": 512, "idle": 780}
SCHED_DEFAULT_LINE = "xrd.sched unset (xrootd default: mint 8 maxt 2048 avlt 512 idle 780)"


class XrootdServer(BaseModel):
    name: str
    config_file: str
    is_cache: bool = False
    role: str | None = None
    exports: list[str] = Field(default_factory=list)
    has_export: bool = False
    port: int | None = None
    #: the scheduler in force: the file's values, xrootd's defaults for the rest
    sched: dict[str, int] = Field(default_factory=dict)
    sched_maxt: int | None = None
    buffers: str | None = None
    async_mode: str | None = None
    fdlimit: str | None = None
    ofs_osslib: str | None = None
    pss_origin: str | None = None
    #: directive -> the line that set it (or says it is unset)
    lines: dict[str, str] = Field(default_factory=dict)
    #: directive -> the file that sets it
    files: dict[str, str] = Field(default_factory=dict)



class XrootdServerFacts(BaseModel):
    servers: dict[str, XrootdServer] = Field(default_factory=dict)


def instance_name(config_file: str) -> str:
    base = PurePosixPath(config_file).name
    m = re.match(r"^xrootd-(.+)\.cfg$", base)
    return m.group(1) if m else (base[:-4] if base.endswith(".cfg") else base)


def parse_sched(args: str, line: str) -> dict[str, int]:
    words = args.split()
    out = dict(SCHED_DEFAULTS)
    i = 0
    while i < len(words):
        key = words[i]
        if key in ("mint", "maxt", "avlt", "idle", "core", "stksz") and i + 1 < len(words):
            if key in SCHED_DEFAULTS:
                if not re.fullmatch(r"\d{1,9}", words[i + 1]):
                    raise ProbeParseError(f"xrd.sched: {key} takes a number: {line[:120]!r}")
                out[key] = int(words[i + 1])
            i += 2
        else:
            raise ProbeParseError(f"xrd.sched: unknown option {key!r}: {line[:120]!r}")
    return out


def parse_server_config(text: str) -> XrootdServerFacts:
    cfg = parse_xcache_config(text)
    facts = XrootdServerFacts()
    for main, inst in cfg.instances.items():
        srv = XrootdServer(name=instance_name(main), config_file=main, is_cache=inst.is_cache)

        def last(name: str):
            uncond = [d for d in inst.directives if d.name == name and not d.condition]
            any_ = [d for d in inst.directives if d.name == name]
            return (uncond or any_ or [None])[-1]

        for name, attr in (("all.role", "role"), ("xrd.buffers", "buffers"), ("xrootd.async", "async_mode"),
                           ("oss.fdlimit", "fdlimit"), ("ofs.osslib", "ofs_osslib"), ("pss.origin", "pss_origin")):
            d = last(name)
            if d is not None:
                setattr(srv, attr, d.args)
                srv.lines[name], srv.files[name] = d.line, d.file
        srv.exports = [d.args.split()[0] for d in inst.directives if d.name == "all.export" and d.args.split()]
        srv.has_export = bool(srv.exports)
        srv.lines["all.export"] = "; ".join(d.line for d in inst.directives if d.name == "all.export") or (
            "all.export unset (xrootd then exports /tmp only)")
        d = last("xrd.port")
        if d is not None and re.fullmatch(r"\d{1,5}", d.args.split()[0] if d.args.split() else ""):
            srv.port = int(d.args.split()[0])
        d = last("xrd.sched")
        srv.sched = parse_sched(d.args, d.line) if d is not None else dict(SCHED_DEFAULTS)
        srv.sched_maxt = srv.sched["maxt"]
        srv.lines["xrd.sched"] = d.line if d is not None else SCHED_DEFAULT_LINE
        if d is not None:
            srv.files["xrd.sched"] = d.file
        if srv.name in facts.servers:
            srv.name = main
        facts.servers[srv.name] = srv
    return facts


class XrootdServerProbe(XCacheConfigProbe):
    name = "xrootd.server"
    title = "XRootD server configuration (xrd.sched, all.export, all.role, xrd.buffers, xrootd.async ...)"
    roles = frozenset({"storage", "cache", "door"})
    facts_model = XrootdServerFacts
    config_var = "xrootd_config"

    def pick_script(self, ctx: ProbeContext) -> str:
        """Without ``xrootd_config``: the /etc/xrootd/xrootd-NAME.cfg whose instance is in use (its unit
        xrootd@NAME enabled or active, or a running xrootd/cmsd naming the file). The packages ship a
        configuration per instance kind (standalone, clustered, filecache ...): an unused one is no server."""
        import shlex

        from probes.xcache import XROOTD_ETC, _configured_paths

        configured = _configured_paths(ctx, self.config_var)
        if configured:
            return "CFGS=" + shlex.quote(" ".join(configured)) + "\n"
        return (
            'CFGS=""\n'
            f'for f in {XROOTD_ETC}/xrootd-*.cfg; do\n'
            '  [ -f "$f" ] || continue; n=${f##*/xrootd-}; n=${n%.cfg}; use=0\n'
            '  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then\n'
            '    case "$(systemctl is-enabled "xrootd@$n" 2>/dev/null)" in enabled*) use=1;; esac\n'
            '    systemctl is-active -q "xrootd@$n" 2>/dev/null && use=1\n'
            "  fi\n"
            '  for d in /proc/[0-9]*; do case "$(cat "$d/comm" 2>/dev/null)" in xrootd|cmsd) '
            'tr "\\0" " " < "$d/cmdline" 2>/dev/null | grep -qF -- "$f" && use=1;; esac; done\n'
            '  [ $use = 1 ] && CFGS="$CFGS $f"\n'
            "done\n"
        )

    def parse(self, text: str) -> XrootdServerFacts:  # type: ignore[override]
        return parse_server_config(text)


# ---------------------------------------------------------------------------------------------
# xrootd.process
# ---------------------------------------------------------------------------------------------


class XrootdProcess(BaseModel):
    pid: int
    program: str
    instance: str
    config_file: str | None = None
    nofile_soft: int | None = None
    nofile_hard: int | None = None
    open_fds: int | None = None
    #: open descriptors / soft limit
    fd_use: float | None = None
    lines: dict[str, str] = Field(default_factory=dict)


class XrootdProcessFacts(BaseModel):
    #: "PROGRAM:INSTANCE" -> the process
    processes: dict[str, XrootdProcess] = Field(default_factory=dict)


_LIMIT_ROW = re.compile(r"^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)(?:\s+(\S+))?\s*$")


def parse_limits(text: str, what: str = "/proc/PID/limits") -> dict[str, tuple[int | None, int | None, str]]:
    """``/proc/PID/limits`` (proc(5)): limit name -> (soft, hard, line); None = unlimited."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not re.match(r"^Limit\s+Soft Limit\s+Hard Limit\s+Units\s*$", lines[0]):
        raise ProbeParseError(f"{what}: no 'Limit  Soft Limit  Hard Limit  Units' header")
    out: dict[str, tuple[int | None, int | None, str]] = {}
    for n, line in enumerate(lines[1:], 2):
        m = _LIMIT_ROW.match(line)
        if not m:
            raise ProbeParseError(f"{what}, line {n}: not a limit row: {line[:80]!r}")

        def num(v: str) -> int | None:
            if v == "unlimited":
                return None
            if not re.fullmatch(r"\d{1,19}", v):
                raise ProbeParseError(f"{what}, line {n}: not a number or 'unlimited': {v[:40]!r}")
            return int(v)

        out[m.group(1)] = (num(m.group(2)), num(m.group(3)), line.strip())
    return out


def parse_processes(text: str) -> XrootdProcessFacts:
    facts = XrootdProcessFacts()
    blocks: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    key = ""
    for line in text.splitlines():
        if line.startswith(SECTION_MARKER):
            parts = line[len(SECTION_MARKER):].split()
            if len(parts) != 2 or parts[0] not in ("cmdline", "limits", "fds") or not parts[1].isdigit():
                raise ProbeParseError(f"xrootd.process: unexpected section {line[:80]!r}")
            cur = blocks.setdefault(parts[1], {})
            key = parts[0]
            cur[key] = ""
        elif cur is None:
            if line.strip():
                raise ProbeParseError(f"xrootd.process: output before any section: {line[:80]!r}")
        else:
            cur[key] += line + "\n"
    if not blocks:
        raise ProbeParseError("xrootd.process: no process in the output")
    for pid, b in sorted(blocks.items(), key=lambda kv: int(kv[0])):
        args = (b.get("cmdline") or "").split()
        if not args:
            continue  # the process ended between listing and reading
        program = PurePosixPath(args[0]).name
        if program not in ("xrootd", "cmsd"):
            raise ProbeParseError(f"xrootd.process: pid {pid} is {program!r}, not xrootd or cmsd")
        opt = {args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("-")}
        cfg = opt.get("-c")
        name = opt.get("-n") or (instance_name(cfg) if cfg else "anon")
        p = XrootdProcess(pid=int(pid), program=program, instance=name, config_file=cfg)
        if b.get("limits", "").strip():
            limits = parse_limits(b["limits"], f"/proc/{pid}/limits")
            if "Max open files" in limits:
                p.nofile_soft, p.nofile_hard, line = limits["Max open files"]
                p.lines["nofile"] = f"/proc/{pid}/limits: {line}"
        fds = b.get("fds", "").strip()
        if fds:
            if not fds.isdigit():
                raise ProbeParseError(f"xrootd.process: pid {pid}: descriptor count is not a number: {fds[:40]!r}")
            p.open_fds = int(fds)
            if p.nofile_soft:
                p.fd_use = round(p.open_fds / p.nofile_soft, 4)
        facts.processes[f"{program}:{name}"] = p
    return facts


class XrootdProcessProbe(Probe):
    name = "xrootd.process"
    title = "XRootD / cmsd processes: open files against their limit"
    roles = frozenset({"storage", "cache", "door"})
    facts_model = XrootdProcessFacts

    def script(self, ctx: ProbeContext) -> str:
        import shlex

        from probes.xcache import _configured_paths

        # with xrootd_config / xcache_config set, only the processes whose arguments name one of those files (a host
        # sharing its process table, as a lab host or a container does, sees other hosts' daemons)
        cfgs = _configured_paths(ctx, "xrootd_config") + _configured_paths(ctx, "xcache_config")
        keep = ("M=0; A=$(tr '\\0' ' ' < \"$d/cmdline\" 2>/dev/null); for f in " + " ".join(shlex.quote(c) for c in cfgs)
                + '; do case "$A" in *"$f"*) M=1;; esac; done; [ $M = 1 ] || continue; ') if cfgs else ""
        return (
            'P=""\n'
            'for d in /proc/[0-9]*; do c=$(cat "$d/comm" 2>/dev/null) || continue; '
            'case "$c" in xrootd|cmsd) ;; *) continue;; esac; ' + keep + 'P="$P ${d#/proc/}"; done\n'
            f'[ -n "$P" ] || {{ echo "{NOT_APPLICABLE_MARKER} no xrootd or cmsd process"; exit 0; }}\n'
            'for p in $P; do\n'
            f'  echo "{SECTION_MARKER}cmdline $p"; tr "\\0" " " < /proc/$p/cmdline 2>/dev/null; echo\n'
            f'  echo "{SECTION_MARKER}limits $p"; cat /proc/$p/limits 2>/dev/null\n'
            f'  echo "{SECTION_MARKER}fds $p"; ls /proc/$p/fd 2>/dev/null | wc -l\n'
            "done\n"
        )

    def parse(self, text: str) -> XrootdProcessFacts:
        return parse_processes(text)
