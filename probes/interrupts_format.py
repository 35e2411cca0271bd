"""Pure parsers of ``/proc/interrupts`` and the kernel's CPU lists (the ``nic.ports`` probe's queue
interrupts, probes/nic.py).

``/proc/interrupts`` (fs/proc/interrupts.c, kernel/irq/proc.c ``show_interrupts``): a header naming
the online CPUs (``CPU0 CPU1 ...``), then one line per interrupt: ``NN:``, one count per CPU, the
interrupt chip (``IR-PCI-MSI-edge`` on older kernels; ``IR-PCI-MSIX-0000:01:00.0  1-edge`` since
4.x: chip name, then hardware IRQ and trigger), then the handlers' names (``eth0-TxRx-0``,
``mlx5_comp0@pci:0000:01:00.0``, ``ehci_hcd:usb1, uhci_hcd:usb7``). Lines of architecture counters
(``NMI:``, ``LOC:``, ``ERR:``) are not device interrupts and are left out.

A CPU list (``smp_affinity_list``, ``/sys/devices/system/cpu/online``) is ``0-3,8,10-11``
(lib/bitmap.c ``bitmap_parselist``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from probes.probe import ProbeParseError, bounded_int

_TRIGGER = re.compile(r"(edge|level|fasteoi|simple|bad|percpu)$", re.I)
_CPU_LIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
#: the most CPUs a list may name (the kernel's NR_CPUS is at most 8192)
MAX_CPUS = 8192


class Interrupt(BaseModel):
    irq: int
    #: interrupts taken per CPU since boot, in the header's order
    counts: list[int]
    #: the handlers' names as printed (``eth0-TxRx-0``)
    name: str


def parse_interrupts(text: str) -> tuple[list[int], dict[int, Interrupt]]:
    """(the CPUs of the header, IRQ number -> its line)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].split() or not all(re.fullmatch(r"CPU\d+", c) for c in lines[0].split()):
        raise ProbeParseError(f"/proc/interrupts: no 'CPU0 CPU1 ...' header: {(lines or [''])[0][:60]!r}")
    cpus = [bounded_int(c[3:], "/proc/interrupts CPU") for c in lines[0].split()]
    n = len(cpus)
    out: dict[int, Interrupt] = {}
    for line in lines[1:]:
        head, sep, rest = line.partition(":")
        if not sep or not head.strip().isdigit():
            continue  # NMI, LOC, ERR ...: architecture counters
        fields = rest.split()
        counts = []
        for f in fields[:n]:
            if not f.isdigit():
                break
            counts.append(bounded_int(f, f"/proc/interrupts IRQ {head.strip()}"))
        if len(counts) != n:
            raise ProbeParseError(f"/proc/interrupts IRQ {head.strip()[:10]}: {len(counts)} counts for {n} CPUs")
        tail = fields[n:]
        at = max((i for i, t in enumerate(tail) if _TRIGGER.search(t)), default=None)
        name = " ".join(tail[at + 1:] if at is not None else tail[-1:])
        irq = bounded_int(head.strip(), "/proc/interrupts IRQ")
        out[irq] = Interrupt(irq=irq, counts=counts, name=name)
    return cpus, out


def parse_cpu_list(text: str, what: str) -> list[int]:
    """``0-3,8`` -> [0, 1, 2, 3, 8]; ProbeParseError naming ``what`` otherwise."""
    t = text.strip()
    if not _CPU_LIST.fullmatch(t):
        raise ProbeParseError(f"{what}: {t[:40]!r} is not a CPU list")
    out: set[int] = set()
    for part in t.split(","):
        a, _, b = part.partition("-")
        lo, hi = int(a), int(b or a)
        if hi < lo or hi >= MAX_CPUS:
            raise ProbeParseError(f"{what}: CPU range {part!r} out of order or past {MAX_CPUS}")
        out.update(range(lo, hi + 1))
    return sorted(out)


def cpu_list_text(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] -> ``0-3,8``."""
    out: list[str] = []
    for c in sorted(set(cpus)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        elif out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)
