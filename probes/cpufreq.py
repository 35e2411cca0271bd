"""The CPU frequency governor and driver (``cpu.frequency``): ESnet fasterdata's host checklist asks
for the ``performance`` governor on data movers, as a clocked-down core serves a NIC queue slower.

Read from the kernel's cpufreq policies (Documentation/admin-guide/pm/cpufreq.rst):
``/sys/devices/system/cpu/cpufreq/policyN/{scaling_driver, scaling_governor,
scaling_available_governors, scaling_max_freq, cpuinfo_max_freq, affected_cpus}``; kernels before
4.3 have no policy directories, only ``/sys/devices/system/cpu/cpuN/cpufreq``, read the same way. A host
without cpufreq (most VMs, firmware that keeps the frequency to itself) is not applicable and says so.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.interrupts_format import parse_cpu_list
from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError, bounded_int, section, split_sections

FILES = ("scaling_driver", "scaling_governor", "scaling_available_governors", "scaling_max_freq",
         "cpuinfo_max_freq", "affected_cpus")
_POLICY = re.compile(r"(policy|cpu)\d{1,5}")
_WORD = re.compile(r"[a-z0-9_-]{1,32}")


class CpufreqPolicy(BaseModel):
    driver: str | None = None
    governor: str | None = None
    available: list[str] = Field(default_factory=list)
    #: kHz
    max_freq_khz: int | None = None
    hw_max_freq_khz: int | None = None
    cpus: list[int] = Field(default_factory=list)


class CpuFrequencyFacts(BaseModel):
    policies: dict[str, CpufreqPolicy] = Field(default_factory=dict)
    #: the governor every policy runs, or their distinct governors joined by ``,``
    governor: str | None = None
    driver: str | None = None
    #: the governors every policy offers
    available: list[str] = Field(default_factory=list)
    #: the lowest scaling_max_freq / cpuinfo_max_freq of the policies (1.0: nothing capped)
    max_freq_of_hw: float | None = None


def _script() -> str:
    return f"""\
d=/sys/devices/system/cpu
set -- "$d"/cpufreq/policy[0-9]*
[ -d "$1" ] || set -- "$d"/cpu[0-9]*/cpufreq
[ -d "$1" ] || {{ echo "{NOT_APPLICABLE_MARKER} no cpufreq policy ($d/cpufreq is empty: a VM, or the firmware sets the frequency)"; exit 0; }}
{section('policies')}for p in "$@"; do
  n=${{p%/cpufreq}}; n=${{n##*/}}
  for f in {' '.join(FILES)}; do v=; read -r v 2>/dev/null <"$p/$f"; printf '%s\\t%s\\t%s\\n' "$n" "$f" "$v"; done
done
"""


def parse_cpufreq(text: str) -> CpuFrequencyFacts:
    sections = split_sections(text)
    if "policies" not in sections:
        raise ProbeParseError("cpu.frequency output has no 'policies' section")
    raw: dict[str, dict[str, str]] = {}
    for lineno, line in enumerate(sections["policies"].splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not _POLICY.fullmatch(parts[0]) or parts[1] not in FILES:
            raise ProbeParseError(f"cpu.frequency line {lineno} is not 'policy<TAB>file<TAB>value': {line[:60]!r}")
        raw.setdefault(parts[0], {})[parts[1]] = parts[2].strip()
    if not raw:
        raise ProbeParseError("cpu.frequency: no policy read")
    facts = CpuFrequencyFacts()
    for name, f in sorted(raw.items(), key=lambda kv: int(re.sub(r"\D", "", kv[0]))):
        words = [w for w in (f.get("scaling_available_governors") or "").split() if _WORD.fullmatch(w)]
        gov, drv = f.get("scaling_governor") or "", f.get("scaling_driver") or ""
        facts.policies[name] = CpufreqPolicy(
            driver=drv if _WORD.fullmatch(drv) else None, governor=gov if _WORD.fullmatch(gov) else None,
            available=words,
            max_freq_khz=bounded_int(f["scaling_max_freq"], "scaling_max_freq") if (f.get("scaling_max_freq") or "").isdigit() else None,
            hw_max_freq_khz=bounded_int(f["cpuinfo_max_freq"], "cpuinfo_max_freq") if (f.get("cpuinfo_max_freq") or "").isdigit() else None,
            cpus=parse_cpu_list(",".join(f["affected_cpus"].split()), "affected_cpus") if f.get("affected_cpus") else [])
    pols = list(facts.policies.values())
    governors = sorted({p.governor for p in pols if p.governor})
    facts.governor = ",".join(governors) or None
    drivers = sorted({p.driver for p in pols if p.driver})
    facts.driver = ",".join(drivers) or None
    offered = [set(p.available) for p in pols if p.available]
    facts.available = sorted(set.intersection(*offered)) if offered else []
    shares = [p.max_freq_khz / p.hw_max_freq_khz for p in pols if p.max_freq_khz and p.hw_max_freq_khz]
    facts.max_freq_of_hw = round(min(shares), 4) if shares else None
    return facts


class CpuFrequencyProbe(Probe):
    name = "cpu.frequency"
    title = "CPU frequency governor and driver, and any cap below the hardware maximum"
    facts_model = CpuFrequencyFacts

    def script(self, ctx: ProbeContext) -> str:
        return _script()

    def parse(self, text: str) -> CpuFrequencyFacts:
        return parse_cpufreq(text)
