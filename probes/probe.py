"""The probe contract.

A probe is a small, pure thing: it declares the shell script it needs run on a host and a
``parse(text) -> facts`` function. Parsing never does I/O, so the same probe works locally,
over SSH, and from a directory of captured outputs.

Conventions every probe follows:

* ``script(ctx)`` returns a POSIX ``sh`` script. Its stdout is exactly what ``parse`` reads.
  Several files/commands are separated by ``@@section NAME`` lines (see ``split_sections``).
* A tool that is absent on the host (no ``mmlsconfig`` on a worker node) makes the script
  print ``@@storadvise-not-applicable: <reason>`` and exit 0: the probe is then
  ``not_applicable``, never an error (use ``require_tool`` to emit that check).
* A tool that is present but fails (permission denied, daemon down) exits non-zero or prints
  its message; ``parse`` raises ``ProbeParseError`` with a one-line message; the collector
  turns that into an ``error`` result carried into the report.
* ``parse`` must raise nothing but ``ProbeParseError`` on any input (tested with hypothesis).
"""

from __future__ import annotations

import re
import shlex
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, Field

NOT_APPLICABLE_MARKER = "@@storadvise-not-applicable:"
SECTION_MARKER = "@@section "


class ProbeParseError(Exception):
    """Malformed or truncated tool output. The message is one line, naming what was wrong.

    Host output quoted in the message is folded onto that line and cut at 300 characters.
    """

    def __init__(self, message: object = ""):
        text = " ".join(str(message).split())
        super().__init__(text if len(text) <= 300 else text[:297] + "...")


#: the most digits a number read from a host may have: more than any counter or size a real tool
#: prints (2**64 has 20), far below Python's int conversion limit (4,300 digits, a ValueError)
MAX_INT_DIGITS = 24


def bounded_int(text: str, what: str) -> int:
    """``int(text)`` for a decimal number a host printed; ``ProbeParseError`` naming ``what`` when it
    is not one or has more than ``MAX_INT_DIGITS`` digits."""
    t = text.strip()
    digits = t.lstrip("+-")
    if not digits.isdigit() or not digits.isascii():
        raise ProbeParseError(f"{what}: not a number: {t[:40]!r}")
    if len(digits) > MAX_INT_DIGITS:
        raise ProbeParseError(f"{what}: number with {len(digits)} digits (at most {MAX_INT_DIGITS})")
    return int(t)


class ProbeContext(BaseModel):
    """What a probe may know about the host when it builds its script."""

    host: str
    roles: list[str] = Field(default_factory=list)
    is_local: bool = False
    #: interval for sampled probes (disk utilisation), seconds
    sample_seconds: float = 5.0
    storage_prefixes: list[str] = Field(default_factory=list)
    storage_interfaces: list[str] = Field(default_factory=list)
    #: host and site variables (free-form; e.g. xcache config path overrides, and the host settings
    #: a storage kind declares, such as ``gpfs_node`` and ``san_controllers``)
    vars: dict[str, Any] = Field(default_factory=dict)
    #: probe name -> the keys the loaded rules ask it to read (pyinfra's ``keys=``): the keys of its
    #: ``keyed_facts`` mapping that rule fact paths and change keys name (advisor.rules.probe_requests)
    requested: dict[str, list[str]] = Field(default_factory=dict)
    #: the storage ports whose connections ``network.flows`` samples (``1094``, ``20000-25000``): the
    #: site's ``flow_ports`` with its storage kinds' ports (advisor.flows.ports); empty: the probe's defaults
    flow_ports: list[str] = Field(default_factory=list)
    #: the script is rendered into the probe helper, which sudo runs as root for a plain user
    #: (advisor.collect.probe_helper): a probe may then confine what it reads (``Probe.root_paths``)
    root_helper: bool = False


class Probe(ABC):
    """Base class; subclasses set the class attributes and implement script/parse."""

    #: dotted name, ``subsystem.what`` (``network.sysctl``, ``block.diskstats``, ``gpfs.mmlsconfig``)
    name: ClassVar[str]
    title: ClassVar[str] = ""
    #: run only on hosts with one of these roles; empty = every host
    roles: ClassVar[frozenset[str]] = frozenset()
    #: the script needs root (run through sudo when the host is configured for it)
    needs_root: ClassVar[bool] = False
    #: the pydantic model ``parse`` returns
    facts_model: ClassVar[type[BaseModel]]
    #: the facts mapping whose keys the rules choose (``sysctls``): a rule's fact path
    #: ``sysctls."net.ipv4.tcp_sack".runtime`` or a change of an adapter of this probe with key
    #: ``net.ipv4.tcp_sack`` makes the probe read that key (``ProbeContext.requested``); None: the
    #: probe reads a fixed set
    keyed_facts: ClassVar[str | None] = None
    #: a root probe's host variables that name files it reads, and where they may point when the
    #: probe helper runs it as root (docs/privileges.md prints them): variable -> locations, each a
    #: file or a directory ending in ``/`` (any file below it)
    root_paths: ClassVar[dict[str, tuple[str, ...]]] = {}

    def applies_to(self, roles: list[str]) -> bool:
        return not self.roles or bool(self.roles & set(roles))

    @abstractmethod
    def script(self, ctx: ProbeContext) -> str:
        """The shell script whose stdout ``parse`` reads."""

    @abstractmethod
    def parse(self, text: str) -> BaseModel:
        """Pure parser: text in, facts out; raises only ProbeParseError."""

    def timeout(self, ctx: ProbeContext) -> float:
        """Seconds the script may run."""
        return 30.0

    def local_text(self, ctx: ProbeContext) -> str | None:
        """Optionally produce the script's output in-process on the local host (e.g. with psutil).

        Returns None to run ``script`` instead.
        """
        return None


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_in(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings_in(v)]
    return []


def within(path: str, locations: tuple[str, ...]) -> bool:
    """``path`` is one of ``locations`` or below one ending in ``/`` (no ``.``/``..`` component, no ``//``)."""
    if not path.startswith("/") or any(c in ("", ".", "..") for c in path.split("/")[1:]):
        return False
    return any(path == loc or (loc.endswith("/") and path.startswith(loc)) for loc in locations)


def root_path_problem(probe: "Probe", variables: dict[str, Any]) -> str | None:
    """Why ``variables`` make ``probe``, run as root by the probe helper, read a location it does not
    document (None: they do not). Only the strings a path variable holds count (a probe ignores the rest)."""
    for var, locations in probe.root_paths.items():
        for path in _strings_in(variables.get(var)):
            if path and not within(path, locations):
                return (f"{var} {path[:120]!r}: the {probe.name} probe reads it as root through the probe helper, "
                        f"which reads only {', '.join(locations)} (docs/privileges.md)")
    return None


def not_applicable_reason(text: str) -> str | None:
    """The reason when the output says the probe does not apply, else None."""
    for line in text.splitlines()[:5]:
        if line.startswith(NOT_APPLICABLE_MARKER):
            return line[len(NOT_APPLICABLE_MARKER):].strip() or "not applicable"
    return None


def require_tool(tool: str, *extra_dirs: str) -> str:
    """Shell snippet: find ``tool`` on PATH or in ``extra_dirs``, set ``$TOOL_<name>``, or bow out.

    The variable is ``TOOL`` with non-alphanumerics turned to ``_`` appended (``TOOL_mmlsconfig``).
    """
    var = "TOOL_" + re.sub(r"[^A-Za-z0-9]", "_", tool)
    q = shlex.quote(tool)
    checks = " ".join(f"{shlex.quote(d.rstrip('/') + '/' + tool)}" for d in extra_dirs)
    return (
        f'{var}=""\n'
        f"if command -v {q} >/dev/null 2>&1; then {var}=$(command -v {q}); else\n"
        f"  for c in {checks}; do [ -x \"$c\" ] && {var}=\"$c\" && break; done\n"
        f"fi\n"
        f'[ -n "${var}" ] || {{ echo "{NOT_APPLICABLE_MARKER} {tool} not found"; exit 0; }}\n'
    )


def section(name: str) -> str:
    """Shell snippet that starts a section of the output."""
    return f"echo {shlex.quote(SECTION_MARKER + name)}\n"


def split_sections(text: str) -> dict[str, str]:
    """Split ``@@section NAME`` delimited output into ``{NAME: body}``; text before the first
    marker is kept under ``""``. A repeated name keeps the last body."""
    out: dict[str, str] = {}
    current = ""
    buf: list[str] = []
    for line in text.splitlines():
        if line.startswith(SECTION_MARKER):
            out[current] = "\n".join(buf)
            current = line[len(SECTION_MARKER):].strip()
            buf = []
        else:
            buf.append(line)
    out[current] = "\n".join(buf)
    if out.get("") == "":
        del out[""]
    return out


#: the shortest sample window a sampled probe takes (a smaller --sample-seconds is raised to it)
MIN_SAMPLE_SECONDS = 0.1


class SampledProbe(Probe):
    """A probe that reads its host twice over the scan's sample window (``--sample-seconds``): the
    disk sample (block.diskstats) and the production flows (network.flows) share the window."""

    def sample_seconds(self, ctx: ProbeContext) -> float:
        return max(MIN_SAMPLE_SECONDS, float(ctx.sample_seconds))

    def timeout(self, ctx: ProbeContext) -> float:
        return self.sample_seconds(ctx) + 30.0
