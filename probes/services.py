"""Storage services: ``services.xrootd`` -- systemd state of ``xrootd@*`` and ``cmsd@*`` units.

XRootD servers and caches run as templated units (``xrootd@xcache_dca.service``; Goethe HLR).
The script lists them with ``systemctl list-units --all --plain --no-legend`` (loaded units,
active or not) and adds ``systemctl show`` properties per unit (``UnitFileState`` says whether
the unit is enabled, ``Result``/``ExecMainStatus`` why it stopped). No ``systemctl``, or systemd
not running as init (no ``/run/systemd/system``, as sd_booted(3) checks) -> not applicable.

list-units line: ``UNIT LOAD ACTIVE SUB DESCRIPTION...`` (description runs to the end of the
line; ``--plain`` drops the status bullet, which is also stripped if present). Text with lines that
are neither unit lines nor list-units' legend and no unit line at all (``list-unit-files`` or
``status`` output) is refused with a parse error, never read as "no units". show output:
``Key=value`` lines, units separated by a blank line, each unit section introduced here by
``@@section show <unit>``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import NOT_APPLICABLE_MARKER, SECTION_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int

UNIT_PATTERNS = ("xrootd@*", "cmsd@*", "xrootd.service", "cmsd.service")
SHOW_PROPERTIES = "Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecMainStatus,ActiveEnterTimestamp,NRestarts"

_UNIT_LINE_RE = re.compile(
    r"^(?:[●*x×]\s+)?(?P<unit>\S+\.(?:service|socket|target|timer|device|mount|automount|swap|path|slice|scope))"
    r"\s+(?P<load>\S+)\s+(?P<active>\S+)\s+(?P<sub>\S+)(?:\s+(?P<desc>.*))?$"
)
#: systemd's LOAD states (systemctl --state=help): a line whose second word is not one is no list-units line
LOAD_STATES = frozenset({"stub", "loaded", "not-found", "bad-setting", "error", "merged", "masked"})
#: what systemctl list-units prints besides unit lines (without --no-legend)
_LEGEND_RE = re.compile(r"^(UNIT\s+LOAD\s+ACTIVE\s+SUB|(LOAD|ACTIVE|SUB|JOB)\s+= |\d+ loaded units? listed|To show all installed unit files)")


class UnitState(BaseModel):
    unit: str
    #: "xrootd" or "cmsd"
    daemon: str
    #: the template instance (``xcache_dca`` of ``xrootd@xcache_dca.service``), None if not templated
    instance: str | None = None
    load: str
    active: str
    sub: str
    description: str | None = None
    unit_file_state: str | None = None
    result: str | None = None
    exec_main_status: int | None = None
    n_restarts: int | None = None
    line: str


class ServicesFacts(BaseModel):
    units: dict[str, UnitState] = Field(default_factory=dict)
    #: units whose ActiveState is not "active"
    not_active: list[str] = Field(default_factory=list)


def parse_services(text: str) -> ServicesFacts:
    facts = ServicesFacts()
    section = ""
    shows: dict[str, dict[str, str]] = {}
    saw_units_section = SECTION_MARKER not in text
    unit_lines = 0
    foreign: list[str] = []
    for raw in text.splitlines():
        if raw.startswith(SECTION_MARKER):
            section = raw[len(SECTION_MARKER):].strip()
            if section == "units":
                saw_units_section = True
            continue
        line = raw.strip()
        if not line:
            continue
        if section.startswith("show "):
            k, sep, v = line.partition("=")
            if sep:
                shows.setdefault(section[5:].strip(), {})[k] = v
            continue
        if section not in ("", "units"):
            continue
        if re.search(r"(Failed to|System has not been booted|Access denied|not permitted)", line):
            raise ProbeParseError(f"systemctl failed: {line[:300]}")
        m = _UNIT_LINE_RE.match(line)
        if m and m.group("load") not in LOAD_STATES:
            m = None  # e.g. `systemctl status`: "● xrootd@x.service - XRootD xrootd deamon instance x"
        if not m:
            if not _LEGEND_RE.match(line):
                foreign.append(line)
            continue
        unit_lines += 1
        unit = m.group("unit")
        base = unit.rsplit(".", 1)[0]
        daemon, _, instance = base.partition("@")
        if daemon not in ("xrootd", "cmsd"):
            continue
        facts.units[unit] = UnitState(
            unit=unit, daemon=daemon, instance=instance or None, load=m.group("load"), active=m.group("active"),
            sub=m.group("sub"), description=(m.group("desc") or "").strip() or None, line=line,
        )
    if not saw_units_section:
        raise ProbeParseError("services: no 'units' section in the output")
    if foreign and not unit_lines:
        # not `systemctl list-units` output (list-unit-files, status, an error page ...): never read as "no units"
        raise ProbeParseError(f"services: not systemctl list-units output: {foreign[0][:120]!r}")
    for unit, props in shows.items():
        u = facts.units.get(unit)
        if u is None:
            continue
        u.unit_file_state = props.get("UnitFileState") or None
        u.result = props.get("Result") or None
        if re.fullmatch(r"-?\d+", props.get("ExecMainStatus", "")):
            u.exec_main_status = bounded_int(props["ExecMainStatus"], f"{unit}: ExecMainStatus")
        if re.fullmatch(r"\d+", props.get("NRestarts", "")):
            u.n_restarts = bounded_int(props["NRestarts"], f"{unit}: NRestarts")
        if props.get("ActiveState"):
            u.active = props["ActiveState"]
        if props.get("SubState"):
            u.sub = props["SubState"]
    facts.not_active = sorted(u for u, s in facts.units.items() if s.active != "active")
    return facts


class XrootdServicesProbe(Probe):
    name = "services.xrootd"
    title = "systemd state of the xrootd@* and cmsd@* units"
    roles = frozenset({"cache", "storage", "door"})
    facts_model = ServicesFacts

    def script(self, ctx: ProbeContext) -> str:
        pats = " ".join(f"'{p}'" for p in UNIT_PATTERNS)
        return (
            "command -v systemctl >/dev/null 2>&1 || "
            + f'{{ echo "{NOT_APPLICABLE_MARKER} systemctl not found"; exit 0; }}\n'
            + "[ -d /run/systemd/system ] || "
            + f'{{ echo "{NOT_APPLICABLE_MARKER} systemd is not running on this host"; exit 0; }}\n'
            + f'echo "{SECTION_MARKER}units"\n'
            + f"UNITS=$(systemctl list-units --all --plain --no-legend --no-pager {pats} 2>&1)\n"
            + 'printf "%s\\n" "$UNITS"\n'
            + 'for u in $(printf "%s\\n" "$UNITS" | awk \'$1 ~ /\\.service$/ {print $1}\'); do\n'
            + f'  echo "{SECTION_MARKER}show $u"\n'
            + f'  systemctl show -p {SHOW_PROPERTIES} --no-pager "$u" 2>&1\n'
            + "done\n"
        )

    def parse(self, text: str) -> ServicesFacts:
        return parse_services(text)
