"""Lustre client probe: ``lustre.params``, the client tunables as ``lctl get_param`` prints them.

``lctl get_param TYPE.DEVICE.PARAM`` prints one ``TYPE.DEVICE.PARAM=VALUE`` line per match, for example
``osc.lustrefs-OST0004-osc-ffff9552e4e09000.max_rpcs_in_flight=8`` (an OSC of a client mount: the
instance after ``-osc-`` is the superblock address) or ``osc.lustrefs-OST0005-osc-MDT0000...`` (an OSC
of a metadata target, on a server). A pattern that matches nothing makes lctl print
``error: get_param: param_path '...': No such file or directory`` and exit non-zero; those lines are
kept in ``errors`` (a client without llite devices has no file system mounted).

Script output (sections):

* ``get_param`` -- the output of ``lctl get_param`` for ``PARAMS`` below (stderr merged)
* ``rc``        -- its exit status
* ``llog``      -- ``lctl llog_print params`` (stderr merged): the MGS's permanent parameters
  (``lctl set_param -P``), one ``- { index: N, event: set_param, ... }`` record per line. Only the
  MGS has the log: elsewhere lctl fails, and the host is not the MGS.
* ``llog_rc``   -- its exit status

``parse`` also accepts a raw ``lctl get_param`` capture without sections, a raw ``lctl llog_print
params`` capture (the MGS's log alone), and a capture made before the ``llog`` section (the
permanent parameters are then unknown: ``mgs`` None).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from advisor.util.shipped_code import module_utils
from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int, require_tool, section, split_sections

#: the parameters read, per device type
PARAMS = (
    "osc.*.max_rpcs_in_flight",
    "osc.*.max_dirty_mb",
    "osc.*.max_pages_per_rpc",
    "osc.*.checksums",
    "mdc.*.max_rpcs_in_flight",
    "mdc.*.max_mod_rpcs_in_flight",
    "llite.*.max_read_ahead_mb",
    "llite.*.max_read_ahead_per_file_mb",
    "llite.*.max_cached_mb",
)

#: device types whose devices are reported one by one
DEVICE_TYPES = ("osc", "mdc", "llite")

_LINE = re.compile(r"^([a-z][a-z0-9_]*)\.(\S+)\.([A-Za-z0-9_]+)=(.*)$")
_ERROR = re.compile(r"^error: get_param: ")
_HEX_INSTANCE = re.compile(r"[0-9a-f]{8,16}")


class LustreDevice(BaseModel):
    name: str
    #: the file system name (``lustrefs`` of ``lustrefs-OST0004-osc-ffff...``)
    fsname: str | None = None
    #: the target an OSC/MDC talks to (``OST0004``, ``MDT0000``)
    target: str | None = None
    #: the device belongs to a client mount (its instance is a superblock address), not to a server target
    client: bool
    #: parameter -> value (an int where the value is a plain decimal number, else the text)
    values: dict[str, int | str] = Field(default_factory=dict)
    #: parameter -> the line it was read from
    lines: dict[str, str] = Field(default_factory=dict)


class PermanentParam(BaseModel):
    """A record of the MGS's params log (``lctl set_param -P``)."""

    index: int
    #: the parameter pattern (globs per component: ``osc.*.max_dirty_mb``)
    parameter: str
    value: str
    #: the record as llog_print printed it
    line: str


class LustreParamsFacts(BaseModel):
    osc: dict[str, LustreDevice] = Field(default_factory=dict)
    mdc: dict[str, LustreDevice] = Field(default_factory=dict)
    llite: dict[str, LustreDevice] = Field(default_factory=dict)
    #: lines of other device types, full parameter name -> value
    other: dict[str, str] = Field(default_factory=dict)
    #: lctl's ``error: get_param: ...`` lines (patterns that matched nothing)
    errors: list[str] = Field(default_factory=list)
    #: a client mount was seen (an llite device, or an OSC/MDC of a client)
    client_mounted: bool = False
    #: how many parameter lines were read
    parameters: int = 0
    #: the host is the file system's MGS (``lctl llog_print params`` read its log); None: not asked
    mgs: bool | None = None
    #: the MGS's permanent parameters in index order (empty unless ``mgs``)
    permanent: list[PermanentParam] = Field(default_factory=list)


def _device(kind: str, name: str) -> LustreDevice:
    if kind == "llite":
        fsname, _, instance = name.rpartition("-")
        return LustreDevice(name=name, fsname=fsname or None, client=bool(_HEX_INSTANCE.fullmatch(instance)))
    m = re.match(rf"^(.+)-((?:OST|MDT)[0-9a-fA-F]{{4,}})-{kind}-(.+)$", name)
    if not m:
        return LustreDevice(name=name, client=False)
    return LustreDevice(name=name, fsname=m.group(1), target=m.group(2), client=bool(_HEX_INSTANCE.fullmatch(m.group(3))))


def parse_get_param(text: str) -> LustreParamsFacts:
    """Parse ``lctl get_param`` output; ``ProbeParseError`` for a line that is not a parameter line,
    an lctl error line or blank."""
    facts = LustreParamsFacts()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if _ERROR.match(line):
            facts.errors.append(line)
            continue
        m = _LINE.match(line)
        if not m:
            raise ProbeParseError(f"lctl get_param output, line {lineno}: not TYPE.DEVICE.PARAM=VALUE: {line[:80]!r}")
        kind, dev, param, value = m.groups()
        facts.parameters += 1
        if kind not in DEVICE_TYPES:
            facts.other[f"{kind}.{dev}.{param}"] = value
            continue
        devices: dict[str, LustreDevice] = getattr(facts, kind)
        device = devices.get(dev) or devices.setdefault(dev, _device(kind, dev))
        v = value.strip()
        device.values[param] = bounded_int(v, f"line {lineno}: {kind}.{dev}.{param}") if v.isdigit() else v
        device.lines[param] = line
    if facts.parameters == 0 and not facts.errors:
        raise ProbeParseError("lctl get_param output: no parameter lines")
    facts.client_mounted = any(d.client for kind in DEVICE_TYPES for d in getattr(facts, kind).values())
    return facts


class LustreParamsProbe(Probe):
    name = "lustre.params"
    title = "Lustre client tunables (lctl get_param of osc, mdc and llite devices)"
    needs_root = False
    facts_model = LustreParamsFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("lctl", "/usr/sbin", "/sbin")
            + section("get_param")
            + f'out=$("$TOOL_lctl" get_param {" ".join(PARAMS)} 2>&1); rc=$?\n'
            + "printf '%s\\n' \"$out\"\n"
            + section("rc")
            + 'echo "$rc"\n'
            + section("llog")
            + 'out=$("$TOOL_lctl" llog_print params 2>&1); rc=$?\n'
            + "printf '%s\\n' \"$out\"\n"
            + section("llog_rc")
            + 'echo "$rc"\n'
        )

    def parse(self, text: str) -> LustreParamsFacts:
        if SECTION_MARKER + "get_param" in text:
            sections = split_sections(text)
            body = sections.get("get_param", "")
            rc = (sections.get("rc") or "0").strip() or "0"
            # lctl exits non-zero when any one pattern matched nothing; that alone is not a failure
            if rc != "0" and not body.strip():
                raise ProbeParseError(f"lctl get_param exited with status {rc} and printed nothing")
            facts = parse_get_param(body)
            if "llog_rc" in sections:
                _read_llog(facts, sections.get("llog", ""), sections["llog_rc"].strip())
            return facts
        if text.lstrip().startswith("- {"):  # a raw capture of the MGS's log alone
            facts = LustreParamsFacts()
            _read_llog(facts, text, "0")
            return facts
        return parse_get_param(text)


def _read_llog(facts: LustreParamsFacts, text: str, rc: str) -> None:
    """The MGS's params log into ``facts``. lctl fails on a host that is not the MGS (``mgs`` False),
    and without the privilege to read the log (``mgs`` None: not known)."""
    if rc != "0":
        denied = re.search(r"Permission denied|Operation not permitted", text)
        facts.mgs = None if denied else False
        return
    try:
        records = module_utils("storadvise_lustre_params").parse_llog_params(text)
    except ValueError as exc:
        raise ProbeParseError(str(exc)) from None
    facts.mgs = True
    facts.permanent = [PermanentParam(**r) for r in records]
