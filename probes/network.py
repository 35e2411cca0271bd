"""Network probes: ``network.sysctl`` (TCP/IP sysctls, runtime and persisted) and ``network.nic``.

``network.sysctl``
------------------
The runtime value of each key is read from ``/proc/sys`` (no ``sysctl`` binary needed). A key
whose file does not exist (``net.core.netdev_max_backlog`` inside a network namespace) is
``absent``, not an error.

Whether a key can be changed here is read without changing it: the entry's permission bits
(the kernel makes a key it does not let a network namespace change read-only there, mode 0444:
``net.core.wmem_max`` in a namespace) and whether ``/proc/sys`` is mounted read-only (containers).
Outputs captured before this was collected leave ``writable`` unknown (None).

The persisted value is what a reboot would set, computed as procps ``sysctl --system`` would
(see ``probes.sysctl_conf`` for the precedence rules and the line grammar).

For every key we report the effective persisted value, the file/line that sets it, and every
other line (in any applied file, or in a masked file, flagged ``masked``) that sets the key to a
different value: these conflict with the effective line and the remediation comments them out.
A line reached twice through a symlinked file is reported once, under the file's own name.

``network.nic``
---------------
Per interface from ``/sys/class/net/<if>``: speed (``-1``/unreadable, as on veth or a link that
is down, gives ``None``), mtu, tx_queue_len, operstate, address; the driver from the
``device/driver`` symlink, else from ``ethtool -i`` (veth, bridge, bond have no device), else
``None``; addresses from ``ip -j addr`` (``ip -o addr`` when the iproute2 is too old for ``-j``).
An interface with no ``device`` in sysfs (veth, bridge, docker/cni, tun, loopback: everything under
/sys/devices/virtual) is ``virtual``: not the host's NIC, whatever speed it claims (a veth says 10000).
"""

from __future__ import annotations

import re
import shlex

from pydantic import BaseModel, Field

from probes.json_text import load_host_json
from probes.probe import Probe, ProbeContext, ProbeParseError, split_sections, bounded_int
from probes.sysctl_conf import (  # noqa: F401  (re-exported: the probe's public helpers)
    SYSCTL_CONF,
    SYSCTL_DIRS,
    SYSCTL_KEY_RE,
    ConfigLine,
    normalize_sysctl_key,
    normalize_sysctl_value,
    order_sysctl_files,
    parse_sysctl_conf,
    sysctl_proc_path,
)

# ---------------------------------------------------------------------------------------------
# network.sysctl
# ---------------------------------------------------------------------------------------------

#: the keys read whatever the rules ask (pyinfra's ``keys=`` default): those that Python code reads by
#: name (the analytic network rules, the mesh diagnosis). Every other key is read because a loaded
#: rule names it (``ProbeContext.requested``, advisor.rules.probe_requests): a new rule is one YAML entry.
BASE_SYSCTLS: tuple[str, ...] = (
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.netdev_max_backlog",
    "net.core.default_qdisc",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_no_metrics_save",
)
#: the former name of ``BASE_SYSCTLS``
TRACKED_SYSCTLS = BASE_SYSCTLS


class SysctlConflict(BaseModel):
    """A config line that sets the key to another value than the effective persisted one."""

    file: str
    lineno: int
    line: str
    value: str
    #: the line is in a file masked by one of the same name (not applied today; harmless until
    #: the masking file goes away)
    masked: bool = False


class SysctlSetting(BaseModel):
    #: runtime value, blanks normalised (``"4096 131072 6291456"``); None when absent/unreadable
    runtime: str | None = None
    #: the runtime value's fields as integers, when every field is one
    runtime_ints: list[int] | None = None
    #: the key does not exist on this host (no /proc/sys file)
    absent: bool = False
    #: the runtime value as ``key = value`` (evidence)
    line: str | None = None
    #: effective value from the sysctl configuration files; None when no file sets it
    persisted: str | None = None
    persisted_ints: list[int] | None = None
    persisted_file: str | None = None
    #: the config line as written (stripped)
    persisted_line: str | None = None
    persisted_lineno: int | None = None
    conflicts: list[SysctlConflict] = Field(default_factory=list)
    #: the key can be written on this host: False for a read-only /proc/sys entry (mode without
    #: owner write, as in a network namespace) or a read-only /proc/sys mount; None when unknown
    writable: bool | None = None
    #: why it cannot be written (when ``writable`` is False)
    read_only_reason: str | None = None


class SysctlFacts(BaseModel):
    #: the keys read (the base set and the keys the loaded rules ask for, any of ``net.*``, ``vm.*``,
    #: ``kernel.*``...) plus every other ``net.*`` key a config file sets. A key the rules ask for
    #: that is not here was not collected (an older capture): its rules are not_applicable
    sysctls: dict[str, SysctlSetting] = Field(default_factory=dict)
    #: applied config files, in the order they are applied
    files_read: list[str] = Field(default_factory=list)
    #: files masked by a file of the same basename in an earlier directory (a /dev/null link, too)
    files_masked: list[str] = Field(default_factory=list)
    #: files that exist but could not be read
    files_unreadable: list[str] = Field(default_factory=list)
    #: the values this host's network namespace boots with where no file sets a key (the host's
    #: ``sysctl_boot_values_file``, e.g. a lab host's recorded values); only the keys of ``sysctls``
    boot_defaults: dict[str, str] = Field(default_factory=dict)


def _ints(value: str | None) -> list[int] | None:
    if value is None:
        return None
    fields = value.split()
    if not fields or not all(re.fullmatch(r"-?\d+", f) for f in fields):
        return None
    return [bounded_int(f, "sysctl value") for f in fields]


_FILE_SECTION = "file "
_NULL_SECTION = "devnull "
_LINK_SECTION = "link "
_UNREADABLE_SECTION = "unreadable "
_RUNTIME_ABSENT = "@@absent"
_RUNTIME_UNREADABLE = "@@unreadable"
_PROCSYS_SECTION = "procsys"
_REQUESTED_SECTION = "requested"
_MODE_RE = re.compile(r"[0-7]{3,4}")


#: host variable: a JSON file {key: value} of the values the host's network namespace boots with
#: when no file sets a key (a lab host: its namespace's values recorded at creation)
BOOT_VALUES_VAR = "sysctl_boot_values_file"
_BOOT_SECTION = "boot-values"


def sysctl_keys(requested: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The keys the probe reads: the base set, then the requested ones (dotted form, each once; a
    name that cannot be a sysctl key is left out)."""
    out: dict[str, None] = {}
    for key in (*BASE_SYSCTLS, *requested):
        if isinstance(key, str) and SYSCTL_KEY_RE.match(key.strip()):
            out[normalize_sysctl_key(key)] = None
    return list(out)


def _sysctl_script(requested: list[str] | tuple[str, ...] = (), boot_values_file: str | None = None) -> str:
    dirs = " ".join(SYSCTL_DIRS)
    keys = sysctl_keys(requested)
    tracked = " ".join(shlex.quote(k) for k in keys)
    listed = "\n".join(keys)
    boot = ""
    if boot_values_file:
        q = shlex.quote(boot_values_file)
        boot = f'if [ -r {q} ]; then echo "@@section {_BOOT_SECTION}"; cat {q}; echo; fi\n'
    return boot + f"""\
seen_dirs=" "
for d in {dirs}; do
  [ -d "$d" ] || continue
  real=$(readlink -f "$d")
  case "$seen_dirs" in *" $real "*) continue ;; esac
  seen_dirs="$seen_dirs$real "
  for f in "$d"/*.conf; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    if [ -L "$f" ] && [ "$(readlink -f "$f")" = /dev/null ]; then echo "@@section {_NULL_SECTION}$f"; continue; fi
    [ -f "$f" ] || continue
    if [ -L "$f" ]; then echo "@@section {_LINK_SECTION}$f $(readlink -f "$f")"; fi
    if [ -r "$f" ]; then echo "@@section {_FILE_SECTION}$f"; cat "$f"; echo; else echo "@@section {_UNREADABLE_SECTION}$f"; fi
  done
done
if [ -f {SYSCTL_CONF} ]; then
  if [ -r {SYSCTL_CONF} ]; then echo "@@section {_FILE_SECTION}{SYSCTL_CONF}"; cat {SYSCTL_CONF}; echo
  else echo "@@section {_UNREADABLE_SECTION}{SYSCTL_CONF}"; fi
fi
extra=$(cat {" ".join(d + "/*.conf" for d in SYSCTL_DIRS)} {SYSCTL_CONF} 2>/dev/null) || true
extra=$(printf '%s\\n' "$extra" | sed -n 's/^[[:space:]]*-\\{{0,1\\}}[[:space:]]*\\(net[./][A-Za-z0-9_.:/@+-]*\\)[[:space:]]*=.*$/\\1/p' | sort -u)
echo "@@section {_REQUESTED_SECTION}"
printf '%s\\n' {shlex.quote(listed)}
echo "@@section runtime"
# a process per key and step made this loop the costliest part of a host's batch: tr runs only for
# a key written with a slash, a value's tabs and newlines become blanks by the shell's own expansion,
# one stat gives every file's mode (looked up by the shell's own pattern matching), and each value
# keeps its cat (/proc/sys files give a shell's byte-wise read only their first byte)
TAB=$(printf '\t'); NL='
'
keys=; files=
for k in $(printf '%s\\n' {tracked} $extra | awk '!seen[$0]++'); do
  case "$k" in
    net/*) p=$k; k=$(printf '%s' "$k" | tr '/.' './') ;;
    */*) p=$(printf '%s' "$k" | tr '/.' './') ;;
    *) p=; r=$k
       while :; do case "$r" in *.*) p="$p${{r%%.*}}/"; r=${{r#*.}} ;; *) p="$p$r"; break ;; esac; done ;;
  esac
  keys="$keys$k $p$NL"
  [ -e "/proc/sys/$p" ] && files="$files /proc/sys/$p"
done
modes=
if [ -n "$files" ]; then modes="$NL$(stat -L -c '%a %n' $files 2>/dev/null)$NL"; fi
while read -r k p; do
  [ -n "$k" ] || continue
  f="/proc/sys/$p"
  if [ ! -e "$f" ]; then printf '%s\\t%s\\n' "$k" "{_RUNTIME_ABSENT}"
  elif v=$(cat "$f" 2>/dev/null); then
    while :; do case "$v" in *"$TAB"*) v="${{v%%"$TAB"*}} ${{v#*"$TAB"}}" ;; *"$NL"*) v="${{v%%"$NL"*}} ${{v#*"$NL"}}" ;; *) break ;; esac; done
    m=${{modes%%" $f$NL"*}}
    if [ "$m" = "$modes" ]; then m=; else m=${{m##*"$NL"}}; fi
    printf '%s\\t%s\\t%s\\n' "$k" "$v" "$m"
  else printf '%s\\t%s\\n' "$k" "{_RUNTIME_UNREADABLE}"; fi
done <<SA_KEYS
$keys
SA_KEYS
echo "@@section {_PROCSYS_SECTION}"
awk '$5 == "/proc/sys" || $5 == "/proc" || index($5, "/proc/sys/") == 1 {{print $5, $6}}' /proc/self/mountinfo 2>/dev/null
"""


def parse_sysctl_output(text: str) -> SysctlFacts:
    sections = split_sections(text)
    if "runtime" not in sections:
        raise ProbeParseError("network.sysctl output has no 'runtime' section (truncated?)")
    files: dict[str, str] = {}
    devnull: list[str] = []
    unreadable: list[str] = []
    #: symlinked config files -> the file they point to (Debian's 99-sysctl.conf -> ../sysctl.conf)
    links: dict[str, str] = {}
    for name, body in sections.items():
        if name.startswith(_FILE_SECTION):
            files[name[len(_FILE_SECTION):].strip()] = body
        elif name.startswith(_NULL_SECTION):
            devnull.append(name[len(_NULL_SECTION):].strip())
        elif name.startswith(_LINK_SECTION):
            link, _, target = name[len(_LINK_SECTION):].strip().partition(" ")
            links[link] = target.strip()
        elif name.startswith(_UNREADABLE_SECTION):
            unreadable.append(name[len(_UNREADABLE_SECTION):].strip())
        elif name not in ("runtime", _PROCSYS_SECTION, _REQUESTED_SECTION, _BOOT_SECTION, ""):
            raise ProbeParseError(f"network.sysctl output has an unknown section {name!r}")
        elif name == "" and body.strip():
            raise ProbeParseError("network.sysctl output has text before its first section")

    procsys_mounts = _procsys_mounts(sections.get(_PROCSYS_SECTION))
    runtime: dict[str, str | None] = {}
    absent: set[str] = set()
    modes: dict[str, str] = {}
    for lineno, line in enumerate(sections["runtime"].splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition("\t")
        if not sep or not SYSCTL_KEY_RE.match(key.strip()):
            raise ProbeParseError(f"network.sysctl runtime line {lineno} is not 'key<TAB>value': {line[:60]!r}")
        key = normalize_sysctl_key(key)
        value, tab, mode = value.partition("\t")
        if tab and mode.strip():
            if not _MODE_RE.fullmatch(mode.strip()):
                raise ProbeParseError(f"network.sysctl runtime line {lineno}: {mode.strip()[:20]!r} is not a file mode")
            modes[key] = mode.strip()
        if value == _RUNTIME_ABSENT:
            absent.add(key)
            runtime[key] = None
        elif value == _RUNTIME_UNREADABLE:
            runtime[key] = None
        else:
            runtime[key] = normalize_sysctl_value(value)
    # the keys the script was asked to read (outputs collected before it said so: those it read;
    # a key a rule needs that an older capture lacks is "not collected", never an error here)
    requested: list[str] = []
    for lineno, line in enumerate(sections.get(_REQUESTED_SECTION, "").splitlines(), start=1):
        if line.strip():
            if not SYSCTL_KEY_RE.match(line.strip()):
                raise ProbeParseError(f"network.sysctl requested line {lineno} is not a sysctl key: {line[:60]!r}")
            requested.append(normalize_sysctl_key(line))
    requested = list(dict.fromkeys(requested))
    missing = [k for k in requested if k not in runtime]
    if missing:
        raise ProbeParseError(f"network.sysctl runtime section lacks {missing[0]} (truncated?)")

    all_paths = list(files) + devnull
    applied, masked = order_sysctl_files(all_paths)
    applied = [p for p in applied if p in files]

    effective: dict[str, ConfigLine] = {}
    seen_lines: dict[str, list[ConfigLine]] = {}
    for path in applied:
        for cl in parse_sysctl_conf(path, files[path]):
            effective[cl.key] = cl
            seen_lines.setdefault(cl.key, []).append(cl)
    for path in masked:
        if path in files:
            for cl in parse_sysctl_conf(path, files[path]):
                seen_lines.setdefault(cl.key, []).append(cl)

    first = requested or [k for k in BASE_SYSCTLS if k in runtime]
    listed = set(first)
    keys = first + sorted(k for k in set(runtime) | {k for k in effective if k.startswith("net.")} if k not in listed)
    out: dict[str, SysctlSetting] = {}
    for key in keys:
        rt = runtime.get(key)
        eff = effective.get(key)
        setting = SysctlSetting(
            runtime=rt,
            runtime_ints=_ints(rt),
            absent=key in absent,
            line=f"{key} = {rt}" if rt is not None else None,
        )
        procsys_ro = _key_read_only(key, procsys_mounts)
        if rt is not None and procsys_ro:
            setting.writable, setting.read_only_reason = False, procsys_ro
        elif key in modes:
            writable = bool(int(modes[key], 8) & 0o200)
            setting.writable = writable
            if not writable:
                setting.read_only_reason = (f"read-only /proc/sys entry (mode {modes[key]}): the kernel does not let "
                                            "this network namespace or container change it")
        if eff is not None:
            setting.persisted = eff.value
            setting.persisted_ints = _ints(eff.value)
            setting.persisted_file = eff.file
            setting.persisted_line = eff.line
            setting.persisted_lineno = eff.lineno
            # the same physical line reached through a symlink is reported once, under its own name
            reported: set[tuple[str, int]] = set()
            for cl in sorted(seen_lines.get(key, []), key=lambda c: c.file in links):
                physical = (links.get(cl.file, cl.file), cl.lineno)
                if cl.value != eff.value and physical not in reported:
                    reported.add(physical)
                    setting.conflicts.append(
                        SysctlConflict(file=cl.file, lineno=cl.lineno, line=cl.line, value=cl.value, masked=cl.file in masked)
                    )
        out[key] = setting
    boot: dict[str, str] = {}
    if sections.get(_BOOT_SECTION, "").strip():
        values = load_host_json(sections[_BOOT_SECTION], "network.sysctl boot values")
        if not isinstance(values, dict):
            raise ProbeParseError("network.sysctl boot values: not a JSON object {key: value}")
        boot = {k: normalize_sysctl_value(str(v)) for k, v in values.items() if k in out and v is not None}
    return SysctlFacts(sysctls=out, files_read=applied, files_masked=masked, files_unreadable=unreadable,
                       boot_defaults=boot)


def _procsys_mounts(body: str | None) -> dict[str, bool]:
    """Mount points at or under ``/proc/sys`` (and ``/proc``) -> read-only, from mountinfo's
    ``<mount point> <options>`` (a container's read-only /proc/sys, a read-only bind of one key)."""
    out: dict[str, bool] = {}
    for line in (body or "").splitlines():
        point, _, options = line.strip().partition(" ")
        if point == "/proc" or point == "/proc/sys" or point.startswith("/proc/sys/"):
            out[point] = "ro" in options.strip().split(",")
    return out


def _key_read_only(key: str, mounts: dict[str, bool]) -> str | None:
    """Why ``key`` cannot be written because of a mount (the deepest mount holding its /proc/sys
    file decides: a read-write /proc/sys/net under a read-only /proc/sys is writable), or None."""
    path = sysctl_proc_path(key)
    holders = [m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")]
    if not holders:
        return None
    point = max(holders, key=len)
    if not mounts[point]:
        return None
    if point == path:
        return f"{path} is bound read-only on this host (a site or container policy): it cannot be changed from inside"
    return f"{point} is mounted read-only (a container): no sysctl can be changed from inside"


class NetworkSysctlProbe(Probe):
    name = "network.sysctl"
    title = "TCP/IP sysctls: runtime value, persisted value and the file that sets it"
    facts_model = SysctlFacts
    keyed_facts = "sysctls"

    def script(self, ctx: ProbeContext) -> str:
        given = ctx.vars.get(BOOT_VALUES_VAR)
        return _sysctl_script(ctx.requested.get(self.name, ()),
                              given if isinstance(given, str) and given.startswith("/") else None)

    def parse(self, text: str) -> SysctlFacts:
        return parse_sysctl_output(text)


# ---------------------------------------------------------------------------------------------
# network.nic
# ---------------------------------------------------------------------------------------------


class InterfaceFacts(BaseModel):
    #: link speed in Mb/s; None when the kernel reports -1 or the file is unreadable (down, veth)
    speed_mbps: int | None = None
    mtu: int | None = None
    txqueuelen: int | None = None
    #: /sys/class/net/<if>/operstate: up, down, unknown, lowerlayerdown, dormant, notpresent, testing
    operstate: str | None = None
    driver: str | None = None
    mac: str | None = None
    #: ``address/prefixlen``, IPv4 and IPv6, in the order ``ip addr`` prints them
    addresses: list[str] = Field(default_factory=list)
    is_loopback: bool = False
    #: not a physical NIC: no device behind it in sysfs (``/sys/class/net/IF/device`` is missing: veth,
    #: bridge, docker/cni, tun, loopback, everything under /sys/devices/virtual), or, where the output
    #: does not say (an older capture), a virtual driver or name (:data:`VIRTUAL_NIC_NAME`)
    virtual: bool = False


#: interface names of virtual links (containers, bridges, overlays, tunnels), for outputs that do not
#: say whether a device is behind the interface
VIRTUAL_NIC_NAME = re.compile(r"^(lo|veth|br-|br\d|bridge|docker|cni|virbr|vnet|flannel|cali|vxlan|weave|kube-|"
                              r"cilium|tun|tap|dummy|ifb|wg|salab)")
VIRTUAL_NIC_DRIVERS = frozenset({"veth", "bridge", "tun", "vxlan", "dummy", "ifb", "macvlan", "ipvlan",
                                 "wireguard", "openvswitch", "geneve", "vrf"})


def is_virtual_nic(name: str, driver: str | None, has_device: bool | None) -> bool:
    """Whether an interface is a virtual link rather than the host's NIC: sysfs says it when the
    output has it (a physical NIC has a ``device``), else its driver and name."""
    if has_device is not None:
        return not has_device
    return bool(VIRTUAL_NIC_NAME.match(name)) or (driver or "") in VIRTUAL_NIC_DRIVERS


class NicFacts(BaseModel):
    interfaces: dict[str, InterfaceFacts] = Field(default_factory=dict)


_SYS_FIELDS = ("speed", "mtu", "tx_queue_len", "operstate", "address", "type", "device", "driver")
_IF_NAME_RE = re.compile(r"[^\s/:]{1,64}")
_ARPHRD_LOOPBACK = 772


def _nic_script() -> str:
    return """\
echo "@@section sysfs"
for d in /sys/class/net/*; do
  [ -d "$d" ] || continue
  i=${d##*/}
  for f in speed mtu tx_queue_len operstate address type; do
    # the shell's own read (no process per value): a sysfs attribute reads back whole, a byte at a time
    v=; read -r v 2>/dev/null <"$d/$f"; printf '%s\\t%s\\t%s\\n' "$i" "$f" "$v"
  done
  # a physical NIC has a device behind it; veth, bridges, tunnels and loopback (/sys/devices/virtual) do not
  if [ -e "$d/device" ]; then printf '%s\\tdevice\\t1\\n' "$i"; else printf '%s\\tdevice\\t0\\n' "$i"; fi
  drv=""
  if [ -e "$d/device/driver" ]; then drv=$(readlink "$d/device/driver"); drv=${drv##*/}; fi
  if [ -z "$drv" ] && command -v ethtool >/dev/null 2>&1; then
    drv=$(ethtool -i "$i" 2>/dev/null | sed -n 's/^driver: //p')
  fi
  printf '%s\\t%s\\t%s\\n' "$i" driver "$drv"
done
if ip -j addr >/dev/null 2>&1; then echo "@@section ip-j-addr"; ip -j addr
else echo "@@section ip-o-addr"; ip -o addr; fi
"""


def _int_or_none(value: str) -> int | None:
    value = value.strip()
    if re.fullmatch(r"-?\d+", value):
        return bounded_int(value, "interface attribute")
    return None


def _addresses_from_json(text: str) -> dict[str, list[str]]:
    data = load_host_json(text, "ip -j addr")
    if not isinstance(data, list):
        raise ProbeParseError("ip -j addr: expected a JSON list of interfaces")
    out: dict[str, list[str]] = {}
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("ifname"), str):
            raise ProbeParseError("ip -j addr: an entry without 'ifname'")
        addrs = out.setdefault(item["ifname"], [])
        infos = item.get("addr_info", [])
        if not isinstance(infos, list):
            raise ProbeParseError(f"ip -j addr: {item['ifname']}: addr_info is not a list")
        for info in infos:
            if not isinstance(info, dict):
                raise ProbeParseError(f"ip -j addr: {item['ifname']}: addr_info entry is not an object")
            local, plen = info.get("local"), info.get("prefixlen")
            if isinstance(local, str) and isinstance(plen, int) and not isinstance(plen, bool):
                addrs.append(f"{local}/{plen}")
    return out


_IP_O_RE = re.compile(r"^\d+:\s+(\S+?)(?:@\S+)?\s+(inet6?)\s+(\S+/\d+)\s")


def _addresses_from_oneline(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        m = _IP_O_RE.match(line)
        if not m:
            raise ProbeParseError(f"ip -o addr line {lineno} not understood: {line[:60]!r}")
        out.setdefault(m.group(1), []).append(m.group(3))
    return out


def parse_nic_output(text: str) -> NicFacts:
    sections = split_sections(text)
    if "sysfs" not in sections:
        raise ProbeParseError("network.nic output has no 'sysfs' section")
    raw: dict[str, dict[str, str]] = {}
    for lineno, line in enumerate(sections["sysfs"].splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or parts[1] not in _SYS_FIELDS or not _IF_NAME_RE.fullmatch(parts[0]):
            raise ProbeParseError(f"network.nic sysfs line {lineno} is not 'iface<TAB>field<TAB>value': {line[:60]!r}")
        raw.setdefault(parts[0], {})[parts[1]] = parts[2].strip()
    for ifname, fields in raw.items():
        if "driver" not in fields:
            raise ProbeParseError(f"network.nic sysfs entry for {ifname} is incomplete (truncated?)")
    if "ip-j-addr" in sections:
        addresses = _addresses_from_json(sections["ip-j-addr"])
    elif "ip-o-addr" in sections:
        addresses = _addresses_from_oneline(sections["ip-o-addr"])
    else:
        raise ProbeParseError("network.nic output has no 'ip-j-addr' or 'ip-o-addr' section (truncated?)")

    interfaces: dict[str, InterfaceFacts] = {}
    for ifname, f in raw.items():
        speed = _int_or_none(f.get("speed", ""))
        link_type = _int_or_none(f.get("type", ""))
        interfaces[ifname] = InterfaceFacts(
            speed_mbps=speed if speed is not None and speed > 0 else None,
            mtu=_int_or_none(f.get("mtu", "")),
            txqueuelen=_int_or_none(f.get("tx_queue_len", "")),
            operstate=f.get("operstate") or None,
            driver=f.get("driver") or None,
            mac=f.get("address") or None,
            addresses=addresses.get(ifname, []),
            is_loopback=link_type == _ARPHRD_LOOPBACK,
            virtual=link_type == _ARPHRD_LOOPBACK or is_virtual_nic(
                ifname, f.get("driver"), None if f.get("device") not in ("0", "1") else f["device"] == "1"),
        )
    return NicFacts(interfaces=interfaces)


class NetworkNicProbe(Probe):
    name = "network.nic"
    title = "Network interfaces: speed, MTU, txqueuelen, state, driver, addresses"
    facts_model = NicFacts

    def script(self, ctx: ProbeContext) -> str:
        return _nic_script()

    def parse(self, text: str) -> NicFacts:
        return parse_nic_output(text)
