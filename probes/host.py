"""The ``host`` probe: hostname, kernel, OS release, CPU and memory.

Remotely the script prints five sections read straight from the kernel and /etc:

* ``hostname``   -- ``uname -n`` (the kernel's nodename, what ``hostname`` prints)
* ``kernel``     -- ``uname -r``
* ``os-release`` -- /etc/os-release (or /usr/lib/os-release, as os-release(5) says)
* ``cpuinfo``    -- /proc/cpuinfo
* ``meminfo``    -- /proc/meminfo

Locally, ``local_text`` builds the same text from ``platform`` and ``psutil`` (no fork), so
``parse`` stays the one path from text to facts.

Logical cores are the ``processor`` stanzas of /proc/cpuinfo. Physical cores are the distinct
``(physical id, core id)`` pairs when the kernel prints them (x86); on architectures whose
cpuinfo has no topology (arm64, most VMs' ppc64le) they are ``None``. The CPU model is the
first ``model name`` (x86, arm64 with newer kernels), else ``Processor``/``cpu``/``uarch`` lines.

IBM Z (s390x) prints no ``processor`` stanzas: a header (``vendor_id : IBM/S390``, ``# processors : N``,
one ``processor N: version = .., identification = .., machine = ..`` line per CPU) and, on newer
kernels, one ``cpu number : N`` stanza per CPU with ``physical id``/``core id``. Logical cores are
those stanzas, else the ``processor N:`` lines, else ``# processors``; the model is the vendor and
the machine type (``IBM/S390 machine 2964``).
"""

from __future__ import annotations

import platform
import re
import shlex

from pydantic import BaseModel

from probes.probe import Probe, ProbeContext, ProbeParseError, section, split_sections, bounded_int

_KEY_VALUE_RE = re.compile(r"^([^:]+?)\s*:\s?(.*)$")
_MEMINFO_RE = re.compile(r"^(\w[\w()]*):\s+(\d+)(?:\s+(kB))?\s*$")
_CPU_MODEL_KEYS = ("model name", "Processor", "cpu model", "cpu", "uarch", "Model")


class HostSystemFacts(BaseModel):
    """What the host is: name, kernel, OS, CPU and memory."""

    hostname: str
    #: ``uname -r``
    kernel: str
    #: os-release PRETTY_NAME (falls back to NAME)
    os_name: str | None = None
    #: os-release ID (``debian``, ``rhel``, ``almalinux`` ...)
    os_id: str | None = None
    #: os-release VERSION_ID (``12``, ``9.4``)
    os_version: str | None = None
    cpu_model: str | None = None
    #: logical CPUs (hardware threads)
    cpu_cores: int
    #: distinct physical cores, when /proc/cpuinfo shows the topology
    cpu_physical_cores: int | None = None
    #: MemTotal in bytes
    memory_bytes: int


def parse_os_release(text: str) -> dict[str, str]:
    """os-release(5): ``KEY=value`` lines, value optionally in shell quotes."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            continue
        try:
            words = shlex.split(raw)
        except ValueError:
            words = [raw.strip("\"'")]
        out[key] = " ".join(words)
    return out


def _cpuinfo_stanzas(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                stanzas.append(current)
                current = {}
            continue
        m = _KEY_VALUE_RE.match(line)
        if m:
            current.setdefault(m.group(1).strip(), m.group(2).strip())
    if current:
        stanzas.append(current)
    return stanzas


_S390_PROCESSOR_RE = re.compile(r"^processor (\d+):.*\bmachine = (\w+)", re.MULTILINE)


def _parse_cpuinfo_s390(text: str, stanzas: list[dict[str, str]]) -> tuple[str | None, int, int | None] | None:
    """IBM Z: see the module docstring; None when the text is not s390x cpuinfo either."""
    header = stanzas[0] if stanzas else {}
    lines = _S390_PROCESSOR_RE.findall(text)
    if not header.get("vendor_id", "").startswith("IBM/S390") and not lines:
        return None
    cpus = [s for s in stanzas if s.get("cpu number", "").isdigit()]
    if cpus:
        logical = len(cpus)
    elif lines:
        logical = len({n for n, _ in lines})
    elif header.get("# processors", "").isdigit():
        logical = int(header["# processors"])
    else:
        return None
    machine = lines[0][1] if lines else None
    model = " ".join(x for x in (header.get("vendor_id"), f"machine {machine}" if machine else None) if x) or None
    cores = {(s["physical id"], s["core id"]) for s in cpus if "physical id" in s and "core id" in s}
    physical = len(cores) if cpus and len(cores) <= logical and all("core id" in s for s in cpus) else None
    return model, logical, physical


def _parse_cpuinfo(text: str) -> tuple[str | None, int, int | None]:
    stanzas = _cpuinfo_stanzas(text)
    processors = [s for s in stanzas if "processor" in s and s["processor"].isdigit()]
    if not processors:
        s390 = _parse_cpuinfo_s390(text, stanzas)
        if s390 is None:
            raise ProbeParseError("cpuinfo: no 'processor' entries (nor IBM Z 'processor N:' / 'cpu number' lines)")
        return s390
    model = None
    for s in stanzas:
        for key in _CPU_MODEL_KEYS:
            if s.get(key):
                model = s[key]
                break
        if model:
            break
    cores: set[tuple[str, str]] = set()
    for s in processors:
        if "physical id" in s and "core id" in s:
            cores.add((s["physical id"], s["core id"]))
    physical = len(cores) if cores and len(cores) <= len(processors) else None
    if physical is not None and any("core id" not in s for s in processors):
        physical = None
    return model, len(processors), physical


def _parse_memtotal(text: str) -> int:
    for line in text.splitlines():
        m = _MEMINFO_RE.match(line.strip())
        if m and m.group(1) == "MemTotal":
            value = bounded_int(m.group(2), "meminfo: MemTotal")
            return value * 1024 if m.group(3) else value
    raise ProbeParseError("meminfo: no MemTotal line")


class HostProbe(Probe):
    name = "host"
    title = "Host identity: hostname, kernel, OS, CPU, memory"
    facts_model = HostSystemFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            section("hostname")
            + "uname -n\n"
            + section("kernel")
            + "uname -r\n"
            + section("os-release")
            + "if [ -r /etc/os-release ]; then cat /etc/os-release; "
            "elif [ -r /usr/lib/os-release ]; then cat /usr/lib/os-release; fi\n"
            + section("cpuinfo")
            + "cat /proc/cpuinfo\n"
            + section("meminfo")
            + "cat /proc/meminfo\n"
        )

    def local_text(self, ctx: ProbeContext) -> str | None:
        import psutil

        uname = platform.uname()
        try:
            os_release = "\n".join(f"{k}={shlex.quote(v)}" for k, v in platform.freedesktop_os_release().items())
        except OSError:
            os_release = ""
        logical = psutil.cpu_count(logical=True) or 0
        physical = psutil.cpu_count(logical=False)
        model = _local_cpu_model() or uname.processor or uname.machine
        # Render the topology the way /proc/cpuinfo does, so parse reads it the same way.
        stanzas = []
        for i in range(logical):
            lines = [f"processor\t: {i}", f"model name\t: {model}"]
            if physical:
                lines += ["physical id\t: 0", f"core id\t\t: {i % physical}"]
            stanzas.append("\n".join(lines))
        mem_kib = psutil.virtual_memory().total // 1024
        return (
            f"@@section hostname\n{uname.node}\n"
            f"@@section kernel\n{uname.release}\n"
            f"@@section os-release\n{os_release}\n"
            f"@@section cpuinfo\n" + "\n\n".join(stanzas) + "\n\n"
            f"@@section meminfo\nMemTotal:       {mem_kib} kB\n"
        )

    def parse(self, text: str) -> HostSystemFacts:
        sections = split_sections(text)
        for required in ("hostname", "kernel", "cpuinfo", "meminfo"):
            if required not in sections:
                raise ProbeParseError(f"host output has no {required!r} section (truncated?)")
        hostname = sections["hostname"].strip()
        kernel = sections["kernel"].strip()
        if not hostname or "\n" in hostname or len(hostname) > 255:
            raise ProbeParseError("hostname section is not one host name")
        if not kernel or "\n" in kernel or " " in kernel:
            raise ProbeParseError("kernel section is not one release string")
        osr = parse_os_release(sections.get("os-release", ""))
        model, logical, physical = _parse_cpuinfo(sections["cpuinfo"])
        return HostSystemFacts(
            hostname=hostname,
            kernel=kernel,
            os_name=osr.get("PRETTY_NAME") or osr.get("NAME"),
            os_id=osr.get("ID"),
            os_version=osr.get("VERSION_ID"),
            cpu_model=model,
            cpu_cores=logical,
            cpu_physical_cores=physical,
            memory_bytes=_parse_memtotal(sections["meminfo"]),
        )


def _local_cpu_model() -> str | None:
    """The CPU model on this machine (Linux: /proc/cpuinfo; elsewhere platform)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            model, _, _ = _parse_cpuinfo(fh.read())
            return model
    except (OSError, ProbeParseError):
        return None
