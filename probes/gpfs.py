"""GPFS / IBM Storage Scale probes: ``gpfs.mmlsconfig`` (persisted) and ``gpfs.mmdiag`` (active).

The commands are looked for on PATH and in /usr/lpp/mmfs/bin; a host without them (a node that
is not in a GPFS cluster) is not applicable. A command that is present but fails (daemon down,
permission denied) is a parse error carrying the tool's message. Output grammar, the
effective-value rule and what is and isn't verified: see probes/gpfs_format.py.

``gpfs.mmlsconfig`` script output (sections):

* ``mmlsconfig``  -- the output of ``mmlsconfig`` (stderr merged)
* ``rc``          -- its exit status
* ``node``        -- the GPFS node name (site ``gpfs_node``, else ``hostname -s``)
* ``nodeclasses`` -- ``mmlsnodeclass --all -Y`` when that command exists (else the section is
  absent and only the node name and the ``all`` class scope the values)

``parse`` also accepts a raw ``mmlsconfig`` capture without sections (node unknown: the
effective values are then the cluster-wide ones).
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, Field

from probes.gpfs_format import (
    NAMED_ATTRIBUTES,
    classes_of,
    parse_mmdiag_config,
    parse_mmlsconfig,
    parse_mmlsnodeclass,
    resolve_effective,
)
from probes.probe import (
    SECTION_MARKER,
    Probe,
    ProbeContext,
    ProbeParseError,
    require_tool,
    section,
    split_sections,
)

GPFS_BIN = "/usr/lpp/mmfs/bin"


class MmlsconfigEntry(BaseModel):
    attribute: str
    #: the rest of the line, verbatim (spaces, semicolons, <...> kept)
    value: str
    #: node names / node classes of the ``[...]`` section, None = cluster-wide
    scope: list[str] | None = None
    line: str
    lineno: int


class EffectiveValue(BaseModel):
    #: None when unknown (see ``unknown``)
    value: str | None
    #: bytes, for size attributes only (binary suffixes)
    bytes: int | None = None
    #: for count attributes written without a suffix only
    count: int | None = None
    #: yes/no values
    enabled: bool | None = None
    #: why the value is unknown: a node-class line may apply and the node's classes are unknown
    unknown: str | None = None
    scope: list[str] | None = None
    line: str
    lineno: int


class GpfsConfigFacts(BaseModel):
    cluster_name: str | None = None
    filesystems: list[str] = Field(default_factory=list)
    entries: list[MmlsconfigEntry] = Field(default_factory=list)
    #: the trailer (file system list) was seen
    complete: bool = False
    node: str | None = None
    #: node classes this node belongs to (from mmlsnodeclass)
    node_classes: list[str] = Field(default_factory=list)
    #: whether mmlsnodeclass output was available
    node_classes_known: bool = False
    #: every class with its members, as listed by mmlsnodeclass
    all_node_classes: dict[str, list[str]] = Field(default_factory=dict)
    #: value per attribute in force for ``node`` (every key; named tunables normalised)
    effective: dict[str, EffectiveValue] = Field(default_factory=dict)
    #: the named tunables that are set (pagepool, prefetchThreads, ...)
    named: list[str] = Field(default_factory=list)
    unparsed: list[str] = Field(default_factory=list)


class ActiveValue(BaseModel):
    value: str
    changed: str | None = None
    bytes: int | None = None
    count: int | None = None


class GpfsActiveFacts(BaseModel):
    node: str | None = None
    active: dict[str, ActiveValue] = Field(default_factory=dict)


def _node_snippet(ctx: ProbeContext) -> str:
    node = ctx.vars.get("gpfs_node")
    if node:
        return f"echo {shlex.quote(str(node))}\n"
    return "hostname -s 2>/dev/null || uname -n\n"


def _run_section(name: str, command: str) -> str:
    """Run ``command`` with stderr merged, print its output and its exit status."""
    return (
        section(name)
        + f"out=$({command} 2>&1); rc=$?\n"
        + "printf '%s\\n' \"$out\"\n"
        + section("rc")
        + 'echo "$rc"\n'
    )


def _check_rc(sections: dict[str, str], body: str, tool: str) -> None:
    rc = sections.get("rc", "0").strip() or "0"
    if rc != "0":
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        raise ProbeParseError(f"{tool} exited with status {rc}" + (f": {first[:300]}" if first else ""))


class MmlsconfigProbe(Probe):
    name = "gpfs.mmlsconfig"
    title = "GPFS persisted configuration (mmlsconfig) with per-node effective values"
    needs_root = True
    facts_model = GpfsConfigFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("mmlsconfig", GPFS_BIN)
            + _run_section("mmlsconfig", '"$TOOL_mmlsconfig"')
            + section("node")
            + _node_snippet(ctx)
            + 'NC=""\n'
            + 'if command -v mmlsnodeclass >/dev/null 2>&1; then NC=$(command -v mmlsnodeclass); '
            + f'elif [ -x {GPFS_BIN}/mmlsnodeclass ]; then NC={GPFS_BIN}/mmlsnodeclass; fi\n'
            + 'if [ -n "$NC" ]; then\n'
            + "  " + section("nodeclasses")
            + '  "$NC" --all -Y 2>/dev/null\n'
            + "fi\n"
        )

    def parse(self, text: str) -> GpfsConfigFacts:
        if SECTION_MARKER + "mmlsconfig" in text:
            sections = split_sections(text)
            body = sections.get("mmlsconfig", "")
            _check_rc(sections, body, "mmlsconfig")
            node = (sections.get("node") or "").strip().splitlines()
            node_name = node[0].strip() if node else None
            nc_text = sections.get("nodeclasses")
        else:
            body, node_name, nc_text = text, None, None
        parsed = parse_mmlsconfig(body)
        all_classes = parse_mmlsnodeclass(nc_text) if nc_text else {}
        node_classes = classes_of(node_name, all_classes)
        effective = resolve_effective(parsed["entries"], node_name, node_classes, classes_known=bool(all_classes))
        return GpfsConfigFacts(
            cluster_name=parsed["cluster_name"],
            filesystems=parsed["filesystems"],
            entries=parsed["entries"],
            complete=parsed["complete"],
            node=node_name or None,
            node_classes=node_classes,
            node_classes_known=bool(all_classes),
            all_node_classes=all_classes,
            effective=effective,
            named=[a for a in NAMED_ATTRIBUTES if a in effective and effective[a]["value"] is not None],
            unparsed=parsed["unparsed"],
        )


class MmdiagConfigProbe(Probe):
    name = "gpfs.mmdiag"
    title = "GPFS active daemon configuration (mmdiag --config -Y)"
    needs_root = True
    facts_model = GpfsActiveFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            require_tool("mmdiag", GPFS_BIN)
            + _run_section("mmdiag", '"$TOOL_mmdiag" --config -Y')
            + section("node")
            + _node_snippet(ctx)
        )

    def parse(self, text: str) -> GpfsActiveFacts:
        node_name: str | None = None
        if SECTION_MARKER + "mmdiag" in text:
            sections = split_sections(text)
            body = sections.get("mmdiag", "")
            _check_rc(sections, body, "mmdiag")
            node = (sections.get("node") or "").strip().splitlines()
            node_name = node[0].strip() if node else None
        else:
            body = text
        parsed: dict[str, Any] = parse_mmdiag_config(body)
        return GpfsActiveFacts(node=node_name or None, active=parsed["active"])
