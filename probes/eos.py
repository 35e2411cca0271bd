"""EOS probe: ``eos.fs``, the file systems ``eos fs ls`` lists on the MGM.

``eos fs ls`` prints a box-drawn table: a top rule (``┌──┬──┐``), a header row between ``│`` marks (``host``,
``port``, ``id``, ``path``, ``schedgroup``, ``geotag``, ``boot``, ``configstatus``, ``drain`` or
``drainstatus``, ``usage`` on newer releases, ``active``, ``health``), a bottom rule, then one row per file
system whose fields sit in the header's columns (blank where the MGM knows nothing yet). The column
bounds are the header's ``│`` positions. Runs on hosts with the ``eos`` command (the MGM: role storage).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, require_tool, section, split_sections


class EosFileSystem(BaseModel):
    id: str
    host: str
    port: str = ""
    path: str = ""
    schedgroup: str = ""
    geotag: str = ""
    boot: str = ""
    configstatus: str = ""
    drain: str = ""
    active: str = ""
    health: str = ""
    line: str


class EosFsFacts(BaseModel):
    #: file system id -> the file system
    filesystems: dict[str, EosFileSystem] = Field(default_factory=dict)
    columns: list[str] = Field(default_factory=list)


def parse_fs_ls(text: str) -> EosFsFacts:
    lines = [(n, ln.rstrip("\n")) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    header = next(((n, ln) for n, ln in lines if ln.lstrip().startswith("│")), None)
    if header is None:
        raise ProbeParseError("eos fs ls: no header row ('│host │port│ id│ ...')")
    hn, hline = header
    bars = [i for i, ch in enumerate(hline) if ch == "│"]
    columns = [hline[a + 1:b].strip() for a, b in zip(bars, bars[1:])]
    if "id" not in columns or "host" not in columns:
        raise ProbeParseError(f"eos fs ls: line {hn}: the header has no 'host' and 'id' columns: {hline.strip()[:80]!r}")
    facts = EosFsFacts(columns=columns)
    for n, line in lines:
        if n <= hn or line.lstrip()[:1] in ("┌", "└", "├", "│"):
            if n < hn and not line.lstrip().startswith("┌"):
                raise ProbeParseError(f"eos fs ls: line {n}: text before the table: {line.strip()[:80]!r}")
            continue
        if len(line) > bars[-1] + 2 and line[bars[-1] + 1:].strip():
            raise ProbeParseError(f"eos fs ls: line {n}: longer than the table: {line.strip()[:80]!r}")
        values = {c: line[a + 1:b].strip() if a + 1 < len(line) else "" for c, a, b in zip(columns, bars, bars[1:])}
        if not values["id"].isdigit():
            raise ProbeParseError(f"eos fs ls: line {n}: no file system id in the id column: {line.strip()[:80]!r}")
        values["drain"] = values.pop("drainstatus", values.get("drain", ""))
        known = {k: v for k, v in values.items() if k in EosFileSystem.model_fields}
        facts.filesystems[values["id"]] = EosFileSystem(line=line.strip(), **known)
    return facts


class EosFsProbe(Probe):
    name = "eos.fs"
    title = "EOS file systems (eos fs ls): boot, configstatus, drain, active"
    roles = frozenset({"storage"})
    needs_root = True
    facts_model = EosFsFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("eos", "/usr/bin", "/opt/eos/bin")
            + section("fs_ls")
            + 'out=$(timeout 30 "$TOOL_eos" -b fs ls 2>&1); rc=$?\n'
            + "printf '%s\\n' \"$out\"\n"
            + section("rc")
            + 'echo "$rc"\n'
        )

    def parse(self, text: str) -> EosFsFacts:
        if SECTION_MARKER + "fs_ls" in text:
            s = split_sections(text)
            body = s.get("fs_ls", "")
            rc = (s.get("rc") or "0").strip() or "0"
            if rc != "0":
                first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
                raise ProbeParseError(f"eos fs ls exited with status {rc}" + (f": {first[:200]}" if first else ""))
            return parse_fs_ls(body)
        return parse_fs_ls(text)


# --------------------------------------------------------------------------- eos space status

SPACE = "default"


class SpaceVariable(BaseModel):
    value: str
    #: the value as a number where it is one (``0.1``, ``120``), else None
    number: float | None = None
    line: str


class EosSpaceFacts(BaseModel):
    space: str = SPACE
    #: variable name (``balancer.node.ntx``) -> its value
    variables: dict[str, SpaceVariable] = Field(default_factory=dict)


def parse_space_status(text: str) -> EosSpaceFacts:
    """``eos space status SPACE``: ``#`` banner lines, then ``name := value`` per space variable."""
    import re

    facts = EosSpaceFacts()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or set(line) <= set("-"):
            continue
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9_.:-]*)\s+:=\s*(.*)", line)
        if not m:
            raise ProbeParseError(f"eos space status: line {n}: not 'name := value': {line[:80]!r}")
        value = m.group(2).strip()
        number = float(value) if re.fullmatch(r"-?\d{1,15}(\.\d{1,15})?", value) else None
        facts.variables[m.group(1)] = SpaceVariable(value=value, number=number, line=line)
    if not facts.variables:
        raise ProbeParseError("eos space status: no 'name := value' line")
    return facts


class EosSpaceProbe(Probe):
    name = "eos.space"
    title = "EOS space variables of the default space (eos space status default): balancer, drainer"
    roles = frozenset({"storage"})
    needs_root = True
    facts_model = EosSpaceFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("eos", "/usr/bin", "/opt/eos/bin")
            + section("space_status")
            + f'out=$(timeout 30 "$TOOL_eos" -b space status {SPACE} 2>&1); rc=$?\n'
            + "printf '%s\\n' \"$out\"\n"
            + section("rc")
            + 'echo "$rc"\n'
        )

    def parse(self, text: str) -> EosSpaceFacts:
        if SECTION_MARKER + "space_status" in text:
            s = split_sections(text)
            body = s.get("space_status", "")
            rc = (s.get("rc") or "0").strip() or "0"
            if rc != "0":
                first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
                raise ProbeParseError(f"eos space status exited with status {rc}" + (f": {first[:200]}" if first else ""))
            return parse_space_status(body)
        return parse_space_status(text)
