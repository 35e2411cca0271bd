"""XRootD XCache (proxy file cache) probes: ``xcache.config``, ``xcache.log``, ``xcache.usage``.

``xcache.config``
-----------------
The script prints, per *instance* (``@@section instance <main file>``), every configuration
file read (``@@section file <path>``): the main file(s) are the site variable ``xcache_config``
(host/site ``vars``), else every ``/etc/xrootd/xrootd-*.cfg`` (one per systemd instance
``xrootd@<name>``), else ``/etc/xrootd/config.d`` as one instance. ``continue <path>``
directives are followed (a directory: its files in name order, skipping dot files and
``~``/``.rpmsave``/``.rpmnew``/``.dpkg-*``/``.bak`` names; up to 3 levels), so the OSG layout
(``continue /etc/xrootd/config.d/``) is read whole.

Config syntax handled (XrdOucStream): blank lines and lines whose first non-blank character is
``#`` are comments; a trailing ``\\`` continues the line; the first word is the directive, the
rest its arguments, kept verbatim (``$(var)`` references are **not** substituted: a value that
needs one keeps ``bytes``/numbers ``None``). ``set``/``setenv`` are recorded as variables,
``continue`` as includes. ``if ... [else ...] fi`` blocks are **recorded, not evaluated**: each
directive carries the condition stack it sits under (``condition``); the named facts take the
last *unconditional* directive, else the last conditional one (then ``conditional`` is true).

Named facts of the cache instance: ``pss_origin``, ``oss_localroot``, ``oss_spaces``,
``pss_cachelib`` (``cachelib_legacy`` for the older libXrdFileCache.so), ``ofs_osslib``,
``pfc_ram``, ``pfc_blocksize``, ``pfc_prefetch`` (legacy ``pfc.nramprefetch``), ``pfc_diskusage``
(low/high as fraction or absolute bytes, ``files`` triple, ``purgeinterval`` (``sleep`` alias),
``purgecoldfiles``), ``pfc_writequeue``, ``pfc_spaces``. The cache instance is the first whose
files set ``pss.cachelib`` or any ``pfc.`` directive.

``xcache.log``
--------------
The last "Config effective <cfg> pfc configuration:" block of the xrootd log (XrdPfc prints it
at start-up with the values in force: blocksize in bytes (``k`` in older releases), ram as
``%.fg``, diskusage watermarks in **bytes**, ``# Total available disk``). Log path: ``vars``
``xcache_log``, else the most recent ``/var/log/xrootd/*/xrootd.log`` or
``/var/log/xrootd/xrootd.log`` holding such a block; none -> not applicable.

``xcache.usage``
----------------
``df -P -B1`` (``-k`` fallback) on each ``oss.localroot`` / ``oss.space`` path of the files
``xcache_config`` names (else of /etc/xrootd) (``vars`` ``xcache_paths`` overrides; ``$(var)``
paths can't be resolved by the script and are skipped).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import BaseModel, Field

from advisor.util.units import parse_size_bytes
from probes.legal_values import check_path
from probes.probe import NOT_APPLICABLE_MARKER, SECTION_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int

XROOTD_ETC = "/etc/xrootd"
_NA = NOT_APPLICABLE_MARKER


# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------


def _iter_sections(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """Ordered ``[(section name, [(lineno, line)])]``; repeated names are kept (unlike split_sections)."""
    out: list[tuple[str, list[tuple[int, str]]]] = []
    cur: tuple[str, list[tuple[int, str]]] | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith(SECTION_MARKER):
            cur = (line[len(SECTION_MARKER):].strip(), [])
            out.append(cur)
        elif cur is None:
            cur = ("", [(lineno, line)])
            out.append(cur)
        else:
            cur[1].append((lineno, line))
    return out


def _size(raw: str) -> int | None:
    if "$" in raw:
        return None
    try:
        return parse_size_bytes(raw)
    except ValueError:
        return None


def _int(raw: str | None) -> int | None:
    if raw is None or not re.fullmatch(r"-?\d+", raw.strip()):
        return None
    return bounded_int(raw, "xcache: number")


def _watermark(raw: str) -> tuple[float | None, int | None]:
    """A pfc.diskusage watermark: ``(fraction, None)`` for ``0.90``, ``(None, bytes)`` for ``100g``."""
    if "$" in raw:
        return None, None
    if re.fullmatch(r"\d*\.\d+|0|1", raw):
        v = float(raw)
        if 0 <= v <= 1:
            return v, None
    return None, _size(raw)


def _time_s(raw: str | None) -> int | None:
    """XrdOuca2x::a2tm style: ``300``, ``5m``, ``1h``, ``2d``, ``30s``."""
    if raw is None:
        return None
    m = re.fullmatch(r"(\d+)([smhd]?)", raw.strip())
    if not m:
        return None
    return bounded_int(m.group(1), "xcache: time") * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


# ---------------------------------------------------------------------------------------------
# xcache.config
# ---------------------------------------------------------------------------------------------


class Directive(BaseModel):
    name: str
    args: str
    file: str
    lineno: int
    line: str
    #: enclosing if/else conditions (not evaluated), outermost first; empty = unconditional
    condition: list[str] = Field(default_factory=list)


class SizeSetting(BaseModel):
    raw: str
    bytes: int | None = None
    line: str
    conditional: bool = False


class PrefetchSetting(BaseModel):
    raw: str
    blocks: int | None = None
    #: written as the legacy pfc.nramprefetch
    legacy: bool = False
    line: str
    conditional: bool = False


class DiskUsage(BaseModel):
    raw: str
    low_raw: str | None = None
    high_raw: str | None = None
    low_fraction: float | None = None
    high_fraction: float | None = None
    low_bytes: int | None = None
    high_bytes: int | None = None
    #: files <baseline> <nominal> <max>, as written
    files: list[str] | None = None
    purgeinterval_s: int | None = None
    purgecoldfiles: list[str] | None = None
    unknown: list[str] = Field(default_factory=list)
    line: str
    conditional: bool = False


class WriteQueue(BaseModel):
    raw: str
    blocks: int | None = None
    threads: int | None = None
    line: str
    conditional: bool = False


class TextSetting(BaseModel):
    raw: str
    line: str
    conditional: bool = False


class OssSpace(BaseModel):
    name: str
    path: str
    raw: str


class CacheInstance(BaseModel):
    config_file: str
    files: list[str] = Field(default_factory=list)
    directives: list[Directive] = Field(default_factory=list)
    variables: dict[str, str] = Field(default_factory=dict)
    continues: list[str] = Field(default_factory=list)
    #: if/else/fi lines seen (recorded, not evaluated)
    conditionals: list[str] = Field(default_factory=list)
    is_cache: bool = False
    pss_origin: TextSetting | None = None
    oss_localroot: TextSetting | None = None
    oss_spaces: list[OssSpace] = Field(default_factory=list)
    pss_cachelib: TextSetting | None = None
    cachelib_legacy: bool = False
    ofs_osslib: TextSetting | None = None
    pfc_ram: SizeSetting | None = None
    pfc_blocksize: SizeSetting | None = None
    pfc_prefetch: PrefetchSetting | None = None
    pfc_diskusage: DiskUsage | None = None
    pfc_writequeue: WriteQueue | None = None
    pfc_spaces: TextSetting | None = None


class XCacheConfigFacts(BaseModel):
    instances: dict[str, CacheInstance] = Field(default_factory=dict)
    #: name (main config file) of the cache instance, None when no instance configures a cache
    cache_instance: str | None = None
    cache: CacheInstance | None = None


def _logical_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf, start = "", None
    for lineno, line in lines:
        stripped = line.rstrip()
        if start is None:
            start = lineno
        if stripped.endswith("\\") and not stripped.lstrip().startswith("#"):
            buf += stripped[:-1] + " "
            continue
        out.append((start, buf + stripped))
        buf, start = "", None
    if buf:
        out.append((start or 0, buf))
    return out


def parse_xrootd_files(files: list[tuple[str, list[tuple[int, str]]]], config_file: str) -> CacheInstance:
    """Directives of one instance from its files, in reading order."""
    directives: list[Directive] = []
    variables: dict[str, str] = {}
    continues: list[str] = []
    conditionals: list[str] = []
    for path, lines in files:
        stack: list[str] = []
        for lineno, line in _logical_lines(lines):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            words = text.split(None, 1)
            word, rest = words[0], (words[1].strip() if len(words) > 1 else "")
            if word == "if":
                stack.append(f"if {rest}")
                conditionals.append(text)
                continue
            if word == "else":
                conditionals.append(text)
                if stack:
                    stack[-1] = f"else-of {stack[-1]}" if not rest.startswith("if") else f"else {rest}"
                continue
            if word == "fi":
                conditionals.append(text)
                if stack:
                    stack.pop()
                continue
            if word in ("set", "setenv"):
                m = re.match(r"^(\S+?)\s*=\s*(.*)$", rest)
                if m:
                    variables[m.group(1)] = m.group(2).strip()
            if word == "continue" and rest:
                continues.append(rest.split()[0])
            directives.append(Directive(name=word, args=rest, file=path, lineno=lineno, line=text, condition=list(stack)))
    inst = CacheInstance(
        config_file=config_file,
        files=[p for p, _ in files],
        directives=directives,
        variables=variables,
        continues=continues,
        conditionals=conditionals,
    )

    def pick(*names: str) -> Directive | None:
        uncond = [d for d in directives if d.name in names and not d.condition]
        if uncond:
            return uncond[-1]
        cond = [d for d in directives if d.name in names]
        return cond[-1] if cond else None

    def text_setting(name: str) -> TextSetting | None:
        d = pick(name)
        return TextSetting(raw=d.args, line=d.line, conditional=bool(d.condition)) if d else None

    inst.pss_origin = text_setting("pss.origin")
    inst.oss_localroot = text_setting("oss.localroot")
    inst.pss_cachelib = text_setting("pss.cachelib")
    inst.ofs_osslib = text_setting("ofs.osslib")
    inst.pfc_spaces = text_setting("pfc.spaces")
    if inst.pss_cachelib:
        inst.cachelib_legacy = "libXrdFileCache" in inst.pss_cachelib.raw
    for d in directives:
        if d.name == "oss.space":
            parts = d.args.split()
            if len(parts) >= 2:
                inst.oss_spaces.append(OssSpace(name=parts[0], path=parts[1], raw=d.args))
    for attr, name in (("pfc_ram", "pfc.ram"), ("pfc_blocksize", "pfc.blocksize")):
        d = pick(name)
        if d:
            first = d.args.split()[0] if d.args.split() else ""
            setattr(inst, attr, SizeSetting(raw=d.args, bytes=_size(first), line=d.line, conditional=bool(d.condition)))
    d = pick("pfc.prefetch", "pfc.nramprefetch")
    if d:
        first = d.args.split()[0] if d.args.split() else None
        inst.pfc_prefetch = PrefetchSetting(
            raw=d.args, blocks=_int(first), legacy=d.name == "pfc.nramprefetch", line=d.line, conditional=bool(d.condition)
        )
    d = pick("pfc.writequeue")
    if d:
        parts = d.args.split()
        inst.pfc_writequeue = WriteQueue(
            raw=d.args,
            blocks=_int(parts[0]) if parts else None,
            threads=_int(parts[1]) if len(parts) > 1 else None,
            line=d.line,
            conditional=bool(d.condition),
        )
    d = pick("pfc.diskusage")
    if d:
        inst.pfc_diskusage = _diskusage(d)
    inst.is_cache = inst.pss_cachelib is not None or any(x.name.startswith("pfc.") for x in directives)
    return inst


def _diskusage(d: Directive) -> DiskUsage:
    words = d.args.split()
    du = DiskUsage(raw=d.args, line=d.line, conditional=bool(d.condition))
    if len(words) >= 1:
        du.low_raw = words[0]
        du.low_fraction, du.low_bytes = _watermark(words[0])
    if len(words) >= 2:
        du.high_raw = words[1]
        du.high_fraction, du.high_bytes = _watermark(words[1])
    i = 2
    while i < len(words):
        w = words[i]
        if w == "files":
            du.files = words[i + 1:i + 4]
            i += 4
        elif w in ("purgeinterval", "sleep"):
            du.purgeinterval_s = _time_s(words[i + 1] if i + 1 < len(words) else None)
            i += 2
        elif w == "purgecoldfiles":
            du.purgecoldfiles = words[i + 1:i + 3]
            i += 3
        else:
            du.unknown.append(w)
            i += 1
    return du


def parse_xcache_config(text: str) -> XCacheConfigFacts:
    instances: dict[str, list[tuple[str, list[tuple[int, str]]]]] = {}
    current: str | None = None
    sections = _iter_sections(text)
    if not any(name.startswith(("instance ", "file ")) for name, _ in sections):
        if not text.strip():
            raise ProbeParseError("xrootd configuration: empty input")
        instances["<input>"] = [("<input>", list(enumerate(text.splitlines(), start=1)))]
    else:
        for name, lines in sections:
            if name.startswith("instance "):
                current = check_path(name[len("instance "):].strip(), "xrootd configuration: instance path")
                instances.setdefault(current, [])
            elif name.startswith("file "):
                path = check_path(name[len("file "):].strip(), "xrootd configuration: file path")
                if current is None:
                    current = path
                    instances.setdefault(current, [])
                instances[current].append((path, lines))
            elif name == "error":
                msg = next((ln.strip() for _, ln in lines if ln.strip()), "unreadable configuration")
                raise ProbeParseError(f"xrootd configuration: {msg}")
    facts = XCacheConfigFacts()
    for main, files in instances.items():
        inst = parse_xrootd_files(files, main)
        facts.instances[main] = inst
        if facts.cache is None and inst.is_cache:
            facts.cache, facts.cache_instance = inst, main
    if not facts.instances:
        raise ProbeParseError("xrootd configuration: no configuration file in the output")
    return facts


def _configured_paths(ctx: ProbeContext, key: str) -> list[str]:
    """A host variable holding one path or a list of paths, as a list (empty when unset)."""
    v = ctx.vars.get(key)
    if not v:
        return []
    return [str(p) for p in (v if isinstance(v, list) else [v])]


_SKIP_FILE = 'case "$b" in *~|*.rpmsave|*.rpmnew|*.dpkg-*|*.bak|.*) continue;; esac'


class XCacheConfigProbe(Probe):
    name = "xcache.config"
    title = "XRootD / XCache configuration (pss, oss, pfc directives)"
    roles = frozenset({"cache"})
    facts_model = XCacheConfigFacts
    #: the host variable naming the configuration file(s) (else /etc/xrootd)
    config_var = "xcache_config"

    def pick_script(self, ctx: ProbeContext) -> str:
        """Shell that sets CFGS, the instances' main files."""
        configured = _configured_paths(ctx, self.config_var)
        if configured:
            return "CFGS=" + shlex.quote(" ".join(configured)) + "\n"
        return (
            'CFGS=""\n'
            f'for f in {XROOTD_ETC}/xrootd-*.cfg; do [ -f "$f" ] && CFGS="$CFGS $f"; done\n'
            f'if [ -z "$CFGS" ] && [ -d {XROOTD_ETC}/config.d ]; then CFGS={XROOTD_ETC}/config.d; fi\n'
        )

    def script(self, ctx: ProbeContext) -> str:
        return (
            self.pick_script(ctx)
            + f'[ -n "$CFGS" ] || {{ echo "{_NA} no xrootd configuration (/etc/xrootd/xrootd-*.cfg)"; exit 0; }}\n'
            + "emit() {\n"
            + '  if [ -d "$1" ]; then\n'
            + '    for g in "${1%/}"/*; do [ -f "$g" ] || continue; b=$(basename "$g"); '
            + _SKIP_FILE + '; emit "$g" "$2"; done\n'
            + "    return 0\n"
            + "  fi\n"
            + '  echo "@@section file $1"\n'
            + '  if [ ! -r "$1" ]; then echo "@@section error"; echo "cannot read $1: permission denied or missing"; return 0; fi\n'
            + '  cat "$1"; echo\n'
            + '  [ "$2" -lt 3 ] || return 0\n'
            + '  for c in $(awk \'$1=="continue"{print $2}\' "$1"); do\n'
            + '    [ -e "$c" ] && emit "$c" $(($2 + 1))\n'
            + "  done\n"
            + "  return 0\n"
            + "}\n"
            + 'for f in $CFGS; do echo "@@section instance $f"; emit "$f" 0; done\n'
        )

    def parse(self, text: str) -> XCacheConfigFacts:
        return parse_xcache_config(text)


# ---------------------------------------------------------------------------------------------
# xcache.log
# ---------------------------------------------------------------------------------------------

_EFFECTIVE_RE = re.compile(r"Config effective\s*(?P<file>.*?)\s*pfc configuration:")


class XCacheLogFacts(BaseModel):
    log_file: str | None = None
    config_file: str | None = None
    #: every line of the block, by directive name (``pfc.ram`` -> ``1g``)
    directives: dict[str, str] = Field(default_factory=dict)
    blocksize_bytes: int | None = None
    prefetch_blocks: int | None = None
    ram_bytes: int | None = None
    writequeue_blocks: int | None = None
    writequeue_threads: int | None = None
    total_disk_bytes: int | None = None
    diskusage_low_bytes: int | None = None
    diskusage_high_bytes: int | None = None
    files_baseline_bytes: int | None = None
    files_nominal_bytes: int | None = None
    files_max_bytes: int | None = None
    purgeinterval_s: int | None = None
    purgecoldfiles_s: int | None = None
    spaces: list[str] = Field(default_factory=list)
    #: "Proxy file cache configuration parsing completed|failed", when printed
    parsing_ok: bool | None = None
    lines: list[str] = Field(default_factory=list)


def parse_xcache_log(text: str) -> XCacheLogFacts:
    log_file = None
    body = text
    if SECTION_MARKER in text:
        for name, lines in _iter_sections(text):
            if name.startswith("log "):
                log_file = name[4:].strip()
                body = "\n".join(ln for _, ln in lines)
    lines = body.splitlines()
    start = None
    for i, line in enumerate(lines):
        if _EFFECTIVE_RE.search(line):
            start = i
    if start is None:
        first = next((ln.strip() for ln in lines if ln.strip()), "")
        raise ProbeParseError(
            "xrootd log: no 'Config effective ... pfc configuration:' block" + (f"; log starts: {first[:200]}" if first else "")
        )
    facts = XCacheLogFacts(log_file=log_file, config_file=_EFFECTIVE_RE.search(lines[start]).group("file") or None)
    facts.lines.append(lines[start].rstrip())
    for line in lines[start + 1:]:
        s = line.strip()
        if "Proxy file cache configuration parsing" in line:
            facts.parsing_ok = "completed" in line
            break
        if _EFFECTIVE_RE.search(line):
            break
        if not s:
            continue
        if not (line[:1].isspace() or s.startswith(("pfc.", "#"))):
            break
        facts.lines.append(line.rstrip())
        if s.startswith("#"):
            m = re.search(r"Total available disk:\s*(-?\d+)", s)
            if m:
                facts.total_disk_bytes = bounded_int(m.group(1), "xrootd log: Total available disk")
            continue
        if not s.startswith("pfc."):
            continue
        name, _, args = s.partition(" ")
        args = args.strip()
        facts.directives[name] = args
        words = args.split()
        if name == "pfc.blocksize" and words:
            facts.blocksize_bytes = _size(words[0])
        elif name == "pfc.prefetch" and words:
            facts.prefetch_blocks = _int(words[0])
        elif name == "pfc.ram" and words:
            facts.ram_bytes = _size(words[0])
        elif name == "pfc.writequeue":
            facts.writequeue_blocks = _int(words[0]) if words else None
            facts.writequeue_threads = _int(words[1]) if len(words) > 1 else None
        elif name == "pfc.diskusage":
            facts.diskusage_low_bytes = _int(words[0]) if words else None
            facts.diskusage_high_bytes = _int(words[1]) if len(words) > 1 else None
            for key, n in (("files", 3), ("purgeinterval", 1), ("purgecoldfiles", 1)):
                if key in words:
                    j = words.index(key)
                    vals = [_int(w) for w in words[j + 1:j + 1 + n]]
                    if key == "files" and len(vals) == 3:
                        b, nom, mx = (v if v is not None and v >= 0 else None for v in vals)
                        facts.files_baseline_bytes, facts.files_nominal_bytes, facts.files_max_bytes = b, nom, mx
                    elif key == "purgeinterval" and vals:
                        facts.purgeinterval_s = vals[0]
                    elif key == "purgecoldfiles" and vals:
                        facts.purgecoldfiles_s = vals[0] if vals[0] is not None and vals[0] >= 0 else None
        elif name == "pfc.spaces":
            facts.spaces = words
    return facts


class XCacheLogProbe(Probe):
    name = "xcache.log"
    title = "XCache active configuration (the 'Config effective' block of the xrootd log)"
    roles = frozenset({"cache"})
    needs_root = True
    facts_model = XCacheLogFacts
    #: the xrootd user writes these directories: through the probe helper a log is read only when its
    #: real path (symlinks resolved) is still below one of them
    root_paths = {"xcache_log": ("/var/log/xrootd/", "/var/log/xcache/")}

    def script(self, ctx: ProbeContext) -> str:
        configured = _configured_paths(ctx, "xcache_log")
        if configured:
            cands = " ".join(shlex.quote(p) for p in configured)
        else:
            cands = "/var/log/xrootd/*/xrootd.log /var/log/xrootd/xrootd.log"
        confine = ""
        if ctx.root_helper:
            dirs = "|".join(shlex.quote(d) + "*" for d in self.root_paths["xcache_log"])
            confine = f'  case "$(readlink -f -- "$f" 2>/dev/null)" in {dirs}) ;; *) continue ;; esac\n'
        return (
            'LOG=""\n'
            + f"for f in $(ls -t {cands} 2>/dev/null); do\n"
            + confine
            + '  [ -r "$f" ] && grep -q "pfc configuration:" "$f" 2>/dev/null && { LOG="$f"; break; }\n'
            + "done\n"
            + f'[ -n "$LOG" ] || {{ echo "{_NA} no xrootd log with a Config effective pfc block"; exit 0; }}\n'
            + 'echo "@@section log $LOG"\n'
            + 'n=$(grep -n "Config effective.*pfc configuration:" "$LOG" | tail -n 1 | cut -d: -f1)\n'
            + 'sed -n "${n},$((n + 60))p" "$LOG"\n'
        )

    def parse(self, text: str) -> XCacheLogFacts:
        return parse_xcache_log(text)


# ---------------------------------------------------------------------------------------------
# xcache.usage
# ---------------------------------------------------------------------------------------------


class SpaceUsage(BaseModel):
    path: str
    filesystem: str
    size_bytes: int
    used_bytes: int
    available_bytes: int
    #: used / (used + available), as df computes Use%
    used_fraction: float | None = None
    mountpoint: str
    line: str


class XCacheUsageFacts(BaseModel):
    spaces: dict[str, SpaceUsage] = Field(default_factory=dict)
    #: summed over distinct file systems: one file system mounted at two points (``/`` and ``/sysroot``)
    #: counts once. Same file system = the same ``stat -f`` id when printed, else the same device
    #: (a ``/dev/...`` path or ``host:/export``); pseudo sources (``tmpfs``, ``overlay``) by mount point.
    total_bytes: int = 0
    used_bytes: int = 0
    available_bytes: int = 0
    used_fraction: float | None = None
    max_used_fraction: float | None = None
    errors: list[str] = Field(default_factory=list)


def _filesystem_key(source: str, mount: str, fsid: str | None) -> tuple[str, ...]:
    if fsid:
        return ("fsid", fsid)
    if source.startswith("/") or ":/" in source:
        return ("device", source)
    return ("mount", source, mount)


def parse_df_sections(text: str) -> XCacheUsageFacts:
    facts = XCacheUsageFacts()
    seen_fs: set[tuple[str, ...]] = set()
    chunks = _iter_sections(text) if SECTION_MARKER in text else [("path ?", list(enumerate(text.splitlines(), 1)))]
    for name, lines in chunks:
        if not name.startswith("path "):
            continue
        path = name[5:].strip()
        if path != "?":  # "?": plain df output without our section markers (the mount point names it)
            path = check_path(path, "df: cache path")
        unit = 1
        fsid = next((m.group(1) for _, ln in lines if (m := re.fullmatch(r"fsid ([0-9a-fA-F]+)", ln.strip()))), None)
        rows = [ln for _, ln in lines if ln.strip() and not re.fullmatch(r"fsid ([0-9a-fA-F]+)", ln.strip())]
        got = False
        for ln in rows:
            if ln.startswith("Filesystem"):
                # df -B: "1K"/"2M" are powers of 1024, "1KB"/"2MB" powers of 1000 (GNU coreutils)
                m = re.search(r"(\d+)([KMGT]?)(B?)-blocks", ln)
                if m:
                    exp = "_KMGT".index(m.group(2) or "_")
                    unit = bounded_int(m.group(1), "df: block size") * ((1000 if m.group(3) else 1024) ** exp)
                continue
            parts = ln.split()
            if len(parts) >= 6 and all(re.fullmatch(r"\d+", p) for p in parts[1:4]):
                size, used, avail = (bounded_int(p, "df") * unit for p in parts[1:4])
                mount = " ".join(parts[5:])
                frac = used / (used + avail) if (used + avail) > 0 else None
                if path == "?":
                    path = mount
                facts.spaces[path] = SpaceUsage(
                    path=path, filesystem=parts[0], size_bytes=size, used_bytes=used, available_bytes=avail,
                    used_fraction=frac, mountpoint=mount, line=ln,
                )
                key = _filesystem_key(parts[0], mount, fsid)
                if key not in seen_fs:
                    seen_fs.add(key)
                    facts.total_bytes += size
                    facts.used_bytes += used
                    facts.available_bytes += avail
                got = True
                break
        if not got:
            facts.errors.append(f"{path}: {rows[0].strip() if rows else 'no df output'}")
    if not facts.spaces:
        raise ProbeParseError("df: no usable output for the cache space(s)" + (f": {facts.errors[0]}" if facts.errors else ""))
    denom = facts.used_bytes + facts.available_bytes
    facts.used_fraction = facts.used_bytes / denom if denom else None
    fracs = [s.used_fraction for s in facts.spaces.values() if s.used_fraction is not None]
    facts.max_used_fraction = max(fracs) if fracs else None
    return facts


class XCacheUsageProbe(Probe):
    name = "xcache.usage"
    title = "XCache cache space occupancy (df on oss.localroot / oss.space paths)"
    roles = frozenset({"cache"})
    facts_model = XCacheUsageFacts

    def script(self, ctx: ProbeContext) -> str:
        configured = _configured_paths(ctx, "xcache_paths")
        # the instance's own files when the site names them (as xcache.config reads them)
        cfgs = _configured_paths(ctx, "xcache_config")
        files = ("FILES=" + shlex.quote(" ".join(cfgs)) + "\n" if cfgs else
                 f"FILES=$(ls {XROOTD_ETC}/xrootd-*.cfg {XROOTD_ETC}/config.d/* 2>/dev/null)\n")
        if configured:
            pick = "PATHS=" + shlex.quote(" ".join(configured)) + "\n"
        else:
            pick = (
                files
                + '[ -n "$FILES" ] || { echo "' + _NA + ' no xrootd configuration (/etc/xrootd)"; exit 0; }\n'
                "PATHS=$(awk '$1==\"oss.localroot\"{print $2} $1==\"oss.space\"{print $3}' $FILES 2>/dev/null"
                " | grep '^/' | sort -u)\n"
            )
        return (
            pick
            + f'[ -n "$PATHS" ] || {{ echo "{_NA} no oss.localroot/oss.space path to measure"; exit 0; }}\n'
            + "for p in $PATHS; do\n"
            + '  echo "@@section path $p"\n'
            + '  df -P -B1 "$p" 2>&1 || df -P -k "$p" 2>&1\n'
            + '  stat -f -c "fsid %i" "$p" 2>/dev/null\n'
            + "done\n"
        )

    def parse(self, text: str) -> XCacheUsageFacts:
        return parse_df_sections(text)
