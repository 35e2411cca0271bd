"""Lab scenario files: the topology of a miniature site and the faults injected into it.

A scenario is YAML (schema in docs/lab.md), validated here with pydantic; a problem is reported
as one line naming file, line and field (advisor.util.yaml_lines). Built-in scenarios live in
``advisor/lab/scenarios/NAME.yml``; ``--scenario`` takes a built-in name or a path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from advisor.util.errors import SiteFileError, StoradviseError
from advisor.lab.emulators.nic_lab import SECTION as HOST_NICS, HostCpu, HostNic
from advisor.lab.scenario_faults import ExpectedFinding, GroupFirewall, merge_iptables
from advisor.lab.scenario_traffic import Traffic, check_traffic
from advisor.site.host_patterns import host_pattern
from advisor.site.model import MeshSpec, Role
from advisor.util.units import parse_rate_bps
from advisor.util.yaml_lines import load_located_yaml

BUILTIN_DIR = Path(__file__).parent / "scenarios"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_RANGE_RE = re.compile(r"^(?P<pre>[^\[\]]*)\[(?P<a>\d+):(?P<b>\d+)\](?P<post>[^\[\]]*)$")
_DELAY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s)?\s*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def parse_loss_ppm(value: Any) -> int:
    """Loss as parts per million: ``0.3%``, ``0.003``, ``3000ppm``."""
    if isinstance(value, bool):
        raise ValueError(f"not a loss rate: {value!r}")
    if isinstance(value, (int, float)):
        frac = float(value)
    else:
        s = str(value).strip().lower()
        if s.endswith("ppm"):
            frac = float(s[:-3]) / 1e6
        elif s.endswith("%"):
            frac = float(s[:-1]) / 100
        else:
            frac = float(s)
    if not 0 <= frac <= 1:
        raise ValueError(f"loss must be between 0 and 100% (got {value!r})")
    return round(frac * 1_000_000)


def parse_delay_ms(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _DELAY_RE.match(str(value))
    if not m:
        raise ValueError(f"not a delay: {value!r} (use e.g. 2ms)")
    n = float(m.group(1))
    return {"us": n / 1000, "ms": n, "s": n * 1000, None: n}[m.group(2)]


def expand_host_pattern(name: str) -> list[str]:
    """``wn[01:04]`` -> wn01..wn04 (Ansible inventory range syntax); other names as is."""
    m = _RANGE_RE.match(name)
    if not m:
        return [name]
    a, b = m.group("a"), m.group("b")
    width = len(a) if a.startswith("0") or len(a) == len(b) else 0
    lo, hi = int(a), int(b)
    if hi < lo or hi - lo > 1000:
        raise ValueError(f"bad host range {name!r}")
    return [f"{m.group('pre')}{str(i).zfill(width)}{m.group('post')}" for i in range(lo, hi + 1)]


class PersistedSysctls(_Strict):
    file: str = Field("60-storadvise-lab.conf", description="file name inside the host's /etc/sysctl.d")
    comment: str | None = None
    #: default: the host's runtime ``sysctls``
    values: dict[str, Any] | None = None

    @field_validator("file")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if "/" in v or v.startswith(".") or not v.endswith(".conf"):
            raise ValueError("a plain file name ending in .conf")
        return v


class Firewall(_Strict):
    """Rulesets applied inside the host's network namespace at ``up``.

    Placeholders: ``{{ addr:HOST }}`` (a host's lab address), ``{{ addrs:SELECTOR }}``
    (comma-separated addresses of a group/role/host), ``{{ self }}``, ``{{ prefix }}``.
    """

    nft: str | None = None
    iptables: str | None = Field(None, description="iptables-restore input")
    #: also written to the host's persisted ruleset (``<host dir>/etc/nftables.conf``,
    #: ``<host dir>/etc/iptables/rules.v4``), which ``lab reboot`` loads; false = runtime only
    persist: bool = True


_SYSCTL_KEY_RE = re.compile(r"net\.[a-z0-9_\-]+(\.[a-z0-9_\-]+)+")


class ScenarioHost(_Strict):
    name: str
    roles: list[Role] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    switch: str | None = None
    link_rate: int | None = None
    #: depth of the link shaper's queue, as the time a packet may wait in it (tbf latency; default 10ms)
    link_queue: float = 10.0
    sysctls: dict[str, Any] = Field(default_factory=dict)
    persist_sysctls: PersistedSysctls | None = None
    #: net.* keys made read-only inside the host once its runtime sysctls are set (as a container
    #: runtime or a site policy leaves them): ``sysctl -w`` of such a key fails on that host
    read_only_sysctls: list[str] = Field(default_factory=list)
    firewall: Firewall | None = None
    iperf3: bool = True
    #: processes of the host's other jobs, each spinning on one CPU from boot: CPU contention during
    #: every test that runs there (the lab's hosts share the machine's cores, so its neighbours feel it too)
    cpu_load: int = Field(0, ge=0, le=16)
    vars: dict[str, Any] = Field(default_factory=dict)
    #: the MTU of the host's eth0 (a real veth MTU; a switch carries its own ``mtu``)
    mtu: int | None = Field(None, ge=576, le=9216)
    #: an emulated physical NIC behind eth0 (advisor/lab/emulators/nic_lab.py): speed, rings, offloads,
    #: counters, queue interrupts
    nic: HostNic | None = None
    #: emulated cpufreq: the governor and a frequency cap
    cpu: HostCpu | None = None

    def shaping_rate(self) -> int | None:
        """The rate the lab shapes the host's link at: its ``link_rate`` (what the site expects), or less
        when its emulated NIC negotiated less (that NIC carries no more)."""
        if self.nic is not None and (self.link_rate is None or self.nic.speed * 10**6 < self.link_rate):
            return self.nic.speed * 10**6
        return self.link_rate

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        for n in expand_host_pattern(v):
            if not _NAME_RE.fullmatch(n) or len(n) > 63:
                raise ValueError("host name may hold letters, digits, '.', '_' and '-' only (or a range like wn[01:04])")
        return v

    @field_validator("link_rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> int | None:
        return None if v is None else parse_rate_bps(v)

    @field_validator("link_queue", mode="before")
    @classmethod
    def _queue(cls, v: Any) -> float:
        ms = parse_delay_ms(v)
        if not 1 <= ms <= 1000:
            raise ValueError(f"link_queue must be 1ms-1s (got {v!r})")
        return ms

    @field_validator("read_only_sysctls")
    @classmethod
    def _ro_keys(cls, v: list[str]) -> list[str]:
        for k in v:
            if not _SYSCTL_KEY_RE.fullmatch(k):
                raise ValueError(f"read-only sysctl {k!r}: a net.* key (per network namespace) like net.ipv4.tcp_sack")
        return v

    @field_validator("sysctls")
    @classmethod
    def _net_only(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if not k.startswith("net."):
                raise ValueError(
                    f"runtime sysctl {k!r} is not per network namespace: a lab may only set net.* at runtime "
                    "(put it in persist_sysctls.values to persist it without applying)"
                )
            if not re.fullmatch(r"[a-z0-9_.\-]+", k):
                raise ValueError(f"bad sysctl name {k!r}")
        return v


class Switch(_Strict):
    name: str
    uplink: str | None = Field(None, description="switch this one hangs from (a tree)")
    #: the MTU of the switch's ports (default: the kernel's 1500); hosts with a larger MTU behind ports
    #: that carry less lose their larger frames without an ICMP message (a path-MTU black hole)
    mtu: int | None = Field(None, ge=576, le=9216)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not _NAME_RE.fullmatch(v) or len(v) > 32:
            raise ValueError("switch name may hold letters, digits, '.', '_' and '-' only")
        return v


class PathFault(_Strict):
    src: list[str] = Field(alias="from", min_length=1)
    dst: list[str] = Field(alias="to", min_length=1)
    loss: int = 0
    delay: float = 0.0

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("src", "dst", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("loss", mode="before")
    @classmethod
    def _loss(cls, v: Any) -> int:
        return parse_loss_ppm(v)

    @field_validator("delay", mode="before")
    @classmethod
    def _delay(cls, v: Any) -> float:
        return parse_delay_ms(v)


class SiteSection(_Strict):
    description: str | None = None
    storage_kind: str = "other"
    #: the site file's ``storage_systems`` (advisor.site.model.Site): given, they gate the storage probes and packs
    storage_systems: list[str] = Field(default_factory=list)
    profiles: list[str] = Field(default_factory=lambda: ["generic"])
    vars: dict[str, Any] = Field(default_factory=dict)
    mesh: MeshSpec | None = None
    #: advisor.site.model.Waiver entries, copied into the site file (e.g. what a namespace cannot set)
    waivers: list[dict[str, Any]] = Field(default_factory=list)
    #: advisor.site.model.ImmutableSetting entries (settings no plan may change), copied into the site file
    immutable: list[Any] = Field(default_factory=list)
    #: extra site-file sections (e.g. ``efficiency:`` for the active CPU-efficiency test)
    extensions: dict[str, Any] = Field(default_factory=dict)


class Scenario(_Strict):
    name: str
    description: str | None = None
    link_rate: int | None = Field(parse_rate_bps("1gbit"), description="default per-host link rate")
    switches: list[Switch] = Field(default_factory=lambda: [Switch(name="sw")])
    controller_switch: str | None = None
    hosts: list[ScenarioHost] = Field(min_length=1)
    paths: list[PathFault] = Field(default_factory=list)
    #: emulated storage systems (advisor.lab.emulation): a top-level key naming a registered
    #: emulation's section (``gpfs:``, ``san:``) is validated by it and kept here
    emulations: dict[str, Any] = Field(default_factory=dict)
    #: firewalls between groups, expanded into the receivers' ``firewall`` at load time
    firewalls: list[GroupFirewall] = Field(default_factory=list)
    #: production traffic (advisor/lab/scenario_traffic.py): readers reading from servers, no iperf3
    traffic: list[Traffic] = Field(default_factory=list)
    site: SiteSection = Field(default_factory=SiteSection)
    #: the findings the faults must produce, per host (documentation and test oracle)
    expect: list[ExpectedFinding] = Field(default_factory=list)
    #: where the scenario came from (not part of the file)
    source: str | None = Field(None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _emulation_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        from advisor.lab.emulation import lab_emulations

        known = {k: e for k, e in lab_emulations().items() if not e.from_hosts}
        found = {k: data[k] for k in known if k in data}
        if not found:
            return data
        rest = {k: v for k, v in data.items() if k not in found}
        rest["emulations"] = {**found, **(data.get("emulations") or {})}
        return rest

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not _NAME_RE.fullmatch(v) or len(v) > 40:
            raise ValueError("scenario name may hold letters, digits, '.', '_' and '-' only (max 40)")
        return v

    @field_validator("link_rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> int | None:
        return None if v is None else parse_rate_bps(v)

    @model_validator(mode="after")
    def _expand_and_check(self) -> "Scenario":
        expanded: list[ScenarioHost] = []
        for h in self.hosts:
            for n in expand_host_pattern(h.name):
                expanded.append(h.model_copy(update={"name": n}, deep=True))
        names = [h.name for h in expanded]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate host name(s): {', '.join(sorted(dup))}")
        if len(expanded) > 200:
            raise ValueError("at most 200 hosts in a lab")
        self.hosts = expanded
        sw_names = [s.name for s in self.switches]
        if len(set(sw_names)) != len(sw_names) or not sw_names:
            raise ValueError("switch names must be unique and at least one switch is needed")
        for s in self.switches:
            if s.uplink is not None and s.uplink not in sw_names:
                raise ValueError(f"switch {s.name!r}: unknown uplink {s.uplink!r}")
        # the uplinks must form a tree (no cycles)
        parent = {s.name: s.uplink for s in self.switches}
        for s in sw_names:
            seen, cur = set(), s
            while cur is not None:
                if cur in seen:
                    raise ValueError(f"switch uplinks form a loop through {s!r}")
                seen.add(cur)
                cur = parent[cur]
        roots = [s for s in sw_names if parent[s] is None]
        if len(roots) != 1:
            raise ValueError("switches must form one tree: exactly one switch without an uplink")
        if self.controller_switch is None:
            self.controller_switch = roots[0]
        elif self.controller_switch not in sw_names:
            raise ValueError(f"controller_switch: unknown switch {self.controller_switch!r}")
        for h in self.hosts:
            if h.switch is None:
                h.switch = sw_names[0]
            elif h.switch not in sw_names:
                raise ValueError(f"host {h.name!r}: unknown switch {h.switch!r}")
            if h.link_rate is None:
                h.link_rate = self.link_rate
        for i, p in enumerate(self.paths):
            for sel in p.src + p.dst:
                if not self.select(sel):
                    raise ValueError(f"paths[{i}]: selector {sel!r} matches no host, group or role")
        from advisor.lab.emulation import lab_emulations

        known = lab_emulations()
        nics = {h.name: {"nic": h.nic is not None, "cpu": h.cpu is not None} for h in self.hosts if h.nic or h.cpu}
        if HOST_NICS in self.emulations and not isinstance(self.emulations[HOST_NICS], known[HOST_NICS].model):
            raise ValueError(f"{HOST_NICS}: not a scenario section (give hosts a 'nic:' or 'cpu:' key)")
        if nics:
            self.emulations[HOST_NICS] = {"hosts": nics}
        for section, spec in list(self.emulations.items()):
            if section not in known:
                raise ValueError(f"emulations: no storage kind emulates {section!r} (known: {', '.join(known) or 'none'})")
            e = known[section]
            model = spec if isinstance(spec, e.model) else e.model.model_validate(spec)
            e.check(model, self)
            self.emulations[section] = model
        claimed: dict[tuple[str, str], str] = {}
        for section, model in self.emulations.items():
            for host in known[section].hosts(model, self):
                for d in known[section].bind_dirs:
                    other = claimed.setdefault((host, d), section)
                    if other != section:
                        raise ValueError(f"the {other} and {section} sections share hosts ({host}): both emulate "
                                         f"tools in {d}")
        self._expand_group_firewalls()
        check_traffic(self)
        for i, e in enumerate(self.expect):
            if e.host not in names:
                raise ValueError(f"expect[{i}]: unknown host {e.host!r}")
        for h in self.hosts:
            if h.read_only_sysctls and len(set(h.read_only_sysctls)) != len(h.read_only_sysctls):
                raise ValueError(f"host {h.name!r}: read_only_sysctls lists a key twice")
        return self

    def _expand_group_firewalls(self) -> None:
        for i, fw in enumerate(self.firewalls):
            for sel in fw.src + fw.dst:
                if not self.select(sel):
                    raise ValueError(f"firewalls[{i}]: selector {sel!r} matches no host, group or role")
            senders = [s.name for s in self.select_all(fw.src)]
            for h in self.select_all(fw.dst):
                others = [s for s in senders if s != h.name]
                if not others:
                    continue
                own = h.firewall or Firewall()
                if fw.backend == "nft":
                    own.nft = (own.nft or "") + fw.nft_table(i, others)
                else:
                    own.iptables = merge_iptables(own.iptables, fw.iptables_rules(i, others))
                h.firewall = own

    def select(self, selector: str) -> list[ScenarioHost]:
        """The hosts of a host pattern (advisor.site.host_patterns.HostPattern, the grammar of site files: names,
        globs, groups, roles, comma lists, ``!exclusion``); a malformed pattern selects none."""
        try:
            return host_pattern(selector).select(self.hosts)
        except ValueError:
            return []

    def select_all(self, selectors: list[str]) -> list[ScenarioHost]:
        seen: dict[str, ScenarioHost] = {}
        for s in selectors:
            for h in self.select(s):
                seen.setdefault(h.name, h)
        return list(seen.values())

    def emulated(self) -> list[tuple[Any, Any]]:
        """(emulation, its validated section) for every emulated storage system of the scenario."""
        from advisor.lab.emulation import lab_emulations

        known = lab_emulations()
        return [(known[k], spec) for k, spec in self.emulations.items()]

    @property
    def needs_delay(self) -> bool:
        return any(p.delay > 0 for p in self.paths)

    @property
    def needs_loss(self) -> bool:
        return any(p.loss > 0 for p in self.paths)


def builtin_scenarios() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yml"))


def find_scenario_file(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yml", ".yaml") or "/" in name_or_path or p.is_file():
        if not p.is_file():
            raise StoradviseError(f"{p}: scenario file not found")
        return p
    cand = BUILTIN_DIR / f"{name_or_path}.yml"
    if cand.is_file():
        return cand
    raise StoradviseError(
        f"no scenario named {name_or_path!r} (built-in: {', '.join(builtin_scenarios())}; or give a path)"
    )


def load_scenario(name_or_path: str) -> Scenario:
    path = find_scenario_file(name_or_path)
    doc = load_located_yaml(path, "scenario file")
    if not isinstance(doc.data, dict):
        raise SiteFileError(str(path), "a scenario file is a YAML mapping with 'name' and 'hosts'", line=1)
    sc = doc.validate(Scenario)
    sc.source = str(path)
    return sc
