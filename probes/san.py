"""SAN controller cache settings: ``san.logical_drives`` (IBM DS4000/DS5000 SMcli, SANtricity).

Runs on the management host (role ``san-controller``) against the controllers named in the site
file: ``SMcli <ctrl-a> <ctrl-b> -c "show allLogicalDrives;"`` and, when that fails without
printing any logical drive (newer SANtricity firmware knows only volumes), ``show allVolumes;``.
SMcli is looked for on PATH, in /opt/SMgr/client and /opt/IBM_DS/client.

What is known of the output (IBM DS Storage Manager CLI and Script Commands guide; **no verbatim capture was found**): per object a
block of ``Label: value`` lines, read with leading blanks stripped and the value being the text
after the first ``:``. Old firmware (DS4000/5000) starts a block with ``Logical Drive name:``,
SANtricity with ``Volume name:``; labels seen parsed by a monitoring script: ``Volume status:``,
``Capacity:``, ``RAID level:``, ``Read cache:``, ``Write cache:``, ``Flush write cache after (in
seconds):``, ``Write cache with mirroring:``, ``Write cache without batteries:``, ``Dynamic cache
read prefetch:``. ``SMcli completed successfully`` ends a good run; ``error code N`` / ``SMcli
failed`` lines are failures (``error code 12`` is a permission problem, per STOR2RRD).

So the parser is tolerant: any ``label: value`` line inside a block is kept in ``lines``; known
labels are matched case-insensitively with blanks collapsed; booleans accept
Enabled/Disabled, True/False, Yes/No, On/Off (``Enabled (...)`` counts as enabled). A
``Modification priority:`` label and a read-ahead *multiplier* were not seen verbatim: they are
matched tolerantly (``modification priority``; any label with ``prefetch`` or ``read ahead``;
a numeric multiplier > 0 means enabled).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import BaseModel, Field

from probes.legal_values import SMCLI_NAME, check_name
from probes.probe import (
    NOT_APPLICABLE_MARKER,
    SECTION_MARKER,
    Probe,
    ProbeContext,
    ProbeParseError,
    require_tool,
    section,
    split_sections,
)

SMCLI_DIRS = ("/opt/SMgr/client", "/opt/IBM_DS/client")
CMD_LOGICAL_DRIVES = "show allLogicalDrives;"
CMD_VOLUMES = "show allVolumes;"

_BLOCK_START_RE = re.compile(r"^(?P<kind>logical drive|volume)\s+name\s*:\s*(?P<name>.*)$", re.I)
_LABEL_RE = re.compile(r"^(?P<label>[^:]{1,120}?)\s*:\s*(?P<value>.*)$")
_ERROR_RE = re.compile(r"(error code\s*\d+|SMcli failed|^error\b|script execution halted)", re.I)
_SUCCESS_RE = re.compile(r"SMcli completed successfully", re.I)
_TRUE = {"enabled", "enable", "true", "yes", "on"}
_FALSE = {"disabled", "disable", "false", "no", "off", "none"}


class LogicalDrive(BaseModel):
    name: str
    read_cache: bool | None = None
    write_cache: bool | None = None
    write_cache_mirroring: bool | None = None
    write_cache_without_batteries: bool | None = None
    #: dynamic cache read prefetch / read-ahead
    read_prefetch: bool | None = None
    #: lower-cased: "low", "high", "highest" ... (label not seen verbatim)
    modification_priority: str | None = None
    raid_level: str | None = None
    status: str | None = None
    capacity: str | None = None
    #: "Flush write cache after (in seconds)" value as printed
    flush_after: str | None = None
    #: every label of the block -> its raw line (evidence)
    lines: dict[str, str] = Field(default_factory=dict)


class SanFacts(BaseModel):
    #: "logical_drive" (DS4000/DS5000) or "volume" (SANtricity)
    generation: str
    command: str | None = None
    controllers: list[str] = Field(default_factory=list)
    #: "SMcli completed successfully" was printed
    completed: bool = False
    drives: dict[str, LogicalDrive] = Field(default_factory=dict)


def _norm_label(label: str) -> str:
    return re.sub(r"\s+", " ", label.strip().lower())


def _bool(value: str) -> bool | None:
    v = value.strip().lower()
    if not v:
        return None
    word = re.split(r"[\s(,]", v, maxsplit=1)[0]
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


def _prefetch(value: str) -> bool | None:
    b = _bool(value)
    if b is not None:
        return b
    m = re.match(r"^\s*(\d+)\b", value)
    if m:
        return int(m.group(1)) > 0
    return None


def _apply(drive: dict[str, Any], label: str, value: str) -> None:
    if label == "read cache":
        drive["read_cache"] = _bool(value)
    elif label == "write cache":
        drive["write_cache"] = _bool(value)
    elif label in ("write cache with mirroring", "write cache mirroring", "mirror cache"):
        drive["write_cache_mirroring"] = _bool(value)
    elif label in ("write cache without batteries", "cache without battery", "write cache without battery"):
        drive["write_cache_without_batteries"] = _bool(value)
    elif "prefetch" in label or "read ahead" in label or "read-ahead" in label:
        drive["read_prefetch"] = _prefetch(value)
    elif label == "modification priority":
        drive["modification_priority"] = value.strip().lower() or None
    elif label == "raid level":
        drive["raid_level"] = value.strip() or None
    elif label in ("volume status", "logical drive status", "status"):
        drive["status"] = value.strip() or None
    elif label == "capacity":
        drive["capacity"] = value.strip() or None
    elif label.startswith("flush write cache after"):
        drive["flush_after"] = value.strip() or None


def parse_smcli_show(text: str) -> dict[str, Any]:
    """``show allLogicalDrives;`` / ``show allVolumes;`` output -> ``{generation, completed, drives}``."""
    drives: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    generation: str | None = None
    completed = False
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _SUCCESS_RE.search(line):
            completed = True
            continue
        if _ERROR_RE.search(line):
            errors.append(line)
            continue
        m = _BLOCK_START_RE.match(line)
        if m:
            kind = "volume" if m.group("kind").lower() == "volume" else "logical_drive"
            generation = generation or kind
            name = m.group("name").strip().strip('"')
            name = check_name(name, SMCLI_NAME, "SMcli: logical drive/volume name") if name else f"<unnamed-{len(drives) + 1}>"
            current = {"name": name, "lines": {_norm_label(line.split(":", 1)[0]): line}}
            drives[name] = current
            continue
        if current is None:
            continue
        lm = _LABEL_RE.match(line)
        if not lm:
            continue
        label = _norm_label(lm.group("label"))
        current["lines"].setdefault(label, line)
        _apply(current, label, lm.group("value"))
    if errors:
        raise ProbeParseError(f"SMcli failed: {' / '.join(errors[:3])[:400]}")
    if not drives:
        if completed:
            raise ProbeParseError("SMcli completed but printed no 'Logical Drive name:' or 'Volume name:' block")
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ProbeParseError(
            "SMcli output has no logical drive or volume blocks" + (f"; it starts: {first[:200]}" if first else "")
        )
    return {"generation": generation, "completed": completed, "drives": drives}


class SanLogicalDrivesProbe(Probe):
    name = "san.logical_drives"
    title = "SAN controller cache settings per logical drive / volume (SMcli)"
    roles = frozenset({"san-controller"})
    facts_model = SanFacts

    def timeout(self, ctx: ProbeContext) -> float:
        return 120.0

    def script(self, ctx: ProbeContext) -> str:
        controllers = [str(c) for c in ctx.vars.get("san_controllers") or []]
        if not controllers:
            return f"echo {shlex.quote(NOT_APPLICABLE_MARKER + ' no SAN controllers configured for this host (site file: san_controllers)')}\n"
        ctrls = " ".join(shlex.quote(c) for c in controllers)
        return (
            require_tool("SMcli", *SMCLI_DIRS)
            + section("controllers")
            + f"printf '%s\\n' {ctrls}\n"
            + f'out=$("$TOOL_SMcli" {ctrls} -c {shlex.quote(CMD_LOGICAL_DRIVES)} 2>&1); rc=$?\n'
            + f"cmd={shlex.quote(CMD_LOGICAL_DRIVES)}\n"
            + 'if [ "$rc" -ne 0 ] && ! printf "%s\\n" "$out" | grep -qi "logical drive name"; then\n'
            + "  " + section("first-attempt")
            + '  printf "%s\\n" "$out"; echo "rc=$rc"\n'
            + f'  out=$("$TOOL_SMcli" {ctrls} -c {shlex.quote(CMD_VOLUMES)} 2>&1); rc=$?\n'
            + f"  cmd={shlex.quote(CMD_VOLUMES)}\n"
            + "fi\n"
            + section("command")
            + 'printf "%s\\n" "$cmd"\n'
            + section("output")
            + 'printf "%s\\n" "$out"\n'
            + section("rc")
            + 'echo "$rc"\n'
        )

    def parse(self, text: str) -> SanFacts:
        command = None
        controllers: list[str] = []
        if SECTION_MARKER + "output" in text:
            sections = split_sections(text)
            body = sections.get("output", "")
            command = (sections.get("command") or "").strip() or None
            controllers = [c.strip() for c in (sections.get("controllers") or "").splitlines() if c.strip()]
            rc = (sections.get("rc") or "0").strip() or "0"
            if rc != "0":
                err = next((ln.strip() for ln in body.splitlines() if _ERROR_RE.search(ln)), None)
                first = err or next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
                raise ProbeParseError(f"SMcli {command or ''} exited with status {rc}: {first[:300]}".replace("  ", " "))
        else:
            body = text
        parsed = parse_smcli_show(body)
        return SanFacts(
            generation=parsed["generation"],
            command=command,
            controllers=controllers,
            completed=parsed["completed"],
            drives=parsed["drives"],
        )
